/* SPDX-License-Identifier: MIT */
/*
 * sim_conf: the scenario option "pfc" (docs/sim.md): off by default,
 * "on XOFF XON" with size units, refused with FILE:LINE when xon is not
 * below xoff, when xoff leaves less than one MTU of the queue as headroom,
 * or when its words are wrong; sim_net_new refuses the same bad thresholds;
 * and a parsed PFC incast runs lossless with pauses counted. The option
 * "rack": on (the reordering window) unless "rack = off". The option
 * "spray": a path per chunk unless "spray = packet" or "spray = run SIZE"
 * (tpchan_params.path_run_bytes, 1 byte to 16 MiB).
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/sim/sim_conf.h"
#include "engine/sim/sim_net.h"

static const char base[] = "topology = star\nhosts = 4\nqueue = 256KiB\n"
			   "incast = 3 512KiB to 0\n";

static struct sim_conf conf;
static char err[256];

/* base plus one line as line 5 */
static int parse_with(const char *line)
{
	char text[512];

	snprintf(text, sizeof(text), "%s%s\n", base, line);
	return sim_conf_parse(text, strlen(text), "t.scn", &conf, err, sizeof(err));
}

static void test_pfc_is_off_unless_asked(void **state)
{
	(void)state;
	assert_int_equal(sim_conf_parse(base, strlen(base), "t.scn", &conf, err, sizeof(err)), 0);
	assert_false(conf.net.pfc.on);
	assert_int_equal(parse_with("pfc = off"), 0);
	assert_false(conf.net.pfc.on);
}

static void test_pfc_on_takes_sizes_with_units(void **state)
{
	(void)state;
	assert_int_equal(parse_with("pfc = on 192KiB 160KiB"), 0);
	assert_true(conf.net.pfc.on);
	assert_int_equal(conf.net.pfc.xoff_bytes, 192 << 10);
	assert_int_equal(conf.net.pfc.xon_bytes, 160 << 10);
	assert_int_equal(parse_with("pfc = on 100000 0"), 0);
	assert_int_equal(conf.net.pfc.xoff_bytes, 100000);
	assert_int_equal(conf.net.pfc.xon_bytes, 0);
}

static void expect_error(const char *line, const char *msg)
{
	assert_int_equal(parse_with(line), -EINVAL);
	if (!strstr(err, msg))
		fail_msg("'%s': got '%s', want '%s'", line, err, msg);
}

/* a whole scenario, for keys that base already sets */
static int parse_text(const char *text)
{
	return sim_conf_parse(text, strlen(text), "t.scn", &conf, err, sizeof(err));
}

static void expect_text_error(const char *text, const char *msg)
{
	assert_int_equal(parse_text(text), -EINVAL);
	if (!strstr(err, msg))
		fail_msg("got '%s', want '%s'", err, msg);
}

/* every full-size packet would be dropped at a switch: queue >= mtu */
static void test_queue_is_at_least_one_mtu(void **state)
{
	(void)state;
	expect_text_error("topology = star\nhosts = 4\nqueue = 1KiB\nincast = 3 512KiB to 0\n",
			  "t.scn:3: queue: 1024 bytes is below one mtu (4096)");
	expect_text_error("topology = star\nhosts = 4\nqueue = 8KiB\nmtu = 9000\n"
			  "incast = 3 512KiB to 0\n", "t.scn:3: queue");
	assert_int_equal(parse_text("topology = star\nhosts = 4\nqueue = 4KiB\n"
				    "incast = 3 512KiB to 0\n"), 0);
	assert_int_equal(parse_text("topology = star\nhosts = 4\nqueue = 9000\nmtu = 9000\n"
				    "incast = 3 512KiB to 0\n"), 0);
}

/* a row per sample interval from time 0 to the time limit, at most 10^6 */
static void test_sampling_rows_are_bounded(void **state)
{
	(void)state;
	expect_error("time_limit = 1000s",
		     "t.scn:5: time_limit / sample: 100000000 sampling rows, at most 1000000");
	expect_error("time_limit = 10000010us", "t.scn:5: time_limit / sample");
	expect_error("sample = 999ns", "t.scn:5: time_limit / sample");
	expect_error("time_limit = 1000s\nsample = 999us", "t.scn:6: time_limit / sample");
	assert_int_equal(parse_with("time_limit = 10s"), 0);
	assert_int_equal(parse_with("sample = 1us"), 0);
	assert_int_equal(parse_with("sample = 1ms\ntime_limit = 1000s"), 0);
	assert_int_equal(parse_with("sample = 0ns\ntime_limit = 1000s"), 0);
}

/* leaf-spine set-up and routes grow with hosts x leaves x spines: 2^25 */
static void test_leafspine_size_is_bounded(void **state)
{
	(void)state;
	expect_text_error("topology = leafspine\nleaves = 4096\nspines = 256\nhosts_per_leaf = 1\n"
			  "permutation = 64KiB\n",
			  "t.scn:3: leafspine: hosts x leaves x spines is 4294967296, at most 33554432");
	expect_text_error("topology = leafspine\nleaves = 128\nhosts_per_leaf = 32\nspines = 65\n"
			  "permutation = 64KiB\n", "t.scn:4: leafspine");
	assert_int_equal(parse_text("topology = leafspine\nleaves = 128\nhosts_per_leaf = 32\n"
				    "spines = 64\npermutation = 64KiB\n"), 0);
}

/* link delay at most 10 ms: 8 of them, a leaf-spine RTT, under rto_max */
static void test_delay_is_at_most_10ms(void **state)
{
	(void)state;
	assert_int_equal(parse_with("delay = 10ms"), 0);
	assert_int_equal(conf.delay_ns, 10000000);
	expect_error("delay = 10001us", "t.scn:5: delay: '10001us' out of range");
	expect_error("delay = 400ms", "t.scn:5: delay: '400ms' out of range");
}

/* a flow that starts at or after time_limit can only end unfinished */
static void test_flows_start_before_time_limit(void **state)
{
	(void)state;
	expect_error("flow = 1 2 64KiB at 1s",
		     "t.scn:5: flow: starts at 1000000000 ns, not before time_limit (1000000000 ns)");
	expect_error("flow = 1 2 64KiB at 3s\ntime_limit = 2s", "t.scn:5: flow: starts at");
	expect_error("incast = 2 64KiB to 0 at 2s", "t.scn:5: incast: starts at");
	expect_error("permutation = 64KiB at 1s", "t.scn:5: permutation: starts at");
	expect_error("stagger = 3 64KiB every 500ms to 0",
		     "t.scn:5: stagger: the last flow starts at 1000000000 ns");
	assert_int_equal(parse_with("flow = 1 2 64KiB at 999ms"), 0);
	assert_int_equal(parse_with("time_limit = 2s\nflow = 1 2 64KiB at 1s"), 0);
	assert_int_equal(parse_with("stagger = 3 64KiB every 499ms to 0"), 0);
}

/* base plus a comment line of len characters ending in CRLF, as line 5 */
static int parse_long_crlf(size_t len)
{
	char text[sizeof(base) + 1100];
	size_t b = strlen(base);

	memcpy(text, base, b);
	text[b] = '#';
	memset(text + b + 1, 'x', len - 1);
	memcpy(text + b + len, "\r\n", 3);
	return sim_conf_parse(text, strlen(text), "t.scn", &conf, err, sizeof(err));
}

/* the line limit (1024) counts the characters before a CRLF's \r */
static void test_line_limit_excludes_the_cr_of_crlf(void **state)
{
	(void)state;
	assert_int_equal(parse_long_crlf(1024), 0);
	assert_int_equal(parse_long_crlf(1025), -EINVAL);
	assert_non_null(strstr(err, "t.scn:5: line longer than 1024 characters"));
}

/* tpchan_new refuses an mtu above TPCHAN_MTU_MAX: the parser does too, and
 * a fabric built with one stops with -EINVAL (not -ENOMEM) */
static void test_mtu_is_at_most_tpchan_mtu_max(void **state)
{
	struct sim_net_params p = { .mtu = 9216, .queue_bytes = 256 << 10, .npaths = 1 };
	struct sim_net *n;

	(void)state;
	assert_int_equal(parse_with("mtu = 9000"), 0);
	assert_int_equal(conf.net.mtu, 9000);
	expect_error("mtu = 9001", "t.scn:5: mtu: '9001' out of range");
	expect_error("mtu = 9216", "t.scn:5: mtu: '9216' out of range");
	n = sim_net_new(&p);
	assert_non_null(n);
	assert_int_equal(sim_net_add_host(n, "a"), 0);
	assert_int_equal(sim_net_add_host(n, "b"), 1);
	assert_int_equal(sim_net_link_hosts(n, 0, 1, 100000, 1000), 0);
	assert_true(sim_net_add_flow(n, 0, 1, 65536, 0) >= 0);
	assert_int_equal(sim_net_run(n), -EINVAL);
	sim_net_free(n);
}

static void test_spray_is_per_chunk_unless_packet(void **state)
{
	(void)state;
	assert_int_equal(sim_conf_parse(base, strlen(base), "t.scn", &conf, err, sizeof(err)), 0);
	assert_false(conf.net.path_per_packet);
	assert_int_equal(parse_with("spray = packet"), 0);
	assert_true(conf.net.path_per_packet);
	assert_int_equal(parse_with("spray = chunk"), 0);
	assert_false(conf.net.path_per_packet);
	expect_error("spray = flowlet", "t.scn:5");
	expect_error("spray = packet chunk", "t.scn:5");
	assert_int_equal(parse_with("spray = run 128KiB"), 0);
	assert_false(conf.net.path_per_packet);
	assert_int_equal(conf.net.path_run_bytes, 131072);
	assert_int_equal(parse_with("spray = chunk"), 0);
	assert_int_equal(conf.net.path_run_bytes, 0);
	expect_error("spray = run", "needs a SIZE");
	expect_error("spray = run 0", "t.scn:5");
	expect_error("spray = run 32MiB", "t.scn:5");
	expect_error("spray = run 64KiB 1", "t.scn:5");
	expect_error("spray = packet 64KiB", "takes no SIZE");
}

static void test_rack_is_on_unless_turned_off(void **state)
{
	(void)state;
	assert_int_equal(sim_conf_parse(base, strlen(base), "t.scn", &conf, err, sizeof(err)), 0);
	assert_false(conf.net.rack_off);
	assert_int_equal(parse_with("rack = off"), 0);
	assert_true(conf.net.rack_off);
	assert_int_equal(parse_with("rack = on"), 0);
	assert_false(conf.net.rack_off);
	expect_error("rack = maybe", "t.scn:5");
}

static void test_cc_base_rtt_is_learned_unless_given(void **state)
{
	(void)state;
	assert_int_equal(sim_conf_parse(base, strlen(base), "t.scn", &conf, err, sizeof(err)), 0);
	assert_int_equal(conf.net.cc_base_rtt_ns, 0);
	assert_int_equal(parse_with("cc_base_rtt = 4700ns"), 0);
	assert_int_equal(conf.net.cc_base_rtt_ns, 4700);
	assert_int_equal(parse_with("cc_base_rtt = 5us"), 0);
	assert_int_equal(conf.net.cc_base_rtt_ns, 5000);
	expect_error("cc_base_rtt = 0us", "t.scn:5");
	expect_error("cc_base_rtt = soon", "t.scn:5");
}

static void test_pfc_refuses_bad_thresholds_and_words(void **state)
{
	(void)state;
	expect_error("pfc = on 64KiB 64KiB", "t.scn:5: pfc: xon must be below xoff");
	expect_error("pfc = on 64KiB 96KiB", "t.scn:5: pfc: xon must be below xoff");
	/* 256 KiB queue, 4096 MTU: xoff above 252 KiB leaves no headroom */
	expect_error("pfc = on 253KiB 128KiB", "t.scn:5: pfc: xoff must leave at least one mtu");
	expect_error("pfc = on 1MiB 128KiB", "t.scn:5: pfc: xoff must leave at least one mtu");
	expect_error("pfc = on 64KiB", "t.scn:5: pfc on: expected 3 to 3 words");
	expect_error("pfc = off 64KiB", "t.scn:5: pfc: expected 1 to 1 words");
	expect_error("pfc = lossless", "t.scn:5: pfc: 'lossless' is not on or off");
	expect_error("pfc = on 64Kb 32KiB", "t.scn:5: pfc xoff: bad value '64Kb'");
	expect_error("pfc = on 0 0", "t.scn:5: pfc xoff: '0' out of range");
	expect_error("pfc = on 64KiB 32KiB\npfc = off", "t.scn:6: pfc given twice");
}

static void test_sim_net_refuses_bad_thresholds(void **state)
{
	struct sim_net_params p = {
		.mtu = 4096, .queue_bytes = 256 << 10, .npaths = 1,
		.pfc = { .on = true, .xoff_bytes = 128 << 10, .xon_bytes = 128 << 10 },
	};
	struct sim_net *n;

	(void)state;
	assert_null(sim_net_new(&p));
	p.pfc.xoff_bytes = (256 << 10) - 4095;
	p.pfc.xon_bytes = 0;
	assert_null(sim_net_new(&p));
	p.pfc.xoff_bytes = (256 << 10) - 4096;
	n = sim_net_new(&p);
	assert_non_null(n);
	sim_net_free(n);
}

static void test_pfc_incast_is_lossless_and_pauses(void **state)
{
	struct sim_net_stats st;
	struct sim_net *n;

	(void)state;
	/* no CC: the senders fill their ingress buffers */
	assert_int_equal(parse_with("pfc = on 128KiB 96KiB\ncc = none"), 0);
	n = sim_conf_build(&conf, 1, err, sizeof(err));
	assert_non_null(n);
	assert_int_equal(sim_net_run(n), 0);
	sim_net_get_stats(n, &st);
	assert_int_equal(st.drops, 0);
	assert_int_equal(st.pfc_overflow, 0);
	assert_true(st.pauses > 0);
	assert_true(st.paused_ns > 0);
	assert_int_equal(st.flows_done, 3);
	assert_int_equal(st.flows_failed, 0);
	sim_net_free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pfc_is_off_unless_asked),
		cmocka_unit_test(test_pfc_on_takes_sizes_with_units),
		cmocka_unit_test(test_pfc_refuses_bad_thresholds_and_words),
		cmocka_unit_test(test_rack_is_on_unless_turned_off),
		cmocka_unit_test(test_spray_is_per_chunk_unless_packet),
		cmocka_unit_test(test_cc_base_rtt_is_learned_unless_given),
		cmocka_unit_test(test_sim_net_refuses_bad_thresholds),
		cmocka_unit_test(test_pfc_incast_is_lossless_and_pauses),
		cmocka_unit_test(test_mtu_is_at_most_tpchan_mtu_max),
		cmocka_unit_test(test_queue_is_at_least_one_mtu),
		cmocka_unit_test(test_sampling_rows_are_bounded),
		cmocka_unit_test(test_leafspine_size_is_bounded),
		cmocka_unit_test(test_delay_is_at_most_10ms),
		cmocka_unit_test(test_flows_start_before_time_limit),
		cmocka_unit_test(test_line_limit_excludes_the_cr_of_crlf),
	};

	return cmocka_run_group_tests_name("simconf", tests, NULL, NULL);
}
