/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for peer: two peer managers in one event loop, on 127.0.0.1,
 * meet each other. Pins what the data path will rely on and the integration
 * test cannot see: the tokens cross (what one sends is what the other
 * expects), peer_get and the up/down notifications, lookups with their
 * every outcome, cancellation, and reload adding and removing peers.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "daemon/conf.h"
#include "daemon/log.h"
#include "daemon/peer.h"

struct side {
	struct peermgr *pm;
	char conf_text[512];
	int ups, downs;
	uint64_t last_generation;
};

struct lk {
	int calls;
	int status;
	uint32_t ep_id;
};

static struct event_base *base;
static int port_a, port_b, port_c;

static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

/* B resolves "svc" to endpoint 7 and nothing else. */
static int resolve_b(void *arg, const char *name, uint32_t *ep_id)
{
	(void)arg;
	if (strcmp(name, "svc") != 0)
		return -ENOENT;
	*ep_id = 7;
	return 0;
}

static void notify(void *arg, const char *name, bool up, uint64_t generation)
{
	struct side *s = arg;

	(void)name;
	if (up)
		s->ups++;
	else
		s->downs++;
	s->last_generation = generation;
}

static void lookup_cb(void *arg, int status, uint32_t ep_id)
{
	struct lk *l = arg;

	l->calls++;
	l->status = status;
	l->ep_id = ep_id;
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Run the loop until *flag is true or ms pass; returns *flag. */
static bool run_until(const bool *flag, int ms)
{
	uint64_t end = ms_now() + (uint64_t)ms;

	while (!*flag && ms_now() < end) {
		struct timeval tv = { 0, 10000 };

		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
	return *flag;
}

static void run_ms(int ms)
{
	bool never = false;

	run_until(&never, ms);
}

static int start(struct side *s, const char *name, int port, const char *peers, int data_port,
		 peer_resolve_fn resolve)
{
	struct conf c;
	char err[256];
	int r;

	snprintf(s->conf_text, sizeof(s->conf_text),
		 "peer_listen = 127.0.0.1:%d\npeers = %s\nhost_name = %s\ndata_port = %d\n"
		 "data_paths = 4\nmtu = 9000\npeer_timeout_ms = 1000\n",
		 port, peers, name, data_port);
	r = conf_parse("t.conf", s->conf_text, strlen(s->conf_text), &c, err, sizeof(err));
	if (r < 0)
		fail_msg("%s", err);
	r = peermgr_start(base, &c, resolve, NULL, &s->pm);
	if (r == 0)
		peermgr_set_notify(s->pm, notify, s);
	return r;
}

static bool both_up(struct side *a, struct side *b)
{
	struct peer_info i;

	return peer_get(a->pm, "b", &i) == 0 && peer_get(b->pm, "a", &i) == 0;
}

static char peers_ab[128];

static int setup(void **state)
{
	base = event_base_new();
	port_a = free_port();
	port_b = free_port();
	port_c = free_port();
	snprintf(peers_ab, sizeof(peers_ab), "a=127.0.0.1:%d, b=127.0.0.1:%d", port_a, port_b);
	return base ? 0 : -1;
}

static int teardown(void **state)
{
	event_base_free(base);
	return 0;
}

/* ---- the tests ------------------------------------------------------------ */

static bool up_flag(struct side *a, struct side *b, bool *flag)
{
	uint64_t end = ms_now() + 5000;

	*flag = false;
	while (!*flag && ms_now() < end) {
		run_ms(20);
		*flag = both_up(a, b);
	}
	return *flag;
}

static void test_meet_tokens_cross(void **state)
{
	struct side a = { 0 }, b = { 0 };
	struct peer_info ia, ib;
	bool up;

	assert_int_equal(start(&a, "a", port_a, peers_ab, 40000, NULL), 0);
	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	assert_int_equal(peer_get(a.pm, "b", &ia), -ENOTCONN);
	assert_int_equal(peer_get(a.pm, "nobody", &ia), -ENOENT);
	assert_true(up_flag(&a, &b, &up));

	assert_int_equal(peer_get(a.pm, "b", &ia), 0);
	assert_int_equal(peer_get(b.pm, "a", &ib), 0);
	/* what each sends is what the other expects */
	assert_true(ia.tx_token != 0 && ia.rx_token != 0);
	assert_true(ia.tx_token == ib.rx_token);
	assert_true(ia.rx_token == ib.tx_token);
	assert_int_equal(ia.data_addr.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&ia.data_addr)->sin_port), 40100);
	assert_int_equal(ntohs(((struct sockaddr_in *)&ib.data_addr)->sin_port), 40000);
	assert_int_equal(ia.data_paths, 4);
	assert_int_equal(ia.mtu, 9000);
	assert_int_equal(ia.generation, 1);
	assert_int_equal(a.ups, 1);
	assert_int_equal(b.ups, 1);
	assert_int_equal(peermgr_count(a.pm), 1);   /* its own entry is skipped */

	/* B goes away: A is told, the peer is not up, the tokens are gone */
	b.pm = peermgr_free(b.pm);
	run_ms(200);
	assert_int_equal(a.downs, 1);
	assert_int_equal(peer_get(a.pm, "b", &ia), -ENOTCONN);

	/* B comes back: A redials; new generation, new tokens */
	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	assert_true(up_flag(&a, &b, &up));
	assert_int_equal(peer_get(a.pm, "b", &ia), 0);
	assert_int_equal(peer_get(b.pm, "a", &ib), 0);
	assert_int_equal(ia.generation, 2);
	assert_int_equal(a.last_generation, 2);
	assert_true(ia.tx_token == ib.rx_token && ia.rx_token == ib.tx_token);
	{
		struct peer_status st;

		assert_int_equal(peermgr_status(a.pm, &st, 1), 1);
		assert_int_equal(st.state, PEER_UP);
		assert_int_equal(st.reconnects, 1);
		assert_true(st.dials);
		assert_string_equal(st.host_name, "b");
	}
	a.pm = peermgr_free(a.pm);
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

static void test_lookups(void **state)
{
	struct side a = { 0 }, b = { 0 };
	struct lk found = { 0 }, none = { 0 }, cancelled = { 0 }, down = { 0 }, stopped = { 0 };
	uint64_t h;
	bool up, done = false;

	assert_int_equal(start(&a, "a", port_a, peers_ab, 40000, NULL), 0);
	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	assert_true(up_flag(&a, &b, &up));

	assert_int_equal(peer_lookup(a.pm, "nobody", "svc", 1000, lookup_cb, &found, NULL), -ESRCH);
	assert_int_equal(peer_lookup(a.pm, "b", "bad/name", 1000, lookup_cb, &found, NULL), -EINVAL);
	assert_int_equal(peer_lookup(a.pm, "b", "svc", 0, lookup_cb, &found, NULL), -EINVAL);
	assert_int_equal(peer_lookup(a.pm, "b", "svc", 1000, lookup_cb, &found, NULL), 0);
	assert_int_equal(peer_lookup(a.pm, "b", "other", 1000, lookup_cb, &none, NULL), 0);
	assert_int_equal(peer_lookup(a.pm, "b", "svc", 1000, lookup_cb, &cancelled, &h), 0);
	peer_lookup_cancel(a.pm, h);
	peer_lookup_cancel(a.pm, h);   /* twice, or unknown: ignored */
	/* never from inside peer_lookup */
	assert_int_equal(found.calls + none.calls, 0);
	while (!done) {
		run_ms(10);
		done = found.calls && none.calls;
	}
	assert_int_equal(found.calls, 1);
	assert_int_equal(found.status, 0);
	assert_int_equal(found.ep_id, 7);
	assert_int_equal(none.calls, 1);
	assert_int_equal(none.status, -ENOENT);
	run_ms(50);
	assert_int_equal(cancelled.calls, 0);

	/* in flight when the peer goes down: ENOTCONN, once */
	assert_int_equal(peer_lookup(a.pm, "b", "svc", 1000, lookup_cb, &down, NULL), 0);
	b.pm = peermgr_free(b.pm);
	run_ms(200);
	assert_int_equal(down.calls, 1);
	assert_int_equal(down.status, -ENOTCONN);
	assert_int_equal(peer_lookup(a.pm, "b", "svc", 1000, lookup_cb, &down, NULL), -ENOTCONN);

	/* in flight when the asker stops: ECANCELED */
	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	assert_true(up_flag(&a, &b, &up));
	assert_int_equal(peer_lookup(a.pm, "b", "svc", 1000, lookup_cb, &stopped, NULL), 0);
	a.pm = peermgr_free(a.pm);
	assert_int_equal(stopped.calls, 1);
	assert_int_equal(stopped.status, -ECANCELED);
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

static void test_reload_adds_and_removes(void **state)
{
	struct side a = { 0 }, b = { 0 };
	struct peer_status st[3];
	char more[256], err[256];
	struct conf c;
	bool up;

	assert_int_equal(start(&a, "a", port_a, peers_ab, 40000, NULL), 0);
	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	assert_true(up_flag(&a, &b, &up));

	snprintf(more, sizeof(more),
		 "peer_listen = 127.0.0.1:%d\npeers = %s, c=127.0.0.1:%d\nhost_name = a\n"
		 "peer_timeout_ms = 500\n", port_a, peers_ab, port_c);
	assert_int_equal(conf_parse("t.conf", more, strlen(more), &c, err, sizeof(err)), 0);
	peermgr_reload(a.pm, &c);
	assert_int_equal(peermgr_count(a.pm), 2);
	run_ms(100);
	assert_int_equal(peermgr_status(a.pm, st, 3), 2);
	assert_string_equal(st[1].name, "c");
	assert_int_equal(st[1].state, PEER_CONNECTING);
	assert_string_equal(st[1].last_error, "connect: Connection refused");
	/* b was kept as it was */
	assert_int_equal(st[0].state, PEER_UP);
	assert_int_equal(st[0].reconnects, 0);

	snprintf(more, sizeof(more), "peer_listen = 127.0.0.1:%d\npeers = b=127.0.0.1:%d\n"
		 "host_name = a\n", port_a, port_b);
	assert_int_equal(conf_parse("t.conf", more, strlen(more), &c, err, sizeof(err)), 0);
	peermgr_reload(a.pm, &c);
	assert_int_equal(peermgr_count(a.pm), 1);
	run_ms(100);
	assert_int_equal(peermgr_status(a.pm, st, 3), 1);
	assert_int_equal(st[0].state, PEER_UP);

	/* b moves to another port: closed and added anew */
	snprintf(more, sizeof(more), "peer_listen = 127.0.0.1:%d\npeers = b=127.0.0.1:%d\n"
		 "host_name = a\n", port_a, port_c);
	assert_int_equal(conf_parse("t.conf", more, strlen(more), &c, err, sizeof(err)), 0);
	peermgr_reload(a.pm, &c);
	assert_int_equal(peermgr_status(a.pm, st, 3), 1);
	assert_int_equal(st[0].state, PEER_CONNECTING);
	assert_int_equal(a.downs, 1);
	a.pm = peermgr_free(a.pm);
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

/* A peer_listen already taken, or a wildcard without data_address, is an
 * error at start. */
static void test_start_errors(void **state)
{
	struct side a = { 0 }, b = { 0 };
	struct conf c;
	char err[256];
	const char *any = "peer_listen = 0.0.0.0:1\ndata_address = 0.0.0.0\nhost_name = x\n";

	assert_int_equal(start(&a, "a", port_a, peers_ab, 0, NULL), 0);
	assert_int_equal(start(&b, "b", port_a, peers_ab, 0, NULL), -EADDRINUSE);
	assert_int_equal(conf_parse("t.conf", any, strlen(any), &c, err, sizeof(err)), 0);
	assert_int_equal(peermgr_start(base, &c, NULL, NULL, &b.pm), -EINVAL);
	a.pm = peermgr_free(a.pm);
	assert_null(peermgr_free(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meet_tokens_cross),
		cmocka_unit_test(test_lookups),
		cmocka_unit_test(test_reload_adds_and_removes),
		cmocka_unit_test(test_start_errors),
	};

	log_init();
	log_set_level(getenv("PEER_TEST_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_ERROR);
	return cmocka_run_group_tests(tests, setup, teardown);
}
