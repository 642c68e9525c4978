/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for conf: the defaults, every value type, every error with its
 * exact "FILE:LINE: message", the bounds of every option, SIGHUP reload
 * reporting, and that conf_dump's output parses back to the same values.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "daemon/conf.h"

#define ERRLEN 512

/* Parse a NUL-terminated text as file "t.conf". */
static int parse(const char *text, struct conf *c, char *err)
{
	return conf_parse("t.conf", text, strlen(text), c, err, ERRLEN);
}

/* Parse text that must fail with r and exactly the message msg. */
static void expect_error(const char *text, int r, const char *msg)
{
	char err[ERRLEN];
	struct conf c;

	assert_int_equal(parse(text, &c, err), r);
	assert_string_equal(err, msg);
}

static void expect_ok(const char *text, struct conf *c)
{
	char err[ERRLEN] = "";
	int r = parse(text, c, err);

	if (r < 0)
		fail_msg("unexpected error %d: %s", r, err);
}

static bool conf_equal(const struct conf *a, const struct conf *b)
{
	return a->allow_all == b->allow_all && a->n_allow_uids == b->n_allow_uids &&
	       memcmp(a->allow_uids, b->allow_uids, sizeof(uint32_t) * a->n_allow_uids) == 0 &&
	       a->n_allow_gids == b->n_allow_gids &&
	       memcmp(a->allow_gids, b->allow_gids, sizeof(uint32_t) * a->n_allow_gids) == 0 &&
	       a->admin_gid == b->admin_gid && a->connect_same_user == b->connect_same_user &&
	       a->max_clients == b->max_clients &&
	       a->max_clients_per_uid == b->max_clients_per_uid &&
	       a->max_endpoints_per_client == b->max_endpoints_per_client &&
	       a->max_mrs_per_client == b->max_mrs_per_client &&
	       a->max_registered_bytes == b->max_registered_bytes &&
	       a->max_conns_per_endpoint == b->max_conns_per_endpoint &&
	       a->max_outstanding == b->max_outstanding && a->ring_depth == b->ring_depth &&
	       a->max_ring_depth == b->max_ring_depth && a->max_ctl_msg == b->max_ctl_msg &&
	       a->ctl_timeout_ms == b->ctl_timeout_ms &&
	       a->max_listen_backlog == b->max_listen_backlog &&
	       a->engine_idle_spin_us == b->engine_idle_spin_us &&
	       a->engine_poll_batch == b->engine_poll_batch && a->engine_cpu == b->engine_cpu &&
	       a->engine_threads == b->engine_threads && a->n_engine_cpus == b->n_engine_cpus &&
	       memcmp(a->engine_cpus, b->engine_cpus, sizeof(uint32_t) * a->n_engine_cpus) == 0 &&
	       a->log_level == b->log_level &&
	       memcmp(&a->peer_listen, &b->peer_listen, sizeof(a->peer_listen)) == 0 &&
	       a->n_peers == b->n_peers &&
	       memcmp(a->peers, b->peers, sizeof(a->peers[0]) * a->n_peers) == 0 &&
	       a->dynamic_peers == b->dynamic_peers &&
	       strcmp(a->peer_key_file, b->peer_key_file) == 0 &&
	       strcmp(a->host_name, b->host_name) == 0 &&
	       memcmp(&a->data_address, &b->data_address, sizeof(a->data_address)) == 0 &&
	       a->data_port == b->data_port && a->data_paths == b->data_paths &&
	       a->mtu == b->mtu && a->peer_timeout_ms == b->peer_timeout_ms &&
	       strcmp(a->cc, b->cc) == 0 && a->n_peer_cc == b->n_peer_cc &&
	       memcmp(a->peer_cc, b->peer_cc, sizeof(a->peer_cc[0]) * a->n_peer_cc) == 0;
}

/* Lines collected from conf_dump/conf_reload callbacks. */
struct lines {
	char text[64][4096];             /* a dumped line is at most 4096 characters */
	int n;
};

static void collect(void *arg, const char *line)
{
	struct lines *l = arg;

	assert_true(l->n < 64);
	snprintf(l->text[l->n++], sizeof(l->text[0]), "%s", line);
}

/* ---- defaults and syntax ------------------------------------------------ */

static void test_defaults(void **state)
{
	struct conf c;

	conf_defaults(&c);
	assert_true(c.allow_all);
	assert_int_equal(c.n_allow_uids, 0);
	assert_int_equal(c.n_allow_gids, 0);
	assert_int_equal(c.admin_gid, -1);
	assert_false(c.connect_same_user);
	assert_int_equal(c.max_clients, 64);
	assert_int_equal(c.max_clients_per_uid, 0);
	assert_int_equal(c.max_endpoints_per_client, 16);
	assert_int_equal(c.max_mrs_per_client, 256);
	assert_int_equal(c.max_registered_bytes, 4ULL << 30);
	assert_int_equal(c.max_conns_per_endpoint, 256);
	assert_int_equal(c.max_outstanding, 1024);
	assert_int_equal(c.ring_depth, 1024);
	assert_int_equal(c.max_ring_depth, 16384);
	assert_int_equal(c.max_ctl_msg, 65536);
	assert_int_equal(c.ctl_timeout_ms, 30000);
	assert_int_equal(c.max_listen_backlog, 64);
	assert_int_equal(c.engine_idle_spin_us, 50);
	assert_int_equal(c.engine_poll_batch, 64);
	assert_int_equal(c.engine_cpu, -1);
	assert_int_equal(c.engine_threads, 1);
	assert_int_equal(c.n_engine_cpus, 0);
	assert_int_equal(c.log_level, LOG_LVL_INFO);
	assert_int_equal(c.peer_listen.family, 0);
	assert_int_equal(c.n_peers, 0);
	assert_string_equal(c.host_name, "");
	assert_int_equal(c.data_address.family, 0);
	assert_int_equal(c.data_port, 0);
	assert_int_equal(c.data_paths, 64);
	assert_int_equal(c.mtu, 1500);
	assert_int_equal(c.peer_timeout_ms, 3000);
}

/* An empty file, or one of only comments and blanks, is the defaults. */
static void test_empty_and_comments_are_defaults(void **state)
{
	struct conf def, c;

	conf_defaults(&def);
	memset(&c, 0xa5, sizeof(c));
	assert_int_equal(conf_parse("t.conf", NULL, 0, &c, NULL, 0), 0);
	assert_true(conf_equal(&c, &def));
	expect_ok("\n\n# a comment\n   # indented comment\n\t\n  \r\n", &c);
	assert_true(conf_equal(&c, &def));
}

static void test_whitespace_comments_crlf(void **state)
{
	struct conf c;

	expect_ok("max_clients=10\n"
		  "  max_outstanding   =\t 20  # trailing comment\n"
		  "\tengine_poll_batch = 30\r\n"
		  "ctl_timeout_ms = 40#no space before the comment\n"
		  "log_level = debug", /* no final newline */
		  &c);
	assert_int_equal(c.max_clients, 10);
	assert_int_equal(c.max_outstanding, 20);
	assert_int_equal(c.engine_poll_batch, 30);
	assert_int_equal(c.ctl_timeout_ms, 40);
	assert_int_equal(c.log_level, LOG_LVL_DEBUG);
}

/* ---- each type ----------------------------------------------------------- */

static void test_bool_spellings(void **state)
{
	static const char *const yes[] = { "true", "TRUE", "yes", "On", "1" };
	static const char *const no[] = { "false", "False", "no", "OFF", "0" };
	char text[64];
	struct conf c;

	for (size_t i = 0; i < 5; i++) {
		snprintf(text, sizeof(text), "allow_all = %s\n", no[i]);
		expect_ok(text, &c);
		assert_false(c.allow_all);
		snprintf(text, sizeof(text), "allow_all = %s\n", yes[i]);
		expect_ok(text, &c);
		assert_true(c.allow_all);
	}
}

static void test_size_suffixes_are_binary(void **state)
{
	struct conf c;

	expect_ok("max_registered_bytes = 4K\n", &c);
	assert_int_equal(c.max_registered_bytes, 4096);
	expect_ok("max_registered_bytes = 3m\n", &c);
	assert_int_equal(c.max_registered_bytes, 3ULL << 20);
	expect_ok("max_registered_bytes = 16G\n", &c);
	assert_int_equal(c.max_registered_bytes, 16ULL << 30);
	expect_ok("max_registered_bytes = 1T\n", &c);
	assert_int_equal(c.max_registered_bytes, 1ULL << 40);
	expect_ok("max_registered_bytes = 123456789\n", &c);
	assert_int_equal(c.max_registered_bytes, 123456789);
	expect_ok("max_ctl_msg = 1M\n", &c);
	assert_int_equal(c.max_ctl_msg, 1 << 20);
	expect_ok("max_ctl_msg = 2k\n", &c);
	assert_int_equal(c.max_ctl_msg, 2048);
}

static void test_signed_values(void **state)
{
	struct conf c;

	expect_ok("engine_cpu = 3\nadmin_gid = 1234\n", &c);
	assert_int_equal(c.engine_cpu, 3);
	assert_int_equal(c.admin_gid, 1234);
	expect_ok("engine_cpu = -1\nadmin_gid = -1\n", &c);
	assert_int_equal(c.engine_cpu, -1);
	assert_int_equal(c.admin_gid, -1);
	/* a group name resolves to its gid */
	expect_ok("admin_gid = root\n", &c);
	assert_int_equal(c.admin_gid, 0);
}

static void test_engine_threads(void **state)
{
	struct conf c;

	expect_ok("engine_threads = 4\nengine_cpus = 2, 3,5,7\n", &c);
	assert_int_equal(c.engine_threads, 4);
	assert_int_equal(c.n_engine_cpus, 4);
	assert_int_equal(c.engine_cpus[0], 2);
	assert_int_equal(c.engine_cpus[3], 7);
	expect_ok("engine_threads = 2\nengine_cpus = none\n", &c);
	assert_int_equal(c.n_engine_cpus, 0);
	expect_ok("engine_threads = 16\ndata_port = 40000\ndata_paths = 4\n", &c);
	expect_error("engine_threads = 0\n", -ERANGE,
		     "t.conf:1: engine_threads: 0 is out of range (1..16)");
	expect_error("engine_threads = 17\n", -ERANGE,
		     "t.conf:1: engine_threads: 17 is out of range (1..16)");
	expect_error("engine_cpus = 1,x\n", -EINVAL, "t.conf:1: engine_cpus: 'x' is not a CPU number");
	expect_error("engine_cpus = 4096\n", -ERANGE,
		     "t.conf:1: engine_cpus: 4096 is out of range (0..4095)");
	expect_error("engine_threads = 2\nengine_cpus = 1\n", -EINVAL,
		     "t.conf:2: engine_cpus: 1 CPUs for engine_threads = 2 (one per thread)");
	expect_error("engine_cpu = 1\nengine_threads = 2\n", -EINVAL,
		     "t.conf:2: engine_cpu: pins the only engine thread; with engine_threads or "
		     "engine_cpus use engine_cpus");
	expect_error("allow_gids = 10, 65534\n", -EINVAL,
		     "t.conf:1: allow_gids: 65534 is the overflow gid (processes in other user "
		     "namespaces show their unmapped groups as it)");
	expect_error("log_level = info\nallow_uids = 7, 65534\n", -EINVAL,
		     "t.conf:2: allow_uids: 65534 is the overflow uid (processes in other user "
		     "namespaces show their unmapped users as it)");
	expect_error("admin_gid = 65534\n", -EINVAL,
		     "t.conf:1: admin_gid: 65534 is the overflow gid (processes in other user "
		     "namespaces show their unmapped groups as it)");
	expect_error("engine_threads = 2\nlanes = 2\n", -EINVAL,
		     "t.conf:2: lanes = 2 needs engine_threads >= 3 (a lane is another engine thread)");
	expect_error("lanes = 1\n", -EINVAL,
		     "t.conf:1: lanes = 1 needs engine_threads >= 2 (a lane is another engine thread)");
	expect_error("lanes = 16\n", -ERANGE, "t.conf:1: lanes: 16 is out of range (0..15)");
	expect_error("lane_min_bytes = 1K\n", -ERANGE,
		     "t.conf:1: lane_min_bytes: 1K is out of range (64K..1G)");
	expect_error("ack_hold_us = 11\n", -ERANGE, "t.conf:1: ack_hold_us: 11 is out of range (0..10)");
	expect_error("data_port = 65000\ndata_paths = 64\nengine_threads = 9\n", -EINVAL,
		     "t.conf:3: data_port 65000 + engine_threads 9 x data_paths 64 runs past port 65535");
	/* data_paths on the last line is the one named */
	expect_error("data_port = 65000\nengine_threads = 4\ndata_paths = 256\n", -EINVAL,
		     "t.conf:3: data_port 65000 + engine_threads 4 x data_paths 256 runs past port 65535");
	expect_error("data_port = 64000\nengine_threads = 8\ndata_paths = 256\n", -EINVAL,
		     "t.conf:3: data_port 64000 + engine_threads 8 x data_paths 256 runs past port 65535");
}

static void test_log_levels(void **state)
{
	struct conf c;

	expect_ok("log_level = error\n", &c);
	assert_int_equal(c.log_level, LOG_LVL_ERROR);
	expect_ok("log_level = warn\n", &c);
	assert_int_equal(c.log_level, LOG_LVL_WARN);
	expect_ok("log_level = WARNING\n", &c);
	assert_int_equal(c.log_level, LOG_LVL_WARN);
	expect_ok("log_level = Info\n", &c);
	assert_int_equal(c.log_level, LOG_LVL_INFO);
	expect_ok("log_level = debug\n", &c);
	assert_int_equal(c.log_level, LOG_LVL_DEBUG);
	assert_string_equal(conf_log_level_name(LOG_LVL_ERROR), "error");
	assert_string_equal(conf_log_level_name(LOG_LVL_WARN), "warn");
	assert_string_equal(conf_log_level_name(LOG_LVL_INFO), "info");
	assert_string_equal(conf_log_level_name(LOG_LVL_DEBUG), "debug");
	assert_string_equal(conf_log_level_name((enum conf_log_level)42), "unknown");
}

static void test_id_lists(void **state)
{
	struct conf c;

	expect_ok("allow_uids = 1000, 1001 ,1002\nallow_gids = 50\n", &c);
	assert_int_equal(c.n_allow_uids, 3);
	assert_int_equal(c.allow_uids[0], 1000);
	assert_int_equal(c.allow_uids[1], 1001);
	assert_int_equal(c.allow_uids[2], 1002);
	assert_int_equal(c.n_allow_gids, 1);
	assert_int_equal(c.allow_gids[0], 50);

	/* names resolve through the passwd and group databases */
	expect_ok("allow_uids = root, 7\nallow_gids = 9,root\n", &c);
	assert_int_equal(c.n_allow_uids, 2);
	assert_int_equal(c.allow_uids[0], 0);
	assert_int_equal(c.allow_uids[1], 7);
	assert_int_equal(c.n_allow_gids, 2);
	assert_int_equal(c.allow_gids[1], 0);

	expect_ok("allow_uids = none\nallow_gids = 4294967294\n", &c);
	assert_int_equal(c.n_allow_uids, 0);
	assert_int_equal(c.allow_gids[0], 4294967294u);
}

static void test_id_list_holds_conf_max_ids(void **state)
{
	char text[1024] = "allow_uids = ";
	struct conf c;

	for (int i = 0; i < CONF_MAX_IDS; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s%d", i ? "," : "",
			 100 + i);
	expect_ok(text, &c);
	assert_int_equal(c.n_allow_uids, CONF_MAX_IDS);
	assert_int_equal(c.allow_uids[CONF_MAX_IDS - 1], 100 + CONF_MAX_IDS - 1);

	strcat(text, ",1");
	expect_error(text, -E2BIG, "t.conf:1: allow_uids: more than 32 entries");
}

/* ---- errors: each with its exact FILE:LINE prefix ------------------------ */

static void test_error_unknown_option(void **state)
{
	expect_error("max_clients = 4\n\nmax_client = 4\n", -EINVAL,
		     "t.conf:3: unknown option 'max_client'");
	/* field names only: the count behind a list is not an option */
	expect_error("n_allow_uids = 1\n", -EINVAL, "t.conf:1: unknown option 'n_allow_uids'");
	expect_error("cc = cubic\n", -EINVAL,
		     "t.conf:1: cc: unknown congestion controller 'cubic' (known: window,swift,timely,dcqcn,hint,eqds,none)");
	/* keys are case-sensitive */
	expect_error("Max_Clients = 1\n", -EINVAL, "t.conf:1: unknown option 'Max_Clients'");
}

static void test_error_missing_equals(void **state)
{
	expect_error("# header\nmax_clients 4\n", -EINVAL, "t.conf:2: missing '=' in 'max_clients 4'");
	expect_error("= 4\n", -EINVAL, "t.conf:1: missing option name before '='");
}

static void test_error_empty_value(void **state)
{
	expect_error("max_clients =\n", -EINVAL, "t.conf:1: empty value for 'max_clients'");
	expect_error("log_level =   # nothing\n", -EINVAL, "t.conf:1: empty value for 'log_level'");
}

static void test_error_bad_number(void **state)
{
	expect_error("max_clients = lots\n", -EINVAL, "t.conf:1: max_clients: 'lots' is not a number");
	expect_error("engine_cpu = -\n", -EINVAL, "t.conf:1: engine_cpu: '-' is not a number");
	expect_error("max_clients = +4\n", -EINVAL, "t.conf:1: max_clients: '+4' is not a number");
	expect_error("max_clients = 0x10\n", -EINVAL,
		     "t.conf:1: max_clients: trailing characters in '0x10'");
}

static void test_error_trailing_junk(void **state)
{
	expect_error("max_clients = 12abc\n", -EINVAL,
		     "t.conf:1: max_clients: trailing characters in '12abc'");
	expect_error("max_clients = 12 13\n", -EINVAL,
		     "t.conf:1: max_clients: trailing characters in '12 13'");
	/* size suffixes only where the option is a size */
	expect_error("max_clients = 1K\n", -EINVAL,
		     "t.conf:1: max_clients: trailing characters in '1K'");
	expect_error("max_registered_bytes = 4KB\n", -EINVAL,
		     "t.conf:1: max_registered_bytes: trailing characters in '4KB'");
	expect_error("allow_uids = 10x\n", -EINVAL,
		     "t.conf:1: allow_uids: trailing characters in '10x'");
}

static void test_error_out_of_range_names_the_range(void **state)
{
	expect_error("max_clients = 0\n", -ERANGE, "t.conf:1: max_clients: 0 is out of range (1..4096)");
	expect_error("max_clients = 4097\n", -ERANGE,
		     "t.conf:1: max_clients: 4097 is out of range (1..4096)");
	expect_error("max_clients = -3\n", -ERANGE,
		     "t.conf:1: max_clients: -3 is out of range (1..4096)");
	expect_error("max_clients = 99999999999999999999999\n", -ERANGE,
		     "t.conf:1: max_clients: 99999999999999999999999 is out of range (1..4096)");
	expect_error("max_registered_bytes = 2T\n", -ERANGE,
		     "t.conf:1: max_registered_bytes: 2T is out of range (4K..1T)");
	expect_error("max_registered_bytes = 4095\n", -ERANGE,
		     "t.conf:1: max_registered_bytes: 4095 is out of range (4K..1T)");
	/* a suffix that overflows 64 bits is a range error, not a wrap */
	expect_error("max_registered_bytes = 17179869184T\n", -ERANGE,
		     "t.conf:1: max_registered_bytes: 17179869184T is out of range (4K..1T)");
	expect_error("engine_cpu = -2\n", -ERANGE, "t.conf:1: engine_cpu: -2 is out of range (-1..4095)");
	expect_error("admin_gid = 2147483648\n", -ERANGE,
		     "t.conf:1: admin_gid: 2147483648 is out of range (-1..2147483647)");
	expect_error("admin_gid = -9223372036854775809\n", -ERANGE,
		     "t.conf:1: admin_gid: -9223372036854775809 is out of range (-1..2147483647)");
	expect_error("allow_gids = 4294967295\n", -ERANGE,
		     "t.conf:1: allow_gids: 4294967295 is out of range (0..4294967294)");
	expect_error("allow_uids = -1\n", -ERANGE,
		     "t.conf:1: allow_uids: -1 is out of range (0..4294967294)");
}

static void test_error_duplicate_option(void **state)
{
	expect_error("max_clients = 4\n# again\nmax_clients = 4\n", -EINVAL,
		     "t.conf:3: duplicate option 'max_clients' (first set on line 1)");
}

static void test_error_line_too_long(void **state)
{
	char *text = malloc(4096 + 64);
	struct conf c;

	/* exactly 4096 characters is allowed ... */
	memset(text, ' ', 4096);
	memcpy(text, "max_clients = 5", 15);
	text[4095] = '#';
	strcpy(text + 4096, "\n");
	expect_ok(text, &c);
	assert_int_equal(c.max_clients, 5);
	/* ... also before a CR (a CRLF file) ... */
	strcpy(text + 4096, "\r\n");
	expect_ok(text, &c);
	/* ... one more is not, even inside a comment */
	memset(text, '#', 4097);
	strcpy(text + 4097, "\n");
	expect_error(text, -E2BIG, "t.conf:1: line too long (over 4096 characters)");
	memmove(text + 2, text, 4099);
	memcpy(text, "\n\n", 2);
	expect_error(text, -E2BIG, "t.conf:3: line too long (over 4096 characters)");
	free(text);
}

static void test_error_ring_depth_power_of_two(void **state)
{
	expect_error("ring_depth = 1000\n", -EINVAL,
		     "t.conf:1: ring_depth: 1000 is not a power of two");
	expect_error("max_ring_depth = 20000\n", -EINVAL,
		     "t.conf:1: max_ring_depth: 20000 is not a power of two");
}

static void test_error_ring_depth_over_max(void **state)
{
	expect_error("ring_depth = 4096\n\nmax_ring_depth = 2048\n", -EINVAL,
		     "t.conf:3: ring_depth 4096 is larger than max_ring_depth 2048");
	expect_error("max_ring_depth = 2048\n\nring_depth = 4096\n", -EINVAL,
		     "t.conf:3: ring_depth 4096 is larger than max_ring_depth 2048");
	/* against the default of the other one */
	expect_error("\nmax_ring_depth = 512\n", -EINVAL,
		     "t.conf:2: ring_depth 1024 is larger than max_ring_depth 512");
}

/* settings the transport would refuse at every channel's start are refused
 * here, where the file and line can be named */
static void test_error_transport_refuses(void **state)
{
	(void)state;
	expect_error("rto_min_us = 150000\n", -ERANGE,
		     "t.conf:1: rto_min_us: 150000 is out of range (50..100000)");
	expect_error("chunk_bytes = 1M\n\nmax_inflight_bytes = 64K\n", -EINVAL,
		     "t.conf:3: chunk_bytes 1048576 is larger than max_inflight_bytes 65536");
	expect_error("max_inflight_bytes = 64K\nchunk_bytes = 128K\n", -EINVAL,
		     "t.conf:2: chunk_bytes 131072 is larger than max_inflight_bytes 65536");
}

static void test_error_nul_byte(void **state)
{
	static const char text[] = "max_clients = 4\nmax_outstanding = 1\0 2\n";
	char err[ERRLEN];
	struct conf c;

	assert_int_equal(conf_parse("t.conf", text, sizeof(text) - 1, &c, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "t.conf:2: NUL byte in line");
}

static void test_error_bad_bool_level_list(void **state)
{
	expect_error("allow_all = maybe\n", -EINVAL,
		     "t.conf:1: allow_all: 'maybe' is not a boolean (true or false)");
	expect_error("log_level = loud\n", -EINVAL,
		     "t.conf:1: log_level: 'loud' is not one of error, warn, info, debug");
	expect_error("allow_uids = 1,,2\n", -EINVAL, "t.conf:1: allow_uids: empty entry in list");
	expect_error("allow_uids = 1,\n", -EINVAL, "t.conf:1: allow_uids: empty entry in list");
	expect_error("allow_uids = no_such_user_x\n", -EINVAL,
		     "t.conf:1: allow_uids: unknown user 'no_such_user_x'");
	expect_error("allow_gids = no_such_group_x\n", -EINVAL,
		     "t.conf:1: allow_gids: unknown group 'no_such_group_x'");
	expect_error("allow_gids = a/b\n", -EINVAL,
		     "t.conf:1: allow_gids: 'a/b' is neither a number nor a group name");
	/* a directory service's user@domain is looked up, not refused as a name */
	expect_error("allow_uids = nobody-here@example.invalid\n", -EINVAL,
		     "t.conf:1: allow_uids: unknown user 'nobody-here@example.invalid'");
	expect_error("admin_gid = no_such_group_x\n", -EINVAL,
		     "t.conf:1: admin_gid: unknown group 'no_such_group_x'");
}

/* Hostile bytes are not copied into the message as they are. */
static void test_error_message_is_sanitized_and_bounded(void **state)
{
	char text[600], err[ERRLEN];
	struct conf c;

	memset(text, 'k', 500);
	memcpy(text + 500, "\x1b[31m = 1\n", 11);
	assert_int_equal(parse(text, &c, err), -EINVAL);
	assert_string_equal(err, "t.conf:1: unknown option '"
				 "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...'");
	expect_error("max_\x01\x7f = 1\n", -EINVAL, "t.conf:1: unknown option 'max_?" "?'");
	/* a short or absent buffer is truncated, never overrun */
	memset(err, 'Z', sizeof(err));
	assert_int_equal(conf_parse("t.conf", "x\n", 2, &c, err, 8), -EINVAL);
	assert_string_equal(err, "t.conf:");
	assert_int_equal(err[8], 'Z');
	assert_int_equal(conf_parse("t.conf", "x\n", 2, &c, NULL, 0), -EINVAL);
}

/* A failed parse leaves the caller's struct as it was. */
static void test_error_leaves_output_untouched(void **state)
{
	struct conf c, before;

	memset(&c, 0x5a, sizeof(c));
	before = c;
	assert_int_equal(parse("max_clients = 7\nbogus = 1\n", &c, (char[ERRLEN]){ 0 }), -EINVAL);
	assert_memory_equal(&c, &before, sizeof(c));
}

/* ---- bounds of every option ------------------------------------------------ */

struct bound {
	const char *name;
	const char *lo, *hi, *below, *above;  /* below/above: NULL when none exists */
};

static const struct bound bounds[] = {
	{ "admin_gid", "-1", "2147483647", "-2", "2147483648" },
	{ "max_clients", "1", "4096", "0", "4097" },
	{ "max_endpoints_per_client", "1", "1024", "0", "1025" },
	{ "max_mrs_per_client", "1", "65536", "0", "65537" },
	{ "max_registered_bytes", "4096", "1099511627776", "4095", "1099511627777" },
	{ "max_conns_per_endpoint", "1", "65536", "0", "65537" },
	{ "max_outstanding", "1", "65536", "0", "65537" },
	{ "ring_depth", "16", "16384", "8", "32768" },      /* above: past max_ring_depth */
	{ "max_ring_depth", "1024", "65536", "8", "131072" },
	{ "max_ctl_msg", "1024", "1048576", "1023", "1048577" },
	{ "ctl_timeout_ms", "10", "600000", "9", "600001" },
	{ "max_listen_backlog", "1", "4096", "0", "4097" },
	{ "engine_idle_spin_us", "0", "1000000", NULL, "1000001" },
	{ "engine_poll_batch", "1", "1024", "0", "1025" },
	{ "engine_cpu", "-1", "4095", "-2", "4096" },
	{ "data_port", "0", "65472", "-1", "65536" },       /* hi: + data_paths 64 */
	{ "data_paths", "1", "256", "0", "257" },
	{ "mtu", "576", "9000", "575", "9001" },
	{ "peer_timeout_ms", "200", "60000", "199", "60001" },
	{ "dynamic_peers", "0", "64", NULL, "65" },
	{ "cc_base_rtt_us", "0", "1000000", NULL, "1000001" },
	{ "ack_hold_us", "0", "10", NULL, "11" },
	{ "reorder_window", "false", "true", NULL, "2" },
	{ "path_per_packet", "false", "true", NULL, "yes-ish" },
	{ "path_run_bytes", "0", "16M", NULL, "17M" },
};

static void test_bounds_of_every_option(void **state)
{
	char text[128], err[ERRLEN];
	struct conf c;

	for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
		const struct bound *b = &bounds[i];

		snprintf(text, sizeof(text), "%s = %s\n", b->name, b->lo);
		expect_ok(text, &c);
		snprintf(text, sizeof(text), "%s = %s\n", b->name, b->hi);
		expect_ok(text, &c);
		if (b->below) {
			snprintf(text, sizeof(text), "%s = %s\n", b->name, b->below);
			assert_true(parse(text, &c, err) < 0);
			assert_non_null(strstr(err, b->name));
		}
		snprintf(text, sizeof(text), "%s = %s\n", b->name, b->above);
		assert_true(parse(text, &c, err) < 0);
		assert_non_null(strstr(err, b->name));
	}
	/* the largest ring both may have */
	expect_ok("max_ring_depth = 65536\nring_depth = 65536\n", &c);
	expect_error("max_ring_depth = 65536\nring_depth = 131072\n", -ERANGE,
		     "t.conf:2: ring_depth: 131072 is out of range (16..65536)");
}

/* ---- reload ------------------------------------------------------------- */

static void test_reload_applies_reloadable_and_reports_the_rest(void **state)
{
	struct lines l = { .n = 0 };
	struct conf cur, next;

	conf_defaults(&cur);
	expect_ok("log_level = debug\n"
		  "ring_depth = 2048\n"
		  "max_clients = 100\n"
		  "allow_uids = 1000,1001\n"
		  "max_registered_bytes = 8G\n",
		  &next);
	assert_int_equal(conf_reload(&cur, &next, collect, &l, NULL, 0), 3);
	assert_int_equal(l.n, 5);
	/* reported in table order */
	assert_string_equal(l.text[0], "allow_uids: none -> 1000,1001");
	assert_string_equal(l.text[1], "max_clients: 64 -> 100");
	assert_string_equal(l.text[2], "max_registered_bytes: 4G -> 8G needs a restart; kept 4G");
	assert_string_equal(l.text[3], "ring_depth: 1024 -> 2048 needs a restart; kept 1024");
	assert_string_equal(l.text[4], "log_level: info -> debug");

	assert_int_equal(cur.log_level, LOG_LVL_DEBUG);
	assert_int_equal(cur.max_clients, 100);
	assert_int_equal(cur.n_allow_uids, 2);
	assert_int_equal(cur.allow_uids[1], 1001);
	assert_int_equal(cur.ring_depth, 1024);
	assert_int_equal(cur.max_registered_bytes, 4ULL << 30);

	/* the same file again applies nothing; the kept restarts are said again */
	l.n = 0;
	assert_int_equal(conf_reload(&cur, &next, collect, &l, NULL, 0), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.text[0], "max_registered_bytes: 4G -> 8G needs a restart; kept 4G");
}

/* What is applied (the new reloadable options beside the running
 * restart-only ones) must pass the checks between options. A reloadable
 * option that fails them only beside a restart-only one that changes too
 * is kept like it, and the rest applies: the whole reload was refused,
 * log_level with it, though the file was valid. */
static void test_reload_keeps_what_goes_with_kept_restarts(void **state)
{
	struct lines l = { .n = 0 };
	struct conf cur, next;
	char err[256];

	(void)state;
	expect_ok("peer_listen = 127.0.0.1:7000\nhost_name = x\npeers = a=127.0.0.1:7001\n", &cur);
	expect_ok("peer_listen = [::1]:7000\nhost_name = x\npeers = a=[::1]:7001\n"
		  "log_level = debug\n", &next);
	assert_int_equal(conf_reload(&cur, &next, collect, &l, err, sizeof(err)), 1);
	assert_int_equal(l.n, 3);
	/* reported in table order */
	assert_string_equal(l.text[0], "log_level: info -> debug");
	assert_string_equal(l.text[1], "peer_listen: 127.0.0.1:7000 -> [::1]:7000 needs a restart; "
				       "kept 127.0.0.1:7000");
	assert_string_equal(l.text[2], "peers: a=127.0.0.1:7001 -> a=[::1]:7001 goes with options "
				       "that need a restart; kept a=127.0.0.1:7001");
	assert_int_equal(cur.peers[0].addr.family, AF_INET);
	assert_int_equal(cur.log_level, LOG_LVL_DEBUG);
	assert_string_equal(err, "");
	/* peering off at start: peers wait for the restart that starts it */
	l.n = 0;
	conf_defaults(&cur);
	expect_ok("peer_listen = 127.0.0.1:7000\nhost_name = x\npeers = a=127.0.0.1:7001\n"
		  "peer_cc = a=swift\nlog_level = debug\n", &next);
	assert_int_equal(conf_reload(&cur, &next, collect, &l, err, sizeof(err)), 1);
	assert_int_equal(cur.n_peers, 0);
	assert_int_equal(cur.log_level, LOG_LVL_DEBUG);
	/* peers of the running family go through */
	expect_ok("peer_listen = 127.0.0.1:7000\nhost_name = x\npeers = a=127.0.0.1:7001\n", &cur);
	expect_ok("peer_listen = 127.0.0.1:7000\nhost_name = x\npeers = a=127.0.0.2:7001\n", &next);
	assert_int_equal(conf_reload(&cur, &next, collect, &l, err, sizeof(err)), 1);
	assert_int_equal(cur.peers[0].addr.family, AF_INET);
}

static void test_reload_every_reloadable_option(void **state)
{
	struct lines l = { .n = 0 };
	struct conf cur, next;

	conf_defaults(&cur);
	expect_ok("allow_all = false\nallow_uids = 5\nallow_gids = 6,7\nadmin_gid = 8\n"
		  "connect_same_user = true\n"
		  "max_clients = 9\nmax_clients_per_uid = 3\nctl_timeout_ms = 10\n"
		  "max_listen_backlog = 11\n"
		  "engine_idle_spin_us = 12\nlog_level = error\n",
		  &next);
	assert_int_equal(conf_reload(&cur, &next, collect, &l, NULL, 0), 11);
	assert_int_equal(l.n, 11);
	assert_string_equal(l.text[0], "allow_all: true -> false");
	assert_string_equal(l.text[2], "allow_gids: none -> 6,7");
	assert_string_equal(l.text[3], "admin_gid: -1 -> 8");
	assert_true(conf_equal(&cur, &next));
	/* a NULL report is allowed */
	conf_defaults(&cur);
	assert_int_equal(conf_reload(&cur, &next, NULL, NULL, NULL, 0), 11);
}

static void test_reload_ignores_every_restart_option(void **state)
{
	struct lines l = { .n = 0 };
	struct conf cur, next, def;

	conf_defaults(&cur);
	def = cur;
	expect_ok("max_endpoints_per_client = 2\nmax_mrs_per_client = 3\n"
		  "max_registered_bytes = 5M\nmax_conns_per_endpoint = 6\nmax_outstanding = 7\n"
		  "ring_depth = 32\nmax_ring_depth = 64\nmax_ctl_msg = 2K\n"
		  "engine_poll_batch = 9\nengine_cpu = 1\n",
		  &next);
	assert_int_equal(conf_reload(&cur, &next, collect, &l, NULL, 0), 0);
	assert_int_equal(l.n, 10);
	for (int i = 0; i < l.n; i++)
		assert_non_null(strstr(l.text[i], "needs a restart; kept"));
	assert_string_equal(l.text[7], "max_ctl_msg: 64K -> 2K needs a restart; kept 64K");
	assert_string_equal(l.text[9], "engine_cpu: -1 -> 1 needs a restart; kept -1");
	assert_true(conf_equal(&cur, &def));
}

/* ---- dump --------------------------------------------------------------- */

static void dump_to_text(const struct conf *c, char *text, size_t len, struct lines *l)
{
	l->n = 0;
	conf_dump(c, collect, l);
	text[0] = '\0';
	for (int i = 0; i < l->n; i++) {
		strncat(text, l->text[i], len - strlen(text) - 1);
		strncat(text, "\n", len - strlen(text) - 1);
	}
}

static void test_dump_lists_every_option(void **state)
{
	static char text[16384];
	struct lines l;
	struct conf c;

	conf_defaults(&c);
	dump_to_text(&c, text, sizeof(text), &l);
	assert_int_equal(l.n, 61);
	assert_string_equal(l.text[0], "allow_all = true");
	assert_string_equal(l.text[1], "allow_uids = none");
	assert_string_equal(l.text[3], "admin_gid = -1");
	assert_string_equal(l.text[9], "max_registered_bytes = 4G");
	assert_string_equal(l.text[14], "max_ctl_msg = 64K");
	assert_string_equal(l.text[15], "max_op_bytes = 64M");
	assert_string_equal(l.text[21], "engine_threads = 1");
	assert_string_equal(l.text[22], "engine_cpus = none");
	assert_string_equal(l.text[23], "lanes = 0");
	assert_string_equal(l.text[24], "lane_min_bytes = 64K");
	assert_string_equal(l.text[25], "log_level = info");
	assert_string_equal(l.text[26], "peer_listen = none");
	assert_string_equal(l.text[27], "peers = none");
	assert_string_equal(l.text[28], "dynamic_peers = 0");
	assert_string_equal(l.text[29], "peer_key_file = none");
	assert_string_equal(l.text[30], "host_name = auto");
	assert_string_equal(l.text[31], "data_address = auto");
	assert_string_equal(l.text[32], "data_port = 0");
	assert_string_equal(l.text[33], "data_paths = 64");
	assert_string_equal(l.text[34], "mtu = 1500");
	assert_string_equal(l.text[35], "peer_timeout_ms = 3000");
}

static void test_dump_round_trip(void **state)
{
	static char text[16384];
	char big[1024] = "allow_gids = ";
	struct conf a, b, def;
	struct lines l;

	/* the defaults */
	conf_defaults(&def);
	dump_to_text(&def, text, sizeof(text), &l);
	expect_ok(text, &b);
	assert_true(conf_equal(&def, &b));

	/* every option away from its default, full lists, odd sizes */
	for (int i = 0; i < CONF_MAX_IDS; i++)
		snprintf(big + strlen(big), sizeof(big) - strlen(big), "%s%u", i ? "," : "",
			 4294967294u - (unsigned)i);
	strcat(big, "\n");
	snprintf(text, sizeof(text),
		 "allow_all = false\nallow_uids = 0,65533,1000\n%sadmin_gid = 2147483647\nconnect_same_user = true\n"
		 "max_clients = 4096\nmax_clients_per_uid = 4096\nmax_endpoints_per_client = 1\n"
		 "max_mrs_per_client = 65536\n"
		 "max_registered_bytes = 1099511627775\nmax_conns_per_endpoint = 3\n"
		 "max_outstanding = 65536\nring_depth = 16\nmax_ring_depth = 65536\n"
		 "max_ctl_msg = 1025\nctl_timeout_ms = 600000\nmax_listen_backlog = 4096\n"
		 "engine_idle_spin_us = 0\nengine_poll_batch = 1024\nengine_cpu = 4095\n"
		 "log_level = error\npeer_listen = [fd00::1]:65535\n"
		 "peers = a=[fd00::2]:1, b.c-d_e=[fd00::a:1]:7000\ndynamic_peers = 64\n"
		 "peer_key_file = /etc/uccl/peer key\n"
		 "host_name = Host-01.example\ndata_address = fd00::3\ndata_port = 65279\n"
		 "data_paths = 256\nmtu = 9000\npeer_timeout_ms = 60000\ncc = hint\n"
		 "peer_cc = a=swift, b.c-d_e=none\n",
		 big);
	expect_ok(text, &a);
	assert_int_equal(a.n_allow_gids, CONF_MAX_IDS);
	dump_to_text(&a, text, sizeof(text), &l);
	expect_ok(text, &b);
	assert_true(conf_equal(&a, &b));
	assert_false(conf_equal(&a, &def));

	/* a size dumps with the largest suffix that is exact, and parses back */
	expect_ok("max_registered_bytes = 3072M\n", &a);
	dump_to_text(&a, text, sizeof(text), &l);
	assert_string_equal(l.text[9], "max_registered_bytes = 3G");
	expect_ok("max_registered_bytes = 1049600\n", &a);
	dump_to_text(&a, text, sizeof(text), &l);
	assert_string_equal(l.text[9], "max_registered_bytes = 1025K");
	expect_ok(text, &b);
	assert_true(conf_equal(&a, &b));
}

/* ---- peering options ------------------------------------------------------ */

static void test_peer_options(void **state)
{
	struct conf c;
	char buf[128];

	/* the congestion controller: default, and each registered name */
	expect_ok("", &c);
	assert_string_equal(c.cc, "window");
	expect_ok("cc = dcqcn\n", &c);
	assert_string_equal(c.cc, "dcqcn");

	expect_ok("peer_listen = 127.0.0.1:7000\n"
		  "peers = node-b=127.0.0.2:7001, x_9.Y=10.0.0.1:1\n"
		  "host_name = node-a\ndata_address = 192.168.1.5\ndata_port = 40000\n"
		  "data_paths = 8\nmtu = 9000\npeer_timeout_ms = 1000\n",
		  &c);
	assert_int_equal(c.peer_listen.family, AF_INET);
	assert_int_equal(c.peer_listen.port, 7000);
	conf_addr_fmt(&c.peer_listen, true, buf, sizeof(buf));
	assert_string_equal(buf, "127.0.0.1:7000");
	assert_int_equal(c.n_peers, 2);
	assert_string_equal(c.peers[0].name, "node-b");
	assert_int_equal(c.peers[0].addr.port, 7001);
	conf_addr_fmt(&c.peers[0].addr, false, buf, sizeof(buf));
	assert_string_equal(buf, "127.0.0.2");
	assert_string_equal(c.peers[1].name, "x_9.Y");
	assert_string_equal(c.host_name, "node-a");
	conf_addr_fmt(&c.data_address, false, buf, sizeof(buf));
	assert_string_equal(buf, "192.168.1.5");
	assert_int_equal(c.data_port, 40000);
	assert_int_equal(c.data_paths, 8);
	assert_int_equal(c.mtu, 9000);
	assert_int_equal(c.peer_timeout_ms, 1000);

	/* IPv6 in brackets with a port; data_address with or without them;
	 * the keywords give back the defaults */
	expect_ok("peer_listen = [::1]:7000\npeers = b=[fe80::1:2]:65535\n"
		  "data_address = [fd00::7]\nhost_name = AUTO\n", &c);
	assert_int_equal(c.peer_listen.family, AF_INET6);
	conf_addr_fmt(&c.peers[0].addr, true, buf, sizeof(buf));
	assert_string_equal(buf, "[fe80::1:2]:65535");
	conf_addr_fmt(&c.data_address, false, buf, sizeof(buf));
	assert_string_equal(buf, "fd00::7");
	assert_string_equal(c.host_name, "");
	expect_ok("peer_listen = none\npeers = none\ndata_address = auto\nhost_name = auto\n", &c);
	assert_int_equal(c.peer_listen.family, 0);
	assert_int_equal(c.n_peers, 0);
	assert_int_equal(c.data_address.family, 0);
	/* a wildcard listener with an explicit data address */
	expect_ok("peer_listen = 0.0.0.0:7000\ndata_address = 10.0.0.1\n", &c);
	assert_true(conf_addr_is_any(&c.peer_listen));
	/* "[::]" listens for both families, so IPv4 peers may follow it */
	expect_ok("peer_listen = [::]:7000\ndata_address = fd00::1\npeers = a=10.0.0.2:7000\n", &c);
}

static void test_peer_option_errors(void **state)
{
	expect_error("peer_listen = 127.0.0.1\n", -EINVAL,
		     "t.conf:1: peer_listen: '127.0.0.1' is not a numeric address:port (IPv6 as "
		     "[addr]:port) or none");
	expect_error("peer_listen = ::1:7000\n", -EINVAL,
		     "t.conf:1: peer_listen: '::1:7000' is not a numeric address:port (IPv6 as "
		     "[addr]:port) or none");
	expect_error("peer_listen = [127.0.0.1]:7000\n", -EINVAL,
		     "t.conf:1: peer_listen: '[127.0.0.1]:7000' is not a numeric address:port "
		     "(IPv6 as [addr]:port) or none");
	expect_error("peer_listen = localhost:7000\n", -EINVAL,
		     "t.conf:1: peer_listen: 'localhost:7000' is not a numeric address:port "
		     "(IPv6 as [addr]:port) or none");
	expect_error("peer_listen = 127.0.0.1:0\n", -ERANGE,
		     "t.conf:1: peer_listen: port in '127.0.0.1:0' is out of range (1..65535)");
	expect_error("peer_listen = 127.0.0.1:65536\n", -ERANGE,
		     "t.conf:1: peer_listen: port in '127.0.0.1:65536' is out of range (1..65535)");
	expect_error("peer_listen = 127.0.0.1:7x\n", -EINVAL,
		     "t.conf:1: peer_listen: '127.0.0.1:7x' is not a numeric address:port (IPv6 as "
		     "[addr]:port) or none");
	expect_error("peer_listen = 127.0.0.1:1\npeers = b\n", -EINVAL,
		     "t.conf:2: peers: 'b' is not name=address:port");
	expect_error("peer_listen = 127.0.0.1:1\npeers = b=127.0.0.2:1,,c=127.0.0.3:1\n", -EINVAL,
		     "t.conf:2: peers: empty entry in list");
	expect_error("peer_listen = 127.0.0.1:1\npeers = b/c=127.0.0.2:1\n", -EINVAL,
		     "t.conf:2: peers: 'b/c' is not a name of 1..32 characters of A-Z a-z 0-9 . _ -");
	expect_error("peer_listen = 127.0.0.1:1\npeers = =127.0.0.2:1\n", -EINVAL,
		     "t.conf:2: peers: '' is not a name of 1..32 characters of A-Z a-z 0-9 . _ -");
	expect_error("peer_listen = 127.0.0.1:1\n"
		     "peers = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=127.0.0.2:1\n", -EINVAL,
		     "t.conf:2: peers: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' is not a name of 1..32 "
		     "characters of A-Z a-z 0-9 . _ -");
	expect_error("peer_listen = 127.0.0.1:1\npeers = b=host:1\n", -EINVAL,
		     "t.conf:2: peers: b: 'host:1' is not a numeric address:port (IPv6 as "
		     "[addr]:port)");
	expect_error("peer_listen = 127.0.0.1:1\npeers = b=127.0.0.2:99999\n", -ERANGE,
		     "t.conf:2: peers: b: port in '127.0.0.2:99999' is out of range (1..65535)");
	expect_error("peer_listen = 127.0.0.1:1\npeers = b=127.0.0.2:1, b=127.0.0.3:1\n", -EINVAL,
		     "t.conf:2: peers: duplicate name 'b'");
	expect_error("peer_listen = 127.0.0.1:1\npeers = b=127.0.0.2:1\npeers = c=127.0.0.2:1\n",
		     -EINVAL, "t.conf:3: peers: b and c have the same address 127.0.0.2:1");
	/* one host may run several daemons (tests do): the ports tell them apart */
	expect_ok("peer_listen = 127.0.0.1:1\npeers = b=127.0.0.2:1\npeers = c=127.0.0.2:2\n",
		  &(struct conf){ 0 });
	expect_error("host_name = my host\n", -EINVAL,
		     "t.conf:1: host_name: 'my host' is not a name of 1..32 characters of A-Z a-z "
		     "0-9 . _ -");
	expect_error("peer_key_file = etc/uccl/peer.key\n", -EINVAL,
		     "t.conf:1: peer_key_file: 'etc/uccl/peer.key' is not an absolute file name of at "
		     "most 255 characters, or none");
	{
		char longp[300] = "peer_key_file = /", err[ERRLEN];
		struct conf c;

		memset(longp + strlen(longp), 'k', 255);   /* 256 characters with the slash */
		strcat(longp, "\n");
		assert_true(parse(longp, &c, err) < 0);
		longp[strlen(longp) - 2] = '\n';             /* 255 */
		longp[strlen(longp) - 1] = '\0';
		expect_ok(longp, &c);
		assert_int_equal(strlen(c.peer_key_file), 255);
		expect_ok("peer_key_file = NONE\n", &c);
		assert_string_equal(c.peer_key_file, "");
	}
	expect_error("data_address = 10.0.0.256\n", -EINVAL,
		     "t.conf:1: data_address: '10.0.0.256' is not a numeric IPv4 or IPv6 address or "
		     "auto");
	expect_error("peer_listen = none\npeer_listen = none\n", -EINVAL,
		     "t.conf:2: duplicate option 'peer_listen' (first set on line 1)");
	/* between options */
	expect_error("peers = b=127.0.0.2:1\n", -EINVAL,
		     "t.conf:1: peers: needs peer_listen (peering is off without it)");
	expect_error("peer_listen = 0.0.0.0:7000\n", -EINVAL,
		     "t.conf:1: data_address: must be set when peer_listen is a wildcard address");
	expect_error("peer_listen = [::]:7000\n# x\n", -EINVAL,
		     "t.conf:1: data_address: must be set when peer_listen is a wildcard address");
	/* what the start refuses, refused here too */
	expect_error("peer_listen = 127.0.0.1:7000\ndata_address = 0.0.0.0\n", -EINVAL,
		     "t.conf:2: data_address: a wildcard address cannot be announced to peers");
	expect_ok("data_address = 0.0.0.0\n", &(struct conf){ 0 });   /* no data plane: unused */
	/* without peering, engine threads send to each other at it */
	expect_error("data_address = ::\nengine_threads = 2\n", -EINVAL,
		     "t.conf:2: data_address: a wildcard address cannot be sent to (with "
		     "engine_threads = 2 the threads send to each other at it)");
	expect_ok("data_address = 127.0.0.2\nengine_threads = 2\n", &(struct conf){ 0 });
	/* peers of the listener's family send to it from sockets of that family */
	expect_error("data_address = ::1\npeer_listen = 127.0.0.1:7000\n", -EINVAL,
		     "t.conf:2: data_address: IPv6 but peer_listen is IPv4 (peers could not reach it)");
	expect_error("peer_listen = [::1]:7000\ndata_address = 127.0.0.1\n", -EINVAL,
		     "t.conf:2: data_address: IPv4 but peer_listen is IPv6 (peers could not reach it)");
	expect_ok("peer_listen = [::]:7000\ndata_address = 127.0.0.1\n", &(struct conf){ 0 });
	expect_error("peer_listen = 0.0.0.0:7000\ndata_address = fd00::1\n", -EINVAL,
		     "t.conf:2: data_address: IPv6 but peer_listen is IPv4 (peers could not reach it)");
	expect_ok("peer_listen = 127.0.0.1:7000\ndata_address = 127.0.0.2\n", &(struct conf){ 0 });
	expect_error("peers = b=[fd00::2]:1\npeer_listen = 10.0.0.1:1\n", -EINVAL,
		     "t.conf:2: peers: b is IPv6 but peer_listen is IPv4");
	/* ::ffff:a.b.c.d is that IPv4 address: the same host as written so,
	 * and of its family (a peer connecting from it is seen as IPv4) */
	expect_error("peer_listen = [::]:7000\ndata_address = 10.0.0.1\n"
		     "peers = a=10.0.0.2:7470, b=[::ffff:10.0.0.2]:7470\n", -EINVAL,
		     "t.conf:3: peers: a and b have the same address 10.0.0.2:7470");
	expect_error("peer_listen = [fd00::1]:7000\npeers = b=[::ffff:10.0.0.2]:7470\n", -EINVAL,
		     "t.conf:2: peers: b is IPv4 but peer_listen is IPv6");
	{
		struct conf c;

		expect_ok("peer_listen = [::ffff:127.0.0.1]:7000\n", &c);
		assert_int_equal(c.peer_listen.family, AF_INET);
		assert_memory_equal(c.peer_listen.addr, ((uint8_t[16]){ 127, 0, 0, 1 }), 16);
		assert_int_equal(c.peer_listen.port, 7000);
		expect_ok("data_address = ::ffff:127.0.0.2\n", &c);
		assert_int_equal(c.data_address.family, AF_INET);
	}
	/* the line of the entry, not the last peers line */
	expect_error("peer_listen = 10.0.0.1:1\npeers = b=[fd00::2]:1\npeers = c=10.0.0.3:1\n",
		     -EINVAL, "t.conf:2: peers: b is IPv6 but peer_listen is IPv4");
	expect_error("data_paths = 256\ndata_port = 65281\n", -EINVAL,
		     "t.conf:2: data_port 65281 + data_paths 256 runs past port 65535");
	expect_ok("data_paths = 256\ndata_port = 65280\n", &(struct conf){ 0 });
}

/* "peers" may be given on several lines, up to 64 entries in all; a dump
 * of a long list splits it into lines that parse back under the limit. */
static void test_peers_add_up_over_lines(void **state)
{
	static char text[16384], line[4096];
	static struct lines l;
	struct conf a, b;

	strcpy(text, "peer_listen = [fd00::ffff]:7000\n");
	for (int i = 0; i < CONF_MAX_PEERS; i += 8) {
		strcpy(line, "peers = ");
		for (int k = i; k < i + 8; k++)
			snprintf(line + strlen(line), sizeof(line) - strlen(line),
				 "%speer-with-a-long-name-number-%03d=[fd00:1234:5678:9abc:def0:1234:5678:%x]"
				 ":65000", k > i ? "," : "", k, k + 1);
		strcat(line, "\n");
		strcat(text, line);
	}
	expect_ok(text, &a);
	assert_int_equal(a.n_peers, CONF_MAX_PEERS);
	assert_string_equal(a.peers[63].name, "peer-with-a-long-name-number-063");
	assert_int_equal(a.peers[63].addr.addr[15], 64);

	dump_to_text(&a, text, sizeof(text), &l);
	assert_int_equal(l.n, 61 + 3);   /* peers on 4 lines of 16 */
	for (int i = 0; i < l.n; i++)
		assert_true(strlen(l.text[i]) < 2048);
	expect_ok(text, &b);
	assert_true(conf_equal(&a, &b));

	/* one more is too many, on whichever line it comes */
	strcat(text, "peers = one-more=[fd00::1]:1\n");
	expect_error(text, -E2BIG, "t.conf:65: peers: more than 64 entries");
}

static void test_reload_peer_options(void **state)
{
	struct lines l = { .n = 0 };
	struct conf cur, next;

	expect_ok("peer_listen = 127.0.0.1:7000\npeers = b=127.0.0.2:7000\n", &cur);
	expect_ok("peer_listen = 127.0.0.1:7001\npeers = b=127.0.0.2:7000,c=127.0.0.3:7000\n"
		  "host_name = h\ndata_address = 10.0.0.1\ndata_port = 5000\ndata_paths = 2\n"
		  "mtu = 9000\npeer_timeout_ms = 500\n", &next);
	assert_int_equal(conf_reload(&cur, &next, collect, &l, NULL, 0), 2);
	assert_int_equal(l.n, 8);
	assert_string_equal(l.text[0], "peer_listen: 127.0.0.1:7000 -> 127.0.0.1:7001 needs a "
				       "restart; kept 127.0.0.1:7000");
	assert_string_equal(l.text[1], "peers: b=127.0.0.2:7000 -> b=127.0.0.2:7000,"
				       "c=127.0.0.3:7000");
	assert_string_equal(l.text[2], "host_name: auto -> h needs a restart; kept auto");
	assert_string_equal(l.text[3], "data_address: auto -> 10.0.0.1 needs a restart; kept auto");
	assert_string_equal(l.text[7], "peer_timeout_ms: 3000 -> 500");
	assert_int_equal(cur.n_peers, 2);
	assert_string_equal(cur.peers[1].name, "c");
	assert_int_equal(cur.peer_timeout_ms, 500);
	assert_int_equal(cur.peer_listen.port, 7000);
	assert_int_equal(cur.mtu, 1500);
}

/* peer_cc: a controller per peer, overriding cc; entries add up over lines;
 * every name must be a peer and every controller a known one. */
static void test_peer_cc(void **state)
{
	static char text[16384], line[4096];
	static struct lines l;
	struct conf c, b;

	expect_ok("", &c);
	assert_int_equal(c.n_peer_cc, 0);
	assert_string_equal(conf_cc_of(&c, "anyone"), "window");

	expect_ok("peer_listen = 127.0.0.1:7000\npeers = b=127.0.0.2:1, c=127.0.0.3:1, d=127.0.0.4:1\n"
		  "cc = swift\npeer_cc = b=dcqcn , c = none\n", &c);
	assert_int_equal(c.n_peer_cc, 2);
	assert_string_equal(c.peer_cc[0].name, "b");
	assert_string_equal(c.peer_cc[0].cc, "dcqcn");
	assert_string_equal(conf_cc_of(&c, "b"), "dcqcn");
	assert_string_equal(conf_cc_of(&c, "c"), "none");
	assert_string_equal(conf_cc_of(&c, "d"), "swift");   /* no entry: cc */

	/* none is the empty list, not a clearing of earlier lines */
	expect_error("peer_listen = 127.0.0.1:7000\npeers = b=127.0.0.2:1\npeer_cc = b=swift\n"
		     "peer_cc = none\n", -EINVAL,
		     "t.conf:4: peer_cc: none after entries on an earlier line (lines add up; "
		     "remove those)");
	expect_error("peer_listen = 127.0.0.1:7000\npeers = b=127.0.0.2:1\npeers = none\n", -EINVAL,
		     "t.conf:3: peers: none after entries on an earlier line (lines add up; "
		     "remove those)");

	/* an unknown name is blamed on the line that has it, not the last one */
	expect_error("peer_listen = 127.0.0.1:7000\npeers = b=127.0.0.2:1\npeer_cc = x=swift\n"
		     "peer_cc = b=swift\n", -EINVAL, "t.conf:3: peer_cc: no peer named 'x' in peers");
	expect_error("peer_cc = x=swift\npeer_cc = b=swift\npeer_listen = 127.0.0.1:7000\n"
		     "peers = b=127.0.0.2:1\n", -EINVAL, "t.conf:4: peer_cc: no peer named 'x' in peers");

	/* peer_cc may come before peers */
	expect_ok("peer_cc = b=timely\npeer_listen = 127.0.0.1:7000\npeers = b=127.0.0.2:1\n", &c);
	assert_string_equal(conf_cc_of(&c, "b"), "timely");

	/* a full list dumps on one line and parses back */
	strcpy(text, "peer_listen = [fd00::ffff]:7000\n");
	for (int i = 0; i < CONF_MAX_PEERS; i += 8) {
		strcpy(line, "peers = ");
		for (int k = i; k < i + 8; k++)
			snprintf(line + strlen(line), sizeof(line) - strlen(line),
				 "%speer-with-a-long-name-number-%03d=[fd00::%x]:1", k > i ? "," : "",
				 k, k + 1);
		strcat(text, line);
		strcat(text, "\n");
		strcpy(line, "peer_cc = ");
		for (int k = i; k < i + 8; k++)
			snprintf(line + strlen(line), sizeof(line) - strlen(line),
				 "%speer-with-a-long-name-number-%03d=%s", k > i ? "," : "", k,
				 k % 2 ? "timely" : "dcqcn");
		strcat(text, line);
		strcat(text, "\n");
	}
	expect_ok(text, &c);
	assert_int_equal(c.n_peer_cc, CONF_MAX_PEERS);
	assert_string_equal(conf_cc_of(&c, "peer-with-a-long-name-number-063"), "timely");
	dump_to_text(&c, text, sizeof(text), &l);
	for (int i = 0; i < l.n; i++)
		assert_true(strlen(l.text[i]) < 4096);
	expect_ok(text, &b);
	assert_true(conf_equal(&c, &b));
	strcat(text, "peer_cc = one-more=window\n");
	expect_error(text, -E2BIG, "t.conf:65: peer_cc: more than 64 entries");
}

static void test_peer_cc_errors(void **state)
{
	(void)state;
	expect_error("peer_listen = 127.0.0.1:1\npeers = b=127.0.0.2:1\npeer_cc = b=cubic\n", -EINVAL,
		     "t.conf:3: peer_cc: b: unknown congestion controller 'cubic' (known: "
		     "window,swift,timely,dcqcn,hint,eqds,none)");
	expect_error("peer_listen = 127.0.0.1:1\npeers = b=127.0.0.2:1\npeer_cc = b=\n", -EINVAL,
		     "t.conf:3: peer_cc: b: unknown congestion controller '' (known: "
		     "window,swift,timely,dcqcn,hint,eqds,none)");
	expect_error("peer_listen = 127.0.0.1:1\npeers = b=127.0.0.2:1\npeer_cc = c=swift\n", -EINVAL,
		     "t.conf:3: peer_cc: no peer named 'c' in peers");
	/* blamed on the later of the two lines */
	expect_error("peer_cc = c=swift\npeer_listen = 127.0.0.1:1\npeers = b=127.0.0.2:1\n", -EINVAL,
		     "t.conf:3: peer_cc: no peer named 'c' in peers");
	expect_error("peer_cc = b=swift\n", -EINVAL, "t.conf:1: peer_cc: no peer named 'b' in peers");
	expect_error("peer_listen = 127.0.0.1:1\npeers = b=127.0.0.2:1\npeer_cc = b\n", -EINVAL,
		     "t.conf:3: peer_cc: 'b' is not name=controller");
	expect_error("peer_listen = 127.0.0.1:1\npeers = b=127.0.0.2:1\npeer_cc = b=swift,\n",
		     -EINVAL, "t.conf:3: peer_cc: empty entry in list");
	expect_error("peer_listen = 127.0.0.1:1\npeers = b=127.0.0.2:1\npeer_cc = b/x=swift\n",
		     -EINVAL, "t.conf:3: peer_cc: 'b/x' is not a name of 1..32 characters of A-Z a-z "
		     "0-9 . _ -");
	expect_error("peer_listen = 127.0.0.1:1\npeers = b=127.0.0.2:1\npeer_cc = b=swift\n"
		     "peer_cc = b=hint\n", -EINVAL, "t.conf:4: peer_cc: duplicate name 'b'");
	expect_error("peer_listen = 127.0.0.1:1\npeers = b=127.0.0.2:1\n"
		     "peer_cc = b=swiftswiftswiftswift\n", -EINVAL,
		     "t.conf:3: peer_cc: b: unknown congestion controller 'swiftswiftswiftswift' "
		     "(known: window,swift,timely,dcqcn,hint,eqds,none)");
}

/* peer_cc is reloadable (the daemon switches live channels); cc is not. */
static void test_reload_peer_cc(void **state)
{
	struct lines l = { .n = 0 };
	struct conf cur, next;

	(void)state;
	expect_ok("peer_listen = 127.0.0.1:7000\npeers = b=127.0.0.2:7000,c=127.0.0.3:7000\n"
		  "peer_cc = b=swift\n", &cur);
	expect_ok("peer_listen = 127.0.0.1:7000\npeers = b=127.0.0.2:7000,c=127.0.0.3:7000\n"
		  "peer_cc = c=hint,b=dcqcn\ncc = timely\n", &next);
	assert_int_equal(conf_reload(&cur, &next, collect, &l, NULL, 0), 1);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.text[0], "cc: window -> timely needs a restart; kept window");
	assert_string_equal(l.text[1], "peer_cc: b=swift -> c=hint,b=dcqcn");
	assert_string_equal(conf_cc_of(&cur, "b"), "dcqcn");
	assert_string_equal(conf_cc_of(&cur, "c"), "hint");
	assert_string_equal(cur.cc, "window");
}

/* ---- conf_load ----------------------------------------------------------- */

static char *write_temp(const char *text, size_t len)
{
	char *path = strdup("/tmp/test_conf.XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	return path;
}

static void test_load_file(void **state)
{
	static const char text[] = "# site config\nmax_clients = 12\nlog_level = warn\n";
	char *path = write_temp(text, sizeof(text) - 1);
	char err[ERRLEN], want[ERRLEN];
	struct conf c;

	assert_int_equal(conf_load(path, &c, err, sizeof(err)), 0);
	assert_int_equal(c.max_clients, 12);
	assert_int_equal(c.log_level, LOG_LVL_WARN);
	unlink(path);
	free(path);

	/* messages name the file by the path it was loaded from */
	path = write_temp("max_clients = 12\nring_depth = 3\n", 32);
	assert_int_equal(conf_load(path, &c, err, sizeof(err)), -ERANGE);
	snprintf(want, sizeof(want), "%s:2: ring_depth: 3 is out of range (16..65536)", path);
	assert_string_equal(err, want);
	unlink(path);
	free(path);
}

static void test_load_missing_file(void **state)
{
	char err[ERRLEN];
	struct conf c;

	assert_int_equal(conf_load("/nonexistent/uccl.conf", &c, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "/nonexistent/uccl.conf: No such file or directory");
}

static void test_load_refuses_huge_file(void **state)
{
	size_t len = (1u << 20) + 1;
	char *text = malloc(len), *path;
	char err[ERRLEN], want[ERRLEN];
	struct conf c;

	/* a megabyte of blank lines is fine; one byte more is not */
	memset(text, '\n', len);
	path = write_temp(text, len - 1);
	assert_int_equal(conf_load(path, &c, err, sizeof(err)), 0);
	unlink(path);
	free(path);
	path = write_temp(text, len);
	assert_int_equal(conf_load(path, &c, err, sizeof(err)), -EFBIG);
	snprintf(want, sizeof(want), "%s: larger than 1048576 bytes", path);
	assert_string_equal(err, want);
	unlink(path);
	free(path);
	free(text);
}

/* ---- the shipped example ---------------------------------------------------- */

/* conf/uccl.conf.example shows every option, commented out, at its default:
 * uncommented it must parse to exactly the built-in defaults. */
static void test_example_shows_every_default(void **state)
{
	const char *top = getenv("top_srcdir");
	char path[4096], line[4096];
	static char text[65536];
	size_t len = 0;
	int options = 0;
	struct conf c, def;
	FILE *f;

	snprintf(path, sizeof(path), "%s/conf/uccl.conf.example", top ? top : ".");
	f = fopen(path, "r");
	if (!f)
		skip();
	while (fgets(line, sizeof(line), f)) {
		const char *l = line;

		/* "#key = value": an option; "# text": prose, dropped */
		if (line[0] == '#' && line[1] >= 'a' && line[1] <= 'z' && strstr(line, " = ")) {
			l = line + 1;
			options++;
		} else if (line[0] == '#') {
			continue;
		}
		assert_true(len + strlen(l) < sizeof(text));
		memcpy(text + len, l, strlen(l));
		len += strlen(l);
	}
	fclose(f);
	assert_int_equal(options, 61);
	assert_int_equal(conf_parse(path, text, len, &c, NULL, 0), 0);
	conf_defaults(&def);
	assert_true(conf_equal(&c, &def));
	assert_int_equal(conf_load(path, &c, NULL, 0), 0);
	assert_true(conf_equal(&c, &def));
}

/* host_name: the one set, else the host's name, else (a long DNS name)
 * its part before the first dot; a name neither way is -EINVAL. The host
 * names are set in a UTS namespace of a child (root only). */
static int host_name_child(const char *host, const char *want)
{
	struct conf c = { 0 };
	char out[256];
	int r;

	if (unshare(CLONE_NEWUTS) < 0 || sethostname(host, strlen(host)) < 0)
		return 77;
	r = conf_host_name(&c, out, sizeof(out));
	if (!want)
		return r == -EINVAL ? 0 : 1;
	return r == 0 && strcmp(out, want) == 0 ? 0 : 1;
}

static void test_host_name_auto(void **state)
{
	static const struct { const char *host, *want; } cases[] = {
		{ "node-7", "node-7" },
		{ "ip-172-31-22-155.us-west-2.compute.internal", "ip-172-31-22-155" },
		{ "a-name-that-is-longer-than-thirty-two", NULL },
		{ "bad!name", NULL },
	};
	struct conf c = { 0 };
	char out[64];

	(void)state;
	snprintf(c.host_name, sizeof(c.host_name), "given");
	assert_int_equal(conf_host_name(&c, out, sizeof(out)), 0);
	assert_string_equal(out, "given");
	if (geteuid() != 0) {
		print_message("not root: host names in a namespace of their own skipped\n");
		return;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pid_t pid = fork();
		int st = 0;

		assert_true(pid >= 0);
		if (pid == 0)
			_exit(host_name_child(cases[i].host, cases[i].want));
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		if (WEXITSTATUS(st) == 77) {
			print_message("no UTS namespace here: host names skipped\n");
			return;
		}
		if (WEXITSTATUS(st) != 0)
			fail_msg("host name %s: want %s", cases[i].host, cases[i].want ? cases[i].want : "-EINVAL");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_host_name_auto),
		cmocka_unit_test(test_empty_and_comments_are_defaults),
		cmocka_unit_test(test_whitespace_comments_crlf),
		cmocka_unit_test(test_bool_spellings),
		cmocka_unit_test(test_size_suffixes_are_binary),
		cmocka_unit_test(test_signed_values),
		cmocka_unit_test(test_log_levels),
		cmocka_unit_test(test_id_lists),
		cmocka_unit_test(test_id_list_holds_conf_max_ids),
		cmocka_unit_test(test_error_unknown_option),
		cmocka_unit_test(test_error_missing_equals),
		cmocka_unit_test(test_error_empty_value),
		cmocka_unit_test(test_error_bad_number),
		cmocka_unit_test(test_error_trailing_junk),
		cmocka_unit_test(test_error_out_of_range_names_the_range),
		cmocka_unit_test(test_error_duplicate_option),
		cmocka_unit_test(test_error_line_too_long),
		cmocka_unit_test(test_error_ring_depth_power_of_two),
		cmocka_unit_test(test_error_ring_depth_over_max),
		cmocka_unit_test(test_error_transport_refuses),
		cmocka_unit_test(test_error_nul_byte),
		cmocka_unit_test(test_error_bad_bool_level_list),
		cmocka_unit_test(test_error_message_is_sanitized_and_bounded),
		cmocka_unit_test(test_error_leaves_output_untouched),
		cmocka_unit_test(test_bounds_of_every_option),
		cmocka_unit_test(test_reload_applies_reloadable_and_reports_the_rest),
		cmocka_unit_test(test_reload_every_reloadable_option),
		cmocka_unit_test(test_reload_keeps_what_goes_with_kept_restarts),
		cmocka_unit_test(test_reload_ignores_every_restart_option),
		cmocka_unit_test(test_dump_lists_every_option),
		cmocka_unit_test(test_dump_round_trip),
		cmocka_unit_test(test_engine_threads),
		cmocka_unit_test(test_peer_options),
		cmocka_unit_test(test_peer_option_errors),
		cmocka_unit_test(test_peers_add_up_over_lines),
		cmocka_unit_test(test_reload_peer_options),
		cmocka_unit_test(test_peer_cc),
		cmocka_unit_test(test_peer_cc_errors),
		cmocka_unit_test(test_reload_peer_cc),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_load_missing_file),
		cmocka_unit_test(test_load_refuses_huge_file),
		cmocka_unit_test(test_example_shows_every_default),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
