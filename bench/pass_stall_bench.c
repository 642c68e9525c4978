/* SPDX-License-Identifier: MIT */
/*
 * pass_stall_bench: how long one client's batch of large same-host puts holds
 * up another client on the same engine thread. Client A queues N puts of
 * max_op_bytes each (to client B's region, over a same-host connection),
 * client C one NOP; one engine_poll runs, and the time until it returns is
 * what C's NOP waited. Measured with the engine's per-pass byte budget
 * (pass_bytes, the default) and without it (unlimited), alternating; prints
 * the median of each over the runs. Copies are memmove, as the daemon's for
 * uccl_mem_alloc regions. Not a test.
 *
 *   bench/pass_stall_bench [RUNS (5)] [PUTS (64)] [OP_MIB (64)]
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uccl/shm.h>

#include "bench/benchutil.h"
#include "engine/engine.h"
#include "engine/ring.h"

#define RING 1024u

static int copy(void *arg, const struct mr *d, uint64_t doff, const struct mr *s, uint64_t soff,
		uint64_t len)
{
	(void)arg;
	memmove((uint8_t *)d->base + doff, (const uint8_t *)s->base + soff, len);
	return 0;
}

static const struct engine_mem_ops mem_ops = { .copy = copy };

static void die(const char *what)
{
	fprintf(stderr, "pass_stall_bench: %s\n", what);
	exit(1);
}

/* One engine with endpoints 0 (client 1), 1 (client 2) and 2 (client 3):
 * seconds one poll takes with puts queued on 0 and a NOP on 2. */
static double one_run(uint64_t pass_bytes, uint32_t puts, uint64_t op, uint8_t *a, uint8_t *b)
{
	struct engine_params p = { .max_endpoints = 4, .max_mrs = 4, .poll_batch = 64,
				   .max_op_bytes = op, .pass_bytes = pass_bytes, .mem = &mem_ops };
	struct engine *e = engine_new(&p);
	struct uccl_shm_hdr h[3];
	struct ring_side sq[3], cq[3];
	void *region[3];
	struct mr ma = { .id = 1, .client_id = 1, .rkey = 0x11, .len = op, .kind = MR_MAPPED, .base = a };
	struct mr mb = { .id = 1, .client_id = 2, .rkey = 0x22, .len = op, .kind = MR_MAPPED, .base = b };
	struct uccl_sqe nop = { .opcode = UCCL_OP_NOP, .user_data = 1 };
	uint64_t t0, t1;

	if (!e)
		die("engine_new failed");
	for (uint32_t i = 0; i < 3; i++) {
		size_t n = ring_region_layout(RING, RING, 4, &h[i]);
		struct engine_ep_params ep = { .ep_id = i, .client_id = i + 1, .hdr = &h[i],
					       .region_len = n, .max_conns = 4,
					       .max_outstanding = RING };

		region[i] = aligned_alloc(4096, n);
		if (!region[i])
			die("out of memory");
		memset(region[i], 0, n);
		ep.region = region[i];
		if (engine_ep_add(e, &ep) < 0)
			die("engine_ep_add failed");
		ring_side_init(&sq[i], region[i], h[i].sq_ctl_off, h[i].sq_off, RING, UCCL_SQE_SIZE);
		ring_side_init(&cq[i], region[i], h[i].cq_ctl_off, h[i].cq_off, RING, UCCL_CQE_SIZE);
	}
	if (engine_conn_add(e, 0, 0, 1, 0) < 0 || engine_mr_add(e, &ma) < 0 || engine_mr_add(e, &mb) < 0)
		die("setup failed");
	for (uint32_t k = 0; k < puts; k++) {
		struct uccl_sqe s = { .opcode = UCCL_OP_PUT, .conn = 0, .lmr = 1, .rkey = 0x22,
				      .len = op, .user_data = k };

		memcpy(ring_prod_slot(&sq[0], k), &s, sizeof(s));
	}
	ring_prod_publish(&sq[0], puts);
	memcpy(ring_prod_slot(&sq[2], 0), &nop, sizeof(nop));
	ring_prod_publish(&sq[2], 1);
	t0 = bench_now_ns();
	engine_poll(e, 0);
	t1 = bench_now_ns();
	if (ring_cons_avail(&cq[2]) != 1)
		die("the NOP did not complete in the poll");
	engine_free(e);
	for (uint32_t i = 0; i < 3; i++)
		free(region[i]);
	return (double)(t1 - t0) / 1e9;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 5;
	long puts = argc > 2 ? atol(argv[2]) : 64;
	long mib = argc > 3 ? atol(argv[3]) : 64;
	double with[64], without[64];
	uint64_t op;
	uint8_t *a, *b;

	if (runs < 1 || runs > 64 || puts < 1 || puts > (long)RING || mib < 1 || mib > 1024) {
		fprintf(stderr, "usage: pass_stall_bench [RUNS 1..64] [PUTS 1..%u] [OP_MIB 1..1024]\n",
			RING);
		return 2;
	}
	op = (uint64_t)mib << 20;
	a = malloc(op);
	b = malloc(op);
	if (!a || !b)
		die("out of memory");
	memset(a, 1, op);
	memset(b, 2, op);
	for (int r = 0; r < runs; r++) {
		with[r] = one_run(0, (uint32_t)puts, op, a, b);
		without[r] = one_run(UINT64_MAX, (uint32_t)puts, op, a, b);
		fprintf(stderr, "run %d: %.4f s with the pass byte budget, %.4f s without\n", r + 1,
			with[r], without[r]);
	}
	qsort(with, (size_t)runs, sizeof(with[0]), bench_cmp_double);
	qsort(without, (size_t)runs, sizeof(without[0]), bench_cmp_double);
	printf("a NOP behind %ld puts of %ld MiB from another client: median %.4f s with the pass "
	       "byte budget (min %.4f, max %.4f), %.4f s without (min %.4f, max %.4f), %d runs\n",
	       puts, mib, with[runs / 2], with[0], with[runs - 1], without[runs / 2], without[0],
	       without[runs - 1], runs);
	free(a);
	free(b);
	return 0;
}
