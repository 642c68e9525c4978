/* SPDX-License-Identifier: MIT */
/*
 * rtt: smoothed round-trip time and the retransmission timeout derived from
 * it (RFC 6298 style: srtt, rttvar, rto = srtt + 4 rttvar, clamped to a floor
 * and a ceiling, doubled on each consecutive timeout). The floor starts at
 * rto_min and adapts to timeouts found spurious (RFC 3522 detection by the
 * owner): doubled by each spurious one, up to RTT_FLOOR_MAX_MULT x rto_min,
 * and halved back by each one found right.
 */
#ifndef UCCL_ENGINE_RTT_H
#define UCCL_ENGINE_RTT_H

#include <stdint.h>

#define RTT_FLOOR_MAX_MULT 16u

struct rtt {
	uint64_t srtt_ns;              /* 0 until the first sample */
	uint64_t rttvar_ns;
	uint64_t min_rtt_ns;           /* lowest sample seen */
	uint64_t rto_ns;               /* current timeout, backoff included */
	uint64_t rto_min_ns, rto_max_ns;
	uint64_t floor_ns;             /* the floor now: rto_min_ns or above */
	uint64_t floor_at_ns;          /* when it last rose or fell */
	uint32_t backoff;              /* consecutive timeouts */
};

void rtt_init(struct rtt *r, uint64_t rto_init_ns, uint64_t rto_min_ns, uint64_t rto_max_ns);
void rtt_sample(struct rtt *r, uint64_t rtt_ns);   /* also clears the backoff */
void rtt_on_timeout(struct rtt *r);               /* doubles rto up to the ceiling */
uint64_t rtt_rto(const struct rtt *r);
/* A timeout turned out spurious (the original was acknowledged): the floor
 * doubles. One that was right: the floor halves back toward rto_min, as it
 * does after RTT_FLOOR_HOLD_NS without either (rtt_floor_tick, on ACKs):
 * most losses are repaired without a timeout, so a right one may not come. */
#define RTT_FLOOR_HOLD_NS 1000000000ull
void rtt_timeout_spurious(struct rtt *r, uint64_t now_ns);
void rtt_timeout_right(struct rtt *r, uint64_t now_ns);
void rtt_floor_tick(struct rtt *r, uint64_t now_ns);

#endif
