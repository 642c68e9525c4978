/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for peer: two peer managers in one event loop, on 127.0.0.1,
 * meet each other. Pins what the data path will rely on and the integration
 * test cannot see: the tokens cross (what one sends is what the other
 * expects), peer_get and the up/down notifications, lookups and connects
 * with their every outcome, cancellation, the daemon's side of a connect a
 * peer asks for (answered at once or later, after the peer left, or not at
 * all), closes of connections across hosts, and reload adding and removing
 * peers. A fake peer on a raw socket sends what a correct daemon never
 * would.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
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
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "daemon/conf.h"
#include "daemon/log.h"
#include "daemon/peer.h"
#include "daemon/peer_int.h"   /* a white-box test fills a connection's queue */
#include "daemon/peerauth.h"
#include "proto/peerframe.h"

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

/* A connect's outcome, as peer_connect's callback saw it. */
struct ck {
	int calls;
	int status;
	uint32_t ep_id, conn;
};

#define MAX_HELD 300

/* The daemon's side: what the handlers were asked. Connects to "refused"
 * and "nobody" are answered at once, from inside the handler; the rest are
 * held for the test to answer. */
struct handled {
	int connects;
	struct peer_connect_req *held[MAX_HELD];
	uint32_t n_held;
	char peer[40], name[80];
	uint32_t src_ep, src_conn;
	int closes;
	char close_peer[40];
	uint32_t close_ep, close_conn, close_src_ep, close_src_conn;
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
static int resolve_b(void *arg, const char *name, uint32_t *ep_id, uint32_t *thread)
{
	(void)arg;
	*thread = 0;
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

static void lookup_cb(void *arg, int status, uint32_t ep_id, uint32_t thread)
{
	(void)thread;
	struct lk *l = arg;

	l->calls++;
	l->status = status;
	l->ep_id = ep_id;
}

static void connect_cb(void *arg, int status, uint32_t ep_id, uint32_t conn)
{
	struct ck *k = arg;

	k->calls++;
	k->status = status;
	k->ep_id = ep_id;
	k->conn = conn;
}

static struct peermgr *handlers_pm;   /* whose handlers struct handled records */

static void on_connect(void *arg, const char *peer, struct peer_connect_req *req, const char *name,
		       uint32_t src_ep, uint32_t src_conn)
{
	struct handled *h = arg;

	h->connects++;
	snprintf(h->peer, sizeof(h->peer), "%s", peer);
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->src_ep = src_ep;
	h->src_conn = src_conn;
	if (strcmp(name, "refused") == 0)
		peer_connect_answer(handlers_pm, req, -ECONNREFUSED, 0, 0);
	else if (strcmp(name, "nobody") == 0)
		peer_connect_answer(handlers_pm, req, -ENOENT, 0, 0);
	else
		h->held[h->n_held++] = req;
}

static void on_conn_close(void *arg, const char *peer, uint32_t ep_id, uint32_t conn,
			  uint32_t src_ep, uint32_t src_conn)
{
	struct handled *h = arg;

	h->closes++;
	snprintf(h->close_peer, sizeof(h->close_peer), "%s", peer);
	h->close_ep = ep_id;
	h->close_conn = conn;
	h->close_src_ep = src_ep;
	h->close_src_conn = src_conn;
}

static void handle_on(struct peermgr *pm, struct handled *h)
{
	const struct peer_handlers ph = {
		.connect = on_connect,
		.conn_close = on_conn_close,
		.arg = h,
	};

	memset(h, 0, sizeof(*h));
	handlers_pm = pm;
	peermgr_set_handlers(pm, &ph);
}

/* Answer the oldest connect held. */
static void answer_held(struct handled *h, int status, uint32_t ep_id, uint32_t conn)
{
	assert_true(h->n_held > 0);
	peer_connect_answer(handlers_pm, h->held[0], status, ep_id, conn);
	memmove(&h->held[0], &h->held[1], sizeof(h->held[0]) * --h->n_held);
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

/* extra: more configuration lines */
static int start_ex(struct side *s, const char *name, int port, const char *peers, int data_port,
		    peer_resolve_fn resolve, const char *extra)
{
	struct conf c;
	char err[256];
	int r;

	snprintf(s->conf_text, sizeof(s->conf_text),
		 "peer_listen = 127.0.0.1:%d\npeers = %s\nhost_name = %s\ndata_port = %d\n"
		 "data_paths = 4\nmtu = 9000\npeer_timeout_ms = 1000\n%s",
		 port, peers, name, data_port, extra);
	r = conf_parse("t.conf", s->conf_text, strlen(s->conf_text), &c, err, sizeof(err));
	if (r < 0)
		fail_msg("%s", err);
	r = peermgr_start(base, &c, resolve, NULL, &s->pm);
	if (r == 0)
		peermgr_set_notify(s->pm, notify, s);
	return r;
}

static int start(struct side *s, const char *name, int port, const char *peers, int data_port,
		 peer_resolve_fn resolve)
{
	return start_ex(s, name, port, peers, data_port, resolve, "");
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

/* peer_restart from the side that does not dial (b): both sides take the
 * peer down, a dials again, and the peer comes back with a new generation
 * and new tokens; a peer that is not up, or unknown, is refused. */
static void test_restart_rebuilds_the_peer(void **state)
{
	struct side a = { 0 }, b = { 0 };
	struct peer_info ia, ib;
	uint64_t old_tx;
	bool up;

	(void)state;
	assert_int_equal(start(&a, "a", port_a, peers_ab, 40000, NULL), 0);
	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	assert_int_equal(peer_restart(a.pm, "b", "test"), -ENOTCONN);
	assert_int_equal(peer_restart(a.pm, "nobody", "test"), -ESRCH);
	assert_true(up_flag(&a, &b, &up));
	assert_int_equal(peer_get(a.pm, "b", &ia), 0);
	old_tx = ia.tx_token;

	assert_int_equal(peer_restart(b.pm, "a", "data channel failed: rebuilding it"), 0);
	assert_int_equal(b.downs, 1);            /* at once, on the restarting side */
	run_ms(50);
	assert_int_equal(a.downs, 1);
	assert_true(up_flag(&a, &b, &up));
	assert_int_equal(peer_get(a.pm, "b", &ia), 0);
	assert_int_equal(peer_get(b.pm, "a", &ib), 0);
	assert_int_equal(ia.generation, 2);
	assert_int_equal(a.last_generation, 2);
	assert_true(ia.tx_token != old_tx);
	assert_true(ia.tx_token == ib.rx_token && ia.rx_token == ib.tx_token);
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

/* Run the loop until *count reaches want or 2 s pass. */
static bool run_until_count(const int *count, int want)
{
	uint64_t end = ms_now() + 2000;

	while (*count < want && ms_now() < end)
		run_ms(5);
	return *count >= want;
}

static bool run_until_held(const struct handled *h, uint32_t want)
{
	uint64_t end = ms_now() + 2000;

	while (h->n_held < want && ms_now() < end)
		run_ms(5);
	return h->n_held >= want;
}

/* A connect answered later by the daemon, at once from its handler, with a
 * refusal, by a daemon without handlers, or with a status that is no errno. */
static void test_connect_answers(void **state)
{
	struct side a = { 0 }, b = { 0 };
	struct ck ok = { 0 }, refused = { 0 }, nobody = { 0 }, unhandled = { 0 }, odd = { 0 };
	struct handled hb;
	uint64_t h = 0;
	bool up;

	assert_int_equal(start(&a, "a", port_a, peers_ab, 40000, NULL), 0);
	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	handle_on(b.pm, &hb);
	assert_int_equal(peer_connect(a.pm, "b", "svc", 3, 4, 1000, connect_cb, &ok, NULL), -ENOTCONN);
	assert_true(up_flag(&a, &b, &up));

	assert_int_equal(peer_connect(a.pm, "nobody", "svc", 3, 4, 1000, connect_cb, &ok, NULL),
			 -ESRCH);
	assert_int_equal(peer_connect(a.pm, "b", "bad/name", 3, 4, 1000, connect_cb, &ok, NULL),
			 -EINVAL);
	assert_int_equal(peer_connect(a.pm, "b", "svc", 3, 4, 0, connect_cb, &ok, NULL), -EINVAL);

	assert_int_equal(peer_connect(a.pm, "b", "svc", 3, 4, 1000, connect_cb, &ok, &h), 0);
	assert_true(h != 0);
	assert_int_equal(ok.calls, 0);   /* never from inside peer_connect */
	assert_true(run_until_held(&hb, 1));
	assert_string_equal(hb.peer, "a");
	assert_string_equal(hb.name, "svc");
	assert_int_equal(hb.src_ep, 3);
	assert_int_equal(hb.src_conn, 4);
	run_ms(50);
	assert_int_equal(ok.calls, 0);   /* waits for the daemon's answer */
	answer_held(&hb, 0, 11, 12);
	assert_true(run_until_count(&ok.calls, 1));
	assert_int_equal(ok.status, 0);
	assert_int_equal(ok.ep_id, 11);
	assert_int_equal(ok.conn, 12);

	assert_int_equal(peer_connect(a.pm, "b", "refused", 5, 6, 1000, connect_cb, &refused, NULL), 0);
	assert_int_equal(peer_connect(a.pm, "b", "nobody", 5, 7, 1000, connect_cb, &nobody, NULL), 0);
	assert_true(run_until_count(&refused.calls, 1));
	assert_true(run_until_count(&nobody.calls, 1));
	assert_int_equal(refused.status, -ECONNREFUSED);
	assert_int_equal(nobody.status, -ENOENT);
	assert_int_equal(nobody.ep_id + nobody.conn, 0);

	/* a status that is no errno would break the protocol: sent as -EIO */
	assert_int_equal(peer_connect(a.pm, "b", "svc", 5, 8, 1000, connect_cb, &odd, NULL), 0);
	assert_true(run_until_held(&hb, 1));
	answer_held(&hb, 5, 1, 1);
	assert_true(run_until_count(&odd.calls, 1));
	assert_int_equal(odd.status, -EIO);

	/* a has no handlers: it refuses what b asks */
	assert_int_equal(peer_connect(b.pm, "a", "svc", 1, 1, 1000, connect_cb, &unhandled, NULL), 0);
	assert_true(run_until_count(&unhandled.calls, 1));
	assert_int_equal(unhandled.status, -EOPNOTSUPP);

	assert_int_equal(ok.calls + refused.calls + nobody.calls + odd.calls, 4);
	assert_int_equal(hb.connects, 4);
	assert_int_equal(a.downs + b.downs, 0);   /* nothing above broke the connection */
	a.pm = peermgr_free(a.pm);
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

/* A connect given up on (timeout, cancel) gets no callback when its answer
 * comes; a late success is closed at the peer at once. */
static void test_connect_timeout_and_cancel(void **state)
{
	struct side a = { 0 }, b = { 0 };
	struct ck slow = { 0 }, cancelled = { 0 }, slow_fail = { 0 };
	struct handled hb;
	uint64_t h;
	bool up;

	assert_int_equal(start(&a, "a", port_a, peers_ab, 40000, NULL), 0);
	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	handle_on(b.pm, &hb);
	assert_true(up_flag(&a, &b, &up));

	assert_int_equal(peer_connect(a.pm, "b", "svc", 3, 30, 100, connect_cb, &slow, NULL), 0);
	assert_true(run_until_count(&slow.calls, 1));
	assert_int_equal(slow.status, -ETIMEDOUT);
	assert_int_equal(hb.n_held, 1);
	answer_held(&hb, 0, 31, 32);
	assert_true(run_until_count(&hb.closes, 1));
	assert_string_equal(hb.close_peer, "a");
	assert_int_equal(hb.close_ep, 31);   /* b's side */
	assert_int_equal(hb.close_conn, 32);
	assert_int_equal(hb.close_src_ep, 3);   /* a's side */
	assert_int_equal(hb.close_src_conn, 30);
	assert_int_equal(slow.calls, 1);

	assert_int_equal(peer_connect(a.pm, "b", "svc", 3, 40, 1000, connect_cb, &cancelled, &h), 0);
	peer_connect_cancel(a.pm, h);
	peer_connect_cancel(a.pm, h);       /* twice, or unknown: ignored */
	peer_lookup_cancel(a.pm, h + 1000);
	assert_true(run_until_held(&hb, 1));
	answer_held(&hb, 0, 41, 42);
	assert_true(run_until_count(&hb.closes, 2));
	assert_int_equal(hb.close_ep, 41);
	assert_int_equal(hb.close_conn, 42);
	assert_int_equal(hb.close_src_conn, 40);

	/* a late refusal leaves nothing to close */
	assert_int_equal(peer_connect(a.pm, "b", "svc", 3, 50, 50, connect_cb, &slow_fail, NULL), 0);
	assert_true(run_until_count(&slow_fail.calls, 1));
	assert_int_equal(slow_fail.status, -ETIMEDOUT);
	assert_true(run_until_held(&hb, 1));
	answer_held(&hb, -ECONNREFUSED, 0, 0);
	run_ms(100);
	assert_int_equal(hb.closes, 2);
	assert_int_equal(cancelled.calls, 0);
	assert_int_equal(slow.calls + slow_fail.calls, 2);
	assert_int_equal(a.downs + b.downs, 0);
	a.pm = peermgr_free(a.pm);
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

/* PEER_MAX_CONNECTS unanswered at a peer, and the next is refused at once;
 * given-up ones hold their slot until answered. */
static void test_connect_limit(void **state)
{
	static struct ck many[PEER_MAX_CONNECTS];
	struct side a = { 0 }, b = { 0 };
	struct ck one = { 0 };
	struct handled hb;
	uint64_t h;
	int calls = 0;
	bool up;

	memset(many, 0, sizeof(many));
	assert_int_equal(start(&a, "a", port_a, peers_ab, 40000, NULL), 0);
	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	handle_on(b.pm, &hb);
	assert_true(up_flag(&a, &b, &up));

	for (uint32_t i = 0; i < PEER_MAX_CONNECTS; i++)
		assert_int_equal(peer_connect(a.pm, "b", "svc", 1, i, 5000, connect_cb, &many[i], &h), 0);
	assert_int_equal(peer_connect(a.pm, "b", "svc", 1, 999, 5000, connect_cb, &one, NULL), -EBUSY);
	peer_connect_cancel(a.pm, h);   /* the last: still unanswered */
	assert_int_equal(peer_connect(a.pm, "b", "svc", 1, 999, 5000, connect_cb, &one, NULL), -EBUSY);
	/* lookups count on their own */
	assert_int_equal(peer_lookup(a.pm, "b", "svc", 1000, lookup_cb, &(struct lk){ 0 }, &h), 0);
	peer_lookup_cancel(a.pm, h);
	assert_true(run_until_held(&hb, PEER_MAX_CONNECTS));
	while (hb.n_held)
		answer_held(&hb, -ECONNREFUSED, 0, 0);
	for (uint64_t end = ms_now() + 2000; calls < (int)PEER_MAX_CONNECTS - 1 && ms_now() < end;) {
		run_ms(5);
		calls = 0;
		for (uint32_t i = 0; i < PEER_MAX_CONNECTS; i++)
			calls += many[i].calls;
	}
	assert_int_equal(calls, PEER_MAX_CONNECTS - 1);   /* the cancelled one is not told */
	assert_int_equal(many[0].status, -ECONNREFUSED);
	assert_int_equal(many[PEER_MAX_CONNECTS - 1].calls, 0);
	assert_int_equal(peer_connect(a.pm, "b", "svc", 1, 999, 5000, connect_cb, &one, NULL), 0);
	a.pm = peermgr_free(a.pm);   /* one in flight: -ECANCELED */
	assert_int_equal(one.calls, 1);
	assert_int_equal(one.status, -ECANCELED);
	b.pm = peermgr_free(b.pm);   /* frees the connect it still held */
	run_ms(50);
}

/* The connection goes down with connects pending on both sides. */
static void test_connect_peer_down(void **state)
{
	struct side a = { 0 }, b = { 0 };
	struct ck down = { 0 }, stopped = { 0 };
	struct handled hb;
	bool up;

	assert_int_equal(start(&a, "a", port_a, peers_ab, 40000, NULL), 0);
	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	handle_on(b.pm, &hb);
	assert_true(up_flag(&a, &b, &up));

	/* a's side: b goes away first; b's connect is freed with b */
	assert_int_equal(peer_connect(a.pm, "b", "svc", 3, 4, 5000, connect_cb, &down, NULL), 0);
	assert_true(run_until_held(&hb, 1));
	b.pm = peermgr_free(b.pm);
	hb.n_held = 0;
	assert_true(run_until_count(&a.downs, 1));
	assert_int_equal(down.calls, 1);
	assert_int_equal(down.status, -ENOTCONN);
	assert_int_equal(peer_connect(a.pm, "b", "svc", 3, 4, 1000, connect_cb, &down, NULL), -ENOTCONN);
	assert_int_equal(peer_conn_close(a.pm, "b", 1, 2, 3, 4), -ENOTCONN);

	/* b's side: a goes away first; b's late answer goes nowhere */
	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	handle_on(b.pm, &hb);
	assert_true(up_flag(&a, &b, &up));
	assert_int_equal(peer_connect(a.pm, "b", "svc", 3, 5, 5000, connect_cb, &stopped, NULL), 0);
	assert_true(run_until_held(&hb, 1));
	a.pm = peermgr_free(a.pm);
	assert_int_equal(stopped.calls, 1);
	assert_int_equal(stopped.status, -ECANCELED);
	assert_true(run_until_count(&b.downs, 1));
	answer_held(&hb, 0, 1, 2);   /* a no-op but the free */
	run_ms(50);
	assert_int_equal(hb.closes, 0);
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

/* A closed connection is told to the peer, naming both sides. */
static void test_conn_close(void **state)
{
	struct side a = { 0 }, b = { 0 };
	struct handled hb;
	bool up;

	assert_int_equal(start(&a, "a", port_a, peers_ab, 40000, NULL), 0);
	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	handle_on(b.pm, &hb);
	assert_int_equal(peer_conn_close(a.pm, "b", 1, 2, 3, 4), -ENOTCONN);
	assert_true(up_flag(&a, &b, &up));

	assert_int_equal(peer_conn_close(a.pm, "nobody", 1, 2, 3, 4), -ESRCH);
	assert_int_equal(peer_conn_close(a.pm, "b", 1, 2, 3, 4), 0);
	assert_int_equal(hb.closes, 0);
	assert_true(run_until_count(&hb.closes, 1));
	assert_string_equal(hb.close_peer, "a");
	assert_int_equal(hb.close_ep, 1);
	assert_int_equal(hb.close_conn, 2);
	assert_int_equal(hb.close_src_ep, 3);
	assert_int_equal(hb.close_src_conn, 4);
	/* without a handler it is dropped */
	assert_int_equal(peer_conn_close(b.pm, "a", 5, 6, 7, 8), 0);
	run_ms(50);
	assert_int_equal(a.downs + b.downs, 0);
	a.pm = peermgr_free(a.pm);
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

/* A close that cannot be queued (the peer does not read) closes the peer
 * connection, which resets the peer's side all the same: from the loop,
 * not from inside the call. */
static void test_conn_close_to_a_peer_that_does_not_read(void **state)
{
	struct side a = { 0 }, b = { 0 };
	struct peer_status st;
	bool up;

	assert_int_equal(start(&a, "a", port_a, peers_ab, 40000, NULL), 0);
	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	assert_true(up_flag(&a, &b, &up));

	/* about 30 bytes each: well over the 1 MiB a peer may leave unread */
	for (int i = 0; i < 60000; i++)
		assert_int_equal(peer_conn_close(a.pm, "b", UINT32_MAX, UINT32_MAX, UINT32_MAX, i), 0);
	assert_int_equal(a.downs, 0);
	assert_true(run_until_count(&a.downs, 1));
	assert_int_equal(peermgr_status(a.pm, &st, 1), 1);
	assert_string_equal(st.last_error, "peer does not read (over 1048576 bytes queued)");
	a.pm = peermgr_free(a.pm);
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

/* ---- a fake peer on a raw socket -------------------------------------------------- */

static int fake_dial(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_port = htons((uint16_t)port);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void fake_send(int fd, const UcclPeer__PeerMsg *m)
{
	uint8_t *buf;
	size_t len;

	assert_int_equal(peerframe_pack(m, &buf, &len), 0);
	assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
	free(buf);
}

/* The next message that is not a keepalive, running the loop meanwhile;
 * NULL at EOF or after 2 s. */
static UcclPeer__PeerMsg *fake_recv(int fd)
{
	uint64_t end = ms_now() + 2000;
	uint8_t hdr[FRAME_HDR_LEN], *p;
	uint32_t len = 0;

	while (ms_now() < end) {
		UcclPeer__PeerMsg *m = NULL;
		ssize_t n = recv(fd, hdr, sizeof(hdr), MSG_PEEK | MSG_DONTWAIT);

		if (n == 0)
			return NULL;
		if (n < (ssize_t)sizeof(hdr)) {
			run_ms(5);
			continue;
		}
		assert_int_equal(peerframe_hdr_parse(hdr, &len), 0);
		p = malloc(FRAME_HDR_LEN + len);
		n = recv(fd, p, FRAME_HDR_LEN + len, MSG_PEEK | MSG_DONTWAIT);
		if (n < (ssize_t)(FRAME_HDR_LEN + len)) {
			free(p);
			run_ms(5);
			continue;
		}
		assert_int_equal(recv(fd, p, FRAME_HDR_LEN + len, 0), (ssize_t)(FRAME_HDR_LEN + len));
		assert_int_equal(peerframe_unpack(p + FRAME_HDR_LEN, len, &m), 0);
		free(p);
		if (m->body_case != UCCL_PEER__PEER_MSG__BODY_KEEPALIVE)
			return m;
		uccl_peer__peer_msg__free_unpacked(m, NULL);
	}
	return NULL;
}

/* The hello a fake daemon calls itself name with (and with nonce, if not
 * NULL: as a daemon with a key). h must outlive m. */
static void fake_hello_msg(UcclPeer__PeerMsg *m, UcclPeer__Hello *h, const char *name,
			   const uint8_t *nonce)
{
	*m = (UcclPeer__PeerMsg)UCCL_PEER__PEER_MSG__INIT;
	*h = (UcclPeer__Hello)UCCL_PEER__HELLO__INIT;
	h->proto_version = PEER_PROTO_VERSION;
	h->host_name = (char *)name;
	h->data_address = "127.0.0.1";
	h->has_data_port = h->has_data_paths = h->has_mtu = h->has_token = h->has_timeout_ms = 1;
	h->has_wire_version = 1;
	h->wire_version = PEER_WIRE_VERSION;
	h->data_paths = 1;
	h->mtu = 1500;
	h->token = 1;
	h->timeout_ms = 3000;
	if (nonce) {
		h->has_auth_nonce = 1;
		h->auth_nonce.len = PEER_AUTH_NONCE_LEN;
		h->auth_nonce.data = (uint8_t *)nonce;
	}
	m->body_case = UCCL_PEER__PEER_MSG__BODY_HELLO;
	m->hello = h;
}

/* Send that hello on fd; the answer. */
static UcclPeer__PeerMsg *fake_hello(int fd, const char *name, const uint8_t *nonce)
{
	UcclPeer__PeerMsg m;
	UcclPeer__Hello h;

	fake_hello_msg(&m, &h, name, nonce);
	fake_send(fd, &m);
	return fake_recv(fd);
}

/* Dial b's peer_listen as peer "a" and exchange hellos. */
static int fake_peer_a(void)
{
	int fd = fake_dial(port_b);
	UcclPeer__PeerMsg *r = fake_hello(fd, "a", NULL);

	assert_non_null(r);
	assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_HELLO);
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	return fd;
}

static void fake_connect_req(int fd, uint32_t id)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__ConnectReq cq = UCCL_PEER__CONNECT_REQ__INIT;

	cq.id = id;
	cq.name = "svc";
	cq.src_ep = 1;
	cq.src_conn = id;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONNECT_REQ;
	m.connect_req = &cq;
	fake_send(fd, &m);
}

/* A peer that asks more than PEER_MAX_CONNECTS at once gets -EBUSY for the
 * rest; what the daemon answers after the peer left goes nowhere. */
static void test_connects_asked_of_us_are_limited(void **state)
{
	struct side b = { 0 };
	struct handled hb;
	UcclPeer__PeerMsg *r;
	int fd;

	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	handle_on(b.pm, &hb);
	fd = fake_peer_a();
	for (uint32_t id = 1; id <= PEER_MAX_CONNECTS + 1; id++)
		fake_connect_req(fd, id);
	r = fake_recv(fd);
	assert_non_null(r);
	assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_CONNECT_REP);
	assert_int_equal(r->connect_rep->id, PEER_MAX_CONNECTS + 1);
	assert_int_equal(r->connect_rep->status, -EBUSY);
	assert_false(r->connect_rep->has_ep_id);
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	assert_int_equal(hb.n_held, PEER_MAX_CONNECTS);

	/* one answered frees one slot */
	answer_held(&hb, 0, 9, 10);
	r = fake_recv(fd);
	assert_non_null(r);
	assert_int_equal(r->connect_rep->id, 1);
	assert_int_equal(r->connect_rep->status, 0);
	assert_int_equal(r->connect_rep->ep_id, 9);
	assert_int_equal(r->connect_rep->conn, 10);
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	fake_connect_req(fd, PEER_MAX_CONNECTS + 2);
	assert_true(run_until_held(&hb, PEER_MAX_CONNECTS));
	assert_int_equal(hb.connects, PEER_MAX_CONNECTS + 1);

	close(fd);
	assert_true(run_until_count(&b.downs, 1));
	while (hb.n_held)
		answer_held(&hb, 0, 1, 1);   /* no-ops */
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

/* A hello's max_inflight_bytes outside PEER_INFLIGHT_MIN..MAX counts as the
 * nearest bound, so that a later daemon with a wider range still meets
 * this one; absent (an older daemon) it is 0. */
static void test_hello_max_inflight_bytes_is_clamped(void **state)
{
	static const struct {
		bool has;
		uint64_t sent, want;
	} cases[] = {
		{ false, 0, 0 },
		{ true, 1, PEER_INFLIGHT_MIN },
		{ true, PEER_INFLIGHT_MIN - 1, PEER_INFLIGHT_MIN },
		{ true, 3u << 20, 3u << 20 },
		{ true, PEER_INFLIGHT_MAX + 1, PEER_INFLIGHT_MAX },
		{ true, UINT64_MAX, PEER_INFLIGHT_MAX },
	};
	struct side b = { 0 };

	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		UcclPeer__PeerMsg m, *r;
		UcclPeer__Hello h;
		struct peer_info info = { 0 };
		int fd = fake_dial(port_b);

		fake_hello_msg(&m, &h, "a", NULL);
		h.has_max_inflight_bytes = cases[i].has;
		h.max_inflight_bytes = cases[i].sent;
		fake_send(fd, &m);
		r = fake_recv(fd);
		assert_non_null(r);
		assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_HELLO);
		uccl_peer__peer_msg__free_unpacked(r, NULL);
		assert_true(run_until_count(&b.ups, (int)i + 1));
		assert_int_equal(peer_get(b.pm, "a", &info), 0);
		assert_int_equal(info.max_inflight_bytes, cases[i].want);
		close(fd);
		assert_true(run_until_count(&b.downs, (int)i + 1));
	}
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

/* Each hello says whether its sender wants crc32c on data packets
 * (data_crc); the channel carries one when either side does. A daemon
 * with data_crc refuses a hello that does not say (an older daemon, whose
 * packets could come without one and all be dropped), and takes no
 * dynamic slot for it. */
static void test_hello_data_crc(void **state)
{
	static const struct {
		const char *conf;
		bool has, sent;
		bool up, want;          /* it comes up, and peer_get's data_crc */
	} cases[] = {
		{ "", false, false, true, false },
		{ "", true, true, true, true },
		{ "data_crc = true\n", true, false, true, false },
		{ "data_crc = true\n", false, false, false, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char conf[128];
		struct side b = { 0 };
		UcclPeer__PeerMsg m, *r;
		UcclPeer__Hello h;
		struct peer_info info = { 0 };
		const char *name = i % 2 ? "x1" : "a";      /* configured, or a dynamic one */
		int fd;

		snprintf(conf, sizeof(conf), "dynamic_peers = 2\n%s", cases[i].conf);
		assert_int_equal(start_ex(&b, "b", port_b, peers_ab, 40100, resolve_b, conf), 0);
		fd = fake_dial(port_b);
		fake_hello_msg(&m, &h, name, NULL);
		h.data_address = "127.0.0.1";
		h.has_data_crc = cases[i].has;
		h.data_crc = cases[i].sent;
		fake_send(fd, &m);
		r = fake_recv(fd);
		assert_non_null(r);
		if (cases[i].up) {
			assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_HELLO);
			/* always said, whatever the setting */
			assert_true(r->hello->has_data_crc);
			assert_int_equal(r->hello->data_crc, cases[i].conf[0] != '\0');
			assert_true(run_until_count(&b.ups, 1));
			assert_int_equal(peer_get(b.pm, name, &info), 0);
			assert_int_equal(info.data_crc, cases[i].want);
		} else {
			assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_ERROR);
			assert_non_null(strstr(r->error->message, "does not announce data_crc"));
			assert_int_equal(peermgr_count(b.pm), 1);  /* a only: no dynamic slot */
			assert_int_equal(b.ups, 0);
		}
		uccl_peer__peer_msg__free_unpacked(r, NULL);
		close(fd);
		b.pm = peermgr_free(b.pm);
		run_ms(50);
	}
}

/* ---- authentication (peer_key_file) ---------------------------------------------- */

static char key1[64], key2[64];   /* files holding two different keys */

static void write_key_file(char *path, const char *key)
{
	int fd;

	strcpy(path, "/tmp/test_peer_key.XXXXXX");
	fd = mkstemp(path);           /* mode 0600 */
	assert_true(fd >= 0);
	assert_int_equal(write(fd, key, strlen(key)), (ssize_t)strlen(key));
	close(fd);
}

static void key_line(char *out, size_t len, const char *path)
{
	snprintf(out, len, "peer_key_file = %s\n", path);
}

/* a (the side that dials) after both ran a while: its peer b's status */
static void status_of_b(struct side *a, struct peer_status *st)
{
	assert_int_equal(peermgr_status(a->pm, st, 1), 1);
}

static void test_auth_same_key_meets(void **state)
{
	struct side a = { 0 }, b = { 0 };
	struct peer_status st;
	char k[128];
	bool up;

	(void)state;
	write_key_file(key1, "first key, 24 bytes long\n");
	write_key_file(key2, "second key, not the same\n");
	key_line(k, sizeof(k), key1);
	assert_int_equal(start_ex(&a, "a", port_a, peers_ab, 40000, NULL, k), 0);
	assert_int_equal(start_ex(&b, "b", port_b, peers_ab, 40100, resolve_b, k), 0);
	assert_true(up_flag(&a, &b, &up));
	status_of_b(&a, &st);
	assert_true(st.authenticated);
	assert_int_equal(peermgr_status(b.pm, &st, 1), 1);
	assert_true(st.authenticated);
	a.pm = peermgr_free(a.pm);
	b.pm = peermgr_free(b.pm);
	run_ms(50);

	/* neither has a key: up, not authenticated */
	assert_int_equal(start(&a, "a", port_a, peers_ab, 40000, NULL), 0);
	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	assert_true(up_flag(&a, &b, &up));
	status_of_b(&a, &st);
	assert_false(st.authenticated);
	a.pm = peermgr_free(a.pm);
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

/* One side without a key, or two different keys: never up, and the side
 * that dials says why. */
static void test_auth_refusals(void **state)
{
	static const struct {
		const char *ka, *kb, *why;
	} cases[] = {
		{ key1, NULL, "b has no key" },
		{ NULL, key1, "a does not authenticate, and b requires it" },
		{ key1, key2, "peer_key_file differs" },
		{ key2, key1, "peer_key_file differs" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct side a = { 0 }, b = { 0 };
		struct peer_status st;
		char la[128] = "", lb[128] = "";

		if (cases[i].ka)
			key_line(la, sizeof(la), cases[i].ka);
		if (cases[i].kb)
			key_line(lb, sizeof(lb), cases[i].kb);
		assert_int_equal(start_ex(&a, "a", port_a, peers_ab, 40000, NULL, la), 0);
		assert_int_equal(start_ex(&b, "b", port_b, peers_ab, 40100, resolve_b, lb), 0);
		run_ms(400);
		assert_false(both_up(&a, &b));
		assert_int_equal(a.ups + b.ups, 0);
		status_of_b(&a, &st);
		if (!strstr(st.last_error, cases[i].why))
			fail_msg("case %zu: '%s' does not say '%s'", i, st.last_error, cases[i].why);
		a.pm = peermgr_free(a.pm);
		b.pm = peermgr_free(b.pm);
		run_ms(50);
	}
}

/* ---- a fake daemon that does authenticate ---- */

static int fake_listen(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	sa.sin_port = htons((uint16_t)port);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	return fd;
}

static int fake_accept(int lfd)
{
	uint64_t end = ms_now() + 3000;

	while (ms_now() < end) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		if (poll(&p, 1, 0) == 1)
			return accept(lfd, NULL, NULL);
		run_ms(10);
	}
	fail_msg("nobody dialed");
	return -1;
}

/* pm's one peer is not up, and its last error says why (NULL: anything). */
static void assert_not_up(struct peermgr *pm, const char *why)
{
	struct peer_status st;

	assert_int_equal(peermgr_status(pm, &st, 1), 1);
	assert_int_not_equal(st.state, PEER_UP);
	if (why && !strstr(st.last_error, why))
		fail_msg("'%s' does not say '%s'", st.last_error, why);
}

static void fake_auth(int fd, const uint8_t *nonce, const char *name, const uint8_t *proof)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__Auth au = UCCL_PEER__AUTH__INIT;

	if (nonce) {
		au.has_nonce = 1;
		au.nonce.len = PEER_AUTH_NONCE_LEN;
		au.nonce.data = (uint8_t *)nonce;
	}
	au.host_name = (char *)name;
	au.proof.len = PEER_AUTH_PROOF_LEN;
	au.proof.data = (uint8_t *)proof;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_AUTH;
	m.auth = &au;
	fake_send(fd, &m);
}

/* The next message on fd, with the daemon's MAC checked and removed. */
static UcclPeer__PeerMsg *fake_recv_mac(int fd, const uint8_t *ks, uint64_t *seq)
{
	uint8_t hdr[FRAME_HDR_LEN], *p, tag[PEERAUTH_MAC_LEN];
	UcclPeer__PeerMsg *m = NULL;
	uint32_t len = 0;
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	for (uint64_t end = ms_now() + 2000; poll(&pf, 1, 0) != 1; run_ms(5))
		if (ms_now() > end)
			return NULL;
	if (recv(fd, hdr, sizeof(hdr), MSG_WAITALL) != (ssize_t)sizeof(hdr))
		return NULL;
	assert_int_equal(peerframe_hdr_parse(hdr, &len), 0);
	p = malloc(len);
	assert_int_equal(recv(fd, p, len, MSG_WAITALL), (ssize_t)len);
	assert_true(len > PEERAUTH_MAC_LEN);
	peerauth_mac(ks, false, (*seq)++, p, len - PEERAUTH_MAC_LEN, tag);
	assert_memory_equal(tag, p + len - PEERAUTH_MAC_LEN, PEERAUTH_MAC_LEN);
	assert_int_equal(peerframe_unpack(p, len - PEERAUTH_MAC_LEN, &m), 0);
	free(p);
	return m;
}

static void fake_send_mac(int fd, const UcclPeer__PeerMsg *m, const uint8_t *ks, uint64_t seq,
			  bool spoil)
{
	uint8_t *buf, *b;
	size_t len;
	uint32_t flen;

	assert_int_equal(peerframe_pack(m, &buf, &len), 0);
	b = realloc(buf, len + PEERAUTH_MAC_LEN);
	assert_non_null(b);
	peerauth_mac(ks, true, seq, b + FRAME_HDR_LEN, len - FRAME_HDR_LEN, b + len);
	if (spoil)
		b[len] ^= 1;
	flen = (uint32_t)(len - FRAME_HDR_LEN + PEERAUTH_MAC_LEN);
	memcpy(b, &flen, 4);           /* little endian, as the frame is */
	assert_int_equal(send(fd, b, len + PEERAUTH_MAC_LEN, MSG_NOSIGNAL),
			 (ssize_t)(len + PEERAUTH_MAC_LEN));
	free(b);
}

/* Hash of a hello as fake_hello sends it. */
static void fake_hello_hash(const char *name, const uint8_t *nonce, uint8_t out[SHA256_LEN])
{
	UcclPeer__PeerMsg m;
	UcclPeer__Hello h;
	uint8_t *buf;
	size_t len;

	fake_hello_msg(&m, &h, name, nonce);
	assert_int_equal(peerframe_pack(&m, &buf, &len), 0);
	sha256(buf + FRAME_HDR_LEN, len - FRAME_HDR_LEN, out);
	free(buf);
}

/* The protocol as docs/peer-protocol.md writes it, from a fake dialer that
 * holds the key: it goes up, a keepalive with a right MAC keeps it up, and
 * one with a spoiled MAC ends it. */
static void test_auth_fake_daemon_with_the_key(void **state)
{
	struct side b = { 0 };
	struct peerauth_key key = { 0 };
	struct peer_status st;
	uint8_t nd[PEER_AUTH_NONCE_LEN] = { 9, 8, 7 }, na[PEER_AUTH_NONCE_LEN], hh[SHA256_LEN];
	uint8_t want[PEER_AUTH_PROOF_LEN], ks[SHA256_LEN];
	UcclPeer__PeerMsg *r, m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__Keepalive ka = UCCL_PEER__KEEPALIVE__INIT;
	struct peerauth_hs hs;
	uint64_t rseq = 0;
	char k[128], why[256];
	int fd;

	(void)state;
	write_key_file(key1, "first key, 24 bytes long\n");
	assert_int_equal(peerauth_key_load(key1, &key, why, sizeof(why)), 0);
	key_line(k, sizeof(k), key1);
	assert_int_equal(start_ex(&b, "b", port_b, peers_ab, 40100, resolve_b, k), 0);
	fd = fake_dial(port_b);
	r = fake_hello(fd, "a", nd);
	assert_non_null(r);
	assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_AUTH);
	assert_string_equal(r->auth->host_name, "b");
	memcpy(na, r->auth->nonce.data, PEER_AUTH_NONCE_LEN);
	fake_hello_hash("a", nd, hh);
	hs = (struct peerauth_hs){ "a", "b", nd, na, hh };
	peerauth_proof(&key, false, &hs, want);
	assert_memory_equal(want, r->auth->proof.data, PEER_AUTH_PROOF_LEN);
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	peerauth_proof(&key, true, &hs, want);
	fake_auth(fd, NULL, NULL, want);
	peerauth_session(&key, &hs, ks);
	r = fake_recv_mac(fd, ks, &rseq);     /* its hello, under a MAC */
	assert_non_null(r);
	assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_HELLO);
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	run_ms(50);
	assert_int_equal(peermgr_status(b.pm, &st, 1), 1);
	assert_int_equal(st.state, PEER_UP);
	assert_true(st.authenticated);

	ka.seq = 1;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_KEEPALIVE;
	m.keepalive = &ka;
	fake_send_mac(fd, &m, ks, 0, false);
	r = fake_recv_mac(fd, ks, &rseq);     /* its answer, or its own keepalive */
	assert_non_null(r);
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	assert_int_equal(peermgr_status(b.pm, &st, 1), 1);
	assert_int_equal(st.state, PEER_UP);
	/* the same message again (a replay: its number is taken) */
	fake_send_mac(fd, &m, ks, 0, false);
	run_ms(100);
	assert_not_up(b.pm, "failed authentication");
	close(fd);

	/* and a spoiled MAC on a fresh connection's first message */
	fd = fake_dial(port_b);
	nd[0]++;
	r = fake_hello(fd, "a", nd);
	assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_AUTH);
	memcpy(na, r->auth->nonce.data, PEER_AUTH_NONCE_LEN);
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	fake_hello_hash("a", nd, hh);
	peerauth_proof(&key, true, &hs, want);
	fake_auth(fd, NULL, NULL, want);
	peerauth_session(&key, &hs, ks);
	rseq = 0;
	r = fake_recv_mac(fd, ks, &rseq);
	assert_non_null(r);
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	fake_send_mac(fd, &m, ks, 0, true);
	run_ms(100);
	assert_not_up(b.pm, NULL);
	close(fd);
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

/* Someone at b's address without the key, dialed by a, bounces a's nonce
 * to a daemon that has the key (a itself, or c) to get a proof. a's dial
 * fails every time: the proof names the wrong daemon, or binds another
 * hello. */
static void bounce(bool dynamic, int oracle_port, const char *name_to_oracle, bool relay_c,
		   const char *why_expected)
{
	struct side a = { 0 }, c = { 0 };
	char k[128], kx[256], txt[64], pname[64];
	UcclPeer__PeerMsg *r, *h;
	uint8_t nd[PEER_AUTH_NONCE_LEN];
	int lfd, dfd, ofd;

	key_line(k, sizeof(k), key1);
	snprintf(kx, sizeof(kx), "%sdynamic_peers = 2\n", k);
	lfd = fake_listen(port_b);
	assert_int_equal(start_ex(&a, "a", port_a, dynamic ? "none" : peers_ab, 40000, NULL, kx), 0);
	if (relay_c)
		assert_int_equal(start_ex(&c, "c", port_c, "none", 40200, NULL, kx), 0);
	if (dynamic) {
		snprintf(txt, sizeof(txt), "127.0.0.1:%d", port_b);
		assert_int_equal(peermgr_dynamic(a.pm, txt, pname, sizeof(pname)), 0);
	}
	dfd = fake_accept(lfd);
	h = fake_recv(dfd);               /* a's hello and nonce */
	assert_non_null(h);
	assert_true(h->hello->has_auth_nonce);
	memcpy(nd, h->hello->auth_nonce.data, PEER_AUTH_NONCE_LEN);
	uccl_peer__peer_msg__free_unpacked(h, NULL);
	ofd = fake_dial(oracle_port);
	r = fake_hello(ofd, name_to_oracle, nd);
	assert_non_null(r);
	if (r->body_case == UCCL_PEER__PEER_MSG__BODY_AUTH)
		fake_auth(dfd, r->auth->nonce.data, r->auth->host_name, r->auth->proof.data);
	else                              /* refused at once: nothing to bounce */
		assert_non_null(strstr(r->error->message, "this daemon's name"));
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	run_ms(100);
	assert_not_up(a.pm, why_expected);
	assert_int_equal(a.ups, 0);
	close(ofd);
	close(dfd);
	close(lfd);
	a.pm = peermgr_free(a.pm);
	if (c.pm)
		c.pm = peermgr_free(c.pm);
	run_ms(50);
}

/* A send refused for a full output queue (-EBUSY to the caller, the
 * connection kept) must not use up a message number: the peer counts what
 * arrives, and a gap reads as tampering. White box: the queue is filled
 * without running the loop. */
static void test_auth_refused_send_keeps_numbers(void **state)
{
	struct side a = { 0 }, b = { 0 };
	struct pconn *c;
	struct lk l = { 0 };
	char k[128];
	uint64_t h, seq;
	uint32_t n = 0;
	bool up;

	(void)state;
	write_key_file(key1, "first key, 24 bytes long\n");
	key_line(k, sizeof(k), key1);
	assert_int_equal(start_ex(&a, "a", port_a, peers_ab, 40000, NULL, k), 0);
	assert_int_equal(start_ex(&b, "b", port_b, peers_ab, 40100, resolve_b, k), 0);
	assert_true(up_flag(&a, &b, &up));
	c = find_peer(a.pm, "b")->conn;
	assert_true(c->mac);
	while (evbuffer_get_length(bufferevent_get_output(c->bev)) < (1u << 20) - 40)
		assert_int_equal(peer_conn_close(a.pm, "b", 1, 1, 1, n++), 0);
	seq = c->tx_seq;
	assert_int_equal(peer_lookup(a.pm, "b", "a-name-long-enough-to-overflow", 1000, lookup_cb, &l, &h),
			 -EBUSY);
	assert_true(c->tx_seq == seq);
	run_ms(1500);
	assert_true(both_up(&a, &b));
	assert_int_equal(a.downs + b.downs, 0);
	a.pm = peermgr_free(a.pm);
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

/* An accepting side that has the key refuses after a's Auth went out,
 * before it could have a session key (its key reloaded, say): its Error
 * has no MAC. a reads it as such instead of as tampering. */
static void test_auth_unmacd_refusal_is_read(void **state)
{
	struct side a = { 0 };
	struct peerauth_key key = { 0 };
	uint8_t nd[PEER_AUTH_NONCE_LEN], na[PEER_AUTH_NONCE_LEN] = { 5 }, hh[SHA256_LEN];
	uint8_t proof[PEER_AUTH_PROOF_LEN], *buf;
	UcclPeer__PeerMsg *h, *r, m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__Error e = UCCL_PEER__ERROR__INIT;
	struct peerauth_hs hs = { "a", "b", nd, na, hh };
	char k[128], why[256];
	size_t len;
	int lfd, fd;

	(void)state;
	write_key_file(key1, "first key, 24 bytes long\n");
	assert_int_equal(peerauth_key_load(key1, &key, why, sizeof(why)), 0);
	key_line(k, sizeof(k), key1);
	lfd = fake_listen(port_b);
	assert_int_equal(start_ex(&a, "a", port_a, peers_ab, 40000, NULL, k), 0);
	fd = fake_accept(lfd);
	h = fake_recv(fd);
	assert_non_null(h);
	memcpy(nd, h->hello->auth_nonce.data, PEER_AUTH_NONCE_LEN);
	assert_int_equal(peerframe_pack(h, &buf, &len), 0);
	sha256(buf + FRAME_HDR_LEN, len - FRAME_HDR_LEN, hh);
	free(buf);
	uccl_peer__peer_msg__free_unpacked(h, NULL);
	peerauth_proof(&key, false, &hs, proof);
	fake_auth(fd, na, "b", proof);
	r = fake_recv(fd);                /* a's proof: a now wants MACs */
	assert_non_null(r);
	assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_AUTH);
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	e.code = -EAGAIN;
	e.message = "peer_key_file was reloaded during the handshake";
	m.body_case = UCCL_PEER__PEER_MSG__BODY_ERROR;
	m.error = &e;
	fake_send(fd, &m);
	run_ms(100);
	assert_not_up(a.pm, "refused by the peer (unauthenticated): peer_key_file was reloaded");
	close(fd);
	close(lfd);
	a.pm = peermgr_free(a.pm);
	run_ms(50);
}

/* a dials without a key; a key is loaded before the answer: the plain
 * hello that comes back is not let in (it came up unauthenticated, and
 * stayed up). The handshake closes; the next dial brings a nonce. */
static void test_a_key_loaded_during_a_dial_closes_it(void **state)
{
	struct side a = { 0 };
	struct peerauth_key key = { 0 };
	UcclPeer__PeerMsg *h, m;
	UcclPeer__Hello hb;
	char k[128], why[256], text[640], err[256];
	struct conf c;
	int lfd, fd;

	(void)state;
	lfd = fake_listen(port_b);
	assert_int_equal(start(&a, "a", port_a, peers_ab, 40000, NULL), 0);
	fd = fake_accept(lfd);
	h = fake_recv(fd);
	assert_non_null(h);
	assert_false(h->hello->has_auth_nonce);
	uccl_peer__peer_msg__free_unpacked(h, NULL);
	write_key_file(key1, "first key, 24 bytes long\n");
	assert_int_equal(peerauth_key_load(key1, &key, why, sizeof(why)), 0);
	key_line(k, sizeof(k), key1);
	snprintf(text, sizeof(text), "%s%s", a.conf_text, k);
	assert_int_equal(conf_parse("t.conf", text, strlen(text), &c, err, sizeof(err)), 0);
	peermgr_reload(a.pm, &c, &key);
	fake_hello_msg(&m, &hb, "b", NULL);
	fake_send(fd, &m);
	run_ms(100);
	assert_not_up(a.pm, "reloaded during the handshake");
	close(fd);
	close(lfd);
	a.pm = peermgr_free(a.pm);
	run_ms(50);
}

/* The dialing side with data_crc refuses an answer that does not say
 * whether its sender has the option, with the reason kept for ucclctl;
 * an answer that says so (false) brings the peer up. */
static void test_dialer_with_data_crc_refuses_a_silent_hello(void **state)
{
	(void)state;
	for (int says = 0; says < 2; says++) {
		struct side a = { 0 };
		UcclPeer__PeerMsg *h, m;
		UcclPeer__Hello hb;
		int lfd, fd;

		lfd = fake_listen(port_b);
		assert_int_equal(start_ex(&a, "a", port_a, peers_ab, 40000, NULL, "data_crc = true\n"), 0);
		fd = fake_accept(lfd);
		h = fake_recv(fd);
		assert_non_null(h);
		assert_true(h->hello->has_data_crc && h->hello->data_crc);
		uccl_peer__peer_msg__free_unpacked(h, NULL);
		fake_hello_msg(&m, &hb, "b", NULL);
		hb.has_data_crc = says;
		fake_send(fd, &m);
		if (says) {
			assert_true(run_until_count(&a.ups, 1));
		} else {
			h = fake_recv(fd);
			assert_non_null(h);
			assert_int_equal(h->body_case, UCCL_PEER__PEER_MSG__BODY_ERROR);
			assert_non_null(strstr(h->error->message, "b does not announce data_crc"));
			uccl_peer__peer_msg__free_unpacked(h, NULL);
			assert_not_up(a.pm, "does not announce data_crc");
			assert_int_equal(a.ups, 0);
		}
		close(fd);
		close(lfd);
		a.pm = peermgr_free(a.pm);
		run_ms(50);
	}
}

static void test_auth_bounced_proofs_fail(void **state)
{
	(void)state;
	write_key_file(key1, "first key, 24 bytes long\n");
	/* a configured peer b: a's own listener, as a or as another name */
	bounce(false, port_a, "a", false, NULL);
	bounce(false, port_a, "zzz", false, "authenticates as a, not as the peer dialed");
	/* c's proof names c */
	bounce(false, port_c, "a", true, "authenticates as c, not as the peer dialed");
	/* dialed by address: any name but a's own, but c's proof binds the
	 * stranger's hello, not a's */
	bounce(true, port_a, "zzz", false, "authenticates as a, this daemon's name");
	bounce(true, port_c, "a", true, "does not match a's key");
}

/* A hello from an unlisted daemon that announces its data plane elsewhere
 * than where it talks from is refused before it takes a dynamic_peers slot:
 * refused after, its peer stayed, with no connection or timer to end it, and
 * two such hellos took both slots for good. */
static void test_a_refused_dynamic_hello_takes_no_slot(void **state)
{
	struct side b = { 0 };
	const char *names[] = { "x1", "x2", "x3" };

	(void)state;
	assert_int_equal(start_ex(&b, "b", port_b, peers_ab, 40100, resolve_b, "dynamic_peers = 2\n"), 0);
	for (int i = 0; i < 3; i++) {
		UcclPeer__PeerMsg m, *r;
		UcclPeer__Hello h;
		int fd = fake_dial(port_b);

		fake_hello_msg(&m, &h, names[i], NULL);
		h.data_address = "10.9.9.9";
		fake_send(fd, &m);
		r = fake_recv(fd);
		assert_non_null(r);
		assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_ERROR);
		assert_non_null(strstr(r->error->message, "announces its data plane at 10.9.9.9"));
		uccl_peer__peer_msg__free_unpacked(r, NULL);
		close(fd);
		assert_int_equal(peermgr_count(b.pm), 1);      /* a only */
	}
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

/* A data address announced as ::ffff:a.b.c.d is that IPv4 address, as the
 * config's and accepted sockets' are: an unlisted daemon talking from
 * 127.0.0.1 that announces ::ffff:127.0.0.1 is taken, and its data plane is
 * known as 127.0.0.1 (it was refused as announcing another host). */
static void test_a_mapped_data_address_is_the_ipv4_one(void **state)
{
	struct side b = { 0 };
	struct peer_status st[4];
	UcclPeer__PeerMsg m, *r;
	UcclPeer__Hello h;
	size_t n, x;
	int fd;

	(void)state;
	assert_int_equal(start_ex(&b, "b", port_b, peers_ab, 40100, resolve_b, "dynamic_peers = 2\n"), 0);
	fd = fake_dial(port_b);
	fake_hello_msg(&m, &h, "x1", NULL);
	h.data_address = "::ffff:127.0.0.1";
	fake_send(fd, &m);
	r = fake_recv(fd);
	assert_non_null(r);
	assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_HELLO);
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	n = peermgr_status(b.pm, st, 4);
	assert_int_equal(n, 2);
	for (x = 0; x < n && strcmp(st[x].name, "x1") != 0; x++)
		;
	assert_true(x < n);
	assert_string_equal(st[x].data_address, "127.0.0.1");
	close(fd);
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

/* With every slot of connections waiting for a hello taken, a newcomer
 * closes one that sent nothing before one in the middle of a keyed
 * handshake (a real daemon there is two round trips from done): the
 * oldest of the host was taken whatever it had done, so connections from a
 * peer's host opened fast enough could close a real daemon's handshake
 * again and again. */
static void test_a_newcomer_closes_an_idle_connection_before_a_handshake(void **state)
{
	uint8_t nonce[PEER_AUTH_NONCE_LEN] = { 9 };
	struct pollfd pf = { .events = POLLIN };
	struct side b = { 0 };
	UcclPeer__PeerMsg *r;
	int hs, idle[PEER_MAX_UNIDENTIFIED];
	char k[128];
	int gone = 0;

	(void)state;
	write_key_file(key1, "first key, 24 bytes long\n");
	key_line(k, sizeof(k), key1);
	assert_int_equal(start_ex(&b, "b", port_b, peers_ab, 40100, resolve_b, k), 0);
	hs = fake_dial(port_b);
	r = fake_hello(hs, "a", nonce);                /* challenged: b waits for a's proof */
	assert_non_null(r);
	assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_AUTH);
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	for (unsigned i = 0; i < PEER_MAX_UNIDENTIFIED; i++) {  /* the last one is past the 8 */
		idle[i] = fake_dial(port_b);
		run_ms(20);
	}
	run_ms(100);
	pf.fd = hs;
	assert_int_equal(poll(&pf, 1, 0), 0);          /* the handshake was left alone */
	for (unsigned i = 0; i < PEER_MAX_UNIDENTIFIED; i++) {
		char c;

		gone += recv(idle[i], &c, 1, MSG_DONTWAIT) >= 0;   /* an Error, or EOF */
		close(idle[i]);
	}
	assert_int_equal(gone, 1);
	close(hs);
	b.pm = peermgr_free(b.pm);
	unlink(key1);
	run_ms(50);
}

/* Without the key, a stranger dialing as peer a (or as a new dynamic
 * peer) gets a challenge and then an Error: a's own connection stays up and
 * no dynamic slot is taken. Without authentication the hello alone would
 * have replaced a's connection. */
static void test_auth_stranger_changes_nothing(void **state)
{
	struct side a = { 0 }, b = { 0 };
	uint8_t nonce[PEER_AUTH_NONCE_LEN] = { 7 }, bogus[PEER_AUTH_PROOF_LEN] = { 1 };
	char k[128], kb[160];
	const char *names[] = { "a", "stranger" };
	bool up;

	(void)state;
	key_line(k, sizeof(k), key1);
	snprintf(kb, sizeof(kb), "%sdynamic_peers = 1\n", k);
	assert_int_equal(start_ex(&a, "a", port_a, peers_ab, 40000, NULL, k), 0);
	assert_int_equal(start_ex(&b, "b", port_b, peers_ab, 40100, resolve_b, kb), 0);
	assert_true(up_flag(&a, &b, &up));

	for (size_t i = 0; i < 2; i++) {
		UcclPeer__PeerMsg *r;
		int fd = fake_dial(port_b);

		r = fake_hello(fd, names[i], nonce);
		assert_non_null(r);
		assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_AUTH);
		assert_true(r->auth->has_nonce);
		uccl_peer__peer_msg__free_unpacked(r, NULL);
		assert_int_equal(peermgr_count(b.pm), 1);      /* nothing taken yet */
		fake_auth(fd, NULL, NULL, bogus);
		r = fake_recv(fd);
		assert_non_null(r);
		assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_ERROR);
		assert_int_equal(r->error->code, -EACCES);
		assert_non_null(strstr(r->error->message, "peer_key_file differs"));
		uccl_peer__peer_msg__free_unpacked(r, NULL);
		close(fd);

		/* and one that brings no nonce at all */
		fd = fake_dial(port_b);
		r = fake_hello(fd, names[i], NULL);
		assert_non_null(r);
		assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_ERROR);
		assert_non_null(strstr(r->error->message, "does not authenticate"));
		uccl_peer__peer_msg__free_unpacked(r, NULL);
		close(fd);
	}
	run_ms(100);
	assert_true(both_up(&a, &b));
	assert_int_equal(a.downs + b.downs, 0);
	assert_int_equal(a.ups, 1);
	assert_int_equal(peermgr_count(b.pm), 1);
	a.pm = peermgr_free(a.pm);
	b.pm = peermgr_free(b.pm);
	run_ms(50);
	unlink(key1);
	unlink(key2);
}

/* An answer to a connect never sent closes the connection with -EPROTO. */
static void test_connect_rep_never_asked(void **state)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT, *r;
	UcclPeer__ConnectRep cr = UCCL_PEER__CONNECT_REP__INIT;
	struct side b = { 0 };
	int fd;

	assert_int_equal(start(&b, "b", port_b, peers_ab, 40100, resolve_b), 0);
	fd = fake_peer_a();
	cr.id = 1;
	cr.status = -ENOENT;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONNECT_REP;
	m.connect_rep = &cr;
	fake_send(fd, &m);
	r = fake_recv(fd);
	assert_non_null(r);
	assert_int_equal(r->body_case, UCCL_PEER__PEER_MSG__BODY_ERROR);
	assert_int_equal(r->error->code, -EPROTO);
	assert_string_equal(r->error->message, "connect_rep: answers a connect never sent");
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	assert_null(fake_recv(fd));   /* then the end */
	assert_int_equal(b.downs, 1);
	close(fd);
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
	peermgr_reload(a.pm, &c, NULL);
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
	peermgr_reload(a.pm, &c, NULL);
	assert_int_equal(peermgr_count(a.pm), 1);
	run_ms(100);
	assert_int_equal(peermgr_status(a.pm, st, 3), 1);
	assert_int_equal(st[0].state, PEER_UP);

	/* b moves to another port: closed and added anew */
	snprintf(more, sizeof(more), "peer_listen = 127.0.0.1:%d\npeers = b=127.0.0.1:%d\n"
		 "host_name = a\n", port_a, port_c);
	assert_int_equal(conf_parse("t.conf", more, strlen(more), &c, err, sizeof(err)), 0);
	peermgr_reload(a.pm, &c, NULL);
	assert_int_equal(peermgr_status(a.pm, st, 3), 1);
	assert_int_equal(st[0].state, PEER_CONNECTING);
	assert_int_equal(a.downs, 1);
	a.pm = peermgr_free(a.pm);
	b.pm = peermgr_free(b.pm);
	run_ms(50);
}

/* uccl.conf with n configured peers p0..p(n-1), none listening, and
 * dynamic_peers = 4. */
static void many_peers_conf(struct conf *c, int n)
{
	char *t = malloc(8192), err[256];
	size_t at;

	assert_non_null(t);
	at = (size_t)snprintf(t, 8192, "peer_listen = 127.0.0.1:%d\nhost_name = a\ndynamic_peers = 4\n"
			      "peers = ", port_a);
	for (int i = 0; i < n; i++)
		at += (size_t)snprintf(t + at, 8192 - at, "%sp%d=127.0.1.%d:%d", i ? ", " : "", i, i + 1,
				       port_c);
	at += (size_t)snprintf(t + at, 8192 - at, "\n");
	assert_int_equal(conf_parse("t.conf", t, at, c, err, sizeof(err)), 0);
	free(t);
}

/* Peers added at run time (dynamic_peers) do not take the room of
 * configured ones: with 63 configured and 4 added at run time, a reload
 * that lists a 64th adds it (the two shared 64 entries, so it was "out of
 * memory" and never added, and the second run-time peer was refused). */
static void test_run_time_peers_leave_room_for_configured_ones(void **state)
{
	struct peer_status *st = calloc(PEERMGR_MAX, sizeof(*st));
	struct side a = { 0 };
	struct conf c;
	char txt[64], name[64];
	size_t n;
	bool found = false;

	(void)state;
	assert_non_null(st);
	many_peers_conf(&c, CONF_MAX_PEERS - 1);
	assert_int_equal(peermgr_start(base, &c, NULL, NULL, &a.pm), 0);
	for (int i = 0; i < 4; i++) {
		snprintf(txt, sizeof(txt), "127.0.2.%d:%d", i + 1, port_c);
		assert_int_equal(peermgr_dynamic(a.pm, txt, name, sizeof(name)), 0);
	}
	snprintf(txt, sizeof(txt), "127.0.2.9:%d", port_c);
	assert_int_equal(peermgr_dynamic(a.pm, txt, name, sizeof(name)), -EUSERS);
	assert_int_equal(peermgr_count(a.pm), CONF_MAX_PEERS - 1 + 4);
	many_peers_conf(&c, CONF_MAX_PEERS);
	peermgr_reload(a.pm, &c, NULL);
	n = peermgr_status(a.pm, st, PEERMGR_MAX);
	assert_int_equal(n, CONF_MAX_PEERS + 4);
	for (size_t i = 0; i < n; i++)
		found |= strcmp(st[i].name, "p63") == 0;
	assert_true(found);
	a.pm = peermgr_free(a.pm);
	free(st);
	run_ms(50);
}

/* A peer added at run time that was never reached gives its place to the
 * next address a client names, a second after its dial failed: one client
 * naming dead addresses again and again held every place, and others'
 * connects by address failed with EUSERS. One whose dial is still going,
 * or failed just now, keeps its place. */
static void test_a_never_reached_run_time_peer_gives_its_place(void **state)
{
	struct side b = { 0 };
	char txt[64], name[64];

	(void)state;
	assert_int_equal(start_ex(&b, "b", port_b, peers_ab, 40100, resolve_b, "dynamic_peers = 2\n"), 0);
	for (int i = 0; i < 2; i++) {
		snprintf(txt, sizeof(txt), "127.0.2.%d:%d", i + 1, port_c);
		assert_int_equal(peermgr_dynamic(b.pm, txt, name, sizeof(name)), 0);
	}
	snprintf(txt, sizeof(txt), "127.0.2.9:%d", port_c);
	assert_int_equal(peermgr_dynamic(b.pm, txt, name, sizeof(name)), -EUSERS);  /* dialing */
	run_ms(100);                                   /* both dials refused */
	assert_int_equal(peermgr_dynamic(b.pm, txt, name, sizeof(name)), -EUSERS);  /* just now */
	/* a client names the two again and again (each time they are dialed
	 * again, and wait out peer_timeout_ms, 1 s here, anew) */
	for (int k = 0; k < 8; k++) {
		for (int i = 0; i < 2; i++) {
			char d[64];

			snprintf(d, sizeof(d), "127.0.2.%d:%d", i + 1, port_c);
			assert_int_equal(peermgr_dynamic(b.pm, d, name, sizeof(name)), 0);
		}
		run_ms(200);
	}
	snprintf(txt, sizeof(txt), "127.0.2.9:%d", port_c);
	assert_int_equal(peermgr_dynamic(b.pm, txt, name, sizeof(name)), 0);
	assert_int_equal(peermgr_count(b.pm), 1 + 2);  /* a, one of the two, the new one */
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
	const char *one = "peer_listen = 127.0.0.1:1\nhost_name = x\n";

	assert_int_equal(start(&a, "a", port_a, peers_ab, 0, NULL), 0);
	assert_int_equal(start(&b, "b", port_a, peers_ab, 0, NULL), -EADDRINUSE);
	/* the parser refuses it already; a configuration made otherwise too */
	assert_int_equal(conf_parse("t.conf", any, strlen(any), &c, err, sizeof(err)), -EINVAL);
	assert_int_equal(conf_parse("t.conf", one, strlen(one), &c, err, sizeof(err)), 0);
	c.data_address = (struct conf_addr){ .family = AF_INET };
	assert_int_equal(peermgr_start(base, &c, NULL, NULL, &b.pm), -EINVAL);
	a.pm = peermgr_free(a.pm);
	assert_null(peermgr_free(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meet_tokens_cross),
		cmocka_unit_test(test_restart_rebuilds_the_peer),
		cmocka_unit_test(test_lookups),
		cmocka_unit_test(test_connect_answers),
		cmocka_unit_test(test_connect_timeout_and_cancel),
		cmocka_unit_test(test_connect_limit),
		cmocka_unit_test(test_connect_peer_down),
		cmocka_unit_test(test_conn_close),
		cmocka_unit_test(test_conn_close_to_a_peer_that_does_not_read),
		cmocka_unit_test(test_connects_asked_of_us_are_limited),
		cmocka_unit_test(test_hello_max_inflight_bytes_is_clamped),
		cmocka_unit_test(test_hello_data_crc),
		cmocka_unit_test(test_dialer_with_data_crc_refuses_a_silent_hello),
		cmocka_unit_test(test_connect_rep_never_asked),
		cmocka_unit_test(test_reload_adds_and_removes),
		cmocka_unit_test(test_auth_same_key_meets),
		cmocka_unit_test(test_auth_refusals),
		cmocka_unit_test(test_auth_fake_daemon_with_the_key),
		cmocka_unit_test(test_auth_bounced_proofs_fail),
		cmocka_unit_test(test_auth_refused_send_keeps_numbers),
		cmocka_unit_test(test_auth_unmacd_refusal_is_read),
		cmocka_unit_test(test_a_key_loaded_during_a_dial_closes_it),
		cmocka_unit_test(test_auth_stranger_changes_nothing),
		cmocka_unit_test(test_a_newcomer_closes_an_idle_connection_before_a_handshake),
		cmocka_unit_test(test_a_refused_dynamic_hello_takes_no_slot),
		cmocka_unit_test(test_a_mapped_data_address_is_the_ipv4_one),
		cmocka_unit_test(test_run_time_peers_leave_room_for_configured_ones),
		cmocka_unit_test(test_a_never_reached_run_time_peer_gives_its_place),
		cmocka_unit_test(test_start_errors),
	};

	log_init();
	log_set_level(getenv("PEER_TEST_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_ERROR);
	return cmocka_run_group_tests(tests, setup, teardown);
}
