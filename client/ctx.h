/* SPDX-License-Identifier: MIT */
/*
 * ctx: private definitions shared by the files of libucclclient: the bodies
 * of the context, endpoint and memory region objects, and the control call
 * helper that sends one request to the daemon and waits for its reply. Not
 * installed; the application sees only include/uccl/uccl.h.
 */
#ifndef UCCL_CLIENT_CTX_H
#define UCCL_CLIENT_CTX_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uccl/uccl.h>

#include "engine/ring.h"
#include "proto/ctlio.h"
#include "proto/frame.h"

/* Public entry points; libtool also filters exports by '^uccl_', this keeps
 * a plain -fvisibility=hidden build correct too. */
#define UCCL_EXPORT __attribute__((visibility("default")))

#define CTX_ERR_LEN       256
#define CTX_REPLY_MAX     (1u << 20)
#define CTX_TIMEOUT_MS    10000
#define CTX_LATE_MAX      16         /* timed-out creating requests remembered */

/* A request that timed out and may yet make something in the daemon (an
 * endpoint, a region, a connection): undone when its late reply comes. */
struct ctx_late {
	uint32_t seq;
	uint32_t ep_id;                  /* connect, accept: the endpoint */
	UcclCtl__Request__BodyCase body;
};

struct uccl_mr {
	struct uccl_ctx *ctx;
	struct uccl_mr *prev, *next;     /* ctx->mrs, under ctx->lock */
	void *addr;
	size_t len;                      /* registered length (page rounded if allocated) */
	bool mapped;                     /* uccl_mem_alloc: we own the mapping */
	uint32_t id;
	uint64_t rkey;
};

struct uccl_ep {
	struct uccl_ctx *ctx;
	struct uccl_ep *prev, *next;     /* ctx->eps, under ctx->lock */
	uint32_t id;
	uint32_t thread;                 /* the daemon engine thread it runs on */
	void *region;
	size_t region_len;
	int doorbell_fd;                 /* we write: SQ has work for a sleeping daemon */
	bool doorbell_pipe;              /* an older daemon's pipe, not a socket */
	int notify_fd;                   /* daemon writes: completions or signals for us */
	struct ring_side sq;             /* we produce */
	struct ring_side cq;             /* we consume */
	const uint64_t *sem;             /* sem_count counters in the region */
	uint32_t sem_count;
	bool armed;                      /* CQ NEED_WAKEUP is set (uccl_cq_wait(.., 0) leaves it) */
	bool notify_dirty;               /* notify_fd may hold a count from an earlier arm */
	bool gone;                       /* the daemon's end of the doorbell or notify pipe closed */
	uint32_t idle_calls;             /* polls and submissions that found nothing to do */
};

struct uccl_ctx {
	pthread_mutex_t lock;            /* control calls, seq, rx, err, lists */
	int fd;
	pid_t daemon_pid;
	uint32_t client_id;
	uint32_t seq;
	int timeout_ms;                  /* atomic: set_timeout needs no lock */
	int broken;                      /* negative errno once the stream is unusable */
	bool ptracer_set;
	struct ctlio_rx rx;              /* survives timeouts so a half-read frame is kept */
	struct uccl_ep *eps;
	struct uccl_mr *mrs;
	uint64_t serial;                 /* tells contexts apart for uccl_last_error */
	struct ctx_late late[CTX_LATE_MAX];
	uint32_t nlate;
	char err[CTX_ERR_LEN];           /* the last failure of any of its threads */
	bool err_busy;                   /* err is being written (ctx_fail holds no lock) */
};

static inline void ctx_lock(struct uccl_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
}

static inline void ctx_unlock(struct uccl_ctx *ctx)
{
	pthread_mutex_unlock(&ctx->lock);
}

/* Record the explanation of a failure for uccl_last_error(). */
void ctx_set_error(struct uccl_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The calling thread's last text (ctx_set_error, ctx_fail): ctx->err may
 * be another thread's by the time this one reads it. */
const char *ctx_thread_error(void);

/* A call's own argument check failed: record why, so that
 * uccl_last_error() does not show an older failure; returns err. Takes no
 * lock: a refused argument must not wait for another thread's control
 * call (up to the control timeout). */
int ctx_fail(struct uccl_ctx *ctx, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The context's control timeout in ms. */
int ctx_timeout(const struct uccl_ctx *ctx);

/*
 * One control round trip; ctx->lock must be held. req gets a fresh seq.
 * fds/nfds are sent with the request. The reply deadline is the control
 * timeout plus extra_ms (operations that wait inside the daemon). want is the
 * reply body a success must carry (NOT_SET: none checked) and want_fds the
 * exact number of fds it must carry, returned in rfds (rfds may be NULL when
 * want_fds is 0). On success *rep (if rep) is the reply, freed by the caller
 * with uccl_ctl__reply__free_unpacked. A status < 0 from the daemon is
 * returned as is, its error text kept for uccl_last_error().
 */
int ctx_call(struct uccl_ctx *ctx, UcclCtl__Request *req, const int *fds, int nfds,
	     int64_t extra_ms, UcclCtl__Reply__BodyCase want, int want_fds, int *rfds,
	     UcclCtl__Reply **rep);

/* Lock held: tear down an endpoint or region. talk = tell the daemon. */
int ep_destroy_locked(struct uccl_ep *ep, bool talk);
int mr_free_locked(struct uccl_mr *mr, bool talk);

/* Monotonic clock in ns (vDSO, no system call). */
int64_t client_now_ns(void);

#endif
