/* SPDX-License-Identifier: MIT */
/*
 * benchutil: clock, percentiles and JSON output shared by the benchmarks.
 */
#include "config.h"

#include <stdio.h>
#include <time.h>

#include "bench/benchutil.h"

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double bench_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* No ceil(): the benchmarks do not link libm. */
double bench_pct_us(const uint64_t *s, size_t n, double q)
{
	double rank = q * (double)n;
	size_t i = (size_t)rank;

	if ((double)i < rank)
		i++;
	i = i == 0 ? 0 : i - 1;
	if (i >= n)
		i = n - 1;
	return (double)s[i] / 1e3;
}

/* Two independent chains of multiply-adds with loads and stores on a
 * table that stays in L1: no system call, no branch to mispredict, nothing
 * the compiler can fold away (the result goes to a volatile). Two chains
 * keep more than one execution unit busy, so a busy hyper-thread sibling
 * slows it as it slows real code. What it measures is how much of a core
 * this process gets right now: clock, sibling, a hypervisor taking the
 * vCPU away unaccounted. */
volatile uint64_t bench_sink;

double bench_core_ref(uint64_t iters)
{
	static uint32_t t[4096];
	uint64_t x = 0x9e3779b97f4a7c15ull, y = 0x2545f4914f6cdd1dull, acc = 0;
	double t0, t1;

	t0 = bench_cpu_s();
	for (uint64_t i = 0; i < iters; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		y = y * 2862933555777941757ull + 3037000493ull;
		acc += t[x >> 52] ^ y;
		t[y >> 52] += (uint32_t)x;
	}
	t1 = bench_cpu_s();
	bench_sink = acc;
	return t1 > t0 ? (double)iters / (t1 - t0) : 0;
}

void bench_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);     /* non-ASCII: not expected, kept valid */
		else
			putchar(c);
	}
	putchar('"');
}
