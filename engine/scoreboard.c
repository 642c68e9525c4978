/* SPDX-License-Identifier: MIT */
/*
 * scoreboard: per-packet bookkeeping of a channel, sender and receiver side.
 * The sender keeps one entry per unacknowledged psn in a ring indexed by
 * psn, two bitmaps over the same ring (SACKed, lost-awaiting-resend) so that
 * SACK application, hole search and the next lost packet cost a few word
 * operations, and a list of in-network packets ordered by last transmission
 * so that a timeout, or the detection of a lost resend, touches only the
 * packets it declares lost. The receiver keeps a bitmap of arrivals past its
 * cumulative point. Every psn comparison is serial arithmetic on u32 offsets
 * from the oldest live psn.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/scoreboard.h"
#include "engine/vpack.h"

#define NIL UINT32_MAX

enum { ST_INFLIGHT = 0, ST_LOST = 1, ST_SACKED = 2 };

struct sb_ent {
	struct sb_pkt p;
	uint64_t tseq;                 /* transmission number of the last (re)send */
	uint32_t prev, next;           /* time list (slot numbers) while ST_INFLIGHT */
	uint8_t st;
	bool probe;                    /* its last resend was a tail probe, not a loss */
	uint16_t rtos;                 /* times the retransmission timer found it lost */
};

struct sb_tx {
	struct sb_tx_counts k;         /* una, nxt, cap, lost, bytes, oldest_sent_ns */
	uint32_t mask, wmask;          /* ring slots; wmask over 64-bit words */
	uint32_t max_cap;              /* k.cap doubles up to this as packets fly */
	uint32_t dupthresh;
	uint32_t sacked;               /* entries in ST_SACKED (k.lost: in ST_LOST) */
	uint32_t high_sack;            /* one past the highest SACKed psn, >= una */
	uint32_t fr_scan;              /* psns below were judged by fast retransmit */
	uint32_t lost_scan;            /* no ST_LOST entry below this psn */
	uint32_t head, tail;           /* time list, oldest transmission first */
	uint32_t gbn_dups;             /* duplicate cumulative ACKs in a row */
	uint32_t gbn_una;              /* una when Go-Back-N last went back */
	bool gbn_went_back;
	bool rack, in_recovery;
	uint8_t reo_persist;           /* recoveries before reo_steps falls back to 1 */
	uint16_t reo_steps;            /* reo_wnd in min_rtt/4 steps */
	uint64_t tseq;                 /* transmissions so far */
	/* the dupthresh highest tseqs of delivered packets (sent once, or
	 * resent and acknowledged a round trip after the resend): the
	 * lowest, top[top_head], is the newest transmission with dupthresh
	 * delivered packets sent at or after it */
	uint64_t *top;
	uint32_t ntop, top_head;
	/* reordering window (RACK), packed: every idle channel carries it */
	uint64_t rack_xmit_ns;         /* newest send time among delivered packets */
	uint32_t rack_rtt_ns;          /* that packet's round trip (saturated) */
	uint32_t reo_wnd_ns;           /* <= srtt */
	uint32_t recovery_end;         /* recovery ends when una passes this */
	uint32_t spurious;
	uint64_t *sackmap, *lostmap;
	struct sb_ent *e;
};

struct sb_rx {
	uint32_t window;               /* psns [cum, cum + window) are accepted */
	uint32_t mask, wmask;
	uint32_t cum;                  /* first psn not yet received */
	uint32_t high;                 /* one past the highest received psn */
	uint32_t above;                /* received psns past cum */
	uint64_t *map;
};

/* ---- ring bitmaps ---- */

static bool bit_get(const uint64_t *m, uint32_t mask, uint32_t psn)
{
	uint32_t i = psn & mask;

	return m[i >> 6] >> (i & 63) & 1;
}

static void bit_set(uint64_t *m, uint32_t mask, uint32_t psn)
{
	uint32_t i = psn & mask;

	m[i >> 6] |= 1ull << (i & 63);
}

static void bit_clear(uint64_t *m, uint32_t mask, uint32_t psn)
{
	uint32_t i = psn & mask;

	m[i >> 6] &= ~(1ull << (i & 63));
}

/* The 64 bits for psns [psn, psn + 64) of a ring bitmap (ring >= 64 bits). */
static uint64_t bits64(const uint64_t *m, uint32_t mask, uint32_t wmask, uint32_t psn)
{
	uint32_t i = psn & mask, w = i >> 6, sh = i & 63;
	uint64_t v = m[w] >> sh;

	if (sh)
		v |= m[(w + 1) & wmask] << (64 - sh);
	return v;
}

/* Low n bits set, n in 0..64. */
static uint64_t low_bits(uint32_t n)
{
	return n >= 64 ? ~0ull : (1ull << n) - 1;
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 64;

	while (p < v && p < (1u << 31))
		p <<= 1;
	return p;
}

/* ---- sender ---- */

static bool live(const struct sb_tx *s, uint32_t psn)
{
	return psn - s->k.una < s->k.nxt - s->k.una;
}

/* The time list's head is mirrored in k.oldest_sent_ns. */
static void tl_append(struct sb_tx *s, uint32_t slot)
{
	struct sb_ent *x = &s->e[slot];

	x->next = NIL;
	x->prev = s->tail;
	if (s->tail == NIL) {
		s->head = slot;
		s->k.oldest_sent_ns = x->p.sent_ns;
	} else {
		s->e[s->tail].next = slot;
	}
	s->tail = slot;
}

static void tl_remove(struct sb_tx *s, uint32_t slot)
{
	struct sb_ent *x = &s->e[slot];

	if (x->prev == NIL) {
		s->head = x->next;
		s->k.oldest_sent_ns = x->next == NIL ? UINT64_MAX : s->e[x->next].p.sent_ns;
	} else {
		s->e[x->prev].next = x->next;
	}
	if (x->next == NIL)
		s->tail = x->prev;
	else
		s->e[x->next].prev = x->prev;
	x->prev = x->next = NIL;
}

bool sb_tx_params_ok(uint32_t capacity, uint32_t dupthresh)
{
	return capacity >= 1024 && capacity <= (1u << 30) && !(capacity & (capacity - 1)) &&
	       dupthresh >= 1 && dupthresh <= capacity;
}

struct sb_tx *sb_tx_new(uint32_t capacity, uint32_t dupthresh)
{
	struct sb_tx *s;

	if (!sb_tx_params_ok(capacity, dupthresh))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->top = calloc(dupthresh, sizeof(uint64_t));
	if (!s->top)
		goto out_free;
	s->max_cap = capacity;
	s->k.oldest_sent_ns = UINT64_MAX;
	s->dupthresh = dupthresh;
	s->head = s->tail = NIL;
	s->reo_steps = 1;
	if (sb_tx_reserve(s) < 0)
		goto out_top;
	return s;

out_top:
	free(s->top);
out_free:
	free(s);
	return NULL;
}

/* The ring starts at this many entries (>= 64: the bitmaps are words) and
 * doubles while full, up to the capacity asked for: a channel with little
 * in flight keeps a small ring. */
#define FIRST_CAP 64u

int sb_tx_reserve(struct sb_tx *s)
{
	uint32_t cap = s->max_cap < FIRST_CAP ? s->max_cap : FIRST_CAP;

	if (s->e)
		return 0;
	s->e = calloc(cap, sizeof(*s->e));
	s->sackmap = calloc(cap / 64, sizeof(uint64_t));
	s->lostmap = calloc(cap / 64, sizeof(uint64_t));
	if (!s->e || !s->sackmap || !s->lostmap) {
		free(s->e);
		free(s->sackmap);
		free(s->lostmap);
		s->e = NULL;
		s->sackmap = s->lostmap = NULL;
		return -ENOMEM;
	}
	s->k.cap = cap;
	s->mask = cap - 1;
	s->wmask = cap / 64 - 1;
	return 0;
}

/* The slot of the live psn in slot `slot` of a ring with mask m, in the
 * ring with mask nm. */
static uint32_t reslot(const struct sb_tx *s, uint32_t slot, uint32_t m, uint32_t nm)
{
	return slot == NIL ? NIL : (s->k.una + ((slot - s->k.una) & m)) & nm;
}

/* Double the ring: every live entry (and its bits) moves to its psn's slot
 * in the larger ring, time-list links translated. Without memory the ring
 * stays full and the sender waits for acknowledgements. */
static void grow(struct sb_tx *s)
{
	uint32_t cap = s->k.cap * 2, m = s->mask, nm = cap - 1;
	struct sb_ent *e = calloc(cap, sizeof(*e));
	uint64_t *sk = calloc(cap / 64, sizeof(uint64_t));
	uint64_t *lo = calloc(cap / 64, sizeof(uint64_t));

	if (!e || !sk || !lo) {
		free(e);
		free(sk);
		free(lo);
		return;
	}
	for (uint32_t psn = s->k.una; psn != s->k.nxt; psn++) {
		struct sb_ent *x = &e[psn & nm];

		*x = s->e[psn & m];
		x->prev = reslot(s, x->prev, m, nm);
		x->next = reslot(s, x->next, m, nm);
		if (bit_get(s->sackmap, m, psn))
			bit_set(sk, nm, psn);
		if (bit_get(s->lostmap, m, psn))
			bit_set(lo, nm, psn);
	}
	s->head = reslot(s, s->head, m, nm);
	s->tail = reslot(s, s->tail, m, nm);
	free(s->e);
	free(s->sackmap);
	free(s->lostmap);
	s->e = e;
	s->sackmap = sk;
	s->lostmap = lo;
	s->k.cap = cap;
	s->mask = nm;
	s->wmask = cap / 64 - 1;
}

/* Empty means every bit of both maps is clear (acks and resends clear
 * them), so nothing but the counters carries over. */
bool sb_tx_release(struct sb_tx *s)
{
	if (s->k.nxt != s->k.una)
		return false;
	free(s->e);
	free(s->sackmap);
	free(s->lostmap);
	s->e = NULL;
	s->sackmap = s->lostmap = NULL;
	return true;
}

/* The fixed part with the pointers cleared, then the delivery history:
 * everything sb_tx_unpack needs to rebuild a released scoreboard. */
int sb_tx_pack(const struct sb_tx *s, struct vpack *v)
{
	struct sb_tx t = *s;

	if (s->e)
		return -EBUSY;
	t.top = NULL;
	t.sackmap = t.lostmap = NULL;
	vpack_words(v, &t, sizeof(t));
	vpack_words(v, s->top, s->dupthresh * sizeof(uint64_t));
	return v->err ? -ENOMEM : 0;
}

struct sb_tx *sb_tx_unpack(struct vunpack *r)
{
	struct sb_tx *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (!vunpack_words(r, s, sizeof(*s)) || s->e || s->dupthresh < 1 ||
	    s->dupthresh > s->max_cap) {
		free(s);
		return NULL;
	}
	s->top = calloc(s->dupthresh, sizeof(uint64_t));
	if (!s->top || !vunpack_words(r, s->top, s->dupthresh * sizeof(uint64_t))) {
		free(s->top);
		free(s);
		return NULL;
	}
	return s;
}

struct sb_tx *sb_tx_free(struct sb_tx *s)
{
	if (!s)
		return NULL;
	free(s->top);
	free(s->lostmap);
	free(s->sackmap);
	free(s->e);
	free(s);
	return NULL;
}

size_t sb_tx_bytes(const struct sb_tx *s)
{
	size_t n = sizeof(*s) + s->dupthresh * sizeof(uint64_t);

	if (s->e)
		n += s->k.cap * sizeof(*s->e) + 2 * (s->k.cap / 64) * sizeof(uint64_t);
	return n;
}

int sb_tx_start_at(struct sb_tx *s, uint32_t psn)
{
	if (s->k.nxt != s->k.una)
		return -EBUSY;
	s->k.una = s->k.nxt = s->high_sack = s->fr_scan = s->lost_scan = psn;
	s->gbn_went_back = false;
	return 0;
}

bool sb_tx_full(const struct sb_tx *s)
{
	return s->k.nxt - s->k.una >= s->k.cap;
}

uint32_t sb_tx_push(struct sb_tx *s, const struct sb_pkt *p)
{
	uint32_t psn = s->k.nxt, slot = psn & s->mask;
	struct sb_ent *x = &s->e[slot];

	if (sb_tx_full(s) || !s->e)
		return psn;            /* caller bug: nothing recorded */
	x->p = *p;
	x->st = ST_INFLIGHT;
	x->probe = false;
	x->rtos = 0;
	x->tseq = ++s->tseq;
	tl_append(s, slot);
	s->k.bytes += p->bytes;
	s->k.nxt = psn + 1;
	if (s->k.nxt - s->k.una == s->k.cap && s->k.cap < s->max_cap)
		grow(s);
	return psn;
}

/* Mark an unacknowledged entry lost: out of the time list, into the lost map. */
static void mark_lost(struct sb_tx *s, uint32_t psn)
{
	uint32_t slot = psn & s->mask;

	tl_remove(s, slot);
	s->e[slot].st = ST_LOST;
	s->e[slot].probe = false;
	bit_set(s->lostmap, s->mask, psn);
	s->k.lost++;
	if ((int32_t)(psn - s->lost_scan) < 0)
		s->lost_scan = psn;
}

static uint32_t ring_next(uint32_t i, uint32_t k)
{
	return i + 1 == k ? 0 : i + 1;
}

/* Keep the dupthresh highest delivered tseqs in a sorted ring whose lowest
 * is at top_head. Deliveries come mostly in transmission order, so the
 * usual case replaces the lowest with a new highest in O(1). */
static void top_add(struct sb_tx *s, uint64_t t)
{
	uint32_t k = s->dupthresh, i, j;

	if (s->ntop < k) {                      /* filling: top_head is 0 */
		for (i = s->ntop++; i > 0 && s->top[i - 1] > t; i--)
			s->top[i] = s->top[i - 1];
		s->top[i] = t;
		return;
	}
	if (t <= s->top[s->top_head])
		return;
	i = s->top_head;
	if (t > s->top[i ? i - 1 : k - 1]) {    /* above the highest */
		s->top[i] = t;
		s->top_head = ring_next(i, k);
		return;
	}
	/* drop the lowest; slide those below t toward the head */
	for (j = ring_next(i, k); s->top[j] < t; j = ring_next(j, k)) {
		s->top[i] = s->top[j];
		i = j;
	}
	s->top[i] = t;
}

/* Reordering window bookkeeping for a delivered entry. A resend
 * acknowledged sooner than a round trip after it went, by an ACK echoing
 * a copy sent before it, was not needed (Eifel-like; the wire has no
 * DSACK). The time bound matters: a coalesced ACK echoes the first packet
 * since the previous ACK, often older than the resend it acknowledges.
 * A spurious resend's send time says nothing about what arrived. */
static void rack_delivered(struct sb_tx *s, const struct sb_ent *x, const struct sb_ack_time *t)
{
	if (x->p.retx && t->tsecr_ns < x->p.sent_ns &&
	    t->now_ns - x->p.sent_ns < t->min_rtt_ns) {
		/* a tail probe is sent on a late ACK, not on a loss: its
		 * original arriving says nothing about reordering */
		if (x->probe)
			return;
		s->spurious++;
		/* every spurious resend, not once a round trip as RFC 8985
		 * has it: a sprayed chunk late on a slow path makes a burst of
		 * them, and srtt bounds the window anyway */
		if (s->rack && s->reo_steps < 1024)
			s->reo_steps++;
		s->reo_persist = 16;
		return;
	}
	if (x->p.sent_ns >= s->rack_xmit_ns && t->now_ns >= x->p.sent_ns) {
		s->rack_xmit_ns = x->p.sent_ns;
		s->rack_rtt_ns = (uint32_t)(t->now_ns - x->p.sent_ns > UINT32_MAX ?
					    UINT32_MAX : t->now_ns - x->p.sent_ns);
	}
}

/* An entry becomes acknowledged. The counters are settled before acked() runs,
 * so that a callback reading sb_tx_lost_pending() sees this packet gone. */
typedef void (*sb_cb)(void *arg, uint32_t psn, const struct sb_pkt *p);

static void ack_one(struct sb_tx *s, uint32_t psn, bool sack, const struct sb_ack_time *t,
		    sb_cb acked, void *arg)
{
	uint32_t slot = psn & s->mask;
	struct sb_ent *x = &s->e[slot];

	if (x->st == ST_LOST) {
		bit_clear(s->lostmap, s->mask, psn);
		s->k.lost--;
	} else {
		tl_remove(s, slot);
	}
	s->k.bytes -= x->p.bytes;
	if (t)
		rack_delivered(s, x, t);
	/* which copy of a resent packet arrived is unknown; acknowledged at
	 * least a round trip after the resend went, by an ACK that does not
	 * echo an older copy, the resend is taken to be it (RFC 8985, 6.2),
	 * else only packets sent once count. The echo matters after a
	 * spurious timeout: the late ACKs of the originals acknowledge the
	 * resends a round trip after they went, and taking them as the
	 * newest transmissions delivered would make everything sent before
	 * them (the rest of the flight, which arrived) look lost. The cost: a
	 * resend acknowledged only by an ACK that echoes an older resend (its
	 * own ACK lost, the resends reordered) does not count, so at a tail a
	 * packet it would have shown lost waits for the timer. */
	if (x->p.retx == 0 || (t && t->min_rtt_ns && t->tsecr_ns >= x->p.sent_ns &&
			       t->now_ns >= x->p.sent_ns &&
			       t->now_ns - x->p.sent_ns >= t->min_rtt_ns))
		top_add(s, x->tseq);
	if (sack) {
		x->st = ST_SACKED;
		bit_set(s->sackmap, s->mask, psn);
		s->sacked++;
	}
	if (acked)
		acked(arg, psn, &x->p);
}

/* Retire [una, cum): each entry not SACKed before is reported. */
static int ack_cumulative(struct sb_tx *s, uint32_t cum, const struct sb_ack_time *t,
			  sb_cb acked, void *arg)
{
	int n = 0;

	while (s->k.una != cum) {
		uint32_t psn = s->k.una, slot = psn & s->mask;

		s->k.una = psn + 1;
		if (s->e[slot].st == ST_SACKED) {
			bit_clear(s->sackmap, s->mask, psn);
			s->sacked--;
			continue;
		}
		ack_one(s, psn, false, t, acked, arg);
		n++;
	}
	if ((int32_t)(s->high_sack - s->k.una) < 0)
		s->high_sack = s->k.una;
	if ((int32_t)(s->fr_scan - s->k.una) < 0)
		s->fr_scan = s->k.una;
	if ((int32_t)(s->lost_scan - s->k.una) < 0)
		s->lost_scan = s->k.una;
	return n;
}

/* The psn T such that exactly dupthresh SACKed entries lie in [T, high_sack),
 * T itself SACKed; searched no lower than lo. Returns false if there are
 * fewer than dupthresh SACKed entries in [lo, high_sack). */
static bool find_threshold(const struct sb_tx *s, uint32_t lo, uint32_t *thr)
{
	uint32_t need = s->dupthresh, p = s->high_sack;

	while (p != lo) {
		uint32_t last = p - 1, i = last & s->mask, bit = i & 63;
		uint32_t n = bit + 1;
		uint64_t w;
		uint32_t c;

		if (n > p - lo)
			n = p - lo;
		w = s->sackmap[i >> 6] >> (bit + 1 - n) & low_bits(n);
		c = (uint32_t)__builtin_popcountll(w);
		if (c >= need) {
			while (--need > 0)
				w &= ~(1ull << (63 - __builtin_clzll(w)));
			*thr = p - n + (uint32_t)(63 - __builtin_clzll(w));
			return true;
		}
		need -= c;
		p -= n;
	}
	return false;
}

/* Fast retransmit: an entry with at least dupthresh SACKed entries above it
 * is lost, judged once per psn (fr_scan only moves up). A packet last sent
 * after the threshold packet was sent is left to mark_overtaken() and the
 * timer: its newest copy may still be on its way. */
static void mark_holes(struct sb_tx *s)
{
	uint32_t thr;
	uint64_t thr_tseq;

	if (s->sacked < s->dupthresh || s->high_sack == s->fr_scan)
		return;
	if (!find_threshold(s, s->fr_scan, &thr))
		return;
	thr_tseq = s->e[thr & s->mask].tseq;
	for (uint32_t psn = s->fr_scan; psn != thr; psn++) {
		const struct sb_ent *x = &s->e[psn & s->mask];

		if (x->st == ST_INFLIGHT && x->tseq < thr_tseq)
			mark_lost(s, psn);
	}
	s->fr_scan = thr;
}

/* A packet still in the network with dupthresh delivered packets sent after
 * it is lost, whatever its psn: this is what catches a lost resend, which
 * fast retransmit judges only once. The time list is in transmission
 * order, so the walk stops at the first packet that is not lost. */
static void mark_overtaken(struct sb_tx *s)
{
	if (s->ntop < s->dupthresh)
		return;
	while (s->head != NIL && s->e[s->head].tseq < s->top[s->top_head]) {
		uint32_t slot = s->head;

		mark_lost(s, s->k.una + ((slot - s->k.una) & s->mask));
	}
}

/* The reordering window: candidates are what mark_overtaken() would mark
 * (dupthresh delivered packets sent after them), a prefix of the time
 * list; each is lost once its reorder timer, sent + rack_rtt + reo_wnd,
 * has run out. Send times grow along the list, so the walk stops at the
 * first candidate still waiting. */
static bool rack_candidate(const struct sb_tx *s)
{
	return s->head != NIL && s->ntop >= s->dupthresh &&
	       s->e[s->head].tseq < s->top[s->top_head];
}

static uint64_t rack_expiry(const struct sb_tx *s)
{
	uint64_t t = s->e[s->head].p.sent_ns + s->rack_rtt_ns + (uint64_t)s->reo_wnd_ns;

	return t < s->e[s->head].p.sent_ns ? UINT64_MAX : t;
}

static int rack_detect(struct sb_tx *s, uint64_t now)
{
	int n = 0;

	while (rack_candidate(s) && rack_expiry(s) <= now) {
		mark_lost(s, s->k.una + ((s->head - s->k.una) & s->mask));
		n++;
	}
	if (n && !s->in_recovery) {
		s->in_recovery = true;
		s->recovery_end = s->k.nxt;
	}
	return n;
}

/* reo_wnd from the owner's RTT estimates; a recovery ends as una passes
 * its mark. */
static void rack_update(struct sb_tx *s, const struct sb_ack_time *t)
{
	uint64_t w = t->min_rtt_ns / 4 * s->reo_steps;

	if (s->in_recovery && (int32_t)(s->k.una - s->recovery_end) >= 0) {
		s->in_recovery = false;
		if (s->reo_persist && --s->reo_persist == 0)
			s->reo_steps = 1;
	}
	if (t->srtt_ns && w > t->srtt_ns)
		w = t->srtt_ns;
	s->reo_wnd_ns = (uint32_t)(w > UINT32_MAX ? UINT32_MAX : w);
}

/* Reject SACK bits for psns that were never sent. Bit i of word w stands for
 * psn cum + 1 + 64 w + i; psns >= nxt are bogus. */
static bool sack_bogus(const struct sb_tx *s, uint32_t cum, const uint64_t *sack, uint32_t words)
{
	uint64_t lim = (uint64_t)(uint32_t)(s->k.nxt - cum); /* bits below lim + ... */

	/* positions 0 .. lim - 2 are valid (psn cum + 1 .. nxt - 1) */
	for (uint32_t w = 0; w < words; w++) {
		uint64_t first = 64ull * w;
		uint64_t valid = lim >= 1 && lim - 1 > first ? lim - 1 - first : 0;

		if (sack[w] & ~low_bits(valid > 64 ? 64 : (uint32_t)valid))
			return true;
	}
	return false;
}

static int apply_sack(struct sb_tx *s, uint32_t cum, const uint64_t *sack, uint32_t words,
		      const struct sb_ack_time *t, sb_cb acked, void *arg)
{
	int n = 0;

	for (uint32_t w = 0; w < words; w++) {
		uint32_t start = cum + 1 + 64 * w;
		uint64_t x = sack[w];
		uint32_t d;

		if (!x)
			continue;
		/* keep the bits for live psns only: [una, nxt) */
		d = s->k.una - start;
		if ((int32_t)d > 0) {
			if (d >= 64)
				continue;
			x &= ~low_bits(d);
		}
		d = s->k.nxt - start;
		if ((int32_t)d <= 0)
			break;
		if (d < 64)
			x &= low_bits(d);
		if (!x)
			continue;      /* nothing live here (an empty board has no maps) */
		x &= ~bits64(s->sackmap, s->mask, s->wmask, start);
		while (x) {
			uint32_t psn = start + (uint32_t)__builtin_ctzll(x);

			x &= x - 1;
			if ((int32_t)(psn + 1 - s->high_sack) > 0)
				s->high_sack = psn + 1;
			ack_one(s, psn, true, t, acked, arg);
			n++;
		}
	}
	return n;
}

int sb_tx_ack(struct sb_tx *s, uint32_t cum_psn, const uint64_t *sack, uint32_t words,
	      void (*acked)(void *arg, uint32_t psn, const struct sb_pkt *p), void *arg)
{
	return sb_tx_ack_at(s, cum_psn, sack, words, NULL, acked, arg);
}

int sb_tx_ack_at(struct sb_tx *s, uint32_t cum_psn, const uint64_t *sack, uint32_t words,
		 const struct sb_ack_time *t,
		 void (*acked)(void *arg, uint32_t psn, const struct sb_pkt *p), void *arg)
{
	uint32_t adv = cum_psn - s->k.una;
	bool stale = (int32_t)adv < 0;
	int n = 0;

	if (!stale && adv > s->k.nxt - s->k.una)
		return -EINVAL;
	if (!sack)
		words = 0;
	if (words && sack_bogus(s, cum_psn, sack, words))
		return -EINVAL;
	if (!stale)
		n += ack_cumulative(s, cum_psn, t, acked, arg);
	n += apply_sack(s, cum_psn, sack, words, t, acked, arg);
	if (s->rack && t) {
		rack_update(s, t);
		rack_detect(s, t->now_ns);
		return n;
	}
	mark_holes(s);
	mark_overtaken(s);
	return n;
}

int sb_tx_ack_gbn(struct sb_tx *s, uint32_t cum_psn,
		  void (*acked)(void *arg, uint32_t psn, const struct sb_pkt *p), void *arg)
{
	return sb_tx_ack_gbn_at(s, cum_psn, NULL, acked, arg);
}

int sb_tx_ack_gbn_at(struct sb_tx *s, uint32_t cum_psn, const struct sb_ack_time *t,
		     void (*acked)(void *arg, uint32_t psn, const struct sb_pkt *p), void *arg)
{
	uint32_t adv = cum_psn - s->k.una;

	if ((int32_t)adv < 0)
		return 0;              /* an old ACK overtaken by a newer one */
	if (adv > s->k.nxt - s->k.una)
		return -EINVAL;
	if (adv > 0) {
		s->gbn_dups = 0;
		return ack_cumulative(s, cum_psn, NULL, acked, arg);
	}
	if (s->k.una == s->k.nxt)
		return 0;
	/* A duplicate that echoes a copy sent before una's packet last went
	 * was not sent for a packet after una: a copy the receiver already
	 * had (the window a spurious timeout or go-back resent). Counted, such
	 * a window makes dupthresh duplicates a round trip later, while new
	 * data is in flight: another go-back of packets that arrived, whose
	 * copies make the next, for as long as data flows. */
	if (t && t->tsecr_ns < s->e[s->k.una & s->mask].p.sent_ns)
		return 0;
	/* A duplicate: the receiver dropped something after una, so una is
	 * missing; everything after it was dropped too. Go back once per
	 * una: later duplicates are echoes of the packets already resent. */
	if (++s->gbn_dups < s->dupthresh || (s->gbn_went_back && s->gbn_una == s->k.una))
		return 0;
	for (uint32_t psn = s->k.una; psn != s->k.nxt; psn++)
		if (s->e[psn & s->mask].st == ST_INFLIGHT)
			mark_lost(s, psn);
	s->gbn_went_back = true;
	s->gbn_una = s->k.una;
	s->gbn_dups = 0;
	return 0;
}

int sb_tx_timeout(struct sb_tx *s, uint64_t cutoff_ns)
{
	int n = 0;

	while (s->head != NIL && s->e[s->head].p.sent_ns <= cutoff_ns) {
		uint32_t slot = s->head;
		/* recover the psn from the slot: the live psn with these low bits */
		uint32_t psn = s->k.una + ((slot - s->k.una) & s->mask);

		if (s->e[slot].rtos < UINT16_MAX)
			s->e[slot].rtos++;
		mark_lost(s, psn);
		n++;
	}
	return n;
}

uint16_t sb_tx_rtos(const struct sb_tx *s, uint32_t psn)
{
	if (!s->e || psn - s->k.una >= s->k.nxt - s->k.una)
		return 0;
	return s->e[psn & s->mask].rtos;
}

bool sb_tx_probing(const struct sb_tx *s, uint32_t psn)
{
	return live(s, psn) && s->e[psn & s->mask].probe;
}

int sb_tx_probe(struct sb_tx *s, uint32_t scan)
{
	for (uint32_t p = s->k.nxt; p != s->k.una && scan; scan--) {
		p--;
		if (s->e[p & s->mask].st == ST_INFLIGHT) {
			mark_lost(s, p);
			s->e[p & s->mask].probe = true;
			return 1;
		}
	}
	return 0;
}

int sb_tx_next_lost(struct sb_tx *s, uint32_t *psn, struct sb_pkt *pkt)
{
	uint32_t p = s->lost_scan;

	if (!s->k.lost)
		return 0;
	for (;;) {
		uint32_t i = p & s->mask, sh = i & 63;
		uint64_t w = s->lostmap[i >> 6] >> sh;

		if (w) {
			p += (uint32_t)__builtin_ctzll(w);
			break;
		}
		p += 64 - sh;
	}
	s->lost_scan = p;
	*psn = p;
	*pkt = s->e[p & s->mask].p;
	return 1;
}

void sb_tx_retransmitted(struct sb_tx *s, uint32_t psn, uint16_t path, uint64_t now_ns)
{
	uint32_t slot = psn & s->mask;
	struct sb_ent *x;

	if (!live(s, psn))
		return;
	x = &s->e[slot];
	if (x->st == ST_SACKED)
		return;
	if (x->st == ST_LOST) {
		bit_clear(s->lostmap, s->mask, psn);
		s->k.lost--;
		x->st = ST_INFLIGHT;
	} else {
		tl_remove(s, slot);
	}
	x->p.sent_ns = now_ns;
	x->tseq = ++s->tseq;
	x->p.path = path;
	if (x->p.retx < UINT16_MAX)
		x->p.retx++;
	tl_append(s, slot);
}

void sb_tx_set_rack(struct sb_tx *s, bool on)
{
	s->rack = on;
}

int sb_tx_rack_expire(struct sb_tx *s, uint64_t now_ns)
{
	return s->rack ? rack_detect(s, now_ns) : 0;
}

uint64_t sb_tx_rack_deadline(const struct sb_tx *s)
{
	return s->rack && rack_candidate(s) ? rack_expiry(s) : UINT64_MAX;
}

uint64_t sb_tx_reo_wnd(const struct sb_tx *s)
{
	return s->reo_wnd_ns;
}

uint64_t sb_tx_spurious(const struct sb_tx *s)
{
	return s->spurious;
}

uint32_t sb_tx_inflight(const struct sb_tx *s)
{
	return s->k.nxt - s->k.una - s->sacked;
}

uint64_t sb_tx_inflight_bytes(const struct sb_tx *s)
{
	return s->k.bytes;
}

uint32_t sb_tx_lost_pending(const struct sb_tx *s)
{
	return s->k.lost;
}

uint32_t sb_tx_holes(const struct sb_tx *s)
{
	return s->high_sack - s->k.una - s->sacked;
}

uint64_t sb_tx_oldest_sent(const struct sb_tx *s)
{
	return s->k.oldest_sent_ns;
}

const struct sb_tx_counts *sb_tx_counts(const struct sb_tx *s)
{
	return &s->k;
}

void sb_tx_clear(struct sb_tx *s, void (*dropped)(void *arg, uint32_t psn, const struct sb_pkt *p),
		 void *arg)
{
	uint32_t una = s->k.una, nxt = s->k.nxt;

	/* settle the state first: dropped() may look at the scoreboard */
	for (uint32_t w = 0; s->e && w <= s->wmask; w++)
		s->sackmap[w] = s->lostmap[w] = 0;
	s->k.una = s->high_sack = s->fr_scan = s->lost_scan = nxt;
	s->sacked = s->k.lost = 0;
	s->k.bytes = 0;
	s->head = s->tail = NIL;
	s->k.oldest_sent_ns = UINT64_MAX;
	s->gbn_dups = 0;
	s->gbn_went_back = false;
	s->in_recovery = false;
	for (uint32_t psn = una; psn != nxt; psn++) {
		struct sb_ent *x = &s->e[psn & s->mask];
		uint8_t st = x->st;

		x->st = ST_INFLIGHT;
		if (st != ST_SACKED && dropped)
			dropped(arg, psn, &x->p);
	}
}

/* ---- receiver ---- */

/* The arrival bitmap, allocated when first needed. */
static uint64_t *rx_map(struct sb_rx *s)
{
	if (!s->map)
		s->map = calloc(s->wmask + 1, sizeof(uint64_t));
	return s->map;
}

struct sb_rx *sb_rx_new(uint32_t window)
{
	struct sb_rx *s;
	uint32_t bits;

	if (window < 1 || window > (1u << 30))
		return NULL;
	bits = pow2_at_least(window);
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->window = window;
	s->mask = bits - 1;
	s->wmask = bits / 64 - 1;
	if (!rx_map(s)) {
		free(s);
		return NULL;
	}
	return s;
}

struct sb_rx *sb_rx_free(struct sb_rx *s)
{
	if (!s)
		return NULL;
	free(s->map);
	free(s);
	return NULL;
}

bool sb_rx_release(struct sb_rx *s)
{
	if (s->above)
		return false;
	free(s->map);                  /* all clear: rx_advance clears as cum passes */
	s->map = NULL;
	return true;
}

size_t sb_rx_bytes(const struct sb_rx *s)
{
	return sizeof(*s) + (s->map ? (s->wmask + 1) * sizeof(uint64_t) : 0);
}

int sb_rx_pack(const struct sb_rx *s, struct vpack *v)
{
	struct sb_rx t = *s;

	if (s->map)
		return -EBUSY;
	vpack_words(v, &t, sizeof(t));
	return v->err ? -ENOMEM : 0;
}

struct sb_rx *sb_rx_unpack(struct vunpack *r)
{
	struct sb_rx *s = calloc(1, sizeof(*s));

	if (s && (!vunpack_words(r, s, sizeof(*s)) || s->map)) {
		free(s);
		return NULL;
	}
	return s;
}

int sb_rx_start_at(struct sb_rx *s, uint32_t psn)
{
	if (s->above)
		return -EBUSY;
	s->cum = s->high = psn;
	return 0;
}

/* Move cum past the run of received psns that starts at it. */
static void rx_advance(struct sb_rx *s)
{
	for (;;) {
		uint32_t i = s->cum & s->mask, w = i >> 6, sh = i & 63;
		uint64_t v = s->map[w] >> sh;
		uint32_t run;

		if (!(v & 1))
			return;
		run = ~v ? (uint32_t)__builtin_ctzll(~v) : 64;   /* <= 64 - sh */
		s->map[w] &= ~(low_bits(run) << sh);
		s->above -= run;
		s->cum += run;
	}
}

int sb_rx_accept(struct sb_rx *s, uint32_t psn)
{
	uint32_t d = psn - s->cum;

	if ((int32_t)d < 0)
		return 0;
	if (d >= s->window)
		return -ERANGE;
	if (d == 0) {
		s->cum = psn + 1;
		if (s->above)          /* else no bit is set: nothing to join */
			rx_advance(s);
	} else {
		if (!rx_map(s))
			return -ENOMEM;
		if (bit_get(s->map, s->mask, psn))
			return 0;
		bit_set(s->map, s->mask, psn);
		s->above++;
	}
	if ((int32_t)(psn + 1 - s->high) > 0)
		s->high = psn + 1;
	if ((int32_t)(s->high - s->cum) < 0)
		s->high = s->cum;
	return 1;
}

uint32_t sb_rx_cum(const struct sb_rx *s)
{
	return s->cum;
}

uint32_t sb_rx_sack(const struct sb_rx *s, uint64_t *words, uint32_t max_words)
{
	uint32_t span, nw, last = 0;

	if (!s->above || !max_words)
		return 0;
	span = s->high - s->cum - 1;           /* psns cum+1 .. high-1 */
	nw = (span + 63) / 64;
	if (nw > max_words)
		nw = max_words;
	for (uint32_t w = 0; w < nw; w++) {
		uint32_t left = span - 64 * w;
		uint64_t v = bits64(s->map, s->mask, s->wmask, s->cum + 1 + 64 * w);

		if (left < 64)
			v &= low_bits(left);  /* past high the ring may alias older psns */
		words[w] = v;
		if (v)
			last = w + 1;
	}
	return last;
}

bool sb_rx_has_holes(const struct sb_rx *s)
{
	return s->above != 0;
}
