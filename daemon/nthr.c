/* SPDX-License-Identifier: MIT */
/* nthr: see nthr.h. */
#include "config.h"

#include "daemon/nthr.h"

uint32_t nthr_pick(const uint32_t *load, uint32_t n)
{
	uint32_t best = 0;

	for (uint32_t i = 1; i < n; i++)
		if (load[i] < load[best])
			best = i;
	return best;
}

uint32_t nthr_port(uint32_t data_port, uint32_t data_paths, uint32_t i)
{
	return data_port ? data_port + i * data_paths : 0;
}

int nthr_cpu(const struct conf *c, uint32_t i)
{
	if (c->n_engine_cpus)
		return i < c->n_engine_cpus ? (int)c->engine_cpus[i] : -1;
	return i == 0 && c->engine_threads <= 1 ? c->engine_cpu : -1;
}
