/* SPDX-License-Identifier: MIT */
/*
 * engine_turn_bench: the engines' CPU per hop of a 64 B put+signal
 * ping-pong, the latency path of issue #3 without the kernel. Two engines
 * in one process, one endpoint each and a channel to the other with the
 * daemon's default settings (uccl.conf(5): 64 paths, ack_hold_us 5,
 * udp_tx_gather, MTU 9000); the packets of each engine_tx call go as one
 * datagram, as the UDP nic packs them, and arrive DELAY_NS later in
 * virtual time. Each side plays a client that answers the other's signal
 * at once, as uccl_rperf's ping-pong does.
 *
 * Reports process CPU per one-way hop: the sender's ring to packets plus
 * the receiver's packets to region, completions and semaphore, the other
 * engine's idle polls (on another core in a daemon) and the harness's
 * datagram copy. System calls and wake-ups are not in it. Every
 * round trip's bytes are checked at both ends; a wrong byte exits 1.
 * Median over RUNS. Not a test.
 *
 * After each run's timed ping-pong, 20000 more hops read the clock around
 * the receiver's engine_rx: the median time from a datagram handed in to
 * its put written in the region, which is how long a spinning client
 * waits on the engine once the datagram is in. Then 100 puts that wait for their completion and
 * get no reply: their round trips in virtual time (2 x DELAY_NS when the
 * receiver acknowledges at once; more where it held the ACK for a reply
 * that never came, which ack_hold_us allows once).
 *
 *   engine_turn_bench [ROUND_TRIPS (100000)] [RUNS (5)] [DELAY_NS (3000)] [fused]
 *
 * fused: each hop is one put with UCCL_SQE_F_SIGNAL instead of a put and a
 * signal.
 */
#include "config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/benchutil.h"
#include "engine/engine.h"
#include "engine/ring.h"

#define BATCH 64
#define RING 256
#define SEMS 4
#define CONN 0u
#define REG (64u * 1024)
#define LAT_HOPS 20000               /* hops timed on the receive side after each run */
#define PUT_WAITS 100               /* put-and-wait round trips after the ping-pong */
#define MAX_INFLIGHT 16              /* datagrams on the wire at once, per direction */
#define KEY(side) (0xA1A1A1A1A1A1A1A1ull + (uint64_t)(side))
#define WIRE(side) (CONN | (1u + (uint32_t)(side)) << 16)   /* conn id, generation */
#define TOKEN(to) (0x7e57000000000000ull | (uint64_t)(to))

struct dgram {
	uint64_t t;
	uint32_t len;
	uint8_t buf[9000];
};

struct side {
	struct engine *e;
	struct engine_mem_ops mem;
	void *region;
	struct uccl_shm_hdr hdr;
	struct ring_side sq, cq;
	uint64_t *sems;
	uint8_t *mr;
	struct dgram q[MAX_INFLIGHT]; /* arriving here, in order */
	uint32_t qhead, qn;
};

static struct side h[2];
static uint64_t now, delay_ns, ndgrams, npkts;
static bool fused;                   /* one put with UCCL_SQE_F_SIGNAL a hop */
static uint8_t *txbuf[BATCH];
static struct engine_txpkt txp[BATCH];

static void die(const char *what)
{
	fprintf(stderr, "engine_turn_bench: %s\n", what);
	exit(1);
}

/* Timing the receive path (lat_on): when engine_rx was called, and how
 * long after that each put landed (the engine's copy into the region). */
static bool lat_on;
static uint64_t rx_t0, *lat, nlat, caplat;

static int copy(void *arg, const struct mr *dst, uint64_t dst_off, const struct mr *src,
		uint64_t src_off, uint64_t len)
{
	(void)arg;
	memcpy((uint8_t *)dst->base + dst_off, (const uint8_t *)src->base + src_off, len);
	if (rx_t0 && nlat < caplat)
		lat[nlat++] = bench_now_ns() - rx_t0;
	return 0;
}

static void side_new(int s)
{
	struct side *x = &h[s];
	struct engine_params ep = { .max_endpoints = 2, .max_mrs = 2, .poll_batch = 64, .mem = &x->mem,
				    .max_chans = 1 };
	struct tpchan_params cp = {
		.tx_token = TOKEN(!s), .rx_token = TOKEN(s), .mtu = 9000, .chunk_bytes = 32768,
		.npaths = 64, .max_inflight_pkts = 4096, .rx_window_pkts = 4096,
		.max_inflight_bytes = 16u << 20, .max_msgs = 1024, .rto_min_ns = 1000000,
		.rto_init_ns = 4000000, .ack_hold_ns = 5000, .dupthresh = 3, .tx_gather = true,
		.seed = 7 + (uint64_t)s, .idle_release_ns = 100000000,
	};
	struct engine_ep_params pp;
	size_t len;

	x->mem = (struct engine_mem_ops){ .copy = copy };
	x->e = engine_new(&ep);
	len = ring_region_layout(RING, RING, SEMS, &x->hdr);
	x->region = len ? aligned_alloc(4096, len) : NULL;
	x->mr = malloc(REG);
	if (!x->e || !x->region || !x->mr)
		die("out of memory");
	memset(x->region, 0, len);
	memcpy(x->region, &x->hdr, sizeof(x->hdr));
	ring_side_init(&x->sq, x->region, x->hdr.sq_ctl_off, x->hdr.sq_off, RING, UCCL_SQE_SIZE);
	ring_side_init(&x->cq, x->region, x->hdr.cq_ctl_off, x->hdr.cq_off, RING, UCCL_CQE_SIZE);
	x->sems = (uint64_t *)((uint8_t *)x->region + x->hdr.sem_off);
	pp = (struct engine_ep_params){ .ep_id = (uint32_t)s, .client_id = 1 + (uint32_t)s,
					.region = x->region, .region_len = len, .hdr = &x->hdr,
					.max_conns = SEMS, .max_outstanding = RING };
	struct mr m = { .id = 1, .client_id = 1 + (uint32_t)s, .rkey = KEY(s), .len = REG,
			.kind = MR_MAPPED, .base = x->mr };
	if (engine_ep_add(x->e, &pp) < 0 || engine_chan_add(x->e, 0, &cp) < 0 ||
	    engine_mr_add(x->e, &m) < 0 || engine_rconn_add(x->e, (uint32_t)s, CONN, WIRE(s), 0) < 0)
		die("engine setup failed");
}

static void side_free(int s)
{
	engine_free(h[s].e);
	free(h[s].region);
	free(h[s].mr);
	memset(&h[s], 0, sizeof(h[s]));
}

/* The client's put of 64 B at off and its signal. */
static void submit(int s, uint64_t off, uint64_t ud)
{
	struct side *x = &h[s];
	struct uccl_sqe put = { .opcode = UCCL_OP_PUT, .conn = CONN, .lmr = 1, .rkey = KEY(!s),
				.loff = off, .roff = off, .len = 64, .user_data = ud };
	struct uccl_sqe sig = { .opcode = UCCL_OP_SIGNAL, .conn = CONN, .user_data = ud + 1 };

	if (ring_prod_space(&x->sq) < 2)
		die("submission ring full");
	if (fused) {
		put.flags = UCCL_SQE_F_SIGNAL;
		memcpy(ring_prod_slot(&x->sq, 0), &put, sizeof(put));
		ring_prod_publish(&x->sq, 1);
		return;
	}
	memcpy(ring_prod_slot(&x->sq, 0), &put, sizeof(put));
	memcpy(ring_prod_slot(&x->sq, 1), &sig, sizeof(sig));
	ring_prod_publish(&x->sq, 2);
}

/* The client reaps its completions; any error stops the bench. */
static void reap(int s)
{
	struct side *x = &h[s];
	int n = ring_cons_avail(&x->cq);

	if (n < 0)
		die("completion ring corrupt");
	for (int i = 0; i < n; i++) {
		const struct uccl_cqe *c = ring_cons_slot(&x->cq, (uint32_t)i);

		if (c->res != 0)
			die("an operation failed");
	}
	ring_cons_release(&x->cq, (uint32_t)n);
}

/* Side s sends what it has: each engine_tx call's packets as a datagram
 * (the engine keeps them under dgram_max, the channel's mtu). */
static void drain(int s)
{
	int k;

	do {
		struct side *to = &h[!s];
		struct dgram *d = NULL;

		k = engine_tx(h[s].e, now, txp, BATCH);
		for (int i = 0; i < k; i++) {
			uint32_t hl = txp[i].payload ? txp[i].hdr_len : txp[i].len;

			if (!d || d->len + txp[i].len > txp[i].dgram_max) {
				if (to->qn == MAX_INFLIGHT)
					die("too many datagrams in flight");
				d = &to->q[(to->qhead + to->qn++) % MAX_INFLIGHT];
				d->t = now + delay_ns;
				d->len = 0;
				ndgrams++;
			}
			memcpy(d->buf + d->len, txp[i].buf, hl);
			if (txp[i].payload)      /* the nic gathers it from the region */
				memcpy(d->buf + d->len + hl, txp[i].payload, txp[i].len - hl);
			d->len += txp[i].len;
			npkts++;
		}
	} while (k == BATCH);
}

/* Polls, sends, moves time to the next arrival or deadline, delivers
 * and runs the receivers' pass on. */
static void step(void)
{
	uint64_t t = UINT64_MAX;

	for (int s = 0; s < 2; s++)
		engine_poll(h[s].e, now);
	for (int s = 0; s < 2; s++)
		drain(s);
	for (int s = 0; s < 2; s++) {
		uint64_t d = engine_next_deadline(h[s].e);

		if (h[s].qn && h[s].q[h[s].qhead].t < t)
			t = h[s].q[h[s].qhead].t;
		if (d < t)
			t = d;
	}
	if (t == UINT64_MAX)
		die("nothing left to happen");
	if (t > now)
		now = t;
	for (int s = 0; s < 2; s++) {
		struct side *x = &h[s];
		bool got = false;

		while (x->qn && x->q[x->qhead].t <= now) {
			int r;

			rx_t0 = lat_on ? bench_now_ns() : 0;
			r = engine_rx(x->e, 0, x->q[x->qhead].buf, x->q[x->qhead].len, now);
			rx_t0 = 0;
			if (r < 0)
				die("a datagram was refused");
			x->qhead = (x->qhead + 1) % MAX_INFLIGHT;
			x->qn--;
			got = true;
		}
		/* the rest of the daemon's pass, before its client can answer:
		 * what the arrivals made due goes now (an ACK not held) */
		if (got) {
			engine_poll(x->e, now);
			drain(s);
		}
	}
}

static uint64_t sem(int s)
{
	return __atomic_load_n(&h[s].sems[CONN], __ATOMIC_ACQUIRE);
}

/* Side s's turn: its put and signal reach the other side. */
static void hop(int s, uint64_t i)
{
	uint64_t off = (i % (REG / 64)) * 64;

	memset(h[s].mr + off, (int)(i * 2 + (uint64_t)s), 64);
	submit(s, off, 2 * i + 1);
	for (int n = 0; sem(!s) < i + 1; n++) {
		if (n > 100000)
			die("a signal did not arrive");
		step();
	}
	if (memcmp(h[!s].mr + off, h[s].mr + off, 64) != 0)
		die("the put's bytes were wrong at the signal");
	reap(s);
	reap(!s);
}

/* Side 0 puts 64 B and waits for the put's completion, with no reply:
 * the put's round trip in virtual time. */
static uint64_t put_wait(uint64_t i)
{
	struct side *x = &h[0];
	struct uccl_sqe put = { .opcode = UCCL_OP_PUT, .conn = CONN, .lmr = 1, .rkey = KEY(1),
				.loff = 0, .roff = 0, .len = 64, .user_data = i };
	uint64_t t0 = now;

	if (ring_prod_space(&x->sq) < 1)
		die("submission ring full");
	memcpy(ring_prod_slot(&x->sq, 0), &put, sizeof(put));
	ring_prod_publish(&x->sq, 1);
	for (int n = 0; ring_cons_avail(&x->cq) < 1; n++) {
		if (n > 100000)
			die("a put did not complete");
		step();
	}
	reap(0);
	reap(1);
	return now - t0;
}

int main(int argc, char **argv)
{
	uint64_t rts = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000;
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	uint64_t rtt[PUT_WAITS], first_rtt = 0;
	double lat_p50[64];
	int held = 0;
	double ns[64], refs[64], rounds[64];

	delay_ns = argc > 3 ? strtoull(argv[3], NULL, 0) : 3000;
	fused = argc > 4 && strcmp(argv[4], "fused") == 0;
	if (rts == 0 || runs < 1 || runs > 64 || delay_ns == 0 || (argc > 4 && !fused)) {
		fprintf(stderr, "usage: engine_turn_bench [ROUND_TRIPS] [RUNS 1..64] [DELAY_NS > 0] [fused]\n");
		return 2;
	}
	caplat = LAT_HOPS;
	lat = malloc(caplat * sizeof(*lat));
	if (!lat)
		die("out of memory");
	for (int i = 0; i < BATCH; i++) {
		txbuf[i] = malloc(9000);
		if (!txbuf[i])
			die("out of memory");
		txp[i].buf = txbuf[i];
	}
	for (int r = 0; r < runs; r++) {
		uint64_t warm = rts / 10 > 100 ? rts / 10 : 100;
		double t0, t1;

		now = 1000000;
		side_new(0);
		side_new(1);
		if (engine_rconn_connect(h[0].e, 0, CONN, 1, WIRE(1)) < 0 ||
		    engine_rconn_connect(h[1].e, 1, CONN, 0, WIRE(0)) < 0)
			die("connect failed");
		for (uint64_t i = 0; i < warm; i++) {
			hop(0, i);
			hop(1, i);
		}
		ndgrams = npkts = 0;
		refs[r] = bench_core_ref(BENCH_REF_ROUNDS);
		t0 = bench_cpu_s();
		for (uint64_t i = warm; i < warm + rts; i++) {
			hop(0, i);
			hop(1, i);
		}
		t1 = bench_cpu_s();
		/* the core's speed on both sides of the run */
		refs[r] = (refs[r] + bench_core_ref(BENCH_REF_ROUNDS)) / 2;
		ns[r] = (t1 - t0) * 1e9 / (double)(2 * rts);
		rounds[r] = ns[r] * refs[r] / 1e9;
		fprintf(stderr, "run %d: %.0f ns of CPU per hop (%" PRIu64 " round trips, %.3f s; "
			"%.2f packets in %.2f datagrams a hop; core reference %.0f M rounds/s)\n", r + 1,
			ns[r], rts, t1 - t0, (double)npkts / (double)(2 * rts),
			(double)ndgrams / (double)(2 * rts), refs[r] / 1e6);
		/* then hops timed on the receiving side: from the datagram
		 * handed to engine_rx to its put in the region (a spinning
		 * client sees the signal right after). Not in the CPU figure. */
		nlat = 0;
		lat_on = true;
		for (uint64_t i = warm + rts; i < warm + rts + LAT_HOPS / 2; i++) {
			hop(0, i);
			hop(1, i);
		}
		lat_on = false;
		qsort(lat, nlat, sizeof(lat[0]), bench_cmp_u64);
		lat_p50[r] = nlat ? (double)lat[nlat / 2] : 0;
		/* then puts that wait for their ACK and get no reply: the ACK
		 * must not wait for one (ack_hold only while replies come) */
		for (int k = 0; k < PUT_WAITS; k++)
			rtt[k] = put_wait(warm + rts + LAT_HOPS / 2 + (uint64_t)k);
		first_rtt = rtt[0];
		held = 0;
		for (int k = 0; k < PUT_WAITS; k++)
			held += rtt[k] > 2 * delay_ns;
		qsort(rtt, PUT_WAITS, sizeof(rtt[0]), bench_cmp_u64);
		side_free(0);
		side_free(1);
	}
	qsort(ns, (size_t)runs, sizeof(ns[0]), bench_cmp_double);
	printf("engine turn: median %.0f ns of CPU per one-way hop of a 64 B %s ping-pong "
	       "(min %.0f, max %.0f, %d runs; both engines, no system calls)\n",
	       ns[runs / 2], fused ? "put-with-signal" : "put+signal", ns[0], ns[runs - 1], runs);
	qsort(refs, (size_t)runs, sizeof(refs[0]), bench_cmp_double);
	qsort(rounds, (size_t)runs, sizeof(rounds[0]), bench_cmp_double);
	printf("core reference: median %.0f M rounds/s (min %.0f, max %.0f); a hop costs %.0f rounds "
	       "(median of runs; a figure of the code, not of how much core it got)\n",
	       refs[runs / 2] / 1e6, refs[0] / 1e6, refs[runs - 1] / 1e6, rounds[runs / 2]);
	qsort(lat_p50, (size_t)runs, sizeof(lat_p50[0]), bench_cmp_double);
	printf("receive path: median %.0f ns from a datagram handed to engine_rx to its put in the "
	       "region (median of the runs' medians over %d hops each)\n", lat_p50[runs / 2], LAT_HOPS);
	printf("put and wait after it (last run, %d puts, no reply): round trip first %" PRIu64
	       " ns, median %" PRIu64 " ns, max %" PRIu64 " ns (2 x delay = %" PRIu64
	       " ns); %d longer than 2 x delay\n", PUT_WAITS, first_rtt, rtt[PUT_WAITS / 2],
	       rtt[PUT_WAITS - 1], 2 * delay_ns, held);
	return 0;
}
