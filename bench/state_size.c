/* SPDX-License-Identifier: MIT */
/*
 * state_size: transport state in bytes, measured from real allocations
 * (issue #4, experiment 5). Creates an engine with the daemon's default
 * channel parameters (daemon/rconn.c chan_up with daemon/conf.c defaults:
 * mtu 1500, chunk 32 KiB, 64 paths, 4096-packet scoreboards, 16 MiB
 * in-flight cap, 1024 messages, cc window, no crc) and counts the heap
 * bytes (glibc mallinfo2: in-use bytes plus mmapped blocks, chunk headers
 * included) that each tpchan_new, engine_chan_add, engine_ep_add and
 * engine_rconn_add takes; a channel idle after creation, busy (a window in
 * flight, a receiver behind a hole) and idle again after traffic and the
 * release hold (two channels joined in memory, virtual time); an endpoint
 * with 0, 1, 16 and 1024 bound connections. Prints the struct sizes of
 * engine/engine_int.h and the linear extrapolation to E endpoints x H hosts
 * for one channel per host pair against one per endpoint pair. Not built by
 * make: see docs/results/e5-state.md for the command line.
 */
#include "config.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/engine_int.h"
#include "engine/remote_int.h"
#include "engine/ring.h"
#include "engine/tpchan.h"

static size_t used(void)
{
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
}

static int nop_copy(void *arg, const struct mr *d, uint64_t doff, const struct mr *s,
		    uint64_t soff, uint64_t len)
{
	(void)arg; (void)d; (void)doff; (void)s; (void)soff; (void)len;
	return 0;
}

static int nop_read(void *arg, uint64_t cookie, uint64_t off, void *dst, uint32_t len)
{
	(void)arg; (void)cookie; (void)off; (void)dst; (void)len;
	return 0;
}

static int nop_deliver(void *arg, const struct wire_data *d)
{
	(void)arg; (void)d;
	return 0;
}

static void nop_complete(void *arg, uint64_t cookie, int res)
{
	(void)arg; (void)cookie; (void)res;
}

static const struct tpchan_cb cb = { .read = nop_read, .deliver = nop_deliver, .complete = nop_complete };

/* 64 random-looking bits (splitmix64): the daemon draws tokens and path
 * seeds from getrandom, and small ones would pack shorter when frozen */
static uint64_t rnd64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* daemon/rconn.c chan_up() with the daemon/conf.c defaults */
static struct tpchan_params daemon_chan(uint32_t i)
{
	return (struct tpchan_params){
		.tx_token = rnd64(3 * i), .rx_token = rnd64(3 * i + 1), .mtu = 1500, .chunk_bytes = 32768,
		.npaths = 64, .max_inflight_pkts = 4096, .rx_window_pkts = 4096,
		.max_inflight_bytes = 16u << 20, .max_msgs = 1024, .go_back_n = false,
		.rto_min_ns = 1000000, .dupthresh = 3, .cc = cc_find("window"),
		.cc_delay_slack_ns = 500000, .rto_init_ns = 4000000, .crc = false, .seed = rnd64(3 * i + 2),
		.idle_release_ns = 100000000, .cb = &cb,
	};
}

/* ---- a channel through traffic: a sends to b, packets land at once ---- */

#define BATCH 64
static uint8_t pkbuf[BATCH][1500];
static long long acc[2];               /* heap bytes taken by a's, b's calls */

/* Allocation happens only inside tpchan calls: bracket each one. */
#define ON(side, call) do { size_t u0_ = used(); call; acc[side] += (long long)used() - (long long)u0_; } while (0)

/* Side s sends what it has at now; the other side gets it (all but the
 * first packet if drop_first). Returns packets sent. */
static int move(struct tpchan *ch[2], int s, uint64_t now, bool drop_first)
{
	struct tpchan_txpkt out[BATCH];
	int n;

	for (int i = 0; i < BATCH; i++)
		out[i].buf = pkbuf[i];
	ON(s, n = tpchan_tx(ch[s], now, out, BATCH));
	for (int i = drop_first ? 1 : 0; i < n; i++)
		ON(!s, tpchan_rx(ch[!s], out[i].buf, out[i].len, now));
	return n;
}

struct chan_life {
	long long idle, busy_tx, busy_rx, after_tx, after_rx;
	uint64_t st_idle, st_busy_tx, st_busy_rx, st_after_tx, st_after_rx, rel_tx, rel_rx;
	uint64_t st_peak_tx, st_peak_rx;       /* most state_bytes during the transfer */
	uint64_t release_ns;
};

/* a sends one 4 MiB message to b; the first packet is lost, so b holds a
 * hole for a while. Bytes of each channel idle, busy, and after the hold. */
static int chan_life(struct chan_life *o)
{
	struct tpchan_params pa = daemon_chan(1), pb = daemon_chan(2);
	struct tpchan *ch[2];
	struct tpchan_stats sa, sb;
	struct tpchan_msg m = { .cookie = 1, .opcode = 2, .len = 4u << 20 };
	uint64_t now = 30ull * 86400 * 1000000000, done_at = 0;   /* a month of uptime: timestamps pack as they would in a daemon */
	size_t base;
	int r;

	pb.tx_token = pa.rx_token;
	pb.rx_token = pa.tx_token;
	base = used();
	ch[0] = tpchan_new(&pa);
	o->idle = (long long)(used() - base);
	ch[1] = tpchan_new(&pb);
	if (!ch[0] || !ch[1])
		return -1;
	acc[0] = acc[1] = 0;
	tpchan_get_stats(ch[0], &sa);
	o->st_idle = sa.state_bytes;
	ON(0, r = tpchan_submit(ch[0], &m));
	if (r < 0)
		return -1;
	/* one batch goes out, its first packet lost: both sides busy */
	move(ch, 0, now, true);
	o->busy_tx = o->idle + acc[0];
	o->busy_rx = o->idle + acc[1];
	tpchan_get_stats(ch[0], &sa);
	tpchan_get_stats(ch[1], &sb);
	o->st_busy_tx = sa.state_bytes;
	o->st_busy_rx = sb.state_bytes;
	/* the rest, 1 us a round, until only the release hold is left */
	for (int i = 0; i < 10000000; i++) {
		now += 1000;
		move(ch, 0, now, false);
		move(ch, 1, now, false);
		tpchan_get_stats(ch[0], &sa);
		tpchan_get_stats(ch[1], &sb);
		if (sa.state_bytes > o->st_peak_tx)
			o->st_peak_tx = sa.state_bytes;
		if (sb.state_bytes > o->st_peak_rx)
			o->st_peak_rx = sb.state_bytes;
		if (sa.msgs_completed && !done_at)
			done_at = now;
		if (done_at && tpchan_next_deadline(ch[0]) > now + 1000000 &&
		    tpchan_next_deadline(ch[1]) > now + 1000000)
			break;
	}
	if (!done_at)
		return -1;
	now = tpchan_next_deadline(ch[0]);
	if (tpchan_next_deadline(ch[1]) > now)
		now = tpchan_next_deadline(ch[1]);
	o->release_ns = now - done_at;
	move(ch, 0, now, false);
	move(ch, 1, now, false);
	o->after_tx = o->idle + acc[0];
	o->after_rx = o->idle + acc[1];
	tpchan_get_stats(ch[0], &sa);
	tpchan_get_stats(ch[1], &sb);
	o->st_after_tx = sa.state_bytes;
	o->st_after_rx = sb.state_bytes;
	o->rel_tx = sa.state_releases;
	o->rel_rx = sb.state_releases;
	tpchan_free(ch[0]);
	tpchan_free(ch[1]);
	return 0;
}

static double ns_since(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) * 1e9 + (double)(b.tv_nsec - a->tv_nsec);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* What freezing costs in time: a tpchan_reset on a frozen channel unpacks
 * it, resets nothing and packs it again; a tpchan_get_stats reads it from
 * a copy on the stack. Medians of 5 runs of 100000 calls, ns per call. */
static void freeze_cost(double *round_trip, double *stats)
{
	struct tpchan_params p = daemon_chan(7);
	struct tpchan *c = tpchan_new(&p);
	struct tpchan_stats st;
	struct timespec t;
	double rt[5], gs[5];
	const int n = 100000;

	*round_trip = *stats = -1;
	if (!c)
		return;
	for (int k = 0; k < 5; k++) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		for (int i = 0; i < n; i++)
			tpchan_reset(c, -ECONNRESET);
		rt[k] = ns_since(&t) / n;
		clock_gettime(CLOCK_MONOTONIC, &t);
		for (int i = 0; i < n; i++)
			tpchan_get_stats(c, &st);
		gs[k] = ns_since(&t) / n;
	}
	tpchan_free(c);
	qsort(rt, 5, sizeof(rt[0]), cmp_dbl);
	qsort(gs, 5, sizeof(gs[0]), cmp_dbl);
	*round_trip = rt[2];
	*stats = gs[2];
}

#define NCH 64
#define NEP 16

int main(int argc, char **argv)
{
	static struct tpchan *tc[NCH];
	size_t live_base;
	struct engine_mem_ops mem = { .copy = nop_copy };
	struct engine_params ep = {
		.max_endpoints = 1024, .max_mrs = 1u << 20, .poll_batch = 64, .mem = &mem,
		.max_chans = 1024,
	};
	struct uccl_shm_hdr hdr[2];
	void *region[2];
	size_t rlen[2], a, per_tp, per_ch, per_ep[2], eng, with[3];
	uint32_t conns[2] = { 256, 1024 }, nconn[3] = { 1, 16, 1024 };
	struct chan_life L = { 0 };
	struct engine *e;
	double E = 1024, H = 1024, per_conn, first_conn;

	/* glibc's per-thread cache keeps freed blocks counted as in use, and
	 * a frozen channel frees most of what it had: measure without it */
	if (!getenv("GLIBC_TUNABLES")) {
		setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1);
		execv("/proc/self/exe", argv);
		fprintf(stderr, "state_size: re-exec without the malloc cache failed; "
			"figures below count freed blocks\n");
	}
	(void)argc;
	/* a bare tpchan, once the allocator's own first-use setup is done */
	{
		struct tpchan_params p = daemon_chan(0);
		struct tpchan_stats st;
		struct tpchan *t;

		tpchan_free(tpchan_new(&p));
		/* the fixed part unpacked, as a live channel holds it */
		p.freeze_off = true;
		t = tpchan_new(&p);
		if (!t)
			return 1;
		tpchan_get_stats(t, &st);
		live_base = st.state_bytes;
		tpchan_free(t);
	}
	a = used();
	for (uint32_t i = 0; i < NCH; i++) {
		struct tpchan_params p = daemon_chan(i);

		if (!(tc[i] = tpchan_new(&p)))
			return 1;
	}
	per_tp = (used() - a) / NCH;
	for (uint32_t i = 0; i < NCH; i++)
		tpchan_free(tc[i]);
	if (chan_life(&L) < 0)
		return 1;

	a = used();
	e = engine_new(&ep);
	if (!e)
		return 1;
	eng = used() - a;

	/* channels as the engine keeps them (struct rchan + tpchan) */
	a = used();
	for (uint32_t i = 0; i < NCH; i++) {
		struct tpchan_params p = daemon_chan(i);

		if (engine_chan_add(e, i, &p) < 0)
			return 1;
	}
	per_ch = (used() - a) / NCH;

	/* endpoints with 256 and 1024 connection ids and no connection: the
	 * ring region is the client's shared memory, allocated outside the count */
	for (int k = 0; k < 2; k++) {
		rlen[k] = ring_region_layout(256, 256, conns[k], &hdr[k]);
		region[k] = aligned_alloc(4096, (rlen[k] + 4095) / 4096 * 4096);
		if (!rlen[k] || !region[k])
			return 1;
		memset(region[k], 0, rlen[k]);
		memcpy(region[k], &hdr[k], sizeof(hdr[k]));
	}
	for (int k = 0; k < 2; k++) {
		a = used();
		for (uint32_t i = 0; i < NEP; i++) {
			struct engine_ep_params pp = {
				.ep_id = k * NEP + i, .client_id = 1 + k * NEP + i,
				.region = region[k], .region_len = rlen[k], .hdr = &hdr[k],
				.max_conns = conns[k], .max_outstanding = 256,
			};

			if (engine_ep_add(e, &pp) < 0)
				return 1;
		}
		per_ep[k] = (used() - a) / NEP;
	}
	/* bind 1, then 16, then 1024 connections of each 1024-id endpoint to
	 * channels (round robin): what an endpoint's connections cost */
	for (int j = 0, from = 0; j < 3; from = (int)nconn[j++]) {
		a = used();
		for (uint32_t i = 0; i < NEP; i++)
			for (uint32_t c = (uint32_t)from; c < nconn[j]; c++)
				if (engine_rconn_add(e, NEP + i, c, c | 1u << 16, c % NCH) < 0)
					return 1;
		with[j] = (used() - a) / NEP + (j ? with[j - 1] : 0);
	}
	per_conn = (double)(with[2] - with[1]) / (1024 - 16);
	first_conn = (double)with[0];

	printf("sizeof(struct conn)        %zu\n", sizeof(struct conn));
	printf("sizeof(struct rconn)       %zu (inside struct conn)\n", sizeof(struct rconn));
	printf("sizeof(struct ep)          %zu\n", sizeof(struct ep));
	printf("sizeof(struct rchan)       %zu\n", sizeof(struct rchan));
	printf("sizeof(struct opq_op)      %zu (op pools: 16, 16, 32... of them as ops wait, "
	       "up to max_outstanding)\n", sizeof(struct opq_op));
	printf("engine_new                 %zu bytes (max_endpoints 1024, max_chans 1024, max_mrs 2^20 as the daemon)\n", eng);
	printf("tpchan_new                 %zu bytes per channel (daemon defaults), idle\n", per_tp);
	printf("engine_chan_add            %zu bytes per channel (rchan + tpchan), idle\n", per_ch);
	printf("channel life (heap bytes; state_bytes stat in brackets):\n");
	printf("  idle after creation      %lld [%llu] (frozen; unpacked it is [%zu])\n", L.idle,
	       (unsigned long long)L.st_idle, live_base);
	printf("  sender, %s in flight    %lld [%llu]\n", "a batch", L.busy_tx,
	       (unsigned long long)L.st_busy_tx);
	printf("  receiver behind a hole   %lld [%llu]\n", L.busy_rx, (unsigned long long)L.st_busy_rx);
	printf("  most during the 4 MiB    [%llu / %llu] (sender / receiver)\n",
	       (unsigned long long)L.st_peak_tx, (unsigned long long)L.st_peak_rx);
	printf("  full window, computed    [%zu] (4096-entry ring, 1024 messages, 64 paths)\n",
	       live_base + 4096 * 48 + 2 * 512 + 1024 * 88 + 64 * 40);
	printf("  after 4 MiB and the hold %lld / %lld [%llu / %llu] (sender / receiver; "
	       "releases %llu / %llu, %.1f ms after completion)\n", L.after_tx, L.after_rx,
	       (unsigned long long)L.st_after_tx, (unsigned long long)L.st_after_rx,
	       (unsigned long long)L.rel_tx, (unsigned long long)L.rel_rx, L.release_ns / 1e6);
	{
		double rt, gs;

		freeze_cost(&rt, &gs);
		printf("  frozen: unpack + pack    %.0f ns (tpchan_reset round trip); get_stats %.0f ns "
		       "(medians of 5 x 100000)\n", rt, gs);
	}
	printf("engine_ep_add, 256 ids     %zu bytes per endpoint, no connection\n", per_ep[0]);
	printf("engine_ep_add, 1024 ids    %zu bytes per endpoint, no connection\n", per_ep[1]);
	printf("  + 1 connection           %zu (the pointer table, first chunk of 16 sides)\n", with[0]);
	printf("  + 16 connections         %zu\n", with[1]);
	printf("  + 1024 connections       %zu (%.1f bytes per connection past 16)\n", with[2],
	       per_conn);
	printf("ring region (shared, client) %zu bytes (256/256 entries, 1024 sems)\n", rlen[1]);
	/* extrapolation: E endpoints on this host; every endpoint has one
	 * connection to one endpoint on each of H hosts (E x H sides) */
	{
		double chans_host = H * per_ch, chans_pair = E * H * per_ch;
		/* a channel frozen again after carrying data: its counters and
		 * RTT pack longer than zeros */
		double after = (double)(L.after_tx > L.after_rx ? L.after_tx : L.after_rx) - L.idle;
		double chans_used = H * (per_ch + after);
		double eps = E * per_ep[1], eps_conn = E * first_conn;
		double conn_all = E * (H - 1) * per_conn;

		printf("\nlinear extrapolation, E = %.0f endpoints x H = %.0f hosts:\n", E, H);
		printf("  channels (idle), one per host pair      %.2f MB\n", chans_host / 1e6);
		printf("  channels (idle), one per endpoint pair  %.1f MB\n", chans_pair / 1e6);
		printf("  endpoints, no connections (E)           %.2f MB\n", eps / 1e6);
		printf("  engine tables                           %.2f MB\n", eng / 1e6);
		printf("  transport state, idle, per host pair    %.2f MB\n",
		       (chans_host + eps + eng) / 1e6);
		printf("  channels idle after traffic (+%.0f B)    %.2f MB\n", after, chans_used / 1e6);
		printf("  transport state, idle after traffic     %.2f MB\n",
		       (chans_used + eps + eng) / 1e6);
		printf("  + each endpoint's first connection      %.1f MB (first chunk of sides)\n",
		       eps_conn / 1e6);
		printf("  + E x H connections                     %.1f MB (%.0f B each, multiplicative)\n",
		       conn_all / 1e6, per_conn);
		printf("  + per busy sender                       %.1f KB (measured peak, one 4 MiB "
		       "message) .. %.0f KB (full window, computed)\n", L.st_peak_tx / 1e3,
		       (live_base + 4096 * 48 + 2 * 512 + 1024 * 88 + 64 * 40) / 1e3);
	}
	engine_free(e);
	free(region[0]);
	free(region[1]);
	return 0;
}
