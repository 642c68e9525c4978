/* SPDX-License-Identifier: MIT */
/*
 * scoreboard: the transport's packet-sequence bookkeeping, the "transport
 * reorder structure" (completion order is a separate, upper-layer job).
 *
 * sb_tx (sender): one entry per packet in flight, indexed by psn in a ring
 * of up to `capacity` entries (a power of two, >= 1024); the ring starts at
 * 64 and doubles when it fills, so cap in the counters grows with use. Cumulative and selective
 * acknowledgements retire entries; holes with at least `dupthresh` SACKed
 * packets above them are declared lost once (fast retransmit); a timeout
 * declares every outstanding packet sent before a cut-off lost. Retransmits
 * keep their psn.
 *
 * With the reordering window on (sb_tx_set_rack, RFC 8985 in spirit), the
 * SACK rules above only make a packet a candidate: it is lost once, in
 * addition, its reorder timer has run out (sent + rtt of the newest-sent
 * delivered packet + reo_wnd <= now). reo_wnd starts at min_rtt/4, grows by
 * min_rtt/4 (up to srtt) with every resend that turns out spurious and
 * falls back after 16 recoveries without one. Spraying over
 * paths of different queueing delay reorders by up to a queue; dupthresh
 * alone reads that as loss.
 *
 * PSNs are u32 and wrap: every comparison is serial-number arithmetic.
 *
 * sb_rx (receiver): which psns arrived in a window of `window` packets after
 * the cumulative point; duplicate suppression and the SACK words for ACKs.
 */
#ifndef UCCL_ENGINE_SCOREBOARD_H
#define UCCL_ENGINE_SCOREBOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vpack;
struct vunpack;

struct sb_tx;
struct sb_rx;

struct sb_pkt {                    /* what the sender remembers of a packet */
	uint64_t cookie;               /* the transport's: which message and offset */
	uint64_t sent_ns;              /* last (re)transmission */
	uint32_t bytes;                /* payload */
	uint16_t path;
	uint16_t retx;                 /* retransmissions so far */
};

/* The sender's counters, kept current by every call that changes them, for
 * an owner that reads them on every packet: sb_tx_counts() points at them
 * for the scoreboard's life (read only). The accessors below read the same. */
struct sb_tx_counts {
	uint32_t una, nxt;             /* unacknowledged psns are [una, nxt) */
	uint32_t cap;                  /* full when nxt - una == cap */
	uint32_t lost;                 /* lost, not yet resent (sb_tx_lost_pending) */
	uint64_t bytes;                /* payload unacknowledged (sb_tx_inflight_bytes) */
	uint64_t oldest_sent_ns;       /* sb_tx_oldest_sent */
};

struct sb_tx *sb_tx_new(uint32_t capacity, uint32_t dupthresh);
/* What sb_tx_new takes: capacity a power of two in [1024, 2^30], dupthresh
 * in [1, capacity]. */
bool sb_tx_params_ok(uint32_t capacity, uint32_t dupthresh);
struct sb_tx *sb_tx_free(struct sb_tx *s);              /* accepts NULL */
/* The ring (capacity entries and bitmaps) is what an idle owner releases:
 * sb_tx_release frees it if nothing is unacknowledged (returns false, and
 * keeps it, otherwise); psns, counters and the delivery history stay.
 * sb_tx_reserve allocates it again (0, or -ENOMEM); sb_tx_push needs it.
 * sb_tx_new returns a scoreboard with its ring. Every other call works on
 * an empty scoreboard without one. */
bool sb_tx_release(struct sb_tx *s);
int sb_tx_reserve(struct sb_tx *s);
size_t sb_tx_bytes(const struct sb_tx *s);             /* heap bytes now held */
/* A released scoreboard (no ring) as words appended to v, and back: an
 * idle owner keeps only that (engine/vpack.h). pack: 0, -EBUSY while the
 * ring is held, -ENOMEM; unpack: NULL without memory or on bad input. */
int sb_tx_pack(const struct sb_tx *s, struct vpack *v);
struct sb_tx *sb_tx_unpack(struct vunpack *r);
/* true when `capacity` packets are unacknowledged: send nothing new. */
bool sb_tx_full(const struct sb_tx *s);
/* Record a new packet; returns its psn. Caller checked !sb_tx_full. */
uint32_t sb_tx_push(struct sb_tx *s, const struct sb_pkt *p);

/* Start an empty scoreboard at another psn (a handshake's initial sequence
 * number). -EBUSY unless it is empty. */
int sb_tx_start_at(struct sb_tx *s, uint32_t psn);

/* Apply an ACK. For every packet newly acknowledged (cumulatively or by
 * SACK) calls acked(arg, psn, pkt). Then marks holes lost (fast retransmit:
 * each hole once; a resent packet is lost again once dupthresh packets
 * sent after its resend are acknowledged). SACK bits for psns never sent
 * also give -EINVAL.
 * Returns the number of packets newly acknowledged, or -EINVAL if cum_psn
 * is beyond what was sent (a bogus ACK: ignored). */
int sb_tx_ack(struct sb_tx *s, uint32_t cum_psn, const uint64_t *sack, uint32_t words,
	      void (*acked)(void *arg, uint32_t psn, const struct sb_pkt *p), void *arg);
/* What an ACK says about time, for the reordering window. */
struct sb_ack_time {
	uint64_t now_ns;
	uint64_t tsecr_ns;             /* send time of the copy that triggered the ACK */
	uint64_t min_rtt_ns, srtt_ns;  /* the owner's estimates; 0: no sample yet */
};

/* sb_tx_ack with the ACK's time: with the reordering window on, a hole the
 * SACK rules find is lost only if its reorder timer has run out, and a
 * resend acknowledged less than min_rtt after it went, by an ACK echoing a
 * copy sent before it, counts as spurious (widening the window). t == NULL (what sb_tx_ack
 * passes): the SACK rules alone. */
int sb_tx_ack_at(struct sb_tx *s, uint32_t cum_psn, const uint64_t *sack, uint32_t words,
		 const struct sb_ack_time *t,
		 void (*acked)(void *arg, uint32_t psn, const struct sb_pkt *p), void *arg);
/* Reordering window on or off (off when created). */
void sb_tx_set_rack(struct sb_tx *s, bool on);
/* Candidates whose reorder timer ran out by now become lost; returns how
 * many. sb_tx_rack_deadline: when the next one runs out, or UINT64_MAX. */
int sb_tx_rack_expire(struct sb_tx *s, uint64_t now_ns);
uint64_t sb_tx_rack_deadline(const struct sb_tx *s);
uint64_t sb_tx_reo_wnd(const struct sb_tx *s);         /* the window now (ns) */
uint64_t sb_tx_spurious(const struct sb_tx *s);        /* resends found spurious */

/* Go-Back-N: acknowledge cumulatively only and mark everything after a
 * detected hole lost. (SACK words ignored.) */
int sb_tx_ack_gbn(struct sb_tx *s, uint32_t cum_psn,
		  void (*acked)(void *arg, uint32_t psn, const struct sb_pkt *p), void *arg);
/* The same with the ACK's time: a duplicate that echoes a copy sent before
 * the packet at the cumulative point last went is not counted (it cannot
 * be about that packet). t == NULL (what sb_tx_ack_gbn passes): every
 * duplicate counts. */
int sb_tx_ack_gbn_at(struct sb_tx *s, uint32_t cum_psn, const struct sb_ack_time *t,
		     void (*acked)(void *arg, uint32_t psn, const struct sb_pkt *p), void *arg);

/* Timeout: every unacknowledged packet sent at or before cutoff_ns becomes
 * lost. Returns how many were newly marked. */
int sb_tx_timeout(struct sb_tx *s, uint64_t cutoff_ns);
/* How many times sb_tx_timeout found unacknowledged psn lost (0 for a psn
 * not in flight): resends the timer called for, not ones ACKs did. */
uint16_t sb_tx_rtos(const struct sb_tx *s, uint32_t psn);
/* Tail loss probe: the newest packet still in flight (neither acknowledged
 * nor lost), looking at most `scan` psns down from the newest, becomes lost
 * so that it is resent. Returns 1 if one was marked, else 0. */
int sb_tx_probe(struct sb_tx *s, uint32_t scan);
/* Is psn's resend (due, or last sent) that tail probe? Not evidence of a
 * loss: a late ACK calls for it too. */
bool sb_tx_probing(const struct sb_tx *s, uint32_t psn);
/* Lost packets waiting for retransmission, oldest psn first. Returns 1 and
 * fills psn/pkt, or 0. sb_tx_retransmitted() records the resend. */
int sb_tx_next_lost(struct sb_tx *s, uint32_t *psn, struct sb_pkt *pkt);
void sb_tx_retransmitted(struct sb_tx *s, uint32_t psn, uint16_t path, uint64_t now_ns);

uint32_t sb_tx_inflight(const struct sb_tx *s);        /* unacked packets */
uint64_t sb_tx_inflight_bytes(const struct sb_tx *s);
uint32_t sb_tx_lost_pending(const struct sb_tx *s);    /* lost, not yet resent */
uint32_t sb_tx_holes(const struct sb_tx *s);           /* unacked below the highest SACKed */
/* sent_ns of the oldest unacknowledged packet, or UINT64_MAX. */
uint64_t sb_tx_oldest_sent(const struct sb_tx *s);
const struct sb_tx_counts *sb_tx_counts(const struct sb_tx *s);
/* Drop everything (channel reset); calls dropped(arg, psn, pkt) for each. */
void sb_tx_clear(struct sb_tx *s, void (*dropped)(void *arg, uint32_t psn, const struct sb_pkt *p),
		 void *arg);

struct sb_rx *sb_rx_new(uint32_t window);
int sb_rx_start_at(struct sb_rx *s, uint32_t psn);       /* -EBUSY unless fresh */
struct sb_rx *sb_rx_free(struct sb_rx *s);
/* The arrival bitmap is needed only while psns past the cumulative point
 * are held: sb_rx_release frees it when there are none (false otherwise);
 * sb_rx_accept allocates it again for the next out-of-order packet. */
bool sb_rx_release(struct sb_rx *s);
size_t sb_rx_bytes(const struct sb_rx *s);             /* heap bytes now held */
/* The same for a receive window without its bitmap (released). */
int sb_rx_pack(const struct sb_rx *s, struct vpack *v);
struct sb_rx *sb_rx_unpack(struct vunpack *r);
/* 1: new, deliver it; 0: duplicate; -ERANGE: beyond the window (drop,
 * the sender will retransmit); -ENOMEM: out of order and the bitmap could
 * not be allocated (drop likewise; nothing recorded). */
int sb_rx_accept(struct sb_rx *s, uint32_t psn);
uint32_t sb_rx_cum(const struct sb_rx *s);
/* SACK words after the cumulative point; returns how many are non-empty
 * up to the last set bit (<= max_words). */
uint32_t sb_rx_sack(const struct sb_rx *s, uint64_t *words, uint32_t max_words);
bool sb_rx_has_holes(const struct sb_rx *s);

#endif
