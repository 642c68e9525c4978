/* SPDX-License-Identifier: MIT */
/*
 * test_engthr: an engine thread as its owner sees it: what is submitted
 * runs, and its done callback comes, before engthr_stop returns, beyond the
 * lock-free queue's room too; every channel that gives up is told, however
 * many give up before the main thread looks.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <sys/eventfd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "daemon/engthr.h"
#include "engine/ring.h"

static int ndone;

static void done(struct engcmd *c)
{
	ndone++;
	free(c);
}

/* More commands than the queue holds (4096): the rest wait in the main
 * thread's overflow list. engthr_stop ran the ones in the queue and
 * dropped the others (4096 of 5000 callbacks, the rest leaked). */
static void test_stop_completes_every_command_submitted(void **state)
{
	struct event_base *base = event_base_new();
	struct engthr_params p = { .max_endpoints = 16, .max_mrs = 16, .cpu = -1 };
	struct engthr *t = NULL;
	const int n = 5000;

	(void)state;
	assert_non_null(base);
	assert_int_equal(engthr_start(&p, base, &t), 0);
	ndone = 0;
	for (int i = 0; i < n; i++) {
		struct engcmd *c = calloc(1, sizeof(*c));

		assert_non_null(c);
		c->type = ENGCMD_CONN_REMOVE;          /* no such endpoint: cheap */
		c->done = done;
		engthr_submit(t, c);
	}
	assert_int_equal(engthr_inflight(t), n);
	engthr_stop(t);
	assert_int_equal(ndone, n);
	event_base_free(base);
}

/* ---- a NIC that loses every packet: every channel to it gives up ---- */

static char blackhole;                 /* the struct nic handed over: never read */
static uint32_t bh_peers;

static int bh_add_peer(struct nic *n, const struct sockaddr *a, socklen_t len, uint32_t paths,
		       uint32_t *peer)
{
	(void)n, (void)a, (void)len, (void)paths;
	*peer = bh_peers++;
	return 0;
}

static int bh_remove_peer(struct nic *n, uint32_t peer)
{
	(void)n, (void)peer;
	return 0;
}

static int bh_tx(struct nic *n, const struct nic_pkt *pkts, int count)
{
	(void)n, (void)pkts;
	return count;                  /* sent, and lost */
}

static int bh_rx(struct nic *n, struct nic_pkt *pkts, int max)
{
	(void)n, (void)pkts, (void)max;
	return 0;
}

static int bh_wait_fds(struct nic *n, int *fds, int max)
{
	(void)n, (void)fds, (void)max;
	return 0;
}

static void bh_get_stats(struct nic *n, struct nic_stats *out)
{
	(void)n;
	memset(out, 0, sizeof(*out));
}

static void bh_close(struct nic *n)
{
	(void)n;
}

static const struct nic_ops bh_ops = {
	.name        = "blackhole",
	.close       = bh_close,
	.add_peer    = bh_add_peer,
	.remove_peer = bh_remove_peer,
	.tx          = bh_tx,
	.rx          = bh_rx,
	.wait_fds    = bh_wait_fds,
	.get_stats   = bh_get_stats,
};

#define NCHANS 80u                     /* past the 64 failures the queue holds */
#define TAG(chan) (1000u + (chan))
#define RING 256u

static uint32_t told[NCHANS];          /* chan_failed calls, by channel */
static int told_total, bad_tags;

static void chan_failed(void *arg, uint32_t thread, uint32_t chan, uint64_t tag)
{
	(void)arg;
	(void)thread;
	if (chan >= NCHANS || tag != TAG(chan)) {
		bad_tags++;
		return;
	}
	told[chan]++;
	told_total++;
}

static int nresult_errors;

static void done_checked(struct engcmd *c)
{
	if (c->result < 0)
		nresult_errors++;
	ndone++;
	free(c);
}

static void submit(struct engthr *t, struct engcmd c)
{
	struct engcmd *p = malloc(sizeof(*p));

	assert_non_null(p);
	*p = c;
	p->done = done_checked;
	engthr_submit(t, p);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* NCHANS channels give up at once, each with a signal unacknowledged on
 * it, while the main thread does not run: every one is told when it does.
 * The engine thread's queue to the main thread holds 64; the failures past
 * that were dropped (freed), and marked told in the engine, so that the
 * daemon never restarted those peers, and a get waiting at such a peer for
 * a response that would never come waited for ever. */
static void test_every_channel_that_gives_up_is_told(void **state)
{
	struct event_base *base = event_base_new();
	struct engthr_params p = {
		.max_endpoints = 4, .max_mrs = 4, .poll_batch = 64, .max_op_bytes = 1 << 20,
		.cpu = -1, .nic_ops = &bh_ops, .nic = (struct nic *)&blackhole,
		.max_chans = NCHANS, .chan_failed = chan_failed,
	};
	struct uccl_shm_hdr hdr;
	struct ring_side sq, cq;
	struct engthr *t = NULL;
	size_t len = ring_region_layout(RING, RING, NCHANS, &hdr);
	void *region = aligned_alloc(4096, len);
	int doorbell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int notify = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct engcmd c = { 0 };
	int want = 0, got = 0;
	uint64_t until, one = 1;

	(void)state;
	assert_non_null(base);
	assert_non_null(region);
	assert_true(doorbell >= 0 && notify >= 0);
	memset(region, 0, len);
	memcpy(region, &hdr, sizeof(hdr));
	ring_side_init(&sq, region, hdr.sq_ctl_off, hdr.sq_off, RING, UCCL_SQE_SIZE);
	ring_side_init(&cq, region, hdr.cq_ctl_off, hdr.cq_off, RING, UCCL_CQE_SIZE);
	assert_int_equal(engthr_start(&p, base, &t), 0);
	ndone = nresult_errors = 0;

	c.type = ENGCMD_EP_ADD;
	c.u.ep.p = (struct engine_ep_params){ .ep_id = 0, .client_id = 1, .region = region,
					      .region_len = len, .hdr = &hdr, .max_conns = NCHANS,
					      .max_outstanding = RING };
	c.u.ep.doorbell_fd = doorbell;
	c.u.ep.notify_fd = notify;
	submit(t, c);
	want++;
	for (uint32_t i = 0; i < NCHANS; i++) {
		struct sockaddr_in *sin;

		memset(&c, 0, sizeof(c));
		c.type = ENGCMD_CHAN_ADD;
		c.u.chan.chan = i;
		sin = (struct sockaddr_in *)&c.u.chan.addr;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)(20000 + i));
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		c.u.chan.addrlen = sizeof(*sin);
		c.u.chan.p = (struct tpchan_params){
			.tx_token = 1, .rx_token = 2, .mtu = 1500, .npaths = 1,
			.rto_init_ns = 1000000, .rto_min_ns = 200000, .rto_max_ns = 2000000,
			.max_retx = 2,
		};
		c.u.chan.tag = TAG(i);
		submit(t, c);
		memset(&c, 0, sizeof(c));
		c.type = ENGCMD_RCONN_ADD;
		c.u.rconn = (typeof(c.u.rconn)){ .ep = 0, .conn = i, .wire = i | 1u << 16, .chan = i };
		submit(t, c);
		memset(&c, 0, sizeof(c));
		c.type = ENGCMD_RCONN_CONNECT;
		c.u.rconn_c = (typeof(c.u.rconn_c)){ .ep = 0, .conn = i, .rep = 0, .rwire = i | 2u << 16 };
		submit(t, c);
		want += 3;
	}
	until = mono_ms() + 10000;
	while (ndone < want && mono_ms() < until) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	assert_int_equal(ndone, want);
	assert_int_equal(nresult_errors, 0);

	/* a signal on every connection; the main thread looks away meanwhile */
	for (uint32_t i = 0; i < NCHANS; i++) {
		struct uccl_sqe s = { .opcode = UCCL_OP_SIGNAL, .conn = i, .user_data = i + 1 };

		memcpy(ring_prod_slot(&sq, 0), &s, sizeof(s));
		ring_prod_publish(&sq, 1);
	}
	assert_int_equal(write(doorbell, &one, sizeof(one)), (ssize_t)sizeof(one));
	until = mono_ms() + 10000;
	while (got < (int)NCHANS && mono_ms() < until) {
		int n = ring_cons_avail(&cq);

		for (int k = 0; k < n; k++) {
			const struct uccl_cqe *e = ring_cons_slot(&cq, (uint32_t)k);

			assert_int_equal(e->res, -ETIMEDOUT);
		}
		if (n > 0)
			ring_cons_release(&cq, (uint32_t)n);
		got += n > 0 ? n : 0;
		usleep(1000);
	}
	assert_int_equal(got, NCHANS);   /* every channel gave up */
	usleep(50000);                   /* and the engine thread's pass that saw it ended */

	until = mono_ms() + 5000;
	while (told_total < (int)NCHANS && mono_ms() < until) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	assert_int_equal(bad_tags, 0);
	for (uint32_t i = 0; i < NCHANS; i++)
		if (told[i] != 1)
			fail_msg("channel %u told %u times (%d of %u told in all)", i, told[i], told_total,
				 NCHANS);
	engthr_stop(t);
	event_base_free(base);
	close(doorbell);
	close(notify);
	free(region);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stop_completes_every_command_submitted),
		cmocka_unit_test(test_every_channel_that_gives_up_is_told),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
