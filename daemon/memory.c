/* SPDX-License-Identifier: MIT */
/*
 * memory: mapping and copying client memory for the engine.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/memory.h"

int mem_map_memfd(int fd, uint64_t len, void **base)
{
	struct statfs sfs;
	struct stat st;
	int seals;
	void *p;

	/* F_GET_SEALS fails on anything that is not a sealable memfd. */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EINVAL;
	/* tmpfs (shmem) only: a huge-page memfd (MFD_HUGETLB) can have its
	 * pages punched out under the seal and the daemon's next touch faults
	 * (SIGBUS) when the pool is empty; its mapping is also rounded to the
	 * huge page, which mem_unmap's len would not free */
	if (fstatfs(fd, &sfs) < 0)
		return -errno;
	if (sfs.f_type != TMPFS_MAGIC)
		return -EINVAL;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (len == 0 || (uint64_t)st.st_size < len)
		return -EINVAL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	*base = p;
	return 0;
}

void mem_unmap(void *base, uint64_t len)
{
	if (base)
		munmap(base, len);
}

/* Does /proc/pid/status still show uid as real, effective and saved uid?
 * (the pid may have been reused, or the process exec'd something setuid) */
static int same_owner(pid_t pid, uid_t uid)
{
	char path[64], line[256];
	unsigned long r, e, sv;
	FILE *f;
	int ok = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %lu %lu %lu", &r, &e, &sv) == 3) {
			ok = r == uid && e == uid && sv == uid;
			break;
		}
	}
	fclose(f);
	return ok;
}

int mem_check_vaddr(pid_t pid, uid_t uid, uint64_t addr, uint64_t len)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	uint64_t end = addr + len, covered = addr;
	FILE *f;

	if (len == 0 || end < addr)
		return -EINVAL;
	if (!same_owner(pid, uid))
		return -EPERM;
	/* Read the layout instead of touching the pages: a fault on a
	 * FUSE-backed file could block this thread indefinitely. Only
	 * anonymous, memfd and shm mappings that are readable and writable
	 * qualify, and they must cover the range without a gap. */
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -EPERM;
	/* whole lines: a long path's tail, read as a line of its own, could
	 * pass for a covering anonymous mapping */
	while (covered < end && getline(&line, &cap, f) > 0) {
		unsigned long long lo, hi, inode;
		char perms[8], name[256] = "";
		unsigned long long off;
		char dev[16];

		if (sscanf(line, "%llx-%llx %7s %llx %15s %llu %255s", &lo, &hi, perms, &off, dev, &inode,
			   name) < 6)
			continue;
		if (hi <= covered || lo > covered)
			continue;
		if (perms[0] != 'r' || perms[1] != 'w')
			break;
		/* shared anonymous memory shows as "/dev/zero (deleted)", huge
		 * pages as "/anon_hugepage": RAM too, no file system behind */
		if (inode != 0 && strncmp(name, "/memfd:", 7) != 0 && strncmp(name, "/dev/shm/", 9) != 0 &&
		    strcmp(name, "/dev/zero") != 0 && strcmp(name, "/anon_hugepage") != 0)
			break;
		covered = hi;
	}
	free(line);
	fclose(f);
	return covered >= end ? 0 : -EFAULT;
}

uint64_t mem_new_rkey(void)
{
	uint64_t k = 0;

	while (k == 0) {
		if (getrandom(&k, sizeof(k), 0) != sizeof(k))
			abort();   /* no entropy: never hand out guessable keys */
	}
	return k;
}

/* A pidfd of pid (close-on-exec); -errno, -EOPNOTSUPP where the headers
 * this was built with have no pidfd_open. */
static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	long fd = syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0)
		return -errno;
	/* pidfds are close-on-exec from birth */
	return (int)fd;
#else
	(void)pid;
	return -EOPNOTSUPP;
#endif
}

static void owner_exited(evutil_socket_t fd, short what, void *arg)
{
	struct mem_owner *o = arg;

	(void)fd;
	(void)what;
	__atomic_store_n(&o->gone, 1, __ATOMIC_RELEASE);
}

int mem_owner_watch(struct event_base *base, pid_t pid, struct mem_owner *o)
{
	int r = open_pidfd(pid);

	*o = (struct mem_owner){ .pidfd = -1 };
	if (r < 0)
		return r;
	o->pidfd = r;
	/* once: a pidfd stays readable after its process exited */
	o->ev = event_new(base, o->pidfd, EV_READ, owner_exited, o);
	if (!o->ev || event_add(o->ev, NULL) < 0) {
		mem_owner_end(o);
		return -ENOMEM;
	}
	return 0;
}

const int *mem_owner_gone(const struct mem_owner *o)
{
	return o->pidfd >= 0 ? &o->gone : NULL;
}

bool mem_owner_exited(const struct mem_owner *o)
{
	struct pollfd p = { .fd = o->pidfd, .events = POLLIN };

	if (o->pidfd < 0)
		return false;
	return __atomic_load_n(&o->gone, __ATOMIC_ACQUIRE) || poll(&p, 1, 0) > 0;
}

void mem_owner_end(struct mem_owner *o)
{
	if (o->ev)
		event_free(o->ev);
	if (o->pidfd >= 0)
		close(o->pidfd);
	*o = (struct mem_owner){ .pidfd = -1 };
}

/* Whether the process that registered m is still the one at m->pid: once
 * it exited, the pid may be another process's, which the daemon's rights
 * would let it read and write. A flag set from the event loop rather than
 * a pidfd_send_signal per copy: that call cost about half of the copy it
 * guarded (docs/PERFORMANCE.md). Until the loop sees the exit, copies to
 * the dead process fail by themselves (no pages), and its pid cannot be
 * another's before its parent reaped it and the pids went round. */
static int vm_owner_alive(const struct mr *m)
{
	if (m->gone && __atomic_load_n(m->gone, __ATOMIC_ACQUIRE))
		return -ESRCH;
	return 0;
}

/* Move len bytes between our address space and pid's; loops over partial
 * transfers. */
static int vm_xfer(pid_t pid, void *local, uint64_t remote, uint64_t len, int write_remote)
{
	while (len) {
		struct iovec l = { .iov_base = local, .iov_len = len };
		struct iovec r = { .iov_base = (void *)(uintptr_t)remote, .iov_len = len };
		ssize_t n = write_remote ? process_vm_writev(pid, &l, 1, &r, 1, 0)
					 : process_vm_readv(pid, &l, 1, &r, 1, 0);
		if (n <= 0)
			return -EFAULT;
		local = (char *)local + n;
		remote += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

static int mem_copy(void *arg, const struct mr *dst, uint64_t dst_off, const struct mr *src,
		    uint64_t src_off, uint64_t len)
{
	static __thread char bounce[256 * 1024];

	(void)arg;
	if (dst->kind == MR_MAPPED && src->kind == MR_MAPPED) {
		memmove((char *)dst->base + dst_off, (char *)src->base + src_off, len);
		return 0;
	}
	if ((dst->kind == MR_REMOTE_VA && vm_owner_alive(dst) < 0) ||
	    (src->kind == MR_REMOTE_VA && vm_owner_alive(src) < 0))
		return -ESRCH;
	if (dst->kind == MR_MAPPED)
		return vm_xfer(src->pid, (char *)dst->base + dst_off, src->addr + src_off, len, 0);
	if (src->kind == MR_MAPPED)
		return vm_xfer(dst->pid, (char *)src->base + src_off, dst->addr + dst_off, len, 1);
	/* both only in client processes: bounce through our buffer */
	while (len) {
		uint64_t n = len < sizeof(bounce) ? len : sizeof(bounce);
		int r = vm_xfer(src->pid, bounce, src->addr + src_off, n, 0);
		if (r < 0)
			return r;
		r = vm_xfer(dst->pid, bounce, dst->addr + dst_off, n, 1);
		if (r < 0)
			return r;
		src_off += n;
		dst_off += n;
		len -= n;
	}
	return 0;
}

const struct engine_mem_ops mem_copy_ops = {
	.copy = mem_copy,
	.arg = NULL,
};
