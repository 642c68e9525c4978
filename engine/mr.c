/* SPDX-License-Identifier: MIT */
/*
 * mr: the table of registered memory regions. Regions live in slots held in
 * blocks that never move (so a pointer returned by a lookup stays valid
 * until that region is removed) and are indexed twice with open addressing
 * and linear probing: by remote key for remote accesses and by (client, id)
 * for local ones. Deletion shifts later entries back instead of leaving
 * tombstones, so probe lengths do not grow with churn. Everything grows with
 * the regions registered, up to the capacity: a daemon sized for a million
 * regions that has a few holds a few (the slot blocks, the indexes doubling
 * at half load, the stack of freed slots).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "engine/mr.h"

#define MR_MAX_CAPACITY (1u << 24)
#define MR_EMPTY        UINT32_MAX
#define MR_BLOCK        64u      /* slots per block */
#define MR_FIRST_BUCKETS 16u

struct mr_table {
	struct mr **blocks;      /* nblocks blocks of MR_BLOCK slots; they never move */
	uint32_t nblocks, blocks_cap;
	uint32_t used;           /* slots [0, used) have been handed out */
	uint32_t *free;          /* stack of released slot numbers, free_cap >= used */
	uint32_t nfree, free_cap;
	uint32_t capacity;
	uint32_t count;
	uint32_t hmask;          /* both indexes have hmask+1 buckets */
	uint32_t *by_rkey;       /* bucket -> slot or MR_EMPTY */
	uint32_t *by_id;
};

static struct mr *slot_at(const struct mr_table *t, uint32_t slot)
{
	return &t->blocks[slot / MR_BLOCK][slot % MR_BLOCK];
}

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
	return slot_at(t, slot)->rkey;
}

static uint64_t slot_idkey(const struct mr_table *t, uint32_t slot)
{
	return id_key(slot_at(t, slot)->client_id, slot_at(t, slot)->id);
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

static uint32_t *buckets_new(uint32_t n)
{
	uint32_t *b = calloc(n, sizeof(*b));

	for (uint32_t i = 0; b && i < n; i++)
		b[i] = MR_EMPTY;
	return b;
}

struct mr_table *mr_table_new(uint32_t capacity)
{
	struct mr_table *t;

	if (capacity == 0 || capacity > MR_MAX_CAPACITY)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->capacity = capacity;
	t->hmask = MR_FIRST_BUCKETS - 1;
	t->by_rkey = buckets_new(MR_FIRST_BUCKETS);
	t->by_id = buckets_new(MR_FIRST_BUCKETS);
	if (!t->by_rkey || !t->by_id)
		return mr_table_free(t);
	return t;
}

struct mr_table *mr_table_free(struct mr_table *t)
{
	if (!t)
		return NULL;
	for (uint32_t i = 0; i < t->nblocks; i++)
		free(t->blocks[i]);
	free(t->blocks);
	free(t->free);
	free(t->by_rkey);
	free(t->by_id);
	free(t);
	return NULL;
}

/* Both indexes doubled and every entry placed again, keeping the load at
 * most one half. */
static int idx_grow(struct mr_table *t)
{
	uint32_t n = (t->hmask + 1) * 2, old = t->hmask + 1;
	uint32_t *rk = buckets_new(n), *id = buckets_new(n), *ork = t->by_rkey, *oid = t->by_id;

	if (!rk || !id) {
		free(rk);
		free(id);
		return -ENOMEM;
	}
	t->by_rkey = rk;
	t->by_id = id;
	t->hmask = n - 1;
	for (uint32_t b = 0; b < old; b++) {
		if (ork[b] != MR_EMPTY)
			idx_insert(t, t->by_rkey, slot_rkey(t, ork[b]), ork[b]);
		if (oid[b] != MR_EMPTY)
			idx_insert(t, t->by_id, slot_idkey(t, oid[b]), oid[b]);
	}
	free(ork);
	free(oid);
	return 0;
}

/* A slot for one more region: a released one, or the next never used
 * (with a new block when it starts one). The stack of released slots
 * grows with the slots ever used, so that removing never allocates. */
static int slot_get(struct mr_table *t, uint32_t *slot)
{
	if (t->nfree) {
		*slot = t->free[--t->nfree];
		return 0;
	}
	if (t->used % MR_BLOCK == 0) {
		struct mr *blk;

		if (t->nblocks == t->blocks_cap) {
			uint32_t n = t->blocks_cap ? t->blocks_cap * 2 : 4;
			struct mr **b = realloc(t->blocks, sizeof(*b) * n);

			if (!b)
				return -ENOMEM;
			t->blocks = b;
			t->blocks_cap = n;
		}
		if (t->free_cap < t->used + MR_BLOCK) {
			uint32_t n = t->free_cap ? t->free_cap * 2 : MR_BLOCK;
			uint32_t *f = realloc(t->free, sizeof(*f) * n);

			if (!f)
				return -ENOMEM;
			t->free = f;
			t->free_cap = n;
		}
		blk = calloc(MR_BLOCK, sizeof(*blk));
		if (!blk)
			return -ENOMEM;
		t->blocks[t->nblocks++] = blk;
	}
	*slot = t->used++;
	return 0;
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
	if (t->count == t->capacity)
		return -ENOSPC;
	if ((t->count + 1) * 2 > t->hmask + 1 && idx_grow(t) < 0)
		return -ENOMEM;
	if (slot_get(t, &slot) < 0)
		return -ENOMEM;
	*slot_at(t, slot) = *m;
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
	brk = idx_find(t, t->by_rkey, slot_rkey, slot_at(t, slot)->rkey);
	/* both indexes name the slot; delete while its keys are still there */
	idx_delete(t, t->by_id, slot_idkey, bid);
	if (brk != MR_EMPTY)
		idx_delete(t, t->by_rkey, slot_rkey, brk);
	*slot_at(t, slot) = (struct mr){ 0 };
	t->free[t->nfree++] = slot;            /* free_cap >= used: no allocation */
	t->count--;
	return 0;
}

const struct mr *mr_table_by_id(const struct mr_table *t, uint32_t client_id, uint32_t id)
{
	uint32_t b = idx_find(t, t->by_id, slot_idkey, id_key(client_id, id));

	return b == MR_EMPTY ? NULL : slot_at(t, t->by_id[b]);
}

const struct mr *mr_table_by_rkey(const struct mr_table *t, uint64_t rkey)
{
	uint32_t b;

	if (rkey == 0)
		return NULL;
	b = idx_find(t, t->by_rkey, slot_rkey, rkey);
	return b == MR_EMPTY ? NULL : slot_at(t, t->by_rkey[b]);
}

uint32_t mr_table_count(const struct mr_table *t)
{
	return t->count;
}
