/* SPDX-License-Identifier: MIT */
/*
 * engthr: an engine thread. Owns one struct engine and runs it to completion:
 * commands from the main thread, then engine_poll over every endpoint's
 * rings; busy-polls while there is work and sleeps in epoll on the rings'
 * doorbells when idle. State changes (endpoints, connections, regions) are
 * commands executed on the engine thread; their results come back to the
 * main thread, which runs each command's done callback.
 */
#ifndef UCCL_DAEMON_ENGTHR_H
#define UCCL_DAEMON_ENGTHR_H

#include <stdint.h>

#include <sys/socket.h>

#include "engine/engine.h"
#include "engine/nic/nic.h"

struct event_base;
struct engthr;
struct lanebus;

enum engcmd_type {
	ENGCMD_EP_ADD = 1,
	ENGCMD_EP_REMOVE,
	ENGCMD_CONN_ADD,
	ENGCMD_CONN_REMOVE,
	ENGCMD_MR_ADD,
	ENGCMD_MR_REMOVE,
	ENGCMD_STATS,
	ENGCMD_CHAN_ADD,          /* a channel to a peer host, and its NIC peer address */
	ENGCMD_CHAN_REMOVE,
	ENGCMD_RCONN_ADD,
	ENGCMD_RCONN_CONNECT,
	ENGCMD_CONN_RESET,        /* the remote side closed */
	ENGCMD_CHAN_STATS,
	ENGCMD_CHAN_SET_CC,       /* switch a channel's congestion controller */
	ENGCMD_SHADOW_ADD,        /* a ringless endpoint for lane sides (-EBUSY: it exists) */
	ENGCMD_RCONN_LANES,       /* an owner side's lane count (engine_rconn_lanes) */
};

struct engcmd_stat { const char *name; uint64_t value; };

struct engcmd {
	enum engcmd_type type;
	struct engcmd *next;                          /* overflow list, main thread */
	int result;                                   /* set by the engine thread */
	void (*done)(struct engcmd *c);               /* runs on the main thread; frees c */
	void *arg;
	void *ctx;                                    /* the submitter's, beside arg */
	union {
		struct {
			struct engine_ep_params p;    /* p.hdr must outlive the endpoint */
			int doorbell_fd;                /* watched while the engine sleeps */
			int notify_fd;                  /* written to wake the client */
		} ep;
		uint32_t ep_id;
		struct { uint32_t ep_a, conn_a, ep_b, conn_b; } conn;
		struct { uint32_t ep, conn; } conn_rm;
		struct {
			uint32_t chan;
			struct sockaddr_storage addr;   /* the peer's data address (base port) */
			socklen_t addrlen;
			struct tpchan_params p;         /* cb is the engine's */
			uint64_t tag;                   /* given back by chan_failed */
		} chan;
		struct { uint32_t chan; int err; } chan_rm;
		struct { uint32_t chan; const struct cc_ops *ops; } chan_cc;   /* ops: static */
		struct { uint32_t ep, conn, wire, chan; } rconn;
		struct { uint32_t ep, conn, rep, rwire; } rconn_c;
		struct { uint32_t ep, client_id, max_conns, max_outstanding; } shadow;
		struct { uint32_t ep, conn, n; } lanes;
		struct {
			/* ENGCMD_CHAN_STATS: for chans[0..n) into out[] (res < 0: none);
			 * with paths, chans[i]'s paths too, into paths[i * paths_per...]
			 * (npaths[i] of them) as of now_ns, the engine's clock */
			uint32_t n;
			const uint32_t *chans;
			struct engine_chan_stats *out;
			int *res;
			struct nic_stats nic;
			uint64_t nic_rx_unknown_chan, nic_tx_dropped;
			struct paths_stat *paths;
			uint32_t paths_per;
			uint32_t *npaths;
			uint64_t now_ns;
		} chst;
		struct mr mr;
		struct { uint32_t client_id, mr_id; } mr_rm;
		struct {
			/* ENGCMD_STATS: engine counters, and per-endpoint stats for
			 * ep_ids[0..n_eps) written into eps[] (result < 0 if gone) */
			struct engcmd_stat counters[64];
			uint32_t n_counters;
			uint32_t n_eps;
			uint32_t *ep_ids;
			uint64_t *ep_serials;  /* the asker's: an id may be reused meanwhile */
			struct engine_ep_stats *eps;
			int *ep_res;
		} stats;
	} u;
};

struct engthr_params {
	uint32_t max_endpoints;
	uint32_t max_mrs;
	uint32_t poll_batch;
	uint64_t max_op_bytes;
	uint32_t idle_spin_us;
	int cpu;                                      /* -1: no pinning */
	uint32_t index;                               /* thread number: its name, logs */
	/* host-to-host: a NIC owned by the engine thread from start on, or NULL */
	const struct nic_ops *nic_ops;
	struct nic *nic;                              /* engthr_start takes it: closed by
						       * engthr_stop, or at once if start fails */
	uint32_t max_chans;
	uint64_t max_unexpected_bytes;
	uint64_t max_ep_inflight_bytes;
	uint64_t pull_rate_bps;                       /* credit pacer (engine_params) */
	/* lanes: the queues between all engine threads (NULL: one thread),
	 * and the shortest put that is split */
	struct lanebus *bus;
	uint64_t lane_min_bytes;
	/* a channel gave up on its peer (engine_chan_failures): called on the
	 * main thread with this thread's index, the channel and the tag of its
	 * ENGCMD_CHAN_ADD. The peer may not notice by itself (a get waiting
	 * for its response does not send); telling it is the caller's. NULL:
	 * nobody is told. */
	void (*chan_failed)(void *arg, uint32_t thread, uint32_t chan, uint64_t tag);
	void *chan_failed_arg;
};

/* Start the thread. Its completions are delivered on base. */
int engthr_start(const struct engthr_params *p, struct event_base *base, struct engthr **out);
/* Stop and join; pending commands are completed first. Accepts NULL. */
void engthr_stop(struct engthr *t);
/* Queue a command; c->done runs later on the main thread. Never fails: when
 * the lock-free queue is full, commands wait in a main-thread list (cleanup
 * must always go through; the resources behind commands are bounded). */
void engthr_submit(struct engthr *t, struct engcmd *c);
/* Queue c (from malloc) that nobody waits for: freed when done. */
void engthr_submit_owned(struct engthr *t, struct engcmd *c);
void engthr_set_idle_spin(struct engthr *t, uint32_t us);
/* Liveness for the watchdog: true if the thread looped or slept since the
 * last call. */
int engthr_alive(struct engthr *t);
uint32_t engthr_inflight(const struct engthr *t);

#endif
