/* SPDX-License-Identifier: MIT */
/*
 * mem: memory regions. uccl_mem_alloc hands the daemon a sealed memfd so
 * that both processes map the same pages (zero copy); uccl_mem_reg
 * registers memory the application already has, which the daemon reaches
 * with process_vm_readv/writev, after letting it past Yama's ptrace scope.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "client/ctx.h"

static void mr_link(struct uccl_ctx *ctx, struct uccl_mr *mr)
{
	mr->ctx = ctx;
	mr->prev = NULL;
	mr->next = ctx->mrs;
	if (ctx->mrs)
		ctx->mrs->prev = mr;
	ctx->mrs = mr;
}

static void mr_unlink(struct uccl_mr *mr)
{
	if (mr->prev)
		mr->prev->next = mr->next;
	else
		mr->ctx->mrs = mr->next;
	if (mr->next)
		mr->next->prev = mr->prev;
}

/* Register with the daemon; fills id and rkey. fd < 0 for MEM_VADDR. */
static int mr_register(struct uccl_ctx *ctx, struct uccl_mr *mr, int fd)
{
	UcclCtl__Request req = UCCL_CTL__REQUEST__INIT;
	UcclCtl__MemRegReq m = UCCL_CTL__MEM_REG_REQ__INIT;
	UcclCtl__Reply *rep;
	int r;

	m.len = mr->len;
	if (fd >= 0) {
		m.kind = UCCL_CTL__MEM_KIND__MEM_MEMFD;
	} else {
		m.kind = UCCL_CTL__MEM_KIND__MEM_VADDR;
		m.has_addr = 1;
		m.addr = (uint64_t)(uintptr_t)mr->addr;
	}
	req.body_case = UCCL_CTL__REQUEST__BODY_MEM_REG;
	req.mem_reg = &m;
	r = ctx_call(ctx, &req, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, 0,
		     UCCL_CTL__REPLY__BODY_MEM_REG, 0, NULL, &rep);
	if (r < 0)
		return r;
	mr->id = rep->mem_reg->mr_id;
	mr->rkey = rep->mem_reg->rkey;
	uccl_ctl__reply__free_unpacked(rep, NULL);
	return 0;
}

UCCL_EXPORT int uccl_mem_alloc(struct uccl_ctx *ctx, size_t len, struct uccl_mr **ret)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct uccl_mr *mr;
	void *p;
	int fd, r;

	if (!ctx)
		return -EINVAL;
	if (!ret)
		return ctx_fail(ctx, -EINVAL, "uccl_mem_alloc: no place for the region");
	if (len == 0 || len > SIZE_MAX - page + 1)
		return ctx_fail(ctx, -EINVAL, "uccl_mem_alloc: length %zu is not allocatable", len);
	ctx_lock(ctx);
	len = (len + page - 1) & ~(page - 1);
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		ctx_set_error(ctx, "out of memory");
		r = -ENOMEM;
		goto out_unlock;
	}
	fd = memfd_create("uccl-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		r = -errno;
		ctx_set_error(ctx, "memfd_create: %s", uccl_strerror(r));
		goto out_free;
	}
	if (ftruncate(fd, (off_t)len) < 0) {
		r = -errno;
		ctx_set_error(ctx, "cannot size a %zu byte memfd: %s", len, uccl_strerror(r));
		goto out_close;
	}
	/* The daemon maps these pages: a shrink would make it fault, so it
	 * refuses memfds whose size is not sealed. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		r = -errno;
		ctx_set_error(ctx, "cannot seal the memfd: %s", uccl_strerror(r));
		goto out_close;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		r = -errno;
		ctx_set_error(ctx, "cannot map %zu bytes: %s", len, uccl_strerror(r));
		goto out_close;
	}
	mr->addr = p;
	mr->len = len;
	mr->mapped = true;
	r = mr_register(ctx, mr, fd);
	if (r < 0)
		goto out_unmap;
	close(fd);                       /* the mapping keeps the pages */
	mr_link(ctx, mr);
	ctx_unlock(ctx);
	*ret = mr;
	return 0;

out_unmap:
	munmap(p, len);
out_close:
	close(fd);
out_free:
	free(mr);
out_unlock:
	ctx_unlock(ctx);
	return r;
}

UCCL_EXPORT int uccl_mem_reg(struct uccl_ctx *ctx, void *addr, size_t len, struct uccl_mr **ret)
{
	struct uccl_mr *mr;
	int r;

	if (!ctx)
		return -EINVAL;
	if (!ret)
		return ctx_fail(ctx, -EINVAL, "uccl_mem_reg: no place for the region");
	if (!addr || len == 0 || (uintptr_t)addr + len < (uintptr_t)addr)
		return ctx_fail(ctx, -EINVAL, "uccl_mem_reg: empty or wrapping range");
	ctx_lock(ctx);
	/* Yama (ptrace_scope 1) lets only ancestors and named tracers use
	 * process_vm_*; name the daemon once. EINVAL: no Yama, nothing to do. */
	if (!ctx->ptracer_set && ctx->daemon_pid > 0) {
		if (prctl(PR_SET_PTRACER, (unsigned long)ctx->daemon_pid, 0, 0, 0) < 0 &&
		    errno != EINVAL) {
			r = -errno;
			ctx_set_error(ctx, "prctl(PR_SET_PTRACER, %d): %s", (int)ctx->daemon_pid,
				      uccl_strerror(r));
			goto out_unlock;
		}
		ctx->ptracer_set = true;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		ctx_set_error(ctx, "out of memory");
		r = -ENOMEM;
		goto out_unlock;
	}
	mr->addr = addr;
	mr->len = len;
	r = mr_register(ctx, mr, -1);
	if (r < 0)
		goto out_free;
	mr_link(ctx, mr);
	ctx_unlock(ctx);
	*ret = mr;
	return 0;

out_free:
	free(mr);
out_unlock:
	ctx_unlock(ctx);
	return r;
}

int mr_free_locked(struct uccl_mr *mr, bool talk)
{
	UcclCtl__Request req = UCCL_CTL__REQUEST__INIT;
	UcclCtl__MemDeregReq d = UCCL_CTL__MEM_DEREG_REQ__INIT;
	int r = 0;

	if (talk) {
		d.mr_id = mr->id;
		req.body_case = UCCL_CTL__REQUEST__BODY_MEM_DEREG;
		req.mem_dereg = &d;
		r = ctx_call(mr->ctx, &req, NULL, 0, 0, UCCL_CTL__REPLY__BODY__NOT_SET, 0, NULL,
			     NULL);
	}
	mr_unlink(mr);
	if (mr->mapped)
		munmap(mr->addr, mr->len);
	free(mr);
	return r;
}

UCCL_EXPORT int uccl_mem_free(struct uccl_mr *mr)
{
	struct uccl_ctx *ctx;
	int r;

	if (!mr)
		return 0;
	ctx = mr->ctx;
	ctx_lock(ctx);
	r = mr_free_locked(mr, true);
	ctx_unlock(ctx);
	return r;
}

UCCL_EXPORT void *uccl_mr_addr(const struct uccl_mr *mr)
{
	return mr ? mr->addr : NULL;
}

UCCL_EXPORT size_t uccl_mr_len(const struct uccl_mr *mr)
{
	return mr ? mr->len : 0;
}

UCCL_EXPORT uint32_t uccl_mr_id(const struct uccl_mr *mr)
{
	return mr ? mr->id : 0;
}

UCCL_EXPORT uint64_t uccl_mr_key(const struct uccl_mr *mr)
{
	return mr ? mr->rkey : 0;
}
