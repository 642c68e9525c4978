/* SPDX-License-Identifier: MIT */
/*
 * benchutil: what the benchmarks need to report what they measured: a
 * monotonic clock, the process's CPU time, sorting, nearest-rank
 * percentiles of sorted samples, and JSON strings.
 */
#ifndef UCCL_BENCH_BENCHUTIL_H
#define UCCL_BENCH_BENCHUTIL_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);
/* CPU time of the whole process (CLOCK_PROCESS_CPUTIME_ID), in seconds. */
double bench_cpu_s(void);
/* qsort comparators for uint64_t and double. */
int bench_cmp_u64(const void *a, const void *b);
int bench_cmp_double(const void *a, const void *b);
/* Nearest-rank percentile (q in 0..1) of n sorted samples in ns, in
 * microseconds: the smallest sample with at least q of all at or below it. */
double bench_pct_us(const uint64_t *sorted, size_t n, double q);
/* The core's speed now: ITERS rounds of a fixed integer loop, in rounds per
 * CPU second. Printed beside a figure that should depend on the code only,
 * it tells a slow machine from slow code. */
double bench_core_ref(uint64_t iters);
/* rounds of bench_core_ref on each side of a timed run: about 10 ms */
#define BENCH_REF_ROUNDS 10000000ull
/* s as a JSON string on stdout, quotes included. */
void bench_json_str(const char *s);

#endif
