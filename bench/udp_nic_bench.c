/* SPDX-License-Identifier: MIT */
/*
 * udp_nic_bench: raw throughput of the UDP NIC backend on loopback, one
 * thread. Two nics on 127.0.0.1; one sends 1472-byte packets in batches, the
 * other drains after every batch, until 1 GiB arrived or the time is up;
 * once with GSO/GRO, once with plain sendmmsg/recvmmsg. Reports received
 * payload Gbit/s and system calls per packet. Then the cost of a receive
 * that finds the socket empty, as every pass of an idle or waiting engine
 * makes one: the median over 5 runs of 200,000 calls, in ns, with recvmmsg
 * and with the receive hint (skipped: no system call). Not a test.
 *
 *   udp_nic_bench [SECONDS (2)] [BATCH (256)]
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/benchutil.h"
#include "engine/nic/nic.h"

#define LEN 1472u

static int run(bool offload, double seconds, int batch)
{
	const struct nic_ops *ops = &nic_udp_ops;
	struct nic_params p = {
		.bind_addr = "127.0.0.1", .npaths = 1, .mtu = LEN,
		.rcvbuf = 8u << 20, .sndbuf = 8u << 20,
		.gso = offload, .gro = offload, .rx_batch = 256,
	};
	struct nic *a = NULL, *b = NULL;
	struct nic_pkt *pk = calloc((size_t)batch, sizeof(*pk));
	struct nic_pkt rx[256];
	uint8_t *mem = calloc((size_t)batch, LEN);
	struct sockaddr_storage ss;
	socklen_t sl;
	uint32_t peer;
	uint64_t got = 0, sent = 0, t0, t1, end;
	struct nic_stats ts, rs;
	int r = -ENOMEM;

	if (!pk || !mem)
		goto out;
	r = ops->open(&p, &a);
	if (r == 0)
		r = ops->open(&p, &b);
	if (r == 0)
		r = ops->local_addr(b, &ss, &sl);
	if (r == 0)
		r = ops->add_peer(a, (struct sockaddr *)&ss, sl, 0, &peer);
	if (r < 0)
		goto out;
	for (int i = 0; i < batch; i++) {
		memset(mem + (size_t)i * LEN, i, LEN);
		pk[i] = (struct nic_pkt){ .buf = mem + (size_t)i * LEN, .len = LEN, .peer = peer };
	}

	t0 = bench_now_ns();
	end = t0 + (uint64_t)(seconds * 1e9);
	while (got < (1ull << 30) && bench_now_ns() < end) {
		int k = ops->tx(a, pk, batch);

		if (k < 0) {
			r = k;
			goto out;
		}
		sent += (uint64_t)k;
		while ((k = ops->rx(b, rx, 256)) > 0)
			for (int i = 0; i < k; i++)
				got += rx[i].len;
		if (k < 0) {
			r = k;
			goto out;
		}
	}
	t1 = bench_now_ns();
	ops->get_stats(a, &ts);
	ops->get_stats(b, &rs);
	printf("%-9s %6.2f Gbit/s  received %5.1f%% of %" PRIu64 " sent  "
	       "tx calls/pkt %.3f  rx calls/pkt %.3f  gso msgs %" PRIu64 "  gro segs %" PRIu64 "\n",
	       offload ? "gso+gro" : "plain", (double)got * 8 / (double)(t1 - t0),
	       sent ? 100.0 * (double)rs.rx_pkts / (double)sent : 0.0, sent,
	       sent ? (double)ts.tx_calls / (double)sent : 0.0,
	       rs.rx_pkts ? (double)rs.rx_calls / (double)rs.rx_pkts : 0.0,
	       ts.tx_gso_calls, rs.rx_gro_segs);
	r = 0;
out:
	ops->close(a);
	ops->close(b);
	free(mem);
	free(pk);
	return r;
}

/* ns per rx call on an empty socket (a 64-packet batch asked for, as an
 * engine asks), median of 5 runs; with the receive hint, the call that
 * skips the recvmmsg */
static int empty_rx(bool hint)
{
	const struct nic_ops *ops = &nic_udp_ops;
	struct nic_params p = {
		.bind_addr = "127.0.0.1", .npaths = 1, .mtu = 9000,
		.rcvbuf = 4u << 20, .sndbuf = 4u << 20, .gso = true, .gro = true, .rx_batch = 64,
		.rx_hint = hint,
	};
	struct nic_pkt pkts[64];
	struct nic_stats st;
	struct nic *n = NULL;
	double ns[5];
	int r = ops->open(&p, &n);

	if (r < 0)
		return r;
	ops->get_stats(n, &st);
	if (hint && !st.rx_hint) {
		printf("empty receive, hint: not available (%s)\n", strerror(st.rx_hint_error));
		ops->close(n);
		return 0;
	}
	for (int k = 0; k < 5; k++) {
		uint64_t t0 = bench_now_ns();

		for (int i = 0; i < 200000; i++) {
			r = ops->rx(n, pkts, 64);
			if (r != 0) {
				ops->close(n);
				return r < 0 ? r : -EIO;      /* nothing was sent to it */
			}
		}
		ns[k] = (double)(bench_now_ns() - t0) / 200000;
	}
	ops->close(n);
	qsort(ns, 5, sizeof(ns[0]), bench_cmp_double);
	printf("empty receive, %s: median %.1f ns a call (min %.1f, max %.1f, 5 runs of 200000)\n",
	       hint ? "hint" : "recvmmsg", ns[2], ns[0], ns[4]);
	return 0;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	int batch = argc > 2 ? atoi(argv[2]) : 256;
	int r;

	if (seconds <= 0 || batch < 1 || batch > 4096) {
		fprintf(stderr, "usage: udp_nic_bench [SECONDS] [BATCH 1..4096]\n");
		return 2;
	}
	r = run(true, seconds, batch);
	if (r == 0)
		r = run(false, seconds, batch);
	if (r == 0)
		r = empty_rx(false);
	if (r == 0)
		r = empty_rx(true);
	if (r < 0) {
		fprintf(stderr, "udp_nic_bench: %s\n", strerror(-r));
		return 1;
	}
	return 0;
}
