/* SPDX-License-Identifier: MIT */
/*
 * rxhint: a socket filter's count of queued datagrams, read from shared
 * memory, so that an engine skips receives that would find its socket
 * empty. The program is six hand-assembled BPF instructions (no compiler,
 * no libbpf): add one to the array's only value, accept the whole datagram.
 * See rxhint.h for how a wrong count is kept harmless.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/nic/rxhint.h"

#if defined(HAVE_LINUX_BPF_H) && defined(__NR_bpf)
#include <linux/bpf.h>
#endif

bool rxhint_due(struct rxhint_acct *a, uint64_t count)
{
	/* every datagram is counted before it is queued, so taking more
	 * than the count means some were never counted: settle at once, or
	 * as many new ones waiting would read as an empty socket */
	if (count < a->seen) {
		a->written_off += a->seen - count;
		a->seen = count;
	}
	a->before = count;
	if (count == a->seen)
		a->stuck = 0;          /* whatever was off has settled */
	if (count != a->seen || ++a->skips >= RXHINT_SAFETY_SKIPS) {
		a->skips = 0;
		return true;
	}
	a->skipped++;
	return false;
}

void rxhint_took(struct rxhint_acct *a, uint32_t got, bool drained)
{
	uint64_t ahead;

	a->seen += got;
	/* a drained socket with the count still ahead: a datagram between
	 * the filter and the queue (taken next time), or one that will
	 * never come (dropped at a full buffer). Only a difference that
	 * outlives many receives is written off, and only as much of it as
	 * was there after every one of them: a datagram on its way in is
	 * there at one receive, not at all of them. (A count behind what
	 * was taken is a read that predates the last arrivals; rxhint_due
	 * settles a real one.) */
	if (!drained || a->before <= a->seen) {
		a->stuck = 0;
		return;
	}
	ahead = a->before - a->seen;
	if (a->stuck++ == 0 || ahead < a->stuck_min)
		a->stuck_min = ahead;
	if (a->stuck < RXHINT_STUCK_CALLS)
		return;
	a->written_off += a->stuck_min;
	a->seen += a->stuck_min;
	a->stuck = 0;
}

#if defined(HAVE_LINUX_BPF_H) && defined(__NR_bpf) && HAVE_DECL_BPF_F_MMAPABLE && \
    HAVE_DECL_BPF_PSEUDO_MAP_VALUE

struct rxhint {
	int map_fd;
	void *mem;
	size_t mem_len;
};

static int sys_bpf(int cmd, union bpf_attr *attr)
{
	long r = syscall(__NR_bpf, cmd, attr, sizeof(*attr));

	return r < 0 ? -errno : (int)r;
}

static int load_filter(int map_fd)
{
	/* r1 = &value[0]; r2 = 1; lock *(u64 *)r1 += r2; return 0xffffffff
	 * (a length of at least the datagram's: keep all of it). The atomic
	 * add encodes as the older BPF_XADD too, so pre-5.12 kernels take it. */
	struct bpf_insn prog[] = {
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = 1, .src_reg = BPF_PSEUDO_MAP_VALUE,
		  .imm = map_fd },
		{ .imm = 0 },                                   /* offset 0 in the value */
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 2, .imm = 1 },
		{ .code = BPF_STX | BPF_DW | 0xc0 /* BPF_ATOMIC, BPF_XADD */, .dst_reg = 1,
		  .src_reg = 2, .imm = 0 /* BPF_ADD */ },
		{ .code = BPF_ALU | BPF_MOV | BPF_K, .dst_reg = 0, .imm = -1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insns = (uint64_t)(uintptr_t)prog;
	a.insn_cnt = sizeof(prog) / sizeof(prog[0]);
	a.license = (uint64_t)(uintptr_t)"MIT";
	return sys_bpf(BPF_PROG_LOAD, &a);
}

int rxhint_attach(int fd, struct rxhint **out)
{
	long page = sysconf(_SC_PAGESIZE);
	struct rxhint *h;
	union bpf_attr a;
	int prog, r;

	if (fd < 0 || !out)
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = sizeof(uint32_t);
	a.value_size = sizeof(uint64_t);
	a.max_entries = 1;
	a.map_flags = BPF_F_MMAPABLE;
	h->map_fd = sys_bpf(BPF_MAP_CREATE, &a);
	if (h->map_fd < 0) {
		r = h->map_fd;
		goto out_free;
	}
	h->mem_len = page > 0 ? (size_t)page : 4096;
	h->mem = mmap(NULL, h->mem_len, PROT_READ, MAP_SHARED, h->map_fd, 0);
	if (h->mem == MAP_FAILED) {
		r = -errno;
		goto out_map;
	}
	prog = load_filter(h->map_fd);
	if (prog < 0) {
		r = prog;
		goto out_mem;
	}
	/* the socket keeps the program, and the program the map */
	r = setsockopt(fd, SOL_SOCKET, SO_ATTACH_BPF, &prog, sizeof(prog)) < 0 ? -errno : 0;
	close(prog);
	if (r < 0)
		goto out_mem;
	*out = h;
	return 0;

out_mem:
	munmap(h->mem, h->mem_len);
out_map:
	close(h->map_fd);
out_free:
	free(h);
	return r;
}

void rxhint_free(struct rxhint *h)
{
	if (!h)
		return;
	munmap(h->mem, h->mem_len);
	close(h->map_fd);
	free(h);
}

uint64_t rxhint_count(const struct rxhint *h)
{
	return __atomic_load_n((const uint64_t *)h->mem, __ATOMIC_ACQUIRE);
}

#else /* no BPF in the headers */

struct rxhint {
	int unused;
};

int rxhint_attach(int fd, struct rxhint **out)
{
	(void)fd;
	(void)out;
	return -EOPNOTSUPP;
}

void rxhint_free(struct rxhint *h)
{
	(void)h;
}

uint64_t rxhint_count(const struct rxhint *h)
{
	(void)h;
	return 0;
}

#endif
