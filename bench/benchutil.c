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
