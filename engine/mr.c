/* SPDX-License-Identifier: MIT */
/*
 * mr: the table of registered memory regions. Regions live in a fixed array
 * of slots (so a pointer returned by a lookup stays valid until that region
 * is removed) and are indexed twice with open addressing and linear probing:
 * by remote key for remote accesses and by (client, id) for local ones.
 * Deletion shifts later entries back instead of leaving tombstones, so probe
 * lengths do not grow with churn.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "engine/mr.h"

#define MR_MAX_CAPACITY (1u << 24)
#define MR_EMPTY        UINT32_MAX

struct mr_table {
	struct mr *slots;        /* capacity entries */
	uint32_t *free;          /* stack of free slot numbers */
	uint32_t nfree;
	uint32_t capacity;
	uint32_t count;
	uint32_t hmask;          /* both indexes have hmask+1 buckets */
	uint32_t *by_rkey;       /* bucket -> slot or MR_EMPTY */
	uint32_t *by_id;
};

bool mr_range_ok(const struct mr *m, uint64_t off, uint64_t len)
{
	/* off + len may wrap; compare against what is left after off instead */
	return off <= m->len && len <= m->len - off;
}

/* splitmix64 finaliser: rkeys should be random, but must not be trusted to be */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static uint64_t id_key(uint32_t client_id, uint32_t id)
{
	return (uint64_t)client_id << 32 | id;
}

static uint64_t slot_rkey(const struct mr_table *t, uint32_t slot)
{
	return t->slots[slot].rkey;
}

static uint64_t slot_idkey(const struct mr_table *t, uint32_t slot)
{
	return id_key(t->slots[slot].client_id, t->slots[slot].id);
}

typedef uint64_t (*keyfn)(const struct mr_table *t, uint32_t slot);

static uint32_t idx_find(const struct mr_table *t, const uint32_t *ix, keyfn key, uint64_t k)
{
	for (uint32_t b = (uint32_t)mix(k) & t->hmask;; b = (b + 1) & t->hmask) {
		if (ix[b] == MR_EMPTY)
			return MR_EMPTY;
		if (key(t, ix[b]) == k)
			return b;
	}
}

static void idx_insert(const struct mr_table *t, uint32_t *ix, uint64_t k, uint32_t slot)
{
	uint32_t b = (uint32_t)mix(k) & t->hmask;

	while (ix[b] != MR_EMPTY)
		b = (b + 1) & t->hmask;
	ix[b] = slot;
}

/* Backward-shift deletion for linear probing (Knuth 6.4, algorithm R). */
static void idx_delete(const struct mr_table *t, uint32_t *ix, keyfn key, uint32_t b)
{
	uint32_t hole = b;

	for (uint32_t j = (b + 1) & t->hmask; ix[j] != MR_EMPTY; j = (j + 1) & t->hmask) {
		uint32_t home = (uint32_t)mix(key(t, ix[j])) & t->hmask;

		/* entry j may move into the hole only if its home is not in
		 * the cyclic range (hole, j] */
		if (((j - home) & t->hmask) >= ((j - hole) & t->hmask)) {
			ix[hole] = ix[j];
			hole = j;
		}
	}
	ix[hole] = MR_EMPTY;
}

struct mr_table *mr_table_new(uint32_t capacity)
{
	struct mr_table *t;
	uint32_t buckets = 4;

	if (capacity == 0 || capacity > MR_MAX_CAPACITY)
		return NULL;
	/* load factor at most one half keeps probes short */
	while (buckets < 2 * capacity)
		buckets <<= 1;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->slots = calloc(capacity, sizeof(*t->slots));
	t->free = malloc(sizeof(*t->free) * capacity);
	t->by_rkey = malloc(sizeof(*t->by_rkey) * buckets);
	t->by_id = malloc(sizeof(*t->by_id) * buckets);
	if (!t->slots || !t->free || !t->by_rkey || !t->by_id)
		return mr_table_free(t);
	t->capacity = capacity;
	t->hmask = buckets - 1;
	for (uint32_t i = 0; i < buckets; i++)
		t->by_rkey[i] = t->by_id[i] = MR_EMPTY;
	/* hand out low slots first: nicer to read in a debugger */
	for (uint32_t i = 0; i < capacity; i++)
		t->free[i] = capacity - 1 - i;
	t->nfree = capacity;
	return t;
}

struct mr_table *mr_table_free(struct mr_table *t)
{
	if (!t)
		return NULL;
	free(t->slots);
	free(t->free);
	free(t->by_rkey);
	free(t->by_id);
	free(t);
	return NULL;
}

int mr_table_add(struct mr_table *t, const struct mr *m)
{
	uint32_t slot;

	if (m->rkey == 0)
		return -EINVAL;
	if (m->kind != MR_MAPPED && m->kind != MR_REMOTE_VA)
		return -EINVAL;
	if (m->kind == MR_MAPPED && !m->base && m->len)
		return -EINVAL;
	if (idx_find(t, t->by_rkey, slot_rkey, m->rkey) != MR_EMPTY ||
	    idx_find(t, t->by_id, slot_idkey, id_key(m->client_id, m->id)) != MR_EMPTY)
		return -EEXIST;
	if (t->nfree == 0)
		return -ENOSPC;
	slot = t->free[--t->nfree];
	t->slots[slot] = *m;
	idx_insert(t, t->by_rkey, m->rkey, slot);
	idx_insert(t, t->by_id, id_key(m->client_id, m->id), slot);
	t->count++;
	return 0;
}

int mr_table_remove(struct mr_table *t, uint32_t client_id, uint32_t id)
{
	uint32_t bid, brk, slot;

	bid = idx_find(t, t->by_id, slot_idkey, id_key(client_id, id));
	if (bid == MR_EMPTY)
		return -ENOENT;
	slot = t->by_id[bid];
	brk = idx_find(t, t->by_rkey, slot_rkey, t->slots[slot].rkey);
	/* both indexes name the slot; delete while its keys are still there */
	idx_delete(t, t->by_id, slot_idkey, bid);
	if (brk != MR_EMPTY)
		idx_delete(t, t->by_rkey, slot_rkey, brk);
	t->slots[slot] = (struct mr){ 0 };
	t->free[t->nfree++] = slot;
	t->count--;
	return 0;
}

const struct mr *mr_table_by_id(const struct mr_table *t, uint32_t client_id, uint32_t id)
{
	uint32_t b = idx_find(t, t->by_id, slot_idkey, id_key(client_id, id));

	return b == MR_EMPTY ? NULL : &t->slots[t->by_id[b]];
}

const struct mr *mr_table_by_rkey(const struct mr_table *t, uint64_t rkey)
{
	uint32_t b;

	if (rkey == 0)
		return NULL;
	b = idx_find(t, t->by_rkey, slot_rkey, rkey);
	return b == MR_EMPTY ? NULL : &t->slots[t->by_rkey[b]];
}

uint32_t mr_table_count(const struct mr_table *t)
{
	return t->count;
}
