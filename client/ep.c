/* SPDX-License-Identifier: MIT */
/*
 * ep: endpoints and their connections. The daemon creates an endpoint's
 * shared region (rings and semaphores) and passes it with two pipe ends; the
 * client maps it, checks the header before trusting any offset in it, and
 * sets up its producer side of the submission ring and consumer side of the
 * completion ring. listen/connect/accept/close are plain control calls.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/ctx.h"

#define EP_NFDS 3          /* region memfd, SQ doorbell, CQ notify */

static void ep_link(struct uccl_ctx *ctx, struct uccl_ep *ep)
{
	ep->ctx = ctx;
	ep->prev = NULL;
	ep->next = ctx->eps;
	if (ctx->eps)
		ctx->eps->prev = ep;
	ctx->eps = ep;
}

static void ep_unlink(struct uccl_ep *ep)
{
	if (ep->prev)
		ep->prev->next = ep->next;
	else
		ep->ctx->eps = ep->next;
	if (ep->next)
		ep->next->prev = ep->prev;
}

/* Map the region and set up the rings; takes ownership of region_fd. */
static int ep_map(struct uccl_ctx *ctx, struct uccl_ep *ep, int region_fd, uint64_t shm_size)
{
	struct uccl_shm_hdr hdr;
	struct stat st;
	void *p;
	int r;

	if (shm_size < sizeof(hdr) || shm_size > SIZE_MAX) {
		ctx_set_error(ctx, "daemon announced a %llu byte endpoint region",
			      (unsigned long long)shm_size);
		r = -EPROTO;
		goto out_close;
	}
	/* Mapping past the end of the memfd would SIGBUS on first touch. */
	if (fstat(region_fd, &st) < 0 || (uint64_t)st.st_size < shm_size) {
		ctx_set_error(ctx, "endpoint region memfd is smaller than announced");
		r = -EPROTO;
		goto out_close;
	}
	p = mmap(NULL, (size_t)shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, region_fd, 0);
	if (p == MAP_FAILED) {
		r = -errno;
		ctx_set_error(ctx, "cannot map the endpoint region: %s", uccl_strerror(r));
		goto out_close;
	}
	close(region_fd);
	region_fd = -1;

	/* Work from a private copy so the checked values are the used ones. */
	memcpy(&hdr, p, sizeof(hdr));
	r = ring_region_check(&hdr, (size_t)shm_size);
	if (r < 0) {
		ctx_set_error(ctx, "endpoint region header is invalid");
		goto out_unmap;
	}
	/* This library writes 64-byte SQEs and reads 32-byte CQEs, and indexes
	 * the semaphores itself. */
	if (hdr.sq_entry_size != UCCL_SQE_SIZE || hdr.cq_entry_size != UCCL_CQE_SIZE ||
	    hdr.sem_off % sizeof(uint64_t) != 0 || hdr.sem_off > shm_size ||
	    (shm_size - hdr.sem_off) / sizeof(uint64_t) < hdr.sem_count) {
		ctx_set_error(ctx, "endpoint region has an unsupported layout");
		r = -EPROTO;
		goto out_unmap;
	}
	ep->region = p;
	ep->region_len = (size_t)shm_size;
	ring_side_init(&ep->sq, p, hdr.sq_ctl_off, hdr.sq_off, hdr.sq_entries, hdr.sq_entry_size);
	ring_side_init(&ep->cq, p, hdr.cq_ctl_off, hdr.cq_off, hdr.cq_entries, hdr.cq_entry_size);
	ep->sem = (const uint64_t *)((const char *)p + hdr.sem_off);
	ep->sem_count = hdr.sem_count;
	return 0;

out_unmap:
	munmap(p, (size_t)shm_size);
out_close:
	if (region_fd >= 0)
		close(region_fd);
	return r;
}

static int ep_destroy_remote(struct uccl_ctx *ctx, uint32_t ep_id)
{
	UcclCtl__Request req = UCCL_CTL__REQUEST__INIT;
	UcclCtl__EpDestroyReq e = UCCL_CTL__EP_DESTROY_REQ__INIT;

	e.ep_id = ep_id;
	req.body_case = UCCL_CTL__REQUEST__BODY_EP_DESTROY;
	req.ep_destroy = &e;
	return ctx_call(ctx, &req, NULL, 0, 0, UCCL_CTL__REPLY__BODY__NOT_SET, 0, NULL, NULL);
}

UCCL_EXPORT int uccl_ep_create(struct uccl_ctx *ctx, const struct uccl_ep_attr *attr,
			       struct uccl_ep **ret)
{
	UcclCtl__Request req = UCCL_CTL__REQUEST__INIT;
	UcclCtl__EpCreateReq c = UCCL_CTL__EP_CREATE_REQ__INIT;
	UcclCtl__Reply *rep;
	char why[CTX_ERR_LEN];
	struct uccl_ep *ep;
	int fds[EP_NFDS];
	uint64_t shm_size;
	int r;

	if (!ctx)
		return -EINVAL;
	if (!ret)
		return ctx_fail(ctx, -EINVAL, "uccl_ep_create: no place for the endpoint");
	if (attr && (attr->flags & ~UCCL_EP_THREAD))
		return ctx_fail(ctx, -EINVAL, "uccl_ep_attr: unknown flags 0x%x",
				attr->flags & ~UCCL_EP_THREAD);
	if (attr && attr->sq_entries) {
		c.has_sq_entries = 1;
		c.sq_entries = attr->sq_entries;
	}
	if (attr && attr->cq_entries) {
		c.has_cq_entries = 1;
		c.cq_entries = attr->cq_entries;
	}
	if (attr && (attr->flags & UCCL_EP_THREAD)) {
		c.has_thread = 1;
		c.thread = attr->thread;
	}
	c.has_sqe_size = 1;
	c.sqe_size = UCCL_SQE_SIZE;
	req.body_case = UCCL_CTL__REQUEST__BODY_EP_CREATE;
	req.ep_create = &c;

	ctx_lock(ctx);
	ep = calloc(1, sizeof(*ep));
	if (!ep) {
		ctx_set_error(ctx, "out of memory");
		r = -ENOMEM;
		goto out_unlock;
	}
	r = ctx_call(ctx, &req, NULL, 0, 0, UCCL_CTL__REPLY__BODY_EP_CREATE, EP_NFDS, fds, &rep);
	if (r < 0)
		goto out_free;
	ep->id = rep->ep_create->ep_id;
	ep->thread = rep->ep_create->has_thread ? rep->ep_create->thread : 0;
	shm_size = rep->ep_create->shm_size;
	uccl_ctl__reply__free_unpacked(rep, NULL);
	ep->doorbell_fd = fds[1];
	ep->notify_fd = fds[2];
	/* our ends of the two pipes; non-blocking so that neither a full
	 * doorbell nor an empty notify pipe can stall us */
	fcntl(ep->doorbell_fd, F_SETFL, fcntl(ep->doorbell_fd, F_GETFL) | O_NONBLOCK);
	fcntl(ep->notify_fd, F_SETFL, fcntl(ep->notify_fd, F_GETFL) | O_NONBLOCK);
	r = ep_map(ctx, ep, fds[0], shm_size);
	if (r < 0)
		goto out_daemon_ep;
	ep_link(ctx, ep);
	ctx_unlock(ctx);
	*ret = ep;
	return 0;

out_daemon_ep:
	/* The daemon made the endpoint; do not leave it behind, but report
	 * why the mapping failed rather than how the destroy went. */
	memcpy(why, ctx_thread_error(), sizeof(why));
	(void)ep_destroy_remote(ctx, ep->id);
	ctx_set_error(ctx, "%s", why);
	close(fds[1]);
	close(fds[2]);
out_free:
	free(ep);
out_unlock:
	ctx_unlock(ctx);
	return r;
}

int ep_destroy_locked(struct uccl_ep *ep, bool talk)
{
	int r = 0;

	if (talk)
		r = ep_destroy_remote(ep->ctx, ep->id);
	ep_unlink(ep);
	munmap(ep->region, ep->region_len);
	close(ep->doorbell_fd);
	close(ep->notify_fd);
	free(ep);
	return r;
}

UCCL_EXPORT int uccl_ep_destroy(struct uccl_ep *ep)
{
	struct uccl_ctx *ctx;
	int r;

	if (!ep)
		return 0;
	ctx = ep->ctx;
	ctx_lock(ctx);
	r = ep_destroy_locked(ep, true);
	ctx_unlock(ctx);
	return r;
}

UCCL_EXPORT int uccl_ep_fd(const struct uccl_ep *ep)
{
	return ep ? ep->notify_fd : -EINVAL;
}

UCCL_EXPORT int uccl_ep_thread(const struct uccl_ep *ep)
{
	return ep ? (int)ep->thread : -EINVAL;
}

/* -1 means the context's control timeout; below that is invalid. */
static int resolve_timeout(struct uccl_ctx *ctx, const char *fn, int timeout_ms, uint32_t *out)
{
	if (timeout_ms < -1)
		return ctx_fail(ctx, -EINVAL, "%s: timeout_ms %d (-1 for the context's, or 0 and up)",
				fn, timeout_ms);
	*out = timeout_ms == -1 ? (uint32_t)ctx_timeout(ctx) : (uint32_t)timeout_ms;
	return 0;
}

UCCL_EXPORT int uccl_listen(struct uccl_ep *ep, const char *name)
{
	UcclCtl__Request req = UCCL_CTL__REQUEST__INIT;
	UcclCtl__ListenReq l = UCCL_CTL__LISTEN_REQ__INIT;
	int r;

	if (!ep)
		return -EINVAL;
	if (!name || !*name)
		return ctx_fail(ep->ctx, -EINVAL, "uccl_listen: no name");
	l.ep_id = ep->id;
	l.name = (char *)name;
	req.body_case = UCCL_CTL__REQUEST__BODY_LISTEN;
	req.listen = &l;
	ctx_lock(ep->ctx);
	r = ctx_call(ep->ctx, &req, NULL, 0, 0, UCCL_CTL__REPLY__BODY__NOT_SET, 0, NULL, NULL);
	ctx_unlock(ep->ctx);
	return r;
}

UCCL_EXPORT int uccl_connect(struct uccl_ep *ep, const char *name, int timeout_ms,
			     uint32_t *conn)
{
	UcclCtl__Request req = UCCL_CTL__REQUEST__INIT;
	UcclCtl__ConnectReq c = UCCL_CTL__CONNECT_REQ__INIT;
	UcclCtl__Reply *rep;
	uint32_t t;
	int r;

	if (!ep)
		return -EINVAL;
	if (!name || !*name || !conn)
		return ctx_fail(ep->ctx, -EINVAL, "uccl_connect: %s", conn ? "no name" :
				"no place for the connection id");
	r = resolve_timeout(ep->ctx, "uccl_connect", timeout_ms, &t);
	if (r < 0)
		return r;
	c.ep_id = ep->id;
	c.name = (char *)name;
	c.has_timeout_ms = 1;
	c.timeout_ms = t;
	req.body_case = UCCL_CTL__REQUEST__BODY_CONNECT;
	req.connect = &c;
	ctx_lock(ep->ctx);
	/* The daemon may wait up to t for a listener before it answers. */
	r = ctx_call(ep->ctx, &req, NULL, 0, t, UCCL_CTL__REPLY__BODY_CONNECT, 0, NULL, &rep);
	ctx_unlock(ep->ctx);
	if (r < 0)
		return r;
	*conn = rep->connect->conn_id;
	uccl_ctl__reply__free_unpacked(rep, NULL);
	return 0;
}

UCCL_EXPORT int uccl_accept(struct uccl_ep *ep, int timeout_ms, uint32_t *conn)
{
	UcclCtl__Request req = UCCL_CTL__REQUEST__INIT;
	UcclCtl__AcceptReq a = UCCL_CTL__ACCEPT_REQ__INIT;
	UcclCtl__Reply *rep;
	uint32_t t;
	int r;

	if (!ep)
		return -EINVAL;
	if (!conn)
		return ctx_fail(ep->ctx, -EINVAL, "uccl_accept: no place for the connection id");
	r = resolve_timeout(ep->ctx, "uccl_accept", timeout_ms, &t);
	if (r < 0)
		return r;
	a.ep_id = ep->id;
	a.has_timeout_ms = 1;
	a.timeout_ms = t;
	req.body_case = UCCL_CTL__REQUEST__BODY_ACCEPT;
	req.accept = &a;
	ctx_lock(ep->ctx);
	r = ctx_call(ep->ctx, &req, NULL, 0, t, UCCL_CTL__REPLY__BODY_ACCEPT, 0, NULL, &rep);
	ctx_unlock(ep->ctx);
	if (r < 0)
		return r;
	*conn = rep->accept->conn_id;
	uccl_ctl__reply__free_unpacked(rep, NULL);
	return 0;
}

UCCL_EXPORT int uccl_close(struct uccl_ep *ep, uint32_t conn)
{
	UcclCtl__Request req = UCCL_CTL__REQUEST__INIT;
	UcclCtl__CloseReq c = UCCL_CTL__CLOSE_REQ__INIT;
	int r;

	if (!ep)
		return -EINVAL;
	c.ep_id = ep->id;
	c.conn_id = conn;
	req.body_case = UCCL_CTL__REQUEST__BODY_CLOSE;
	req.close = &c;
	ctx_lock(ep->ctx);
	r = ctx_call(ep->ctx, &req, NULL, 0, 0, UCCL_CTL__REPLY__BODY__NOT_SET, 0, NULL, NULL);
	ctx_unlock(ep->ctx);
	return r;
}
