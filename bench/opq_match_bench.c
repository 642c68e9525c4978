/* SPDX-License-Identifier: MIT */
/*
 * opq_match_bench: the cost of matching a tag on one connection side with N
 * receives posted, each of its own tag, through the endpoint's tag index and,
 * in the same run, by scanning the match queue (a side made without the
 * index, which is how every side matched before the index existed). One
 * step: find the receive for a random posted tag, take it off (as a match
 * does), post a receive of that tag again. Prints the median over the runs
 * of ns per step for each N.
 *
 *   bench/opq_match_bench [runs] [steps]      (defaults 5 and 200000)
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <uccl/shm.h>

#include "engine/opq.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* ns per step with n receives posted, with the index or scanning. Exits on
 * a wrong match. */
static double run(uint32_t n, uint32_t steps, bool indexed, uint64_t seed)
{
	struct opq_op *ops = calloc(n, sizeof(*ops));
	struct opq_tags *tags = indexed ? opq_tags_new() : NULL;
	struct opq_conn qc;
	uint64_t x = seed | 1, t0, t1;

	if (!ops || (indexed && !tags)) {
		perror("calloc");
		exit(1);
	}
	if (tags && opq_tags_reserve(tags, n) < 0) {
		fprintf(stderr, "opq_match_bench: no memory for the index\n");
		exit(1);
	}
	opq_conn_init(&qc, &tags);
	for (uint32_t i = 0; i < n; i++) {
		ops[i] = (struct opq_op){ .opcode = UCCL_OP_RECV, .key = 1000 + i };
		opq_conn_add(&qc, &ops[i], OPQ_WAITING);
	}
	t0 = now_ns();
	for (uint32_t s = 0; s < steps; s++) {
		struct opq_op *op;
		uint32_t i;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		i = (uint32_t)((x >> 32) % n);
		op = opq_conn_find_recv(&qc, 1000 + i);
		if (op != &ops[i]) {
			fprintf(stderr, "opq_match_bench: tag %u matched the wrong receive\n", 1000 + i);
			exit(1);
		}
		opq_conn_finished(&qc, op);
		*op = (struct opq_op){ .opcode = UCCL_OP_RECV, .key = 1000 + i };
		opq_conn_add(&qc, op, OPQ_WAITING);
	}
	t1 = now_ns();
	while (opq_conn_take(&qc))
		;
	free(ops);
	opq_tags_free(tags);
	return (double)(t1 - t0) / steps;
}

int main(int argc, char **argv)
{
	static const uint32_t ns[] = { 1, 16, 128, 1024, 4096 };
	int runs = argc > 1 ? atoi(argv[1]) : 5;
	uint32_t steps = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 200000;

	if (runs < 1 || runs > 101 || steps < 1) {
		fprintf(stderr, "usage: opq_match_bench [runs 1..101] [steps >= 1]\n");
		return 2;
	}
	printf("%-8s %14s %14s %8s   (ns per match, median of %d runs of %u)\n", "posted", "index",
	       "scan", "scan/ix", runs, steps);
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		double ix[101], sc[101];

		/* alternate, so that drift on a noisy machine hits both alike */
		for (int r = 0; r < runs; r++) {
			ix[r] = run(ns[k], steps, true, 7 + (uint64_t)r);
			sc[r] = run(ns[k], steps, false, 7 + (uint64_t)r);
		}
		qsort(ix, (size_t)runs, sizeof(ix[0]), cmp_double);
		qsort(sc, (size_t)runs, sizeof(sc[0]), cmp_double);
		printf("%-8u %14.1f %14.1f %7.1fx\n", ns[k], ix[runs / 2], sc[runs / 2],
		       sc[runs / 2] / ix[runs / 2]);
	}
	return 0;
}
