/* SPDX-License-Identifier: MIT */
/*
 * tpchan: the transport channel to one remote host. The sender cuts queued
 * messages into chunks (one congestion-window decision and one path per
 * chunk) and chunks into MTU-sized DATA packets numbered by psn; the
 * scoreboard holds each packet until it is acknowledged, losses come back as
 * fast retransmits (SACK holes) or timeouts (RTO from measured RTT), or, in
 * Go-Back-N mode, as everything from the cumulative point. The receiver
 * suppresses duplicates, hands each new packet to deliver(), and acknowledges
 * with cumulative + SACK ACKs, coalesced but sent at once when a hole opens
 * or closes or a message ends. Nothing here allocates per packet or reads a clock.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/crc32c.h"
#include "engine/paths.h"
#include "engine/rtt.h"
#include "engine/scoreboard.h"
#include "engine/tpchan.h"
#include "engine/vpack.h"

/*
 * What tpchan.h leaves open, as decided here:
 *  - A message that fails (NACK, read() error) completes at once; after
 *    complete() the channel never calls read() for it again. Its packets
 *    already on the scoreboard still need their psns filled at the peer, so a
 *    lost one is resent as a "filler": the same header with no payload
 *    (msg_len > 0, payload_len == 0), which the receiver acknowledges and
 *    never delivers. The message's table slot is held until those are
 *    acknowledged, and counts against max_msgs meanwhile.
 *  - A packet found lost by the retransmission timer more than max_retx
 *    times (Go-Back-N: the packet at the cumulative point resent max_retx
 *    times) means the peer is out of reach: its psn can never be filled,
 *    so the whole channel fails as tpchan_reset(c, -ETIMEDOUT) would,
 *    after telling cb.gave_up (tpchan_reset does not).
 *    Resends that SACKs and the reordering window call for do not count:
 *    the peer is answering.
 *  - tpchan_free() completes every outstanding message with -ECANCELED;
 *    tpchan_reset() with its err (a non-negative err becomes -ECONNRESET).
 *    Neither rewinds psns: after a reset the peer's receiver will not
 *    accept new data past its stalled window; replace the channel.
 *  - Refusals are reliable (docs/wire-protocol.md, "Refusals"). The
 *    receiver numbers them (seq 1, 2, ...), keeps every record the sender
 *    has not confirmed in a ring of NACK_RING, sends each at once and again
 *    every RTO (doubling while nothing is confirmed, up to rto_max) until the
 *    sender's nacks_seen covers it, and puts its count of refusals issued in
 *    every ACK. A packet that arrives while the ring is full is dropped
 *    unacknowledged (as if past the window) rather than lose a record. The
 *    sender applies records in any order, counts in nacks_seen the prefix
 *    1..n it has, reports it in every DATA and ACK (a SYNC ACK when nothing
 *    else goes out after a NACK arrives), and completes a wholly acknowledged
 *    message with 0 only once nacks_seen reaches the highest nacks_issued
 *    any ACK reported; until then the message is held (FIFO). Every ACK that
 *    acknowledges a refused packet was written after its record was issued,
 *    so a refused message always meets its record before it could succeed.
 *  - Retransmissions replace bytes already counted in flight and are not
 *    held back by the window; new chunks start only when they fit.
 *  - SACK mode loses a hole by dupthresh and, unless rack_off, the
 *    scoreboard's reordering window (RACK): spraying chunks over paths of
 *    different queueing delay reorders by up to a queue, which dupthresh
 *    alone reads as loss. The window's timer is part of the deadline, so a
 *    real loss goes when the timer runs out, not at the RTO. Every ACK hands
 *    the scoreboard the RTT estimates from before it.
 *  - Go-Back-N: the receiver's window is one packet; every packet it drops
 *    out of order earns the sender a duplicate ACK (up to dupthresh at a
 *    time, one more when the ACK moves the cumulative point; the copies
 *    after an ACK's first echo the newest such packet),
 *    and the sender counts a duplicate only if it echoes a packet sent
 *    with or after the one at its cumulative point last went (so the copies a
 *    spurious timeout resent earn none). max_retx counts resends of the
 *    packet at the cumulative point only (the others are resent for holes
 *    before them).
 *  - msg_id = submission number << 24 | table slot: a NACK finds its
 *    message in O(1), and a stale or forged one fails the id check.
 *  - ACKs echo the tsval of the first packet since the previous ACK, so
 *    that RTT samples include the coalescing delay. A DATA packet that
 *    arrived with a CE mark (tpchan_rx_ce) makes the next ACK go at once and
 *    carry WIRE_F_ECE, which the sender's congestion controller sees as ecn.
 *    An in-band congestion degree (tpchan_rx_ext) does not hurry the ACK:
 *    the ACK carries the highest since the previous one as hint_ppm, and
 *    the sender passes it on as cc_ack.hint_ppm.
 *  - Stats: data_pkts_rx/data_bytes_rx count new packets (delivered,
 *    refused or fillers); dup_pkts_rx duplicates; drop_window packets past
 *    the window, and those turned away while NACK_RING is full; fast_retx
 *    packets declared lost from ACKs (SACK holes, Go-Back-N duplicates)
 *    and by the reorder timer; spurious_retx resends the peer turned out
 *    not to need (acknowledged within min_rtt by an ACK echoing an older
 *    packet's tsval);
 *    retx_timeouts RTO expiries; retx_pkts resends for any reason; acks_rx
 *    ACKs applied, SYNC ones included (bogus ones, and packets with refusal
 *    counters no honest peer sends, count in drop_malformed); nacks_tx
 *    every NACK sent, nacks_retx those sent again; msgs_held completions
 *    that had to wait for refusal records; nacks_pending records the peer
 *    has not confirmed; queued_msgs messages not yet wholly cut into
 *    packets; cwnd_bytes the CC window before the max_inflight_bytes cap.
 *  - Callbacks may call tpchan_submit() and tpchan_get_stats() on this
 *    channel, nothing else (not from tpchan_free: submit then says -ESHUTDOWN).
 *  - State at scale: what grows with the window (sender ring, message
 *    table, receive bitmap, refusal records, per-path table) exists only
 *    while used. The first submit allocates the send side, the first DATA
 *    the refusal records (the bitmap comes with the first out-of-order
 *    packet, the path table with the first pick); the ring (64), table
 *    (16) and records (4) start small and double when full up to their
 *    configured size. After idle_release_ns of
 *    idleness it is all freed; psns, the cumulative point, RTT, CC state
 *    and tokens live in the fixed part, so the wire sees no difference.
 *    The hold starts at the tpchan_tx or tpchan_rx that finds the channel
 *    idle, restarts with every packet, and is part of the deadline. When it
 *    runs out and nothing is owed or timed, the fixed part is packed too
 *    (freezing, at the end of this file).
 */

/* A packet's scoreboard cookie: message table slot << 40 | offset. */
#define SLOT_BITS   24u
#define OFF_BITS    40u
#define OFF_MASK    ((1ull << OFF_BITS) - 1)
#define MSG_LEN_MAX OFF_MASK            /* 1 TiB - 1 */
#define MAX_MSGS_LIMIT (1u << SLOT_BITS)
#define NONE        UINT32_MAX

/* Defaults for parameters left 0. */
#define DEF_CHUNK         32768u
#define DEF_INFLIGHT_PKTS 4096u
#define DEF_MAX_MSGS      1024u
#define DEF_RTO_INIT_NS   1000000ull    /* 1 ms before the first sample */
#define DEF_RTO_MIN_NS    200000ull     /* 200 us */
#define DEF_RTO_MAX_NS    100000000ull  /* 100 ms */
#define DEF_MAX_RETX      12u
#define DEF_ACK_DELAY_NS  10000ull      /* 10 us */
#define DEF_ACK_EVERY     8u
#define DEF_DUPTHRESH     3u
#define DEF_LOSS_HOLD_NS  1000000ull    /* 1 ms */

/* Initial congestion window, in chunks (capped by max_inflight_bytes). */
#define INIT_WINDOW_CHUNKS 16u
/* Refusal records the peer has not confirmed; a packet that might need one
 * more is dropped unacknowledged (and resent by the peer) rather than lose a
 * record. A power of two: records are indexed by seq % NACK_RING. */
#define NACK_RING 256u
/* Resends of unconfirmed records back off up to rto << NACK_BACKOFF_MAX. */
#define NACK_BACKOFF_MAX 16u
/* adaptive_chunk: below this many chunks of window, chunks shrink to
 * window / ADAPT_WIN_CHUNKS, so that a few chunks still fit in flight
 * (and a small window is spread over more path decisions); above
 * ADAPT_LOSS_PPM of recent loss they shrink to chunk_bytes /
 * ADAPT_LOSS_DIV, so that a loss costs a smaller unit. The loss estimate
 * is an EWMA over new packets with gain 1 / 2^ADAPT_LOSS_SHIFT (about the
 * last 256 packets); every packet declared lost adds 1 / 2^shift of a
 * million. Go-Back-N declares whole windows lost, so there it overstates. */
#define ADAPT_WIN_CHUNKS 4u
#define ADAPT_LOSS_PPM   10000u
#define ADAPT_LOSS_DIV   4u
#define ADAPT_LOSS_SHIFT 8u
/* Psns a tail loss probe looks down from the newest for one in flight. */
#define TLP_SCAN 64u
/* Credit a receiver grants ahead of what arrived, in chunks (cr_ahead_pkts). */
/* REQ and GRANT resends back off up to rto << CREDIT_BACKOFF_MAX; a peer
 * that answers none of CREDIT_RESENDS_MAX GRANTs no longer gets any. */
#define CREDIT_BACKOFF_MAX 6u
#define CREDIT_RESENDS_MAX 8u
#define CREDIT_AHEAD_CHUNKS 32u

enum { M_FREE, M_LIVE, M_DEAD };  /* DEAD: completed with an error, packets still out */

struct tmsg {
	uint64_t cookie, rkey, roff, len, msg_id, ord;
	uint64_t next_off;             /* first byte not yet put in a packet */
	uint32_t dst_ep, dst_conn;
	uint32_t outstanding;          /* packets on the scoreboard */
	uint32_t prev, next;           /* send queue; next also links the free list */
	uint8_t opcode, state;
	uint8_t wflags;                /* tpchan_msg.flags */
	bool queued;                   /* on the send queue */
	bool started;                  /* at least one packet pushed */
	bool held;                     /* all acknowledged, waiting for refusals (held list) */
	uint32_t ref_need;             /* held: complete once ref_seen reaches this */
};

/* A refusal we issued, kept until the peer confirms it. */
struct nack_ent {
	uint64_t msg_id;
	uint64_t sent_ns;              /* last transmission, when sent */
	uint32_t psn;
	int32_t err;
	bool sent;
};

struct tchan {
	struct tpchan_params p;        /* defaults applied */
	struct tpchan_cb cb;
	uint32_t mss, sack_words;
	struct sb_tx *tx;
	const struct sb_tx_counts *txk; /* tx's counters, read on every call */
	struct sb_rx *rx;
	struct rtt rtt;
	struct paths *paths;
	const struct cc_ops *cc;
	void *cc_st;
	uint64_t win;                  /* CC window capped at max_inflight_bytes */
	uint64_t deadline;             /* deadline_of(), as of the last change */

	/* messages */
	struct tmsg *m;
	uint64_t *cookies;             /* scratch for tpchan_reset, mcap long */
	uint32_t mcap;                 /* table entries now: doubles up to max_msgs */
	bool reading;                  /* in read(): the table must not move */
	uint32_t free_head, live, queued;
	uint32_t q_head, q_tail;
	uint64_t seq;
	uint32_t cur;                  /* message whose chunk is being cut, or NONE */
	uint64_t chunk_end;
	uint16_t chunk_path;
	bool closing;
	uint32_t run_left;             /* path_run_bytes left on chunk_path (high bytes of
					* the packed word: 0 costs nothing frozen) */

	/* refusals of our DATA (we are the sender) */
	uint32_t ref_seen;             /* every refusal 1..ref_seen has arrived */
	uint32_t ref_issued_hi;        /* highest nacks_issued an ACK reported */
	uint64_t ref_map[NACK_RING / 64]; /* refusals past ref_seen that arrived, by seq */
	uint32_t held_head, held_tail; /* wholly acked messages waiting for refusals */
	bool sync_owed;                /* a NACK arrived: tell the peer ref_seen */

	uint32_t gbn_una;              /* Go-Back-N: the cumulative point, as acked */
	uint32_t gbn_una_resends;      /* times the packet at gbn_una was resent there */
	uint32_t next_psn;             /* the psn the next push gets */

	uint32_t loss_ppm;             /* adaptive_chunk's recent loss estimate */

	/* during sb_tx_ack: what the acked() calls saw */
	uint64_t acked_bytes;
	uint32_t lost_seen, lost_acked;

	/* receive side */
	uint32_t rx_high;              /* one past the highest psn accepted */
	bool ack_pending, ack_now;
	bool ack_ece;                  /* a CE-marked DATA packet since the last ACK */
	bool ack_echo_retx;            /* ack_tsecr is a new resend's */
	uint32_t ack_hint;             /* highest in-band degree since the last ACK */
	uint32_t ack_count;            /* new DATA since the last ACK */
	uint32_t dupacks_owed;         /* Go-Back-N: extra copies of the next ACK */
	uint64_t dup_tsecr;            /* Go-Back-N: tsval of the newest packet dropped out
					* of order, what the copies after the first echo */
	bool ack_copy_sent;            /* the first copy of the pending ACK went */
	uint32_t dup_psn;              /* Go-Back-N: highest psn dropped out of order */
	uint32_t ack_cum_sent;         /* cum_psn of the last ACK sent */
	uint64_t ack_first_ns, ack_tsecr;
	/* ack_hold_ns, only while the peer's messages get replies (TCP's
	 * delayed-ACK ping-pong mode): DATA went back within the hold of a
	 * message's end. A hold that runs out ends it, so a one-way stream of
	 * puts whose sender waits for each is acknowledged at once. */
	bool pingpong;
	uint64_t ack_soon_ns;          /* the held ACK is due then (0: none held) */
	uint64_t last_end_ns;          /* a message's end arrived then (0: none yet) */
	/* the last retransmission timeout, until the ACK that first covers
	 * psn rto_psn, by SACK or cumulatively, tells whether it was spurious
	 * (RFC 3522); that ACK's echo is in ack_in_tsecr while it is read */
	uint64_t rto_at;
	uint64_t ack_in_tsecr;
	uint32_t rto_psn;
	/* when the timer last fired: the next timeout is an RTO after that at
	 * the earliest (RFC 6298 5.6), however recent the unacked packets */
	uint64_t rto_fired;
	bool rto_judge;
	uint16_t ack_path;
	/* refusals of the peer's DATA (we are the receiver): records
	 * (ref_confirmed, ref_issued] are in nacks[seq % ncap] */
	uint32_t ref_issued;           /* refusals issued so far */
	uint32_t ref_confirmed;        /* the peer's nacks_seen */
	uint32_t ref_backoff;          /* resend rounds since the last confirmation */
	uint64_t ref_due;              /* earliest time a record must go (again) */
	struct nack_ent *nacks;        /* ncap records; NULL while released */
	uint32_t ncap;                 /* doubles up to NACK_RING with the unconfirmed */

	uint64_t release_at;           /* idle: release the state then; else UINT64_MAX */
	size_t base_bytes;             /* state_bytes() with everything released */

	/* receiver-driven credit ("Credit" in docs/wire-protocol.md), packed:
	 * an idle channel is mostly this fixed part. As a sender in credit
	 * mode (cc has CC_F_CREDIT): */
	uint32_t cr_limit;             /* the peer's newest GRANT: psns before it may go */
	uint32_t cr_burst;             /* psns before it: the current burst's speculation */
	uint32_t cr_spec_pkts;         /* speculative packets per burst (cc window / mss) */
	/* as a receiver (any channel, whatever its own cc): */
	uint32_t cr_grant;             /* psns granted so far: the peer may send below it */
	uint32_t cr_ahead_pkts;        /* grants run at most this far past rx_high */
	uint32_t rx_pkt16;             /* receiver: wire bytes of a credit sender's new DATA
					* packet, x16, averaged over the last few dozen
					* (what a grant costs) */
	bool cr_have_limit;            /* sender: cr_limit came from the peer, not spent */
	bool cr_have_burst;            /* sender: cr_burst not spent */
	bool cr_told;                  /* sender: the peer knows we wait (MORE or REQ since) */
	bool cr_req_owed;              /* sender: a REQ goes with the next tpchan_tx */
	bool cr_more;                  /* receiver: the peer says it has data waiting */
	bool cr_grant_owed;            /* receiver: a GRANT goes with the next tpchan_tx */
	uint8_t cr_grant_resends;      /* receiver: GRANTs resent since DATA last came */
	uint8_t cr_reqs;               /* sender: REQs sent since credit last came */
	uint64_t cr_told_ns;           /* sender: when we last told the peer */
	/* tail loss probe: after the last DATA went, nothing came back for a
	 * probe timeout and nothing else can go: resend the newest packet once */
	uint64_t last_data_ns;
	bool tlp_armed;
	uint64_t cr_grant_ns;          /* receiver: when the last GRANT went */

	struct tpchan_stats st;
};

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void deadline_update(struct tchan *c);
static size_t state_bytes(const struct tchan *c);
static void ch_reset(struct tchan *c, int err);

static bool credit_mode(const struct tchan *c)
{
	return (c->cc->flags & CC_F_CREDIT) != 0;
}

/* psn a comes before b (sequence arithmetic, 2^31 either way) */
static bool psn_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

/* The CC window changes only when the CC is told something: read it then.
 * In credit mode the window is the speculative burst, not an in-flight
 * cap: flow control alone bounds what credit lets out. */
static void cc_refresh(struct tchan *c)
{
	uint64_t w = c->cc->window(c->cc_st);

	if (credit_mode(c)) {
		c->cr_spec_pkts = (uint32_t)min_u64(c->p.max_inflight_pkts,
						    (min_u64(w, c->p.max_inflight_bytes) + c->mss - 1) / c->mss);
		c->win = c->p.max_inflight_bytes;
		return;
	}
	c->win = min_u64(w, c->p.max_inflight_bytes);
}

/* ---- construction ---- */

static bool apply_defaults(struct tpchan_params *p)
{
	if (!p->chunk_bytes)
		p->chunk_bytes = DEF_CHUNK;
	if (!p->npaths)
		p->npaths = 1;
	if (!p->max_inflight_pkts)
		p->max_inflight_pkts = DEF_INFLIGHT_PKTS;
	if (!p->rx_window_pkts)
		p->rx_window_pkts = p->max_inflight_pkts;
	if (!p->max_msgs)
		p->max_msgs = DEF_MAX_MSGS;
	if (!p->rto_init_ns)
		p->rto_init_ns = DEF_RTO_INIT_NS;
	if (!p->rto_min_ns)
		p->rto_min_ns = DEF_RTO_MIN_NS;
	if (!p->rto_max_ns)
		p->rto_max_ns = DEF_RTO_MAX_NS;
	if (!p->max_retx)
		p->max_retx = DEF_MAX_RETX;
	if (!p->ack_delay_ns)
		p->ack_delay_ns = DEF_ACK_DELAY_NS;
	if (!p->ack_every)
		p->ack_every = DEF_ACK_EVERY;
	if (!p->dupthresh)
		p->dupthresh = DEF_DUPTHRESH;
	if (!p->path_loss_hold_ns)
		p->path_loss_hold_ns = DEF_LOSS_HOLD_NS;
	if (!p->cc)
		p->cc = &cc_window_ops;

	/* the caller's packet buffers bound it above (an mtu that wrapped
	 * below zero would let a chunk's payload run past them) */
	if (p->mtu <= WIRE_DATA_HDR_LEN || p->mtu < WIRE_ACK_HDR_LEN + 8 || p->mtu > TPCHAN_MTU_MAX)
		return false;
	if (p->npaths > PATHS_MAX || p->max_msgs > MAX_MSGS_LIMIT ||
	    p->path_run_bytes > TPCHAN_MAX_PATH_RUN)
		return false;
	if (!p->go_back_n && p->rx_window_pkts < p->max_inflight_pkts)
		return false;
	if (!sb_tx_params_ok(p->max_inflight_pkts, p->dupthresh) || p->rx_window_pkts > 1u << 30)
		return false;
	if (p->rto_min_ns > p->rto_max_ns || p->max_retx >= UINT16_MAX)
		return false;
	if (!p->cc->state_size || !p->cc->init || !p->cc->on_ack || !p->cc->on_loss ||
	    !p->cc->window)
		return false;
	if (!p->max_inflight_bytes)
		p->max_inflight_bytes = (uint64_t)p->max_inflight_pkts *
					min_u64(p->mtu - WIRE_DATA_HDR_LEN, WIRE_MAX_PAYLOAD);
	return p->max_inflight_bytes >= p->chunk_bytes;
}

bool tpchan_params_ok(const struct tpchan_params *p)
{
	struct tpchan_params q;

	if (!p)
		return false;
	q = *p;
	return apply_defaults(&q);
}

uint32_t tpchan_inflight_pkts(uint64_t max_inflight_bytes, uint32_t mtu)
{
	uint64_t mss = mtu > WIRE_DATA_HDR_LEN ? min_u64(mtu - WIRE_DATA_HDR_LEN, WIRE_MAX_PAYLOAD) : 1;
	uint64_t want = (max_inflight_bytes + mss - 1) / mss;
	uint32_t n = DEF_INFLIGHT_PKTS;

	while (n < want && n < 1u << 30)
		n <<= 1;
	return n;
}

static struct tchan *ch_new(const struct tpchan_params *params)
{
	struct tchan *c;
	struct cc_params ccp;

	if (!params)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->p = *params;
	if (!apply_defaults(&c->p) || !c->p.cb || !c->p.cb->read || !c->p.cb->deliver ||
	    !c->p.cb->complete)
		goto out_free;
	c->cb = *c->p.cb;
	c->mss = (uint32_t)min_u64(c->p.mtu - WIRE_DATA_HDR_LEN, WIRE_MAX_PAYLOAD);
	c->sack_words = (uint32_t)min_u64((c->p.mtu - WIRE_ACK_HDR_LEN) / 8, WIRE_SACK_WORDS_MAX);

	c->tx = sb_tx_new(c->p.max_inflight_pkts, c->p.dupthresh);
	if (!c->tx)
		goto out_free;
	c->txk = sb_tx_counts(c->tx);
	sb_tx_set_rack(c->tx, !c->p.go_back_n && !c->p.rack_off);
	/* Go-Back-N receives in order only: a window of one packet */
	c->rx = sb_rx_new(c->p.go_back_n ? 1 : c->p.rx_window_pkts);
	if (!c->rx)
		goto out_tx;
	c->paths = paths_new(c->p.npaths, c->p.seed, c->p.path_loss_hold_ns);
	if (!c->paths)
		goto out_rx;
	paths_set_load_first(c->paths, c->p.path_per_packet);
	c->cc = c->p.cc;
	c->cc_st = calloc(1, c->cc->state_size);
	if (!c->cc_st)
		goto out_paths;
	/* the rest comes with the first use (tx_state_get, rx_data) */
	sb_tx_release(c->tx);
	sb_rx_release(c->rx);
	paths_release(c->paths);
	if (c->p.first_psn) {
		(void)sb_tx_start_at(c->tx, c->p.first_psn);
		(void)sb_rx_start_at(c->rx, c->p.first_psn);
		c->rx_high = c->cr_grant = c->gbn_una = c->next_psn = c->p.first_psn;
		c->ack_cum_sent = c->p.first_psn;
	}
	c->release_at = UINT64_MAX;
	c->free_head = NONE;
	c->q_head = c->q_tail = c->cur = NONE;
	c->held_head = c->held_tail = NONE;
	c->ref_due = UINT64_MAX;
	/* a receiver lets credit run up to this far past what arrived: enough
	 * for its pacer's rate times a datacenter RTT, bounded so that a
	 * sender that stopped asking cannot soak up the pacer for long */
	c->cr_ahead_pkts = (uint32_t)min_u64(c->p.max_inflight_pkts / 2,
					     ((uint64_t)CREDIT_AHEAD_CHUNKS * c->p.chunk_bytes + c->mss - 1) / c->mss);
	if (!c->cr_ahead_pkts)
		c->cr_ahead_pkts = 1;
	rtt_init(&c->rtt, c->p.rto_init_ns, c->p.rto_min_ns, c->p.rto_max_ns);
	ccp = (struct cc_params){
		.mss = c->mss,
		.chunk = c->p.chunk_bytes,
		.init_window = min_u64(c->p.max_inflight_bytes,
				       (uint64_t)INIT_WINDOW_CHUNKS * c->p.chunk_bytes),
		.min_window = c->p.chunk_bytes,
		.max_window = c->p.max_inflight_bytes,
		.delay_slack_ns = c->p.cc_delay_slack_ns,
		.line_rate_bps = c->p.cc_line_rate_bps,
		.base_rtt_ns = c->p.cc_base_rtt_ns,
	};
	c->cc->init(c->cc_st, &ccp);
	cc_refresh(c);
	c->base_bytes = state_bytes(c);
	deadline_update(c);
	return c;

out_paths:
	paths_free(c->paths);
out_rx:
	sb_rx_free(c->rx);
out_tx:
	sb_tx_free(c->tx);
out_free:
	free(c);
	return NULL;
}

static void tchan_destroy(struct tchan *c)
{
	free(c->nacks);
	free(c->cookies);
	free(c->m);
	free(c->cc_st);
	paths_free(c->paths);
	sb_rx_free(c->rx);
	sb_tx_free(c->tx);
	free(c);
}

static struct tchan *ch_free(struct tchan *c)
{
	if (!c)
		return NULL;
	c->closing = true;
	ch_reset(c, -ECANCELED);
	tchan_destroy(c);
	return NULL;
}

/* ---- state allocated on use ---- */

static size_t state_bytes(const struct tchan *c)
{
	size_t n = sizeof(*c) + c->cc->state_size;

	n += sb_tx_bytes(c->tx) + sb_rx_bytes(c->rx) + paths_bytes(c->paths);
	n += (size_t)c->mcap * (sizeof(*c->m) + sizeof(*c->cookies));
	n += (size_t)c->ncap * sizeof(*c->nacks);
	return n;
}

/* Nothing refers to the per-packet state: no message in the table, no
 * packet unacknowledged either way, no refusal record unconfirmed. */
static bool chan_idle(const struct tchan *c)
{
	return c->live == 0 && c->cur == NONE && c->txk->nxt == c->txk->una &&
	       c->ref_issued == c->ref_confirmed && !sb_rx_has_holes(c->rx) && !c->ack_pending;
}

static void state_release(struct tchan *c)
{
	c->release_at = UINT64_MAX;
	if (!chan_idle(c) || state_bytes(c) == c->base_bytes)
		return;
	free(c->m);
	free(c->cookies);
	free(c->nacks);
	c->m = NULL;
	c->cookies = NULL;
	c->nacks = NULL;
	c->ncap = 0;
	c->mcap = 0;
	c->free_head = NONE;
	sb_tx_release(c->tx);
	sb_rx_release(c->rx);
	paths_release(c->paths);       /* per-path RTT and losses back to defaults */
	c->st.state_releases++;
}

/* Largest CC state a frozen channel's getters unpack on the stack. */
#define CC_STATE_MAX 512u

/* The fixed part may be packed once nothing is owed or timed (freeze, at
 * the end of this file): what does not change while the channel idles. */
static bool freezable(const struct tchan *c)
{
	return !c->p.freeze_off && !c->cr_more && c->cc->state_size <= CC_STATE_MAX;
}

/* A tpchan_tx or tpchan_rx at now: (re)start the hold if the channel holds
 * state, or may freeze, and is idle (restart it on traffic: active), else
 * cancel it. */
static void idle_note(struct tchan *c, uint64_t now, bool active)
{
	if (!c->p.idle_release_ns || !chan_idle(c) ||
	    (state_bytes(c) == c->base_bytes && !freezable(c))) {
		c->release_at = UINT64_MAX;
		return;
	}
	if (active || c->release_at == UINT64_MAX)
		c->release_at = sat_add(now, c->p.idle_release_ns);
}

#define FIRST_MSGS 16u

/* Room for one more message (the caller checked live < max_msgs): the
 * message table, doubled when full (it is indexed, so it may move, except
 * while read() runs: send_new holds an entry across it), and the ring. */
static int tx_state_get(struct tchan *c)
{
	if (c->free_head == NONE) {
		uint32_t n = c->mcap ? c->mcap * 2 : FIRST_MSGS;
		struct tmsg *m;
		uint64_t *k;

		if (c->reading)
			return -EAGAIN;
		if (n > c->p.max_msgs)
			n = c->p.max_msgs;
		m = realloc(c->m, n * sizeof(*m));
		if (!m)
			return -ENOMEM;
		c->m = m;
		k = realloc(c->cookies, n * sizeof(*k));
		if (!k)
			return -ENOMEM;        /* m is larger, mcap not: harmless */
		c->cookies = k;
		memset(m + c->mcap, 0, (n - c->mcap) * sizeof(*m));
		for (uint32_t i = c->mcap; i < n; i++)
			m[i].next = i + 1 < n ? i + 1 : NONE;
		c->free_head = c->mcap;
		c->mcap = n;
	}
	return sb_tx_reserve(c->tx);
}

/* ---- message table ---- */

static void q_append(struct tchan *c, uint32_t i)
{
	struct tmsg *m = &c->m[i];

	m->prev = c->q_tail;
	m->next = NONE;
	if (c->q_tail == NONE)
		c->q_head = i;
	else
		c->m[c->q_tail].next = i;
	c->q_tail = i;
	m->queued = true;
	c->queued++;
}

static void q_remove(struct tchan *c, uint32_t i)
{
	struct tmsg *m = &c->m[i];

	if (m->prev == NONE)
		c->q_head = m->next;
	else
		c->m[m->prev].next = m->next;
	if (m->next == NONE)
		c->q_tail = m->prev;
	else
		c->m[m->next].prev = m->prev;
	m->queued = false;
	c->queued--;
	if (c->cur == i)
		c->cur = NONE;
}

/* The held list: messages wholly acknowledged, in the order they were
 * (so by nondecreasing ref_need), linked through prev/next like the send
 * queue, which they have left. */
static void held_append(struct tchan *c, uint32_t i, uint32_t need)
{
	struct tmsg *m = &c->m[i];

	m->prev = c->held_tail;
	m->next = NONE;
	if (c->held_tail == NONE)
		c->held_head = i;
	else
		c->m[c->held_tail].next = i;
	c->held_tail = i;
	m->held = true;
	m->ref_need = need;
	c->st.msgs_held++;
}

static void held_remove(struct tchan *c, uint32_t i)
{
	struct tmsg *m = &c->m[i];

	if (m->prev == NONE)
		c->held_head = m->next;
	else
		c->m[m->prev].next = m->next;
	if (m->next == NONE)
		c->held_tail = m->prev;
	else
		c->m[m->next].prev = m->prev;
	m->held = false;
}

static void slot_free(struct tchan *c, uint32_t i)
{
	struct tmsg *m = &c->m[i];

	m->state = M_FREE;
	m->next = c->free_head;
	c->free_head = i;
	c->live--;
}

static int ch_submit(struct tchan *c, const struct tpchan_msg *msg)
{
	struct tmsg *m;
	uint32_t i;
	int r;

	if (c->closing)
		return -ESHUTDOWN;
	if (!msg || msg->len > MSG_LEN_MAX || (msg->flags & ~WIRE_F_SIGNAL))
		return -EINVAL;
	if (c->live >= c->p.max_msgs)
		return -EAGAIN;
	r = tx_state_get(c);
	if (r < 0)
		return r;
	c->release_at = UINT64_MAX;
	i = c->free_head;
	m = &c->m[i];
	c->free_head = m->next;
	*m = (struct tmsg){
		.cookie = msg->cookie, .rkey = msg->rkey, .roff = msg->roff, .len = msg->len,
		.ord = msg->ord, .msg_id = ++c->seq << SLOT_BITS | i,
		.dst_ep = msg->dst_ep, .dst_conn = msg->dst_conn,
		.opcode = msg->opcode, .state = M_LIVE, .wflags = msg->flags,
	};
	c->live++;
	q_append(c, i);
	c->st.msgs_submitted++;
	deadline_update(c);
	return 0;
}

/* The message completes with err now; its packets still out are left to
 * the scoreboard (resent as fillers if lost). */
static void fail_msg(struct tchan *c, uint32_t i, int err)
{
	struct tmsg *m = &c->m[i];
	uint64_t cookie = m->cookie;

	if (m->state != M_LIVE)
		return;
	if (m->queued)
		q_remove(c, i);
	if (m->held)
		held_remove(c, i);
	if (m->outstanding)
		m->state = M_DEAD;
	else
		slot_free(c, i);
	c->st.msgs_failed++;
	c->cb.complete(c->p.cb_arg, cookie, err);
}

static void ch_reset(struct tchan *c, int err)
{
	uint32_t n = 0;

	if (err >= 0)
		err = -ECONNRESET;
	/* settle everything first: complete() may submit anew */
	for (uint32_t i = 0; i < c->mcap; i++) {
		if (c->m[i].state == M_FREE)
			continue;
		if (c->m[i].state == M_LIVE)
			c->cookies[n++] = c->m[i].cookie;
		if (c->m[i].queued)
			q_remove(c, i);
		c->m[i].held = false;
		slot_free(c, i);
	}
	c->cur = NONE;
	c->held_head = c->held_tail = NONE;
	sb_tx_clear(c->tx, NULL, NULL);
	c->rto_judge = false;          /* what it resent is gone unacknowledged */
	paths_clear_load(c->paths);
	c->gbn_una = c->next_psn;
	c->gbn_una_resends = 0;
	c->cr_told = c->cr_req_owed = false;   /* nothing waits for credit now */
	c->cr_reqs = 0;
	c->st.msgs_failed += n;
	deadline_update(c);
	for (uint32_t k = 0; k < n; k++)
		c->cb.complete(c->p.cb_arg, c->cookies[k], err);
}

/* ---- sending ---- */

/* The payload of message i at [off, off + len) behind out's header, or
 * with tx_gather where map() says it lies; nothing for a message that
 * already failed (the packet goes out as a filler). A read() error fails
 * the message and returns false. */
static bool fill_payload(struct tchan *c, uint32_t i, uint64_t off, uint32_t len,
			 struct tpchan_txpkt *out)
{
	struct tmsg *m = &c->m[i];
	int r;

	out->payload = NULL;
	if (m->state != M_LIVE || !len)
		return true;
	c->reading = true;
	if (c->p.tx_gather && !c->p.crc && c->cb.map)
		out->payload = c->cb.map(c->p.cb_arg, m->cookie, off, len);
	r = out->payload ? 0 : c->cb.read(c->p.cb_arg, m->cookie, off, out->buf + WIRE_DATA_HDR_LEN,
					  len);
	c->reading = false;
	if (r < 0) {
		fail_msg(c, i, r);
		return false;
	}
	return true;
}

/* The header in front of the payload fill_payload() found or put in place. */
static void write_data(struct tchan *c, uint32_t i, uint64_t off, uint32_t len, uint32_t psn,
		       uint16_t path, bool retx, bool more, uint64_t now, struct tpchan_txpkt *out)
{
	const struct tmsg *m = &c->m[i];
	struct wire_data d = {
		.flags = (retx ? WIRE_F_RETX : 0) | (more ? WIRE_F_MORE : 0) | m->wflags,
		.opcode = m->opcode, .path = path, .psn = psn, .token = c->p.tx_token,
		.dst_ep = m->dst_ep, .dst_conn = m->dst_conn, .msg_id = m->msg_id,
		.msg_len = m->len, .msg_off = off, .rkey = m->rkey, .roff = m->roff,
		.tsval = now, .payload_len = m->state == M_LIVE ? len : 0,
		.nacks_seen = c->ref_seen, .ord = m->ord,
	};
	int r;

	if (c->p.crc) {
		d.flags |= WIRE_F_CRC;
		d.crc = crc32c(0, out->buf + WIRE_DATA_HDR_LEN, d.payload_len);
	}
	/* cannot fail: payload_len <= mss and off + len <= msg_len; with a
	 * gathered payload only the header is written (wire_write_data does
	 * not touch the payload bytes when d.payload is NULL) */
	r = wire_write_data(out->buf, c->p.mtu, &d);
	out->len = r > 0 ? (uint32_t)r : 0;
	out->hdr_len = out->payload ? WIRE_DATA_HDR_LEN : 0;
	out->path = path;
	out->any_path = false;
	c->sync_owed = false;
	c->st.data_pkts_tx++;
	c->st.data_bytes_tx += d.payload_len;
}

/* Credit mode: a new packet needs credit, from the speculation of a burst
 * that started with nothing in flight or from the peer's grants. */
static bool credit_admits(const struct tchan *c)
{
	uint32_t nxt = c->txk->nxt;

	/* a burst may start from idle: nothing in flight and the peer not
	 * told that we wait (then we are blocked, not idle) */
	if (!credit_mode(c) || (nxt == c->txk->una && !c->cr_told))
		return true;
	return (c->cr_have_burst && psn_lt(nxt, c->cr_burst)) ||
	       (c->cr_have_limit && psn_lt(nxt, c->cr_limit));
}

/* Credit mode, data queued, and no credit for it. */
static bool credit_blocked(const struct tchan *c)
{
	return credit_mode(c) && (c->cur != NONE || c->q_head != NONE) && !credit_admits(c);
}

static bool window_admits(const struct tchan *c, uint64_t bytes)
{
	uint64_t inflight = c->txk->bytes;

	return inflight == 0 || sat_add(inflight, bytes) <= c->win;
}

/* Packets declared lost, for adaptive_chunk's estimate. */
static void loss_note(struct tchan *c, uint32_t pkts)
{
	uint64_t v = c->loss_ppm + (uint64_t)pkts * (1000000u >> ADAPT_LOSS_SHIFT);

	c->loss_ppm = (uint32_t)min_u64(v, 1000000u);
}

/* Bytes of the next chunk (before the message's end cuts it). */
static uint64_t chunk_size(const struct tchan *c)
{
	uint64_t full = c->p.chunk_bytes, ch = full;

	/* with path runs, whole packets: a short packet at every chunk's
	 * end would end the NIC's batch there (GSO takes equal sizes) */
	if (c->p.path_run_bytes)
		full = (full + c->mss - 1) / c->mss * c->mss;
	if (!c->p.adaptive_chunk)
		return full;
	if (c->win < ADAPT_WIN_CHUNKS * full)
		ch = c->win / ADAPT_WIN_CHUNKS;
	if (c->loss_ppm > ADAPT_LOSS_PPM)
		ch = min_u64(ch, full / ADAPT_LOSS_DIV);
	if (ch >= full)
		return full;
	ch = ch / c->mss * c->mss;     /* whole packets */
	return ch > c->mss ? ch : min_u64(c->mss, full);
}

/* New data may go now: a chunk is half cut, or the next one fits. */
static bool can_send_new(const struct tchan *c)
{
	const struct tmsg *m;

	if (c->txk->nxt - c->txk->una >= c->txk->cap)
		return false;
	if (!credit_admits(c))
		return false;
	if (c->cur != NONE)
		return true;
	if (c->q_head == NONE)
		return false;
	m = &c->m[c->q_head];
	return window_admits(c, min_u64(chunk_size(c), m->len - m->next_off));
}

static int send_new(struct tchan *c, uint64_t now, struct tpchan_txpkt *out, int n, int max)
{
	/* bytes of the short chunks (under a packet) cut in a row in this
	 * call, all on chunk_path; UINT64_MAX: the last chunk was not short */
	uint64_t short_bytes = UINT64_MAX;

	while (n < max && can_send_new(c)) {
		struct tmsg *m;
		uint64_t off;
		uint32_t i, len, psn;
		bool more;

		if (c->cur == NONE) {
			/* a chunk: one window decision, one path for all its
			 * packets unless path_per_packet */
			uint64_t left, ch = chunk_size(c), bytes;
			bool keep;

			i = c->q_head;
			m = &c->m[i];
			c->cur = i;
			left = m->len - m->next_off;
			bytes = min_u64(ch, left);
			c->chunk_end = m->next_off + bytes;
			/* short chunks cut in a row share a path, up to a chunk's
			 * worth: a small put and the signal behind it then leave
			 * in one system call and arrive for one ACK. Spreading
			 * them would balance nothing. */
			keep = short_bytes != UINT64_MAX && bytes < c->mss &&
			       short_bytes + bytes <= c->p.chunk_bytes;
			short_bytes = bytes >= c->mss ? UINT64_MAX : (keep ? short_bytes : 0) + bytes;
			/* path_run_bytes: chunks keep the path until the run
			 * is used up (one GSO send can then span them) */
			if (!c->p.path_per_packet && !keep &&
			    (!c->p.path_run_bytes || c->run_left == 0)) {
				c->chunk_path = paths_pick(c->paths, now);
				c->run_left = c->p.path_run_bytes;
			}
			c->run_left -= (uint32_t)min_u64(c->run_left, bytes);
			if (ch < c->p.chunk_bytes && ch < left)
				c->st.small_chunks++;
		}
		i = c->cur;
		m = &c->m[i];
		off = m->next_off;
		if (c->p.path_per_packet)
			c->chunk_path = paths_pick(c->paths, now);
		len = (uint32_t)min_u64(c->mss, c->chunk_end - off);
		if (!fill_payload(c, i, off, len, &out[n]))
			continue;      /* failed and dequeued; nothing was numbered */
		more = false;
		if (credit_mode(c)) {
			if (c->txk->nxt == c->txk->una && !c->cr_told) {
				/* a burst from idle: speculate; a grant not ahead
				 * of us is spent (and could look new after a wrap) */
				c->cr_burst = c->txk->nxt + c->cr_spec_pkts;
				c->cr_have_burst = true;
			}
			/* credit reached is spent: it could look ahead again
			 * after 2^31 more psns */
			if (c->cr_have_burst && !psn_lt(c->txk->nxt + 1, c->cr_burst))
				c->cr_have_burst = false;
			if (c->cr_have_limit && !psn_lt(c->txk->nxt + 1, c->cr_limit))
				c->cr_have_limit = false;
			/* i is on the send queue until wholly cut: more after
			 * this packet is the rest of it or a message behind it */
			more = off + len < m->len || m->next != NONE;
			c->cr_told = more;
			c->cr_told_ns = now;
		}
		psn = sb_tx_push(c->tx, &(struct sb_pkt){
			.cookie = (uint64_t)i << OFF_BITS | off, .sent_ns = now,
			.bytes = len, .path = c->chunk_path,
		});
		paths_on_send(c->paths, c->chunk_path);
		write_data(c, i, off, len, psn, c->chunk_path, false, more, now, &out[n]);
		c->next_psn = psn + 1;
		c->last_data_ns = now;
		c->tlp_armed = true;       /* a new tail may need a probe */
		c->loss_ppm -= c->loss_ppm >> ADAPT_LOSS_SHIFT;
		m->outstanding++;
		m->started = true;
		m->next_off = off + len;
		if (m->next_off == m->len)
			q_remove(c, i);        /* all cut; completes when all acked */
		else if (m->next_off == c->chunk_end)
			c->cur = NONE;
		n++;
	}
	return n;
}

static int send_lost(struct tchan *c, uint64_t now, struct tpchan_txpkt *out, int n, int max)
{
	struct sb_pkt sp;
	uint32_t psn;

	while (n < max && sb_tx_next_lost(c->tx, &psn, &sp)) {
		uint32_t i = (uint32_t)(sp.cookie >> OFF_BITS);
		uint64_t off = sp.cookie & OFF_MASK;
		uint16_t path;

		/* Go-Back-N resends everything after a hole: a packet's retx
		 * counts the holes before it too. What says the peer is gone
		 * is the packet at the cumulative point resent too often. In
		 * SACK mode, a packet the timer found lost too often: resends
		 * that ACKs called for mean the peer answers and the fabric
		 * drops (an incast without congestion control), not that the
		 * peer is gone. */
		if (c->p.go_back_n ? psn == c->gbn_una && c->gbn_una_resends++ >= c->p.max_retx :
				     sb_tx_rtos(c->tx, psn) > c->p.max_retx) {
			if (c->cb.gave_up)
				c->cb.gave_up(c->p.cb_arg);
			ch_reset(c, -ETIMEDOUT);
			break;
		}
		/* steer the resend away from the path that lost it (a tail
		 * probe's may have lost nothing) */
		if (!sb_tx_probing(c->tx, psn))
			paths_on_loss(c->paths, sp.path, now);
		paths_on_done(c->paths, sp.path);
		path = paths_pick(c->paths, now);
		paths_on_send(c->paths, path);
		/* a read() error fails the message; the resend is then a filler */
		fill_payload(c, i, off, sp.bytes, &out[n]);
		write_data(c, i, off, sp.bytes, psn, path, true,
			   credit_mode(c) && (c->cur != NONE || c->q_head != NONE), now, &out[n]);
		sb_tx_retransmitted(c->tx, psn, path, now);
		c->last_data_ns = now;
		c->st.retx_pkts++;
		n++;
	}
	return n;
}

/* How long a refusal record waits for its confirmation before it goes again. */
static uint64_t ref_interval(const struct tchan *c)
{
	uint64_t rto = c->rtt.rto_ns;         /* <= rto_max_ns */

	if (rto > c->p.rto_max_ns >> c->ref_backoff)
		return c->p.rto_max_ns;
	return rto << c->ref_backoff;
}

/* Refusal records never sent, or not confirmed for an interval, in seq
 * order. Sets ref_due to when the next one is due. */
static int send_refusals(struct tchan *c, uint64_t now, struct tpchan_txpkt *out, int n, int max)
{
	uint64_t ivl, due = UINT64_MAX;
	bool resent = false;

	if (c->ref_issued == c->ref_confirmed || now < c->ref_due)
		return n;
	ivl = ref_interval(c);
	for (uint32_t seq = c->ref_confirmed + 1; seq != c->ref_issued + 1; seq++) {
		struct nack_ent *e = &c->nacks[seq % c->ncap];
		struct wire_nack w;
		int r;

		if (e->sent && now < sat_add(e->sent_ns, ivl)) {
			due = min_u64(due, sat_add(e->sent_ns, ivl));
			continue;
		}
		if (n == max) {
			due = now;             /* out of room: the rest next call */
			break;
		}
		w = (struct wire_nack){ .seq = seq, .token = c->p.tx_token, .psn = e->psn,
					.msg_id = e->msg_id, .err = e->err };
		r = wire_write_nack(out[n].buf, c->p.mtu, &w);
		out[n].len = r > 0 ? (uint32_t)r : 0;
		out[n].payload = NULL;         /* all of it is in buf */
		out[n].hdr_len = 0;
		out[n].path = 0;
		out[n].any_path = true;
		if (e->sent) {
			resent = true;
			c->st.nacks_retx++;
		}
		e->sent = true;
		e->sent_ns = now;
		due = min_u64(due, sat_add(now, ivl));
		c->st.nacks_tx++;
		n++;
	}
	if (resent && c->ref_backoff < NACK_BACKOFF_MAX)
		c->ref_backoff++;
	c->ref_due = due;
	return n;
}

static bool ack_due(const struct tchan *c, uint64_t now)
{
	return c->ack_pending &&
	       (c->ack_now || c->ack_count >= c->p.ack_every ||
		now - c->ack_first_ns >= c->p.ack_delay_ns ||
		(c->ack_soon_ns && now >= c->ack_soon_ns));
}

static uint64_t ack_deadline(const struct tchan *c)
{
	if (!c->ack_pending)
		return UINT64_MAX;
	if (c->ack_now || c->ack_count >= c->p.ack_every)
		return 0;
	if (c->ack_soon_ns)
		return min_u64(c->ack_soon_ns, sat_add(c->ack_first_ns, c->p.ack_delay_ns));
	return sat_add(c->ack_first_ns, c->p.ack_delay_ns);
}

static int send_acks(struct tchan *c, uint64_t now, struct tpchan_txpkt *out, int n, int max)
{
	uint32_t copies;
	bool timed;

	if (!ack_due(c, now))
		return n;
	/* due by the clock alone: a held ACK's wait ran out (its own, or
	 * ack_delay_ns first) with no DATA going back */
	timed = !c->ack_now && c->ack_count < c->p.ack_every;
	/* every packet dropped out of order was taken since (a duplicate,
	 * a resend): none is missing, no duplicate is owed */
	if (c->dupacks_owed && !c->ack_copy_sent && psn_lt(c->dup_psn, sb_rx_cum(c->rx)))
		c->dupacks_owed = 0;
	copies = c->dupacks_owed > 1 ? c->dupacks_owed : 1;
	/* Go-Back-N: a first copy that moves the cumulative point is no
	 * duplicate at the sender, so the packets dropped out of order after
	 * it would earn one too few (a tail of dupthresh drops waited for the
	 * RTO): one more copy */
	if (c->dupacks_owed && !c->ack_copy_sent && sb_rx_cum(c->rx) != c->ack_cum_sent)
		copies++;
	while (copies && n < max) {
		struct wire_ack a;             /* the writer reads sack_words words only */
		int r;

		a.flags = c->ack_ece ? WIRE_F_ECE : 0;
		a.hint_ppm = c->ack_hint;
		a.path = c->ack_path;
		a.token = c->p.tx_token;
		a.cum_psn = sb_rx_cum(c->rx);
		/* the first copy echoes what every ACK does; the copies after
		 * it stand for the packets dropped out of order, so they echo
		 * the newest of those: the sender counts a duplicate only if
		 * it echoes a packet sent with or after the one it is missing */
		a.tsecr = c->ack_copy_sent && c->dup_tsecr ? c->dup_tsecr : c->ack_tsecr;
		a.nacks_issued = c->ref_issued;
		a.nacks_seen = c->ref_seen;
		a.sack_words = c->p.go_back_n ? 0 : sb_rx_sack(c->rx, a.sack, c->sack_words);
		r = wire_write_ack(out[n].buf, c->p.mtu, &a);
		out[n].len = r > 0 ? (uint32_t)r : 0;
		out[n].payload = NULL;         /* all of it is in buf */
		out[n].hdr_len = 0;
		out[n].path = c->ack_path;
		out[n].any_path = true;
		c->sync_owed = false;
		c->st.acks_tx++;
		c->ack_copy_sent = true;
		c->ack_cum_sent = a.cum_psn;
		copies--;
		n++;
	}
	if (copies) {
		/* out of room: the rest next call. Before any copy went
		 * nothing changes: the next call counts them again (storing
		 * them would make one copy owed duplicates, or add the
		 * extra copy twice) */
		if (c->ack_copy_sent)
			c->dupacks_owed = copies;
		return n;
	}
	if (c->ack_soon_ns && timed) {
		c->pingpong = false;   /* no reply came: stop holding */
		c->st.ack_holds_expired++;
	}
	c->ack_pending = c->ack_now = c->ack_ece = c->ack_copy_sent = false;
	c->ack_count = c->dupacks_owed = c->ack_hint = 0;
	c->ack_soon_ns = c->dup_tsecr = 0;
	return n;
}

/* A NACK arrived and nothing since told the peer ref_seen: a SYNC ACK,
 * which carries the refusal counters and acknowledges nothing. */
static int send_sync(struct tchan *c, struct tpchan_txpkt *out, int n, int max)
{
	struct wire_ack a;
	int r;

	if (!c->sync_owed || n >= max)
		return n;
	a = (struct wire_ack){ .flags = WIRE_F_SYNC, .token = c->p.tx_token,
			       .nacks_issued = c->ref_issued, .nacks_seen = c->ref_seen };
	r = wire_write_ack(out[n].buf, c->p.mtu, &a);
	out[n].len = r > 0 ? (uint32_t)r : 0;
	out[n].payload = NULL;                 /* all of it is in buf */
	out[n].hdr_len = 0;
	out[n].path = 0;
	out[n].any_path = true;
	c->sync_owed = false;
	c->st.acks_tx++;
	return n + 1;
}

/* An RTO doubled per unanswered resend, up to rto_max. */
static uint64_t credit_backoff(const struct tchan *c, uint32_t resends)
{
	uint64_t rto = c->rtt.rto_ns;

	if (resends > CREDIT_BACKOFF_MAX)
		resends = CREDIT_BACKOFF_MAX;
	return rto > c->p.rto_max_ns >> resends ? c->p.rto_max_ns : rto << resends;
}

/* A GRANT waits for the DATA it let out. */
static bool grant_outstanding(const struct tchan *c)
{
	return c->cr_more && psn_lt(c->rx_high, c->cr_grant);
}

/* What credit traffic is due: a REQ when we wait for credit the peer does
 * not know we want, or told it a backed-off RTO ago and still wait (the
 * GRANT may have been lost); a GRANT again when credit is out and nothing
 * came for a backed-off RTO (the GRANT or the DATA it let out was lost).
 * A peer that lets CREDIT_RESENDS_MAX GRANTs go unanswered is taken to
 * want nothing more: its MORE or REQ is forgotten, so a sender that went
 * away costs a bounded number of packets and the channel can go idle. */
static void credit_timers(struct tchan *c, uint64_t now)
{
	if (credit_blocked(c) &&
	    (!c->cr_told || now - c->cr_told_ns >= credit_backoff(c, c->cr_reqs)))
		c->cr_req_owed = true;
	/* counted once the resend is owed: until it goes (a full batch may
	 * hold it back) later calls must not count it again */
	if (!c->cr_grant_owed && grant_outstanding(c) &&
	    now - c->cr_grant_ns >= credit_backoff(c, c->cr_grant_resends)) {
		if (c->cr_grant_resends >= CREDIT_RESENDS_MAX) {
			c->cr_more = false;
		} else {
			c->cr_grant_owed = true;
			c->cr_grant_resends++;
		}
	}
}

static int send_credit(struct tchan *c, uint64_t now, struct tpchan_txpkt *out, int n, int max)
{
	struct wire_credit w = { .token = c->p.tx_token };
	int r;

	if ((!c->cr_req_owed && !c->cr_grant_owed) || n >= max)
		return n;
	if (c->cr_grant_owed) {
		w.flags |= WIRE_F_GRANT;
		w.psn = c->cr_grant;
		c->cr_grant_ns = now;
	} else {
		w.psn = c->txk->nxt;
	}
	if (c->cr_req_owed) {
		w.flags |= WIRE_F_REQ;
		c->cr_told = true;
		c->cr_told_ns = now;
		if (c->cr_reqs < UINT8_MAX)
			c->cr_reqs++;
		c->st.credit_reqs_tx++;
	}
	r = wire_write_credit(out[n].buf, c->p.mtu, &w);
	out[n].len = r > 0 ? (uint32_t)r : 0;
	out[n].payload = NULL;                 /* all of it is in buf */
	out[n].hdr_len = 0;
	out[n].path = 0;
	out[n].any_path = true;
	c->cr_req_owed = c->cr_grant_owed = false;
	c->st.credits_tx++;
	return n + 1;
}

/* The probe timeout: two smoothed RTTs plus the ACK delay a lone packet
 * may wait at the receiver (RFC 8985's PTO); 0 when there is no RTT sample
 * yet or it would not come before the RTO (then the RTO does the job). */
static uint64_t tlp_pto(const struct tchan *c)
{
	uint64_t pto;

	if (!c->rtt.srtt_ns || c->p.go_back_n)
		return 0;
	pto = sat_add(2 * c->rtt.srtt_ns, c->p.ack_delay_ns);
	return pto < c->rtt.rto_ns ? pto : 0;
}

/* A probe may be due: data in flight, none of it known lost, nothing new
 * can go (new data would reveal a lost tail itself), not probed since the
 * last progress. */
static bool tlp_pending(const struct tchan *c)
{
	return c->tlp_armed && c->txk->nxt != c->txk->una && !c->txk->lost && !can_send_new(c);
}

/* When the probe is due, UINT64_MAX if none: for deadline_of, which has
 * already found nothing lost and nothing new to send. */
static uint64_t tlp_due_at(const struct tchan *c)
{
	uint64_t pto;

	if (!c->tlp_armed || c->txk->nxt == c->txk->una)
		return UINT64_MAX;
	pto = tlp_pto(c);
	return pto ? sat_add(c->last_data_ns, pto) : UINT64_MAX;
}

static void check_tlp(struct tchan *c, uint64_t now)
{
	uint64_t pto = tlp_pto(c);

	if (!pto || !tlp_pending(c) || now < sat_add(c->last_data_ns, pto))
		return;
	/* the probe is not a congestion signal: if it uncovers losses, the
	 * SACKs that follow say so and the CC hears of them then */
	c->tlp_armed = false;
	if (sb_tx_probe(c->tx, TLP_SCAN))
		c->st.tlp_probes++;
}

/* Holes whose reorder timer ran out: lost as if by fast retransmit. */
static void check_rack(struct tchan *c, uint64_t now)
{
	int n = sb_tx_rack_expire(c->tx, now);

	if (n <= 0)
		return;
	c->st.fast_retx += (uint64_t)n;
	loss_note(c, (uint32_t)n);
	c->cc->on_loss(c->cc_st, now, false);
	cc_refresh(c);
}

/* When the retransmission timer fires: an RTO after the oldest packet
 * unacknowledged was sent, and not sooner than an RTO after it last fired.
 * Without the second rule a timeout marks lost what was sent before
 * now - rto, an ACK of new data then takes the backoff back, and the next
 * batch of originals (sent microseconds after the first) times out at
 * once: one loss episode, many timeouts, each cutting the window again. */
static uint64_t rto_due_at(const struct tchan *c)
{
	uint64_t oldest = c->txk->oldest_sent_ns;

	if (oldest == UINT64_MAX)
		return UINT64_MAX;
	return sat_add(oldest > c->rto_fired ? oldest : c->rto_fired, c->rtt.rto_ns);
}

static void check_timer(struct tchan *c, uint64_t now)
{
	uint64_t rto = c->rtt.rto_ns;
	uint32_t lost0 = c->txk->lost;

	if (now < rto_due_at(c))
		return;
	c->rto_fired = now;
	/* SACK: what was sent an RTO ago; Go-Back-N: everything */
	sb_tx_timeout(c->tx, c->p.go_back_n ? now : now - rto);
	if (c->txk->lost > lost0)
		loss_note(c, c->txk->lost - lost0);
	c->st.retx_timeouts++;
	/* a timeout again before the verdict (backoff) keeps the first: the
	 * ACK of its resend must not read as older than a later one */
	if (!c->p.go_back_n && !c->rto_judge) {
		struct sb_pkt sp;
		uint32_t lp;

		c->rto_judge = true;
		c->rto_at = now;
		/* by the oldest packet it resends: una may be a fast
		 * retransmit from before it, whose late ACK would echo a time
		 * before the timeout and call a right one spurious */
		c->rto_psn = sb_tx_next_lost(c->tx, &lp, &sp) ? lp : c->txk->una;
	}
	rtt_on_timeout(&c->rtt);
	c->cc->on_loss(c->cc_st, now, true);
	cc_refresh(c);
}

/* 0 when something can go now, else when something will (ACK delay, a
 * refusal record's resend, the retransmission timer): exactly what
 * tpchan_tx acts on. A function of the state alone, kept in c->deadline so
 * that the engine's frequent questions (tpchan_next_deadline, and tpchan_tx
 * with nothing due) cost a load. c->deadline is never later than
 * deadline_of(c): every public call that changes the state ends with
 * deadline_update(), except that DATA, the per-packet case, only brings it
 * forward (tpchan_rx); an early value costs one tpchan_tx that sends
 * nothing and sets it right. */
static uint64_t deadline_core(const struct tchan *c)
{
	uint64_t t;

	if (c->sync_owed || c->txk->lost || c->cr_req_owed || c->cr_grant_owed || can_send_new(c))
		return 0;
	t = ack_deadline(c);
	if (credit_blocked(c))
		t = c->cr_told ? min_u64(t, sat_add(c->cr_told_ns, credit_backoff(c, c->cr_reqs))) : 0;
	if (grant_outstanding(c))
		t = min_u64(t, sat_add(c->cr_grant_ns, credit_backoff(c, c->cr_grant_resends)));
	if (c->ref_issued != c->ref_confirmed)
		t = min_u64(t, c->ref_due);
	t = min_u64(t, rto_due_at(c));
	t = min_u64(t, tlp_due_at(c));
	return min_u64(t, sb_tx_rack_deadline(c->tx));
}

static uint64_t deadline_of(const struct tchan *c)
{
	return min_u64(deadline_core(c), c->release_at);
}

static void deadline_update(struct tchan *c)
{
	c->deadline = deadline_of(c);
}

/* tpchan_tx when something is due. Kept out of line so that the engine's
 * many calls with nothing due cost a comparison, not this frame. */
__attribute__((noinline))
static int tx_due(struct tchan *c, uint64_t now_ns, struct tpchan_txpkt *out, int max)
{
	int n = 0, credit, data;

	if (now_ns >= c->release_at)
		state_release(c);
	check_rack(c, now_ns);
	check_timer(c, now_ns);
	check_tlp(c, now_ns);
	n = send_refusals(c, now_ns, out, n, max);
	if (c->ack_soon_ns && c->ack_pending && (c->txk->lost || can_send_new(c))) {
		/* DATA goes now: the held ACK leads it in this batch (at
		 * its front, so that the peer's RTT sample and completion
		 * do not wait behind the DATA) */
		c->ack_soon_ns = 0;
		c->ack_now = true;
		c->st.acks_with_data++;
	}
	n = send_acks(c, now_ns, out, n, max);
	n = send_lost(c, now_ns, out, n, max);
	data = n;
	n = send_new(c, now_ns, out, n, max);
	/* new DATA soon after a message's end (not a resend): a reply */
	if (c->p.ack_hold_ns && n > data && c->last_end_ns &&
	    now_ns - c->last_end_ns <= c->p.ack_hold_ns)
		c->pingpong = true;
	credit_timers(c, now_ns);
	credit = n;
	n = send_credit(c, now_ns, out, n, max);
	credit = n - credit;
	n = send_sync(c, out, n, max);
	/* a CREDIT alone is not traffic that keeps per-packet state busy */
	idle_note(c, now_ns, n - credit > 0);
	deadline_update(c);
	return n;
}

/* ---- receiving ---- */

static void ack_schedule(struct tchan *c, const struct wire_data *d, uint64_t now, bool counted,
			 bool at_once)
{
	/* a new packet after the first copy of the pending ACK went (Go-Back-N
	 * copies out of room, send_acks): the copies left acknowledge it too,
	 * so the first of them is a new ACK and echoes as one, not the packets
	 * dropped before it (dup_tsecr) */
	if (!c->ack_pending || (counted && c->ack_copy_sent)) {
		/* echo the oldest unacknowledged arrival: the RTT sample then
		 * includes the coalescing delay, and the RTO covers it */
		c->ack_pending = true;
		c->ack_copy_sent = false;
		c->ack_first_ns = now;
		c->ack_tsecr = d->tsval;
		c->ack_echo_retx = false;
		c->ack_path = d->path;
	}
	if (counted)
		c->ack_count++;
	if (at_once)
		c->ack_now = true;
}

/* The peer's nacks_seen: false if it claims more refusals than we issued. */
static bool ref_seen_ok(const struct tchan *c, uint32_t seen)
{
	uint32_t d = seen - c->ref_confirmed;

	return (int32_t)d <= 0 || d <= c->ref_issued - c->ref_confirmed;
}

/* The peer has seen our refusals up to `seen` (checked): those records are
 * settled. An older count changes nothing. */
static void ref_confirm(struct tchan *c, uint32_t seen)
{
	if ((int32_t)(seen - c->ref_confirmed) <= 0)
		return;
	c->ref_confirmed = seen;
	c->ref_backoff = 0;
}

/* An ACK's nacks_issued: the peer cannot have more refusals of ours
 * outstanding than its ring holds past what we have seen. */
static bool ref_issued_ok(const struct tchan *c, uint32_t issued)
{
	uint32_t d = issued - c->ref_seen;

	return (int32_t)d <= 0 || d <= NACK_RING;
}

/* Issue a refusal record for a refused packet; it goes out at once. One
 * unconfirmed record per message is enough: the sender fails the whole
 * message on the first, and any ACK that covers a later refused packet of
 * it reports a count that includes that first record. */
static void ref_issue(struct tchan *c, const struct wire_data *d, int err)
{
	struct nack_ent *e;

	if (err < -4095)
		err = -EIO;            /* not an errno the wire can carry */
	for (uint32_t seq = c->ref_confirmed + 1; seq != c->ref_issued + 1; seq++)
		if (c->nacks[seq % c->ncap].msg_id == d->msg_id)
			return;
	c->ref_issued++;
	e = &c->nacks[c->ref_issued % c->ncap];
	*e = (struct nack_ent){ .msg_id = d->msg_id, .psn = d->psn, .err = err };
	c->ref_due = 0;
	c->deadline = 0;
}

#define FIRST_NACKS 4u

/* Room for one more unconfirmed refusal record (fewer than NACK_RING are):
 * the ring, indexed by seq, doubles and its records move to their seq's
 * place in the larger one. */
static bool nack_room(struct tchan *c)
{
	uint32_t n = c->ncap ? c->ncap * 2 : FIRST_NACKS;
	struct nack_ent *t;

	if (c->ref_issued - c->ref_confirmed < c->ncap)
		return true;
	t = calloc(n, sizeof(*t));
	if (!t)
		return false;
	for (uint32_t seq = c->ref_confirmed + 1; seq != c->ref_issued + 1; seq++)
		t[seq % n] = c->nacks[seq % c->ncap];
	free(c->nacks);
	c->nacks = t;
	c->ncap = n;
	return true;
}

static int rx_data(struct tchan *c, const struct wire_data *d, uint64_t now)
{
	bool in_order, msg_end, hold;
	int r;

	if (d->token != c->p.rx_token) {
		c->st.drop_token++;
		return -EACCES;
	}
	/* a crc channel takes no packet without one: a peer that does not
	 * send it, or a flag bit flipped on the way, must not slip past */
	if ((d->flags & WIRE_F_CRC) ? !wire_crc_ok(d) : c->p.crc) {
		c->st.drop_crc++;
		return -EILSEQ;
	}
	/* any intact DATA, a duplicate too, answers our GRANTs: the sender is
	 * alive (credit_timers forgets only one that went silent) */
	c->cr_grant_resends = 0;
	/* any intact packet, even one dropped below, confirms refusals */
	if (!ref_seen_ok(c, d->nacks_seen)) {
		c->st.drop_malformed++;
		return -EBADMSG;
	}
	ref_confirm(c, d->nacks_seen);
	/* the records must have room before the packet is taken: a refusal
	 * cannot be lost after deliver() */
	if (c->ref_issued - c->ref_confirmed < NACK_RING && !nack_room(c)) {
		c->st.drop_nomem++;
		return -ENOMEM;
	}
	if (c->ref_issued - c->ref_confirmed == NACK_RING) {
		/* no room for the record this packet might need: not accepted,
		 * as if past the window; the peer resends it */
		c->st.drop_window++;
		ack_schedule(c, d, now, false, true);
		return -ERANGE;
	}
	r = sb_rx_accept(c->rx, d->psn);
	if (r == -ENOMEM) {
		c->st.drop_nomem++;            /* untracked: not acknowledged, resent */
		return r;
	}
	if (r < 0) {
		c->st.drop_window++;
		ack_schedule(c, d, now, false, true);
		/* Go-Back-N: every packet dropped out of order earns the
		 * sender a duplicate ACK, up to what makes it go back */
		if (c->p.go_back_n) {
			if (c->dupacks_owed < c->p.dupthresh)
				c->dupacks_owed++;
			/* dup_tsecr 0: the first drop since the last ACK went */
			if (!c->dup_tsecr || psn_lt(c->dup_psn, d->psn))
				c->dup_psn = d->psn;
			if (d->tsval > c->dup_tsecr)
				c->dup_tsecr = d->tsval;
		}
		return -ERANGE;
	}
	if (r == 0) {
		/* our ACK may have been lost: tell the sender again at once */
		c->st.dup_pkts_rx++;
		ack_schedule(c, d, now, false, true);
		return 0;
	}
	c->st.data_pkts_rx++;
	c->st.data_bytes_rx += d->payload_len;
	/* only from senders that wait for credit: nobody else is granted */
	if ((d->flags & WIRE_F_MORE) || c->cr_more)
		c->rx_pkt16 = c->rx_pkt16 ? c->rx_pkt16 - c->rx_pkt16 / 16 + d->payload_len +
						    WIRE_DATA_HDR_LEN
					  : 16 * (d->payload_len + WIRE_DATA_HDR_LEN);
	in_order = d->psn == c->rx_high;
	if ((int32_t)(d->psn + 1 - c->rx_high) > 0)
		c->rx_high = d->psn + 1;
	/* the newest packet says whether the sender still waits for credit
	 * (an older one, reordered or resent, may be out of date) */
	if (d->psn + 1 == c->rx_high)
		c->cr_more = (d->flags & WIRE_F_MORE) != 0;
	/* a grant behind what arrived means nothing; keeping it caught up
	 * stops it looking ahead again 2^31 packets later */
	if (psn_lt(c->cr_grant, c->rx_high))
		c->cr_grant = c->rx_high;
	/* a filler (no payload of a non-empty message) only takes its psn */
	if (d->payload_len || !d->msg_len) {
		r = c->cb.deliver(c->p.cb_arg, d);
		if (r < 0) {
			c->st.drop_refused++;
			ref_issue(c, d, r);
		}
	}
	/* a hole opened (psn past the highest) or closed (psn below it), or
	 * a message's last bytes: its sender completes it (and a fence or a
	 * waiting signal goes) on this ACK, so it does not wait out the
	 * coalescing delay */
	msg_end = d->msg_off + d->payload_len == d->msg_len;
	hold = msg_end && in_order && c->pingpong;
	ack_schedule(c, d, now, true, !in_order || (msg_end && !hold));
	if (msg_end && c->p.ack_hold_ns)
		c->last_end_ns = now;
	/* (not when the ACK goes at once anyway: ack_every reached) */
	if (hold && !c->ack_soon_ns && !c->ack_now && c->ack_count < c->p.ack_every) {
		c->ack_soon_ns = sat_add(now, c->p.ack_hold_ns);
		c->st.acks_held++;
	}
	/* a resend that arrived new (its original was lost) is what the ACK
	 * echoes, not an older arrival waiting for the same ACK: the sender
	 * tells a right timeout from a spurious one by the echo (RFC 3522),
	 * and the resend's own send time gives an exact RTT. Of two, the
	 * newer: a fast retransmit from before a timeout may arrive after the
	 * timeout's resend, and its echo would call the timeout spurious. */
	if ((d->flags & WIRE_F_RETX) && (!c->ack_echo_retx || d->tsval > c->ack_tsecr)) {
		c->ack_tsecr = d->tsval;
		c->ack_echo_retx = true;
		c->ack_path = d->path;   /* the sample is this path's RTT */
	}
	return 0;
}

/* The ACK that first covers the oldest packet of the last timeout: if it
 * echoes a copy sent before the timeout, the original arrived and the
 * timeout was spurious (RFC 3522; a lost original is acknowledged only
 * once its resend arrived, and the receiver echoes a resend that arrived
 * new, rx_data). A later ACK, one that moves una past it, may echo a fast
 * retransmit of a lower psn sent before the timeout: not a verdict. */
static void rto_verdict(struct tchan *c, uint64_t tsecr)
{
	c->rto_judge = false;
	if (tsecr < c->rto_at) {
		c->st.rto_spurious++;
		rtt_timeout_spurious(&c->rtt, c->rto_at);
	} else {
		rtt_timeout_right(&c->rtt, c->rto_at);
	}
}

static void on_acked(void *arg, uint32_t psn, const struct sb_pkt *p)
{
	struct tchan *c = arg;
	uint32_t i = (uint32_t)(p->cookie >> OFF_BITS);
	struct tmsg *m = &c->m[i];
	uint32_t lost = c->txk->lost;

	/* the scoreboard settles its counters before calling: a drop in
	 * lost_pending here is this packet, acknowledged before its resend */
	c->lost_acked += c->lost_seen - lost;
	c->lost_seen = lost;
	c->acked_bytes += p->bytes;
	paths_on_done(c->paths, p->path);
	if (c->rto_judge && psn == c->rto_psn)
		rto_verdict(c, c->ack_in_tsecr);
	if (c->p.go_back_n) {
		c->gbn_una = psn + 1;          /* cumulative only: in psn order */
		c->gbn_una_resends = 0;
	}
	if (--m->outstanding)
		return;
	if (m->state == M_DEAD) {
		slot_free(c, i);
	} else if (!m->queued) {
		uint64_t cookie = m->cookie;

		/* the peer refused packets we have not heard of yet: one of
		 * them may be this message's */
		if ((int32_t)(c->ref_issued_hi - c->ref_seen) > 0) {
			held_append(c, i, c->ref_issued_hi);
			return;
		}
		slot_free(c, i);
		c->st.msgs_completed++;
		c->cb.complete(c->p.cb_arg, cookie, 0);
	}
}

/* Complete the held messages whose refusals have all arrived. */
static void release_held(struct tchan *c)
{
	while (c->held_head != NONE) {
		uint32_t i = c->held_head;
		struct tmsg *m = &c->m[i];
		uint64_t cookie = m->cookie;

		if ((int32_t)(m->ref_need - c->ref_seen) > 0)
			break;
		held_remove(c, i);
		slot_free(c, i);
		c->st.msgs_completed++;
		c->cb.complete(c->p.cb_arg, cookie, 0);
	}
}

static int rx_ack(struct tchan *c, const struct wire_ack *a, uint64_t now)
{
	struct sb_ack_time at;
	uint32_t lost0, marked, issued_hi0;
	int r;

	if (a->token != c->p.rx_token) {
		c->st.drop_token++;
		return -EACCES;
	}
	if (!ref_issued_ok(c, a->nacks_issued) || !ref_seen_ok(c, a->nacks_seen)) {
		c->st.drop_malformed++;
		return -EBADMSG;
	}
	/* before the scoreboard: messages it completes must see the count
	 * (ref_issued_hi never falls behind ref_seen) */
	issued_hi0 = c->ref_issued_hi;
	if ((int32_t)(a->nacks_issued - c->ref_issued_hi) > 0)
		c->ref_issued_hi = a->nacks_issued;
	if (a->flags & WIRE_F_SYNC) {
		ref_confirm(c, a->nacks_seen);
		c->st.acks_rx++;               /* counters only */
		return 0;
	}
	lost0 = c->lost_seen = c->txk->lost;
	c->lost_acked = 0;
	c->acked_bytes = 0;
	c->ack_in_tsecr = a->tsecr;
	at = (struct sb_ack_time){
		.now_ns = now, .tsecr_ns = a->tsecr,
		.min_rtt_ns = c->rtt.min_rtt_ns, .srtt_ns = c->rtt.srtt_ns,
	};
	if (c->p.go_back_n)
		r = sb_tx_ack_gbn_at(c->tx, a->cum_psn, &at, on_acked, c);
	else
		r = sb_tx_ack_at(c->tx, a->cum_psn, a->sack, a->sack_words, &at, on_acked, c);
	if (r < 0) {
		c->ref_issued_hi = issued_hi0;
		c->st.drop_malformed++;        /* acknowledges psns never sent */
		return -EBADMSG;
	}
	ref_confirm(c, a->nacks_seen);
	c->st.acks_rx++;
	marked = c->txk->lost + c->lost_acked - lost0;
	if (marked) {
		c->st.fast_retx += marked;
		loss_note(c, marked);
		c->cc->on_loss(c->cc_st, now, false);
		cc_refresh(c);
	}
	if (r > 0) {
		/* timestamps make the sample unambiguous even for resends; only
		 * an ACK that acknowledges something new is a measurement */
		uint64_t sample = 0;

		c->tlp_armed = true;           /* progress: the next tail may probe */
		rtt_floor_tick(&c->rtt, now);
		if (a->tsecr <= now) {
			sample = now - a->tsecr ? now - a->tsecr : 1;
			rtt_sample(&c->rtt, sample);
			paths_on_rtt(c->paths, a->path, sample);
		}
		c->cc->on_ack(c->cc_st, &(struct cc_ack){
			.now_ns = now, .acked_bytes = c->acked_bytes, .rtt_ns = sample,
			.inflight_bytes = c->txk->bytes,
			.ecn = (a->flags & WIRE_F_ECE) != 0, .hint_ppm = a->hint_ppm,
		});
		cc_refresh(c);
	}
	return 0;
}

/* A refusal record: fail its message (if still live), note its seq, and
 * owe the peer our count either way (it sends until it hears it). */
static int rx_credit(struct tchan *c, const struct wire_credit *w)
{
	if (w->token != c->p.rx_token) {
		c->st.drop_token++;
		return -EACCES;
	}
	c->st.credits_rx++;
	if (w->flags & WIRE_F_REQ) {
		/* the sender waits: it is alive, and the GRANT we have out may
		 * be what it lost (the pacer grants nothing new while its grant
		 * runs far enough ahead), so that goes again */
		c->cr_more = true;
		c->cr_grant_resends = 0;
		if (psn_lt(c->rx_high, c->cr_grant))
			c->cr_grant_owed = true;
	}
	/* grants are cumulative: the newest wins, an old reordered one is
	 * nothing. One far ahead only lets out what flow control allows. */
	if ((w->flags & WIRE_F_GRANT) && (!c->cr_have_limit || psn_lt(c->cr_limit, w->psn))) {
		c->cr_limit = w->psn;
		c->cr_have_limit = true;
		c->cr_reqs = 0;
	}
	return 0;
}

static int rx_nack(struct tchan *c, const struct wire_nack *n)
{
	uint32_t i = (uint32_t)(n->msg_id & (MAX_MSGS_LIMIT - 1));
	uint32_t d = n->seq - c->ref_seen, bit = n->seq % NACK_RING;
	struct tmsg *m;

	if (n->token != c->p.rx_token) {
		c->st.drop_token++;
		return -EACCES;
	}
	if (!ref_issued_ok(c, n->seq)) {
		c->st.drop_malformed++;        /* past anything the peer can have issued */
		return -EBADMSG;
	}
	c->st.nacks_rx++;
	c->sync_owed = true;
	if ((int32_t)d <= 0 || (c->ref_map[bit / 64] >> bit % 64 & 1))
		return 0;                      /* seen before */
	c->ref_map[bit / 64] |= 1ull << bit % 64;
	if (i < c->mcap) {
		m = &c->m[i];
		/* only a message that has packets on the wire can have been
		 * refused; a record for one already failed means nothing */
		if (m->state == M_LIVE && m->msg_id == n->msg_id && m->started)
			fail_msg(c, i, n->err);
	}
	for (;;) {
		bit = (c->ref_seen + 1) % NACK_RING;
		if (!(c->ref_map[bit / 64] >> bit % 64 & 1))
			break;
		c->ref_map[bit / 64] &= ~(1ull << bit % 64);
		c->ref_seen++;
	}
	if ((int32_t)(c->ref_issued_hi - c->ref_seen) < 0)
		c->ref_issued_hi = c->ref_seen;
	release_held(c);
	return 0;
}

/* ---- timing and stats ---- */

/* One packet wire_parse took, of a known type (tpchan_rx_ext checked). */
static int ch_rx_pkt(struct tchan *c, const struct wire_pkt *w, uint64_t now_ns, bool ce,
		     uint32_t hint_ppm)
{
	int r;

	switch (w->type) {
	case WIRE_DATA:
		r = rx_data(c, &w->data, now_ns);
		if (ce && r == 0 && c->ack_pending) {
			/* congestion news goes back at once, not coalesced */
			c->ack_ece = true;
			c->ack_now = true;
		}
		/* the worst degree since the last ACK goes back with it; a
		 * degree is no reason to hurry the ACK (ECE is) */
		if (r == 0 && c->ack_pending && hint_ppm > c->ack_hint)
			c->ack_hint = hint_ppm;
		/* DATA brings only the ACK (and a new refusal record, which
		 * zeroes the deadline itself) forward; what else it settles can
		 * only leave the deadline early, which costs an idle tpchan_tx */
		c->deadline = min_u64(c->deadline, ack_deadline(c));
		return r;
	case WIRE_ACK:
		r = rx_ack(c, &w->ack, now_ns);
		break;
	case WIRE_NACK:
		r = rx_nack(c, &w->nack);
		break;
	default:                       /* WIRE_CREDIT */
		r = rx_credit(c, &w->credit);
		break;
	}
	/* another channel's token (only that is -EACCES here) is no traffic:
	 * a stranger's packets must not keep the per-packet state held */
	if (r != -EACCES)
		idle_note(c, now_ns, true);
	deadline_update(c);
	return r;
}

static const char *ch_cc_name(const struct tchan *c)
{
	return c->cc->name;
}

/* c's controller with its state at cc_st (c->cc_st, or a frozen
 * channel's unpacked copy) and the next psn to send, nxt */
static int ch_cc_describe(const struct tchan *c, const void *cc_st, uint32_t nxt,
			  const char **names, uint64_t *values, int n)
{
	int k = c->cc->describe ? c->cc->describe(cc_st, names, values, n) : 0;

	/* credit mode: how far the peer's grant reaches past our next psn */
	if (credit_mode(c) && k < n && names && values) {
		names[k] = "credit_pkts";
		values[k++] = c->cr_have_limit && psn_lt(nxt, c->cr_limit) ? c->cr_limit - nxt : 0;
	}
	return k;
}

static bool ch_credit_wanted(const struct tchan *c)
{
	return c->cr_more && psn_lt(c->cr_grant, c->rx_high + c->cr_ahead_pkts);
}

static uint64_t ch_credit_grant(struct tchan *c, uint64_t bytes)
{
	uint64_t pkts = (bytes + c->mss - 1) / c->mss;
	uint32_t base = psn_lt(c->cr_grant, c->rx_high) ? c->rx_high : c->cr_grant;
	uint32_t cap = c->rx_high + c->cr_ahead_pkts;

	/* never past the cap (docs/wire-protocol.md "Credit"): a whole
	 * quantum on top of a limit just below it went up to a quantum over */
	if (!psn_lt(base, cap))
		return 0;
	if (pkts == 0)
		pkts = 1;
	if (pkts > cap - base)
		pkts = cap - base;
	c->cr_grant = base + (uint32_t)pkts;
	c->cr_grant_owed = true;
	c->deadline = 0;
	c->st.credit_granted_pkts += pkts;
	/* wire bytes at the mean size of the recent packets: a chunk's last
	 * packet is short, and counting it as a full one would leave the
	 * pacer's link idle by that much; the mean since the channel began
	 * would price a bulk transfer after many small messages at their
	 * size, and let it in up to MTU / that size too fast */
	if (!c->rx_pkt16)
		return pkts * c->p.mtu;
	return pkts * (c->rx_pkt16 / 16);
}

static void ch_get_stats(const struct tchan *c, struct tpchan_stats *out)
{
	*out = c->st;
	out->inflight_pkts = sb_tx_inflight(c->tx);
	out->inflight_bytes = sb_tx_inflight_bytes(c->tx);
	out->path_load_pkts = paths_load(c->paths);
	out->queued_msgs = c->queued;
	out->nacks_pending = c->ref_issued - c->ref_confirmed;
	out->srtt_ns = c->rtt.srtt_ns;
	out->rto_ns = rtt_rto(&c->rtt);
	out->cwnd_bytes = c->cc->window(c->cc_st);
	out->loss_ppm = c->loss_ppm;
	out->sack_holes = sb_tx_holes(c->tx);
	out->spurious_retx = sb_tx_spurious(c->tx);
	out->state_bytes = state_bytes(c);
}

/* ---- changing the congestion controller at run time ---- */

static int ch_set_cc(struct tchan *c, const struct cc_ops *ops)
{
	uint64_t win;
	void *st;

	if (!c || !ops || !ops->state_size || !ops->init || !ops->on_ack || !ops->on_loss ||
	    !ops->window)
		return -EINVAL;
	st = calloc(1, ops->state_size);
	if (!st)
		return -ENOMEM;
	/* start from where the old controller stood, not from the initial
	 * window: a busy channel keeps its pace across the switch */
	win = min_u64(c->cc->window(c->cc_st), c->p.max_inflight_bytes);
	if (win < c->p.chunk_bytes)
		win = c->p.chunk_bytes;
	ops->init(st, &(struct cc_params){
		.mss = c->mss,
		.chunk = c->p.chunk_bytes,
		.init_window = win,
		.min_window = c->p.chunk_bytes,
		.max_window = c->p.max_inflight_bytes,
		.delay_slack_ns = c->p.cc_delay_slack_ns,
		.line_rate_bps = c->p.cc_line_rate_bps,
		.base_rtt_ns = c->p.cc_base_rtt_ns,
	});
	/* the fixed part is as large as the new state */
	c->base_bytes = c->base_bytes - c->cc->state_size + ops->state_size;
	free(c->cc_st);
	c->cc_st = st;
	c->cc = ops;
	c->p.cc = ops;
	/* credit from an earlier time in credit mode is spent or stale */
	c->cr_have_burst = c->cr_have_limit = false;
	c->cr_told = c->cr_req_owed = false;
	c->cr_reqs = 0;
	cc_refresh(c);
	/* a larger window may let new data go now */
	deadline_update(c);
	return 0;
}

/* ---- the handle: a live channel, or its fixed part packed while idle ---- */

/*
 * An idle channel (nothing queued, in flight, held or owed, no timer
 * running, its per-packet state released) keeps only its fixed part:
 * 1.4 KB, mostly counters and settings, which with a channel per host is
 * most of a host's idle transport state. Freezing packs that part (the
 * struct, the CC state, the scoreboards' and path table's fixed parts,
 * pointers cleared, derived fields left out) into a vpack string, about a
 * fifth of its size, and frees the rest; any call that needs the channel
 * unpacks it exactly as it was (thaw). A channel freezes when made and
 * when its idle_release_ns hold runs out; a call that thawed a frozen
 * channel and left it freezable (an old ACK, a reset) freezes it again at
 * once. Without memory, or if a derived field is not what thaw would
 * derive, it stays live. Getters read a frozen channel from an unpacked
 * copy on the stack.
 */
struct tpchan {
	struct tchan *c;               /* NULL while frozen */
	uint8_t *fz;                   /* frozen: the packed fixed part */
	uint32_t fz_len;
	/* packets turned away while frozen, added to the channel's counters
	 * when it thaws (saturating meanwhile): no memory to thaw
	 * (drop_nomem), and bytes that are no packet of this channel, which
	 * need no thaw (drop_malformed, drop_version, drop_token) */
	uint32_t nomem, malformed, version, token;
};

static void sat_inc(uint32_t *n)
{
	if (*n < UINT32_MAX)
		(*n)++;
}

static bool can_freeze(const struct tchan *c)
{
	return c->p.idle_release_ns && freezable(c) && !c->closing && !c->reading &&
	       chan_idle(c) && state_bytes(c) == c->base_bytes && deadline_core(c) == UINT64_MAX;
}

/* What the fixed part derives from the parameters and the CC state,
 * derived again: a frozen channel's string leaves it out. Needs c's
 * scoreboards, path table and CC state in place. */
static void derive(struct tchan *c)
{
	c->cb = *c->p.cb;
	c->cc = c->p.cc;
	c->mss = (uint32_t)min_u64(c->p.mtu - WIRE_DATA_HDR_LEN, WIRE_MAX_PAYLOAD);
	c->sack_words = (uint32_t)min_u64((c->p.mtu - WIRE_ACK_HDR_LEN) / 8, WIRE_SACK_WORDS_MAX);
	c->cr_ahead_pkts = (uint32_t)min_u64(c->p.max_inflight_pkts / 2,
					     ((uint64_t)CREDIT_AHEAD_CHUNKS * c->p.chunk_bytes + c->mss - 1) / c->mss);
	if (!c->cr_ahead_pkts)
		c->cr_ahead_pkts = 1;
	c->rtt.rto_min_ns = c->p.rto_min_ns;
	c->rtt.rto_max_ns = c->p.rto_max_ns;
	/* an idle channel's lists are empty */
	c->free_head = c->q_head = c->q_tail = c->cur = c->held_head = c->held_tail = NONE;
	cc_refresh(c);
	c->base_bytes = state_bytes(c);
}

/* The same fields cleared (zeros pack to a byte each). */
static void strip(struct tchan *t)
{
	if (credit_mode(t))
		t->cr_spec_pkts = 0;   /* else cc_refresh leaves it as it was */
	t->cb = (struct tpchan_cb){ 0 };
	t->cc = NULL;
	t->mss = t->sack_words = t->cr_ahead_pkts = 0;
	t->rtt.rto_min_ns = t->rtt.rto_max_ns = 0;
	t->free_head = t->q_head = t->q_tail = t->cur = t->held_head = t->held_tail = 0;
	t->win = 0;
	t->base_bytes = 0;
	t->p.seed = 0;                 /* read once, by paths_new; the table keeps its state */
}

/* Pack h's live channel and free it. On -ENOMEM the channel stays live.
 * Not counted in state_releases, which counts releases of the per-packet
 * state alone: the same with and without freezing. */
static int freeze(struct tpchan *h)
{
	struct tchan *c = h->c, t = *c;
	struct vpack v = { 0 };
	uint8_t *b;

	/* thaw derives these again: they must be what it will derive */
	derive(&t);
	if (memcmp(&t, c, sizeof(t)))
		return -EINVAL;
	strip(&t);
	t.tx = NULL;
	t.txk = NULL;
	t.rx = NULL;
	t.paths = NULL;
	t.cc_st = NULL;
	t.m = NULL;
	t.cookies = NULL;
	t.nacks = NULL;
	t.release_at = t.deadline = UINT64_MAX;
	t.st.spurious_retx = sb_tx_spurious(c->tx);   /* for stats while frozen */
	vpack_words(&v, &t, sizeof(t));
	vpack_words(&v, c->cc_st, c->cc->state_size);
	if (sb_tx_pack(c->tx, &v) < 0 || sb_rx_pack(c->rx, &v) < 0 || paths_pack(c->paths, &v) < 0 ||
	    v.err || v.len > UINT32_MAX) {
		free(v.buf);
		return -ENOMEM;
	}
	b = realloc(v.buf, v.len);     /* give back the packer's slack */
	h->fz = b ? b : v.buf;
	h->fz_len = (uint32_t)v.len;
	h->c = NULL;
	tchan_destroy(c);
	return 0;
}

/* The live channel, unpacked if frozen; NULL without memory (the frozen
 * state stays). */
static struct tchan *thaw(struct tpchan *h)
{
	struct vunpack r;
	struct tchan *c;

	if (h->c)
		return h->c;
	/* only now: a live channel has no packed string (fz is NULL) */
	r = (struct vunpack){ .p = h->fz, .end = h->fz + h->fz_len };
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (!vunpack_words(&r, c, sizeof(*c))) {
		free(c);
		return NULL;
	}
	c->cc_st = c->p.cc ? calloc(1, c->p.cc->state_size) : NULL;
	if (c->cc_st && vunpack_words(&r, c->cc_st, c->p.cc->state_size)) {
		c->tx = sb_tx_unpack(&r);
		c->rx = c->tx ? sb_rx_unpack(&r) : NULL;
		c->paths = c->rx ? paths_unpack(&r) : NULL;
	}
	if (!c->paths || r.p != r.end || !c->p.cb || !c->p.cc) {
		tchan_destroy(c);
		return NULL;
	}
	c->txk = sb_tx_counts(c->tx);
	derive(c);
	c->st.drop_nomem += h->nomem;
	c->st.drop_malformed += h->malformed;
	c->st.drop_version += h->version;
	c->st.drop_token += h->token;
	h->nomem = h->malformed = h->version = h->token = 0;
	free(h->fz);
	h->fz = NULL;
	h->fz_len = 0;
	h->c = c;
	return c;
}

/* A call that found h frozen (was_frozen) and left nothing going: pack it
 * again (without memory it stays live until its next traffic and hold). */
static void settle(struct tpchan *h, bool was_frozen)
{
	if (was_frozen && h->c && can_freeze(h->c))
		(void)freeze(h);
}

/* A frozen channel's struct and CC state (cc_st: CC_STATE_MAX bytes,
 * aligned) unpacked for reading; the pointers in t are not valid. */
static void peek(const struct tpchan *h, struct tchan *t, uint64_t *cc_st)
{
	struct vunpack r = { .p = h->fz, .end = h->fz + h->fz_len };

	/* packed by freeze() in this process: it unpacks */
	(void)vunpack_words(&r, t, sizeof(*t));
	(void)vunpack_words(&r, cc_st, t->p.cc->state_size);
	t->cc = t->p.cc;
}

struct tpchan *tpchan_new(const struct tpchan_params *p)
{
	struct tpchan *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->c = ch_new(p);
	if (!h->c) {
		free(h);
		return NULL;
	}
	settle(h, true);
	return h;
}

struct tpchan *tpchan_free(struct tpchan *h)
{
	if (!h)
		return NULL;
	if (h->c)
		ch_free(h->c);
	free(h->fz);
	free(h);
	return NULL;
}

int tpchan_submit(struct tpchan *h, const struct tpchan_msg *m)
{
	bool was = !h->c;
	struct tchan *c = thaw(h);
	int r;

	if (!c)
		return -ENOMEM;
	r = ch_submit(c, m);
	settle(h, was);
	return r;
}

int tpchan_tx(struct tpchan *h, uint64_t now_ns, struct tpchan_txpkt *out, int max)
{
	struct tchan *c = h->c;
	bool hold;
	int n;

	if (!c || !out || max <= 0 || c->deadline > now_ns)
		return 0;
	hold = now_ns >= c->release_at;
	n = tx_due(c, now_ns, out, max);
	if (hold && can_freeze(c))
		(void)freeze(h);
	return n;
}

int tpchan_rx(struct tpchan *h, const void *pkt, size_t len, uint64_t now_ns)
{
	return tpchan_rx_ext(h, pkt, len, now_ns, false, 0);
}

int tpchan_rx_ce(struct tpchan *h, const void *pkt, size_t len, uint64_t now_ns, bool ce)
{
	return tpchan_rx_ext(h, pkt, len, now_ns, ce, 0);
}

_Static_assert(offsetof(struct tchan, p) == 0 && offsetof(struct tpchan_params, tx_token) == 0 &&
	       offsetof(struct tpchan_params, rx_token) == 8,
	       "tpchan_rx_ext reads the tokens as the packed string's first two words");

/* The token a parsed packet carries; false for a type this side does not
 * know. */
static bool pkt_token(const struct wire_pkt *w, uint64_t *tok)
{
	switch (w->type) {
	case WIRE_DATA: *tok = w->data.token; return true;
	case WIRE_ACK: *tok = w->ack.token; return true;
	case WIRE_NACK: *tok = w->nack.token; return true;
	case WIRE_CREDIT: *tok = w->credit.token; return true;
	default: return false;
	}
}

/* Parsed once here: bytes that are no packet (bad header, another version
 * or an unknown type) are counted without the channel, and a frozen one
 * also turns away another channel's token (read from the packed string's
 * first words) without unpacking; the live channel checks its own. */
int tpchan_rx_ext(struct tpchan *h, const void *pkt, size_t len, uint64_t now_ns, bool ce,
		  uint32_t hint_ppm)
{
	bool was = !h->c;
	struct wire_pkt w;
	struct tchan *c;
	uint64_t t = 0, tok[2];        /* tx_token, rx_token */
	int r = wire_parse(pkt, len, &w);

	if (r == 0 && !pkt_token(&w, &t))
		r = -EPROTO;
	if (r == -EPROTO) {
		if (was)
			sat_inc(&h->version);
		else
			h->c->st.drop_version++;
		return r;
	}
	if (r < 0) {
		if (was)
			sat_inc(&h->malformed);
		else
			h->c->st.drop_malformed++;
		return -EBADMSG;
	}
	if (was) {
		struct vunpack u = { .p = h->fz, .end = h->fz + h->fz_len };

		if (!vunpack_words(&u, tok, sizeof(tok)) || t != tok[1]) {
			sat_inc(&h->token);
			return -EACCES;
		}
	}
	c = thaw(h);
	/* dropped unacknowledged: the peer resends */
	if (!c) {
		sat_inc(&h->nomem);
		return -ENOMEM;
	}
	r = ch_rx_pkt(c, &w, now_ns, ce, hint_ppm);
	settle(h, was);
	return r;
}

uint64_t tpchan_next_deadline(const struct tpchan *h)
{
	return h->c ? h->c->deadline : UINT64_MAX;
}

bool tpchan_tx_ready(const struct tpchan *h, uint64_t now_ns)
{
	return tpchan_next_deadline(h) <= now_ns;
}

void tpchan_reset(struct tpchan *h, int err)
{
	bool was = !h->c;
	struct tchan *c = thaw(h);

	/* frozen means nothing outstanding: without memory there is nothing
	 * to fail either */
	if (!c)
		return;
	ch_reset(c, err);
	settle(h, was);
}

void tpchan_get_stats(const struct tpchan *h, struct tpchan_stats *out)
{
	uint64_t cc_st[CC_STATE_MAX / 8];
	struct tchan t;

	if (h->c) {
		ch_get_stats(h->c, out);       /* a live channel holds its counts */
		return;
	}
	peek(h, &t, cc_st);
	*out = t.st;
	out->inflight_pkts = out->inflight_bytes = 0;
	out->queued_msgs = t.queued;
	out->nacks_pending = t.ref_issued - t.ref_confirmed;
	out->srtt_ns = t.rtt.srtt_ns;
	out->rto_ns = rtt_rto(&t.rtt);
	out->cwnd_bytes = t.cc->window(cc_st);
	out->loss_ppm = t.loss_ppm;
	out->sack_holes = 0;
	out->state_bytes = sizeof(*h) + h->fz_len;
	out->drop_nomem += h->nomem;
	out->drop_malformed += h->malformed;
	out->drop_version += h->version;
	out->drop_token += h->token;
}

uint32_t tpchan_path_stats(const struct tpchan *h, struct paths_stat *out, uint32_t max)
{
	uint32_t n;

	/* a frozen channel is idle: its path table went with its state */
	if (!h->c || !paths_live(h->c->paths))
		return 0;
	n = paths_count(h->c->paths);
	if (n > max)
		n = max;
	for (uint32_t i = 0; i < n; i++)
		(void)paths_stat(h->c->paths, (uint16_t)i, &out[i]);
	return n;
}

const char *tpchan_cc_name(const struct tpchan *h)
{
	uint64_t cc_st[CC_STATE_MAX / 8];
	struct tchan t;

	if (h->c)
		return ch_cc_name(h->c);
	peek(h, &t, cc_st);
	return t.cc->name;
}

int tpchan_cc_describe(const struct tpchan *h, const char **names, uint64_t *values, int n)
{
	uint64_t cc_st[CC_STATE_MAX / 8];
	struct tchan t;

	if (h->c)
		return ch_cc_describe(h->c, h->c->cc_st, h->c->txk->nxt, names, values, n);
	peek(h, &t, cc_st);
	return ch_cc_describe(&t, cc_st, t.next_psn, names, values, n);
}

bool tpchan_credit_wanted(const struct tpchan *h)
{
	/* a channel freezes only with no credit asked for (cr_more clear) */
	return h->c && ch_credit_wanted(h->c);
}

uint64_t tpchan_credit_grant(struct tpchan *h, uint64_t bytes)
{
	bool was = !h->c;
	struct tchan *c = thaw(h);
	uint64_t r;

	if (!c)
		return 0;
	r = ch_credit_grant(c, bytes);
	settle(h, was);
	return r;
}

int tpchan_set_cc(struct tpchan *h, const struct cc_ops *ops)
{
	bool was;
	struct tchan *c;
	int r;

	if (!h || !ops || !ops->state_size || !ops->init || !ops->on_ack || !ops->on_loss ||
	    !ops->window)
		return -EINVAL;
	was = !h->c;
	c = thaw(h);
	if (!c)
		return -ENOMEM;
	r = ch_set_cc(c, ops);
	settle(h, was);
	return r;
}
