/* SPDX-License-Identifier: MIT */
/*
 * ring: single-producer / single-consumer rings in shared memory, laid out as
 * include/uccl/shm.h says. Used by the client (SQ producer, CQ consumer) and
 * by the engine (SQ consumer, CQ producer). Each side keeps its own index in
 * struct ring_side and publishes it with a release store; the peer's index is
 * read with an acquire load and checked, because the other side may be a
 * buggy or hostile process.
 */
#ifndef UCCL_ENGINE_RING_H
#define UCCL_ENGINE_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uccl/shm.h>

struct ring_side {
	struct uccl_ring_ctl *ctl;   /* shared */
	uint8_t *slots;              /* shared: entries x entry_size */
	uint32_t entries;            /* power of two, private copy */
	uint32_t mask;
	uint32_t entry_size;
	uint32_t idx;                /* our own index (prod or cons), private */
	uint32_t peer_cache;         /* last peer index seen, private */
	uint32_t published;          /* producer: the index last published, private */
};

/* Geometry of an endpoint region; fills hdr and returns total size (page
 * rounded), or 0 if the sizes are invalid. */
size_t ring_region_layout(uint32_t sq_entries, uint32_t cq_entries, uint32_t sem_count,
			  struct uccl_shm_hdr *hdr);
/* Validate a header read from a region of region_len bytes (client side). */
int ring_region_check(const struct uccl_shm_hdr *hdr, size_t region_len);

void ring_side_init(struct ring_side *s, void *region, uint64_t ctl_off, uint64_t slots_off,
		    uint32_t entries, uint32_t entry_size);

/* Producer. Free slots (0 when full). */
uint32_t ring_prod_space(struct ring_side *s);
/* Slot for the n-th entry after the current producer index (n < space). */
void *ring_prod_slot(struct ring_side *s, uint32_t n);
/* Advance by n and publish (release). */
void ring_prod_publish(struct ring_side *s, uint32_t n);
/* Advance privately without publishing (staging); publish later with ring_prod_flush. */
void ring_prod_stage(struct ring_side *s, uint32_t n);
uint32_t ring_prod_flush(struct ring_side *s);   /* publishes staged entries, returns count */
/* After publishing: true if the consumer asked to be woken (full fence inside). */
bool ring_prod_needs_wakeup(struct ring_side *s);
/* The producer stops for good with err (negative): the consumer sees it in
 * ring_cons_stopped once it found the ring empty. */
void ring_prod_stop(struct ring_side *s, int err);

/* Consumer. Entries ready, or -EBADMSG if the producer index is corrupt
 * (more than `entries` ahead of ours). */
int ring_cons_avail(struct ring_side *s);
const void *ring_cons_slot(struct ring_side *s, uint32_t n);
void ring_cons_release(struct ring_side *s, uint32_t n);
/* Sleep protocol: set NEED_WAKEUP, full fence, re-check. Returns entries
 * available after arming (0 = safe to sleep). ring_cons_disarm clears it. */
int ring_cons_arm(struct ring_side *s);
void ring_cons_disarm(struct ring_side *s);
/* 0, or the producer's err from ring_prod_stop. */
int ring_cons_stopped(const struct ring_side *s);

/* Space the consumer of a ring left us, seen from the producer, and whether
 * the consumer index is sane: -EBADMSG if the consumer index is ahead of ours
 * or more than `entries` behind. */
int ring_prod_space_checked(struct ring_side *s);

#endif
