/* SPDX-License-Identifier: MIT */
/*
 * memory: the daemon's side of client memory. Maps memfd-backed regions after
 * checking they are size-sealed (a client that could shrink a mapped memfd
 * could make the daemon fault), checks that registered virtual ranges are
 * reachable, issues random remote keys, and supplies the engine's copy
 * operation (memcpy between mappings, process_vm_readv/writev otherwise).
 */
#ifndef UCCL_DAEMON_MEMORY_H
#define UCCL_DAEMON_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/engine.h"

/* Map len bytes of memfd fd. -EINVAL if not a size-sealed memfd on tmpfs
 * (huge-page memfds are refused) or too small. */
int mem_map_memfd(int fd, uint64_t len, void **base);
void mem_unmap(void *base, uint64_t len);
/* Check, without touching it, that [addr, addr+len) of pid is covered by
 * read-write anonymous, memfd or shm mappings and that pid still runs as
 * uid (real, effective, saved). -EPERM, -EFAULT or -EINVAL otherwise. */
int mem_check_vaddr(pid_t pid, uid_t uid, uint64_t addr, uint64_t len);
/* A random non-zero key. */
uint64_t mem_new_rkey(void);
/* The process that registered MR_REMOTE_VA regions, watched from an event
 * loop: its pidfd turns readable when it exits, and gone (what mr.gone
 * points at) is set then. */
struct event;
struct event_base;
struct mem_owner {
	int pidfd;                 /* -1: not watched */
	int gone;
	struct event *ev;
};
/* Watch pid from base. 0; -ENOSYS or -EOPNOTSUPP without pidfds (Linux
 * 5.3, or headers without pidfd_open; o then
 * watches nothing, and mem_owner_gone is NULL); other -errno. */
int mem_owner_watch(struct event_base *base, pid_t pid, struct mem_owner *o);
const int *mem_owner_gone(const struct mem_owner *o);
/* Whether the watched process has exited, the loop told or not yet. */
bool mem_owner_exited(const struct mem_owner *o);
void mem_owner_end(struct mem_owner *o);      /* accepts one never watched */

extern const struct engine_mem_ops mem_copy_ops;

#endif
