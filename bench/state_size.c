/* SPDX-License-Identifier: MIT */
/*
 * state_size: transport state in bytes, measured from real allocations
 * (issue #4, experiment 5). Creates an engine with the daemon's default
 * channel parameters (daemon/rconn.c chan_up with daemon/conf.c defaults:
 * mtu 1500, chunk 32 KiB, 64 paths, 4096-packet scoreboards, 16 MiB
 * in-flight cap, 1024 messages, cc window, no crc) and counts the heap
 * bytes (glibc mallinfo2: in-use bytes plus mmapped blocks, chunk headers
 * included) that each tpchan_new, engine_chan_add, engine_ep_add and
 * engine_rconn_add takes; prints the struct sizes of engine/engine_int.h
 * and the linear extrapolation to E endpoints x H hosts for one channel per
 * host pair against one per endpoint pair. Not built by make: see
 * docs/results/e5-state.md for the command line.
 */
#include "config.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/engine_int.h"
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

static const struct tpchan_cb cb = { nop_read, nop_deliver, nop_complete };

/* daemon/rconn.c chan_up() with the daemon/conf.c defaults */
static struct tpchan_params daemon_chan(uint32_t i)
{
	return (struct tpchan_params){
		.tx_token = 0x1000 + i, .rx_token = 0x2000 + i, .mtu = 1500, .chunk_bytes = 32768,
		.npaths = 64, .max_inflight_pkts = 4096, .rx_window_pkts = 4096,
		.max_inflight_bytes = 16u << 20, .max_msgs = 1024, .go_back_n = false,
		.rto_min_ns = 1000000, .dupthresh = 3, .cc = cc_find("window"),
		.cc_delay_slack_ns = 500000, .rto_init_ns = 4000000, .crc = false, .seed = i,
		.cb = &cb,
	};
}

#define NCH 64
#define NEP 16

/* bytes of one tpchan with these scoreboard and message-table sizes */
static size_t one_chan(uint32_t pkts, uint32_t msgs)
{
	struct tpchan_params p = daemon_chan(7);
	struct tpchan *c;
	size_t a = used(), r;

	p.max_inflight_pkts = pkts;
	p.rx_window_pkts = pkts;
	p.max_msgs = msgs;
	c = tpchan_new(&p);
	if (!c)
		return 0;
	r = used() - a;
	tpchan_free(c);
	return r;
}

int main(void)
{
	static struct tpchan *tc[NCH];
	struct engine_mem_ops mem = { .copy = nop_copy };
	struct engine_params ep = {
		.max_endpoints = 1024, .max_mrs = 1024, .poll_batch = 64, .mem = &mem,
		.max_chans = 1024,
	};
	struct uccl_shm_hdr hdr[2];
	void *region[2];
	size_t rlen[2], a, b, per_tp, per_ch, per_ep[2], per_rc, eng;
	uint32_t conns[2] = { 256, 1024 };
	struct engine *e;
	double E = 1024, H = 1024, per_conn, ep_fixed;

	/* a bare tpchan */
	a = used();
	for (uint32_t i = 0; i < NCH; i++) {
		struct tpchan_params p = daemon_chan(i);

		if (!(tc[i] = tpchan_new(&p)))
			return 1;
	}
	per_tp = (used() - a) / NCH;
	for (uint32_t i = 0; i < NCH; i++)
		tpchan_free(tc[i]);

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

	/* endpoints with 256 and 1024 connection slots: the ring region is
	 * the client's shared memory, allocated here outside the count */
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
	/* bind every slot of one 1024-slot endpoint to channels (round robin) */
	a = used();
	for (uint32_t c = 0; c < 1024; c++)
		if (engine_rconn_add(e, NEP, c, c | 1u << 16, c % NCH) < 0)
			return 1;
	b = used();
	per_rc = (b - a) / 1024;

	per_conn = (double)(per_ep[1] - per_ep[0]) / (conns[1] - conns[0]);
	ep_fixed = per_ep[1] - per_conn * conns[1];
	printf("sizeof(struct conn)        %zu\n", sizeof(struct conn));
	printf("sizeof(struct rconn)       %zu (inside struct conn)\n", sizeof(struct rconn));
	printf("sizeof(struct ep)          %zu\n", sizeof(struct ep));
	printf("engine_new                 %zu bytes (max_endpoints 1024, max_chans 1024)\n", eng);
	printf("tpchan_new                 %zu bytes per channel (daemon defaults)\n", per_tp);
	{
		size_t d = one_chan(4096, 1024), m = one_chan(4096, 16), k = one_chan(1024, 1024);
		size_t s = one_chan(1024, 16);

		printf("tpchan breakdown: default (4096 pkts, 1024 msgs) %zu; 16 msgs %zu "
		       "(%.1f bytes per message slot); 1024 pkts %zu (%.1f bytes per scoreboard "
		       "packet, send + receive); 1024 pkts and 16 msgs %zu\n", d, m,
		       (double)(d - m) / (1024 - 16), k, (double)(d - k) / (4096 - 1024), s);
	}
	printf("engine_chan_add            %zu bytes per channel (rchan + tpchan)\n", per_ch);
	printf("engine_ep_add, 256 conns   %zu bytes per endpoint\n", per_ep[0]);
	printf("engine_ep_add, 1024 conns  %zu bytes per endpoint\n", per_ep[1]);
	printf("  slope                    %.1f bytes per connection slot; %.0f fixed\n", per_conn,
	       ep_fixed);
	printf("engine_rconn_add           %zu bytes per bound connection (beyond its slot)\n", per_rc);
	printf("ring region (shared, client) %zu bytes (256/256 entries, 1024 sems)\n", rlen[1]);
	/* extrapolation: E endpoints on this host, each with one connection to
	 * one endpoint on each of H hosts */
	{
		double chans_host = H * per_ch, chans_pair = E * H * per_ch;
		double conn_all = E * H * (per_conn + per_rc), eps = E * ep_fixed;

		printf("\nlinear extrapolation, E = %.0f endpoints x H = %.0f hosts, one connection per "
		       "(endpoint, remote host):\n", E, H);
		printf("  channels, one per host pair        %.1f MB\n", chans_host / 1e6);
		printf("  channels, one per endpoint pair    %.1f MB\n", chans_pair / 1e6);
		printf("  connection slots (E x H)           %.1f MB\n", conn_all / 1e6);
		printf("  endpoints, fixed part (E)          %.2f MB\n", eps / 1e6);
		printf("  total, per host pair               %.1f MB\n",
		       (chans_host + conn_all + eps + eng) / 1e6);
		printf("  total, per endpoint pair           %.1f MB\n",
		       (chans_pair + conn_all + eps + eng) / 1e6);
	}
	engine_free(e);
	free(region[0]);
	free(region[1]);
	return 0;
}
