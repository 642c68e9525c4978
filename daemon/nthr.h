/* SPDX-License-Identifier: MIT */
/*
 * nthr: the arithmetic of several engine threads, kept free of I/O so that
 * it is unit-tested: which thread a new endpoint goes to, which UDP ports a
 * thread's data plane takes, which CPU it is pinned to, and how a
 * sub-channel (peer slot, remote thread) is numbered in a thread's engine.
 */
#ifndef UCCL_DAEMON_NTHR_H
#define UCCL_DAEMON_NTHR_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/conf.h"

/* The thread with the fewest endpoints (load[i]); ties go to the lowest
 * index, so endpoints created one after another alternate. n >= 1. */
uint32_t nthr_pick(const uint32_t *load, uint32_t n);

/* Thread i's base data port: data_port + i * data_paths, or 0 (the kernel
 * picks) when data_port is 0. */
uint32_t nthr_port(uint32_t data_port, uint32_t data_paths, uint32_t i);

/* CPU of thread i, -1 for none: engine_cpus[i] when set, else engine_cpu
 * for thread 0 of a one-thread daemon. */
int nthr_cpu(const struct conf *c, uint32_t i);

/* Engine channel id of the sub-channel to peer slot's remote thread rthr
 * (slot < nslots); remote thread 0 keeps the one-thread numbering. */
static inline uint32_t nthr_chan(uint32_t slot, uint32_t rthr, uint32_t nslots)
{
	return slot + rthr * nslots;
}

/* Engine channel id, on any thread, of the channel to our own thread k
 * (same-host connections between threads): past every peer sub-channel. */
static inline uint32_t nthr_self_chan(uint32_t k, uint32_t nslots)
{
	return nslots * CONF_MAX_ENGINE_THREADS + k;
}

/* The other way: whether chan is one of nthr_self_chan's, and which k
 * (*k), else which peer slot (*slot) nthr_chan made it for. */
static inline bool nthr_chan_of(uint32_t chan, uint32_t nslots, uint32_t *slot, uint32_t *k)
{
	if (chan >= nslots * CONF_MAX_ENGINE_THREADS) {
		*k = chan - nslots * CONF_MAX_ENGINE_THREADS;
		return true;
	}
	*slot = chan % nslots;
	return false;
}

/* Lanes of a connection (daemon/lanes.h): the smallest of our lanes and
 * the peer's, and of both thread counts less one. Both daemons compute the
 * same from what each announced. */
static inline uint32_t nthr_lanes(uint32_t lanes, uint32_t nthr, uint32_t rlanes, uint32_t rthreads)
{
	uint32_t n = lanes < rlanes ? lanes : rlanes;

	if (nthr == 0 || rthreads == 0)
		return 0;
	if (n > nthr - 1)
		n = nthr - 1;
	if (n > rthreads - 1)
		n = rthreads - 1;
	return n;
}

/* The thread of lane k of a side on thread t, of n threads. */
static inline uint32_t nthr_lane_thr(uint32_t t, uint32_t k, uint32_t n)
{
	return (t + k) % n;
}

#endif
