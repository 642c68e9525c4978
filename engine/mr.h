/* SPDX-License-Identifier: MIT */
/*
 * mr: registered memory regions and the checks on every access: a region is
 * found by its owner's id (local access) or by its random remote key (remote
 * access), and every range is checked against the region's bounds without
 * integer overflow.
 */
#ifndef UCCL_ENGINE_MR_H
#define UCCL_ENGINE_MR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mr_kind {
	MR_MAPPED = 1,     /* base points at the daemon's mapping of the pages */
	MR_REMOTE_VA = 2,  /* pages live only in process pid at address addr */
};

struct mr {
	uint32_t id;           /* client-local id */
	uint32_t client_id;    /* owner */
	uint64_t rkey;         /* random, unguessable; 0 is never issued */
	uint64_t len;
	enum mr_kind kind;
	void *base;            /* MR_MAPPED */
	int32_t pid;           /* MR_REMOTE_VA */
	uint64_t addr;         /* MR_REMOTE_VA */
	/* MR_REMOTE_VA: nonzero once the process that registered it exited,
	 * so that a copy then (its pid may name another process by then) is
	 * refused; set by another thread, read atomically; NULL: not known */
	const int *gone;
};

/* true if [off, off+len) lies inside m (len 0 allowed at off <= m->len). */
bool mr_range_ok(const struct mr *m, uint64_t off, uint64_t len);

struct mr_table;

struct mr_table *mr_table_new(uint32_t capacity);
struct mr_table *mr_table_free(struct mr_table *t);          /* accepts NULL */
/* Copies *m in. -EEXIST on a duplicate rkey or (client,id); -ENOSPC when full;
 * -EINVAL for rkey 0, an unknown kind or a mapped region of nonzero length
 * with no base; -ENOMEM. */
int mr_table_add(struct mr_table *t, const struct mr *m);
int mr_table_remove(struct mr_table *t, uint32_t client_id, uint32_t id);
const struct mr *mr_table_by_id(const struct mr_table *t, uint32_t client_id, uint32_t id);
const struct mr *mr_table_by_rkey(const struct mr_table *t, uint64_t rkey);
uint32_t mr_table_count(const struct mr_table *t);

#endif
