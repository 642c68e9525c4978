/* SPDX-License-Identifier: MIT */
/*
 * ring: the shared-memory SPSC rings of an endpoint region and the region's
 * layout. Each side publishes only its own index (release) and reads the
 * peer's (acquire), checking it, so a hostile peer can make its own ring
 * useless but never make us step outside the slots. The sleep protocol is the
 * classic store-fence-load pair on both sides: the producer publishes, fences
 * and reads the consumer's NEED_WAKEUP flag; the consumer sets the flag,
 * fences and re-reads the producer index, so at least one of them sees the
 * other and no wake-up is lost.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "engine/ring.h"

#define RING_MIN_ENTRIES 16u
#define RING_MAX_ENTRIES 65536u
#define RING_MAX_SEMS    65536u
#define RING_PAGE        4096u

static bool entries_ok(uint32_t n)
{
	return n >= RING_MIN_ENTRIES && n <= RING_MAX_ENTRIES && (n & (n - 1)) == 0;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

size_t ring_region_layout(uint32_t sq_entries, uint32_t cq_entries, uint32_t sem_count,
			  struct uccl_shm_hdr *hdr)
{
	uint64_t off;

	/* Every quantity is bounded here, so the sums below cannot overflow. */
	if (!entries_ok(sq_entries) || !entries_ok(cq_entries) || sem_count == 0 ||
	    sem_count > RING_MAX_SEMS)
		return 0;
	memset(hdr, 0, sizeof(*hdr));
	hdr->magic = UCCL_SHM_MAGIC;
	hdr->abi_version = UCCL_SHM_ABI_VERSION;
	hdr->hdr_size = sizeof(*hdr);
	hdr->sq_entries = sq_entries;
	hdr->sq_entry_size = UCCL_SQE_SIZE;
	hdr->cq_entries = cq_entries;
	hdr->cq_entry_size = UCCL_CQE_SIZE;
	off = align_up(sizeof(*hdr), UCCL_CACHELINE);
	hdr->sq_ctl_off = off;
	off = align_up(off + sizeof(struct uccl_ring_ctl), UCCL_CACHELINE);
	hdr->sq_off = off;
	off = align_up(off + (uint64_t)sq_entries * UCCL_SQE_SIZE, UCCL_CACHELINE);
	hdr->cq_ctl_off = off;
	off = align_up(off + sizeof(struct uccl_ring_ctl), UCCL_CACHELINE);
	hdr->cq_off = off;
	off = align_up(off + (uint64_t)cq_entries * UCCL_CQE_SIZE, UCCL_CACHELINE);
	hdr->sem_off = off;
	hdr->sem_count = sem_count;
	off = align_up(off + (uint64_t)sem_count * sizeof(uint64_t), RING_PAGE);
	hdr->total_size = off;
	return (size_t)off;
}

struct piece {
	uint64_t off;
	uint64_t len;
};

/* [off, off+len) inside [0, limit), without computing off+len first. */
static bool piece_inside(const struct piece *p, uint64_t limit)
{
	return p->off <= limit && p->len <= limit - p->off;
}

static bool pieces_overlap(const struct piece *a, const struct piece *b)
{
	/* both are known to lie inside the region, so the sums are exact */
	return a->off < b->off + b->len && b->off < a->off + a->len;
}

int ring_region_check(const struct uccl_shm_hdr *hdr, size_t region_len)
{
	struct piece pc[6];
	uint64_t limit;

	if (hdr->magic != UCCL_SHM_MAGIC)
		return -EBADMSG;
	if (hdr->abi_version != UCCL_SHM_ABI_VERSION)
		return -EPROTONOSUPPORT;
	if (hdr->hdr_size != sizeof(*hdr))
		return -EBADMSG;
	/* The 16-byte GPU descriptor format is reserved, not implemented. */
	if (hdr->sq_entry_size == UCCL_SQE16_SIZE)
		return -EOPNOTSUPP;
	if (hdr->sq_entry_size != UCCL_SQE_SIZE || hdr->cq_entry_size != UCCL_CQE_SIZE)
		return -EBADMSG;
	if (!entries_ok(hdr->sq_entries) || !entries_ok(hdr->cq_entries) || hdr->sem_count == 0 ||
	    hdr->sem_count > RING_MAX_SEMS)
		return -EBADMSG;
	if (hdr->total_size > region_len)
		return -EBADMSG;
	limit = hdr->total_size;

	pc[0] = (struct piece){ 0, sizeof(*hdr) };
	pc[1] = (struct piece){ hdr->sq_ctl_off, sizeof(struct uccl_ring_ctl) };
	pc[2] = (struct piece){ hdr->sq_off, (uint64_t)hdr->sq_entries * UCCL_SQE_SIZE };
	pc[3] = (struct piece){ hdr->cq_ctl_off, sizeof(struct uccl_ring_ctl) };
	pc[4] = (struct piece){ hdr->cq_off, (uint64_t)hdr->cq_entries * UCCL_CQE_SIZE };
	pc[5] = (struct piece){ hdr->sem_off, (uint64_t)hdr->sem_count * sizeof(uint64_t) };
	for (int i = 0; i < 6; i++) {
		/* cache-line alignment keeps the indices and semaphores on
		 * naturally aligned addresses for the atomics */
		if (pc[i].off % UCCL_CACHELINE != 0 || !piece_inside(&pc[i], limit))
			return -EBADMSG;
		for (int j = 0; j < i; j++)
			if (pieces_overlap(&pc[i], &pc[j]))
				return -EBADMSG;
	}
	return 0;
}

void ring_side_init(struct ring_side *s, void *region, uint64_t ctl_off, uint64_t slots_off,
		    uint32_t entries, uint32_t entry_size)
{
	/* Rings start at index 0 in a zero-filled region; neither side reads
	 * its own index back from shared memory. */
	s->ctl = (struct uccl_ring_ctl *)((uint8_t *)region + ctl_off);
	s->slots = (uint8_t *)region + slots_off;
	s->entries = entries;
	s->mask = entries - 1;
	s->entry_size = entry_size;
	s->idx = 0;
	s->peer_cache = 0;
	s->published = 0;
}

/* ---- producer ---- */

uint32_t ring_prod_space(struct ring_side *s)
{
	uint32_t used;

	s->peer_cache = __atomic_load_n(&s->ctl->cons, __ATOMIC_ACQUIRE);
	used = s->idx - s->peer_cache;
	/* a consumer index out of range leaves no usable space */
	return used > s->entries ? 0 : s->entries - used;
}

int ring_prod_space_checked(struct ring_side *s)
{
	uint32_t cons = __atomic_load_n(&s->ctl->cons, __ATOMIC_ACQUIRE);
	uint32_t used = s->idx - cons;

	/* Unsigned distance: a consumer ahead of us wraps to a huge value, so
	 * one comparison catches both "ahead" and "too far behind". */
	if (used > s->entries)
		return -EBADMSG;
	s->peer_cache = cons;
	return (int)(s->entries - used);
}

void *ring_prod_slot(struct ring_side *s, uint32_t n)
{
	return s->slots + (size_t)((s->idx + n) & s->mask) * s->entry_size;
}

void ring_prod_publish(struct ring_side *s, uint32_t n)
{
	s->idx += n;
	s->published = s->idx;
	__atomic_store_n(&s->ctl->prod, s->idx, __ATOMIC_RELEASE);
}

void ring_prod_stop(struct ring_side *s, int err)
{
	/* release: entries published before it are seen before it */
	__atomic_store_n(&s->ctl->stopped, (int32_t)err, __ATOMIC_RELEASE);
}

int ring_cons_stopped(const struct ring_side *s)
{
	int32_t v = __atomic_load_n(&s->ctl->stopped, __ATOMIC_ACQUIRE);

	return v < 0 ? v : 0;
}

void ring_prod_stage(struct ring_side *s, uint32_t n)
{
	s->idx += n;
}

uint32_t ring_prod_flush(struct ring_side *s)
{
	/* from our private copy: the shared word is never read back */
	uint32_t old = s->published;

	if (old == s->idx)
		return 0;
	s->published = s->idx;
	__atomic_store_n(&s->ctl->prod, s->idx, __ATOMIC_RELEASE);
	return s->idx - old;
}

bool ring_prod_needs_wakeup(struct ring_side *s)
{
	/* Orders our earlier publish before the flag read; pairs with the
	 * fence in ring_cons_arm. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return (__atomic_load_n(&s->ctl->flags, __ATOMIC_RELAXED) & UCCL_RING_NEED_WAKEUP) != 0;
}

/* ---- consumer ---- */

int ring_cons_avail(struct ring_side *s)
{
	uint32_t prod = __atomic_load_n(&s->ctl->prod, __ATOMIC_ACQUIRE);
	uint32_t n = prod - s->idx;

	if (n > s->entries)
		return -EBADMSG;
	s->peer_cache = prod;
	return (int)n;
}

const void *ring_cons_slot(struct ring_side *s, uint32_t n)
{
	return s->slots + (size_t)((s->idx + n) & s->mask) * s->entry_size;
}

void ring_cons_release(struct ring_side *s, uint32_t n)
{
	s->idx += n;
	__atomic_store_n(&s->ctl->cons, s->idx, __ATOMIC_RELEASE);
}

int ring_cons_arm(struct ring_side *s)
{
	__atomic_store_n(&s->ctl->flags, UCCL_RING_NEED_WAKEUP, __ATOMIC_RELAXED);
	/* Orders the flag store before the index re-read; pairs with the
	 * fence in ring_prod_needs_wakeup. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return ring_cons_avail(s);
}

void ring_cons_disarm(struct ring_side *s)
{
	__atomic_store_n(&s->ctl->flags, 0, __ATOMIC_RELAXED);
}
