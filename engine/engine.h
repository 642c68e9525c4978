/* SPDX-License-Identifier: MIT */
/*
 * engine: the transport core that executes applications' operations. It is
 * sans-I/O: the caller (an engine thread in ucclsvcd, or a unit test) hands it
 * endpoint regions that are already mapped, memory regions, connections and
 * the current time; engine_poll() drains submission rings, validates every
 * descriptor as untrusted input, executes it and posts completions. Memory is
 * reached through the caller's struct engine_mem_ops (memcpy for mapped
 * regions, process_vm_* for registered ones); waking a sleeping client goes
 * through a callback. It never opens a socket, starts a thread or reads a
 * clock.
 *
 * Same-host connections join two endpoints of this engine directly. The
 * host-to-host transport will add channels behind the same entry points.
 */
#ifndef UCCL_ENGINE_ENGINE_H
#define UCCL_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/mr.h"

struct engine;

struct engine_mem_ops {
	/* Copy len bytes from src+src_off to dst+dst_off; ranges were checked.
	 * Returns 0 or a negative errno (-EFAULT if a process went away). */
	int (*copy)(void *arg, const struct mr *dst, uint64_t dst_off,
		    const struct mr *src, uint64_t src_off, uint64_t len);
	void *arg;
};

struct engine_params {
	uint32_t max_endpoints;        /* ep ids are 0 .. max_endpoints-1 */
	uint32_t max_mrs;              /* across all clients */
	uint32_t poll_batch;           /* descriptors taken per endpoint per pass */
	uint64_t max_op_bytes;         /* longest single operation (-EMSGSIZE); 0 = no cap.
					* Copies run inline, so this bounds one op's stall. */
	const struct engine_mem_ops *mem;
	/* Called (at most once per endpoint per engine_poll) when an endpoint
	 * whose client sleeps got completions or a semaphore increment. */
	void (*notify)(void *arg, uint32_t ep_id);
	void *notify_arg;
};

struct engine_ep_params {
	uint32_t ep_id;                /* < max_endpoints, unused */
	uint32_t client_id;
	void *region;                  /* mapped endpoint region */
	size_t region_len;
	const struct uccl_shm_hdr *hdr;/* layout, from ring_region_layout (private copy) */
	uint32_t max_conns;            /* conn ids are 0 .. max_conns-1 (<= hdr->sem_count) */
	uint32_t max_outstanding;      /* consumed but not yet completed descriptors */
};

struct engine_ep_stats {
	uint64_t submitted;            /* descriptors consumed */
	uint64_t completed;            /* completions posted */
	uint64_t errors;               /* completions with res < 0 */
	uint64_t bytes;                /* payload bytes moved for this endpoint's ops */
	uint32_t outstanding;
	uint32_t conns;
};

/* Engine-wide counters; names/values also listed by engine_stats_foreach. */
struct engine_stats {
	uint64_t polls;                /* engine_poll calls */
	uint64_t busy_polls;           /* calls that found work */
	uint64_t sqes;                 /* descriptors consumed */
	uint64_t cqes;                 /* completions posted */
	uint64_t ops[8];               /* by opcode (index = enum uccl_opcode) */
	uint64_t bytes;                /* payload bytes copied */
	uint64_t err_inval;            /* malformed descriptor */
	uint64_t err_badconn;          /* unknown or closed connection */
	uint64_t err_access;           /* key, owner or bounds check failed */
	uint64_t err_fault;            /* memory copy failed */
	uint64_t err_msgsize;          /* send longer than the posted receive */
	uint64_t err_reset;            /* peer endpoint went away */
	uint64_t err_canceled;         /* region deregistered or endpoint closed under an op */
	uint64_t corrupt_rings;        /* rings whose indices were corrupt (endpoint stopped) */
	uint64_t notifies;             /* wake-ups requested */
};

struct engine *engine_new(const struct engine_params *p);
struct engine *engine_free(struct engine *e);          /* accepts NULL, returns NULL */

/* Endpoints. engine_ep_remove fails the endpoint's own pending operations
 * silently (its rings are about to be unmapped) and resets every connection
 * to it: the peers' pending and later operations on those connections
 * complete with -ECONNRESET. After it returns the engine holds no pointer into
 * the region. */
int engine_ep_add(struct engine *e, const struct engine_ep_params *p);
int engine_ep_remove(struct engine *e, uint32_t ep_id);

/* Join conn_a of ep_a with conn_b of ep_b (both sides become usable). */
int engine_conn_add(struct engine *e, uint32_t ep_a, uint32_t conn_a, uint32_t ep_b, uint32_t conn_b);
/* Close one side: its pending ops complete with -ECANCELED, the peer side is
 * reset (-ECONNRESET for its pending and later ops). The conn id may be reused
 * after this returns. */
int engine_conn_remove(struct engine *e, uint32_t ep_id, uint32_t conn);

/* Memory regions (copied in). Removing one completes pending operations that
 * reference it with -ECANCELED. */
int engine_mr_add(struct engine *e, const struct mr *m);
int engine_mr_remove(struct engine *e, uint32_t client_id, uint32_t mr_id);

/* One pass over every endpoint. Returns the number of descriptors consumed
 * plus completions posted (0 = idle). */
int engine_poll(struct engine *e, uint64_t now_ns);

/* Going to sleep: arm NEED_WAKEUP on every submission ring, then re-check.
 * Returns 0 if it is safe to sleep, >0 if work arrived meanwhile. */
int engine_sleep_arm(struct engine *e);
void engine_sleep_disarm(struct engine *e);

const struct engine_stats *engine_stats(const struct engine *e);
int engine_ep_stats(const struct engine *e, uint32_t ep_id, struct engine_ep_stats *out);
/* Calls fn(name, value) for every engine counter, for ucclctl stats. */
void engine_stats_foreach(const struct engine *e, void (*fn)(void *arg, const char *name, uint64_t v),
			  void *arg);

#endif
