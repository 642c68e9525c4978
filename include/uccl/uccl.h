/* SPDX-License-Identifier: MIT */
/*
 * libucclclient: the application interface to ucclsvcd. A context is one
 * attachment to the daemon (control socket, memory regions); an endpoint is
 * a pair of shared-memory rings plus the connections made from it. Data
 * operations are written into the endpoint's submission ring without a
 * system call; results come back on its completion ring.
 *
 * Every function returns 0 (or a count) on success and a negative errno on
 * failure; uccl_strerror() names it and uccl_last_error() gives the daemon's
 * explanation of the last failed control call.
 *
 * Threads: a context may be used from several threads (control calls are
 * serialised inside). An endpoint is not thread-safe: use it from one thread
 * at a time, or one endpoint per thread, as with a verbs queue pair.
 */
#ifndef UCCL_UCCL_H
#define UCCL_UCCL_H

#include <stddef.h>
#include <stdint.h>
#include <uccl/shm.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UCCL_DEFAULT_SOCKET "/run/uccl/ucclsvcd.sock"

struct uccl_ctx;                 /* one attachment to the daemon */
struct uccl_ep;                  /* an endpoint: rings + connections */
struct uccl_mr;                  /* a registered memory region */

/* Attach. socket_path NULL means $UCCL_SOCKET, else UCCL_DEFAULT_SOCKET.
 * name (may be NULL) is shown by ucclctl. */
int uccl_attach(const char *socket_path, const char *name, struct uccl_ctx **ctx);
/* Detach: destroys every endpoint and region of ctx. Accepts NULL. */
void uccl_detach(struct uccl_ctx *ctx);
/* The daemon's message for the calling thread's last failed control call on
 * ctx (never NULL); a thread with no failure of its own on ctx since its
 * last failure elsewhere gets the context's last, whichever thread had it. */
const char *uccl_last_error(const struct uccl_ctx *ctx);
/* Timeout for control calls in ms (default 10000, or $UCCL_TIMEOUT_MS). */
int uccl_set_timeout(struct uccl_ctx *ctx, int timeout_ms);

/* Memory. uccl_mem_alloc returns memory that the daemon maps too (memfd
 * backed, zero-copy). uccl_mem_reg registers existing memory, which the
 * daemon reaches with process_vm_readv/writev (one copy slower); only a
 * process running as the daemon's user may (-EPERM), and only read-write
 * anonymous (private or shared), huge-page, memfd or /dev/shm memory qualifies (-EFAULT). */
int uccl_mem_alloc(struct uccl_ctx *ctx, size_t len, struct uccl_mr **mr);
int uccl_mem_reg(struct uccl_ctx *ctx, void *addr, size_t len, struct uccl_mr **mr);
/* Frees/deregisters; operations still using the region complete with
 * -ECANCELED. Accepts NULL. */
int uccl_mem_free(struct uccl_mr *mr);
void *uccl_mr_addr(const struct uccl_mr *mr);
size_t uccl_mr_len(const struct uccl_mr *mr);
uint32_t uccl_mr_id(const struct uccl_mr *mr);
/* The region's remote key: give it to a peer so that it can put/get here. */
uint64_t uccl_mr_key(const struct uccl_mr *mr);

/* Endpoints. depth 0 means the daemon's default ring depth. */
struct uccl_ep_attr {
	uint32_t sq_entries;     /* 0: default; rounded up to a power of two */
	uint32_t cq_entries;     /* 0: default */
	uint32_t flags;          /* UCCL_EP_THREAD */
	uint32_t thread;         /* with UCCL_EP_THREAD: engine thread, modulo their count */
};
#define UCCL_EP_THREAD 0x1u      /* run on attr->thread, not where the daemon picks */
int uccl_ep_create(struct uccl_ctx *ctx, const struct uccl_ep_attr *attr, struct uccl_ep **ep);
int uccl_ep_destroy(struct uccl_ep *ep);   /* accepts NULL */
/* fd (the read end of the endpoint's notify pipe) that becomes readable when
 * completions or signals arrive on an armed endpoint, for poll(2). The
 * library drains it; do not close it. */
int uccl_ep_fd(const struct uccl_ep *ep);
/* The daemon engine thread that runs the endpoint (0 with one thread). */
int uccl_ep_thread(const struct uccl_ep *ep);

/* Connections, by endpoint name on this daemon. timeout_ms 0 = one try,
 * -1 = the context's control timeout. connect completes once the listener's
 * daemon queued it (like TCP); accept takes the next queued connection. */
int uccl_listen(struct uccl_ep *ep, const char *name);
int uccl_connect(struct uccl_ep *ep, const char *name, int timeout_ms, uint32_t *conn);
int uccl_accept(struct uccl_ep *ep, int timeout_ms, uint32_t *conn);
int uccl_close(struct uccl_ep *ep, uint32_t conn);

/* Data operations: asynchronous, each produces exactly one completion that
 * carries user_data. flags: UCCL_SQE_F_STRICT / UCCL_SQE_F_FENCE (and for a
 * put UCCL_SQE_F_SIGNAL: it raises the peer's semaphore as a signal right
 * behind it would), plus
 * UCCL_F_MORE to stage without publishing (batch; the next call without it,
 * or uccl_submit, publishes). -EAGAIN when the ring is full (what was staged
 * is published then): poll completions and retry; nothing is lost. A put, get, send or recv longer than the
 * daemon's max_op_bytes (default 64 MiB) completes with -EMSGSIZE. */
#define UCCL_F_MORE 0x100u
int uccl_put(struct uccl_ep *ep, uint32_t conn, const struct uccl_mr *src, uint64_t src_off,
	     uint64_t rkey, uint64_t dst_off, uint64_t len, unsigned flags, uint64_t user_data);
int uccl_get(struct uccl_ep *ep, uint32_t conn, const struct uccl_mr *dst, uint64_t dst_off,
	     uint64_t rkey, uint64_t src_off, uint64_t len, unsigned flags, uint64_t user_data);
/* +1 on the peer's semaphore for conn, after every earlier put on conn. */
int uccl_signal(struct uccl_ep *ep, uint32_t conn, unsigned flags, uint64_t user_data);
/* Completes when every earlier operation on conn completed (sources reusable). */
int uccl_flush(struct uccl_ep *ep, uint32_t conn, unsigned flags, uint64_t user_data);
int uccl_send(struct uccl_ep *ep, uint32_t conn, const struct uccl_mr *src, uint64_t off,
	      uint64_t len, uint64_t tag, unsigned flags, uint64_t user_data);
/* tag UCCL_TAG_ANY matches any send. A message longer than len fails both
 * sides with -EMSGSIZE. */
int uccl_recv(struct uccl_ep *ep, uint32_t conn, const struct uccl_mr *dst, uint64_t off,
	      uint64_t len, uint64_t tag, unsigned flags, uint64_t user_data);
int uccl_nop(struct uccl_ep *ep, unsigned flags, uint64_t user_data);
/* Publish staged operations. Returns how many were published. */
int uccl_submit(struct uccl_ep *ep);

/* Block until this endpoint's semaphore for conn reaches value (signals
 * received from the peer), or timeout_ms passes (-ETIMEDOUT; -1 = forever),
 * or the connection is reset short of it (-ECONNRESET: no signal will
 * come). Spins briefly, then sleeps on the endpoint's notify pipe. */
int uccl_wait(struct uccl_ep *ep, uint32_t conn, uint64_t value, int timeout_ms);
/* Current value of the semaphore, without waiting. */
uint64_t uccl_sem_value(const struct uccl_ep *ep, uint32_t conn);

/* Completions: up to max into cqes; returns the count (0 if none). */
int uccl_poll(struct uccl_ep *ep, struct uccl_cqe *cqes, int max);
/* As uccl_poll, but waits up to timeout_ms (-1 = forever) for at least one. */
int uccl_cq_wait(struct uccl_ep *ep, struct uccl_cqe *cqes, int max, int timeout_ms);

/* Switch the congestion controller of the data channel to peer (a name from
 * the daemon's uccl.conf peers) to cc ("window", "swift", "timely", "dcqcn",
 * "hint", "eqds", "none"). Needs the daemon's admin role (-EPERM). 0: the channel
 * runs it now, starting from its current window; 1: the peer is not up and
 * its channel will start with it. -EINVAL: unknown controller; -ENOENT:
 * unknown peer. */
int uccl_set_channel_cc(struct uccl_ctx *ctx, const char *peer, const char *cc);

const char *uccl_strerror(int err);
const char *uccl_version(void);

#ifdef __cplusplus
}
#endif

#endif
