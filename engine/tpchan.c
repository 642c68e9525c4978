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
 * or closes. Nothing here allocates per packet or reads a clock.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/crc32c.h"
#include "engine/paths.h"
#include "engine/rtt.h"
#include "engine/scoreboard.h"
#include "engine/tpchan.h"

/*
 * What tpchan.h leaves open, as decided here:
 *  - A message that fails (NACK, read() error) completes at once; after
 *    complete() the channel never calls read() for it again. Its packets
 *    already on the scoreboard still need their psns filled at the peer, so a
 *    lost one is resent as a "filler": the same header with no payload
 *    (msg_len > 0, payload_len == 0), which the receiver acknowledges and
 *    never delivers. The message's table slot is held until those are
 *    acknowledged, and counts against max_msgs meanwhile.
 *  - A packet lost again after max_retx resends means the peer is out of
 *    reach: its psn can never be filled, so the whole channel fails as
 *    tpchan_reset(c, -ETIMEDOUT) would.
 *  - tpchan_free() completes every outstanding message with -ECANCELED;
 *    tpchan_reset() with its err (a non-negative err becomes -ECONNRESET).
 *    Neither rewinds psns: after a reset the peer's receiver will not
 *    accept new data past its stalled window; replace the channel.
 *  - A refused packet is acknowledged (it arrived), and a NACK goes out
 *    twice: at once, and again just before the next ACK, which is held back
 *    for ack_delay_ns so that the NACK overtakes it even over a reordering
 *    network. A NACK lost twice, or overtaken anyway, leaves the sender
 *    believing the message succeeded: NACKs are not acknowledged.
 *  - Retransmissions replace bytes already counted in flight and are not
 *    held back by the window; new chunks start only when they fit.
 *  - Go-Back-N: the receiver's window is one packet; every packet it drops
 *    out of order earns the sender a duplicate ACK (up to dupthresh at a
 *    time), and max_retx counts resends of the packet at the cumulative
 *    point only (the others are resent for holes before them).
 *  - msg_id = submission number << 24 | table slot: a NACK finds its
 *    message in O(1), and a stale or forged one fails the id check.
 *  - ACKs echo the tsval of the first packet since the previous ACK, so
 *    that RTT samples include the coalescing delay. There is no ECN input
 *    to tpchan_rx, so ACKs never carry WIRE_F_ECE.
 *  - Stats: data_pkts_rx/data_bytes_rx count new packets (delivered,
 *    refused or fillers); dup_pkts_rx duplicates; drop_window packets past
 *    the window, and those turned away while NACK_RING is full; fast_retx
 *    packets declared lost from ACKs (SACK holes, Go-Back-N duplicates);
 *    retx_timeouts RTO expiries; retx_pkts resends for any reason; acks_rx
 *    ACKs applied (bogus ones count in drop_malformed); queued_msgs
 *    messages not yet wholly cut into packets; cwnd_bytes the CC window
 *    before the max_inflight_bytes cap.
 *  - Callbacks may call tpchan_submit() and tpchan_get_stats() on this
 *    channel, nothing else (not from tpchan_free: submit then says -ESHUTDOWN).
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
/* NACKs waiting to be sent; a packet that might need one more is dropped
 * unacknowledged (and resent by the peer) rather than lose a NACK. */
#define NACK_RING 256u

enum { M_FREE, M_LIVE, M_DEAD };  /* DEAD: completed with an error, packets still out */

struct tmsg {
	uint64_t cookie, rkey, roff, len, msg_id;
	uint64_t next_off;             /* first byte not yet put in a packet */
	uint32_t dst_ep, dst_conn;
	uint32_t outstanding;          /* packets on the scoreboard */
	uint32_t prev, next;           /* send queue; next also links the free list */
	uint8_t opcode, state;
	bool queued;                   /* on the send queue */
	bool started;                  /* at least one packet pushed */
};

struct nack_ent {
	uint64_t msg_id;
	uint32_t psn;
	int32_t err;
	uint8_t copies;                /* 2: none sent yet; 1: the one with the ACK left */
};

struct tpchan {
	struct tpchan_params p;        /* defaults applied */
	struct tpchan_cb cb;
	uint32_t mss, sack_words;
	struct sb_tx *tx;
	struct sb_rx *rx;
	struct rtt rtt;
	struct paths *paths;
	const struct cc_ops *cc;
	void *cc_st;

	/* messages */
	struct tmsg *m;
	uint64_t *cookies;             /* scratch for tpchan_reset, max_msgs long */
	uint32_t free_head, live, queued;
	uint32_t q_head, q_tail;
	uint64_t seq;
	uint32_t cur;                  /* message whose chunk is being cut, or NONE */
	uint64_t chunk_end;
	uint16_t chunk_path;
	bool closing;

	uint32_t gbn_una;              /* Go-Back-N: the cumulative point, as acked */
	uint32_t gbn_una_resends;      /* times the packet at gbn_una was resent there */
	uint32_t next_psn;             /* the psn the next push gets */

	/* during sb_tx_ack: what the acked() calls saw */
	uint64_t acked_bytes;
	uint32_t lost_seen, lost_acked;

	/* receive side */
	uint32_t rx_high;              /* one past the highest psn accepted */
	bool ack_pending, ack_now;
	uint32_t ack_count;            /* new DATA since the last ACK */
	uint32_t dupacks_owed;         /* Go-Back-N: extra copies of the next ACK */
	uint64_t ack_first_ns, ack_hold_until, ack_tsecr;
	uint16_t ack_path;
	struct nack_ent nacks[NACK_RING];
	uint32_t nack_head, nack_n, nack_fresh;

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

	if (!p->cb || !p->cb->read || !p->cb->deliver || !p->cb->complete)
		return false;
	if (p->mtu <= WIRE_DATA_HDR_LEN || p->mtu < WIRE_ACK_HDR_LEN + 8)
		return false;
	if (p->npaths > PATHS_MAX || p->max_msgs > MAX_MSGS_LIMIT)
		return false;
	if (!p->go_back_n && p->rx_window_pkts < p->max_inflight_pkts)
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

struct tpchan *tpchan_new(const struct tpchan_params *params)
{
	struct tpchan *c;
	struct cc_params ccp;

	if (!params)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->p = *params;
	if (!apply_defaults(&c->p))
		goto out_free;
	c->cb = *c->p.cb;
	c->mss = (uint32_t)min_u64(c->p.mtu - WIRE_DATA_HDR_LEN, WIRE_MAX_PAYLOAD);
	c->sack_words = (uint32_t)min_u64((c->p.mtu - WIRE_ACK_HDR_LEN) / 8, WIRE_SACK_WORDS_MAX);

	c->tx = sb_tx_new(c->p.max_inflight_pkts, c->p.dupthresh);
	if (!c->tx)
		goto out_free;
	/* Go-Back-N receives in order only: a window of one packet */
	c->rx = sb_rx_new(c->p.go_back_n ? 1 : c->p.rx_window_pkts);
	if (!c->rx)
		goto out_tx;
	c->paths = paths_new(c->p.npaths, c->p.seed, c->p.path_loss_hold_ns);
	if (!c->paths)
		goto out_rx;
	c->cc = c->p.cc;
	c->cc_st = calloc(1, c->cc->state_size);
	if (!c->cc_st)
		goto out_paths;
	c->m = calloc(c->p.max_msgs, sizeof(*c->m));
	if (!c->m)
		goto out_cc;
	c->cookies = calloc(c->p.max_msgs, sizeof(*c->cookies));
	if (!c->cookies)
		goto out_msgs;

	for (uint32_t i = 0; i < c->p.max_msgs; i++)
		c->m[i].next = i + 1 < c->p.max_msgs ? i + 1 : NONE;
	c->free_head = 0;
	c->q_head = c->q_tail = c->cur = NONE;
	rtt_init(&c->rtt, c->p.rto_init_ns, c->p.rto_min_ns, c->p.rto_max_ns);
	ccp = (struct cc_params){
		.mss = c->mss,
		.chunk = c->p.chunk_bytes,
		.init_window = min_u64(c->p.max_inflight_bytes,
				       (uint64_t)INIT_WINDOW_CHUNKS * c->p.chunk_bytes),
		.min_window = c->p.chunk_bytes,
		.max_window = c->p.max_inflight_bytes,
	};
	c->cc->init(c->cc_st, &ccp);
	return c;

out_msgs:
	free(c->m);
out_cc:
	free(c->cc_st);
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

struct tpchan *tpchan_free(struct tpchan *c)
{
	if (!c)
		return NULL;
	c->closing = true;
	tpchan_reset(c, -ECANCELED);
	free(c->cookies);
	free(c->m);
	free(c->cc_st);
	paths_free(c->paths);
	sb_rx_free(c->rx);
	sb_tx_free(c->tx);
	free(c);
	return NULL;
}

/* ---- message table ---- */

static void q_append(struct tpchan *c, uint32_t i)
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

static void q_remove(struct tpchan *c, uint32_t i)
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

static void slot_free(struct tpchan *c, uint32_t i)
{
	struct tmsg *m = &c->m[i];

	m->state = M_FREE;
	m->next = c->free_head;
	c->free_head = i;
	c->live--;
}

int tpchan_submit(struct tpchan *c, const struct tpchan_msg *msg)
{
	struct tmsg *m;
	uint32_t i;

	if (c->closing)
		return -ESHUTDOWN;
	if (!msg || msg->len > MSG_LEN_MAX)
		return -EINVAL;
	if (c->live >= c->p.max_msgs)
		return -EAGAIN;
	i = c->free_head;
	m = &c->m[i];
	c->free_head = m->next;
	*m = (struct tmsg){
		.cookie = msg->cookie, .rkey = msg->rkey, .roff = msg->roff, .len = msg->len,
		.msg_id = ++c->seq << SLOT_BITS | i,
		.dst_ep = msg->dst_ep, .dst_conn = msg->dst_conn,
		.opcode = msg->opcode, .state = M_LIVE,
	};
	c->live++;
	q_append(c, i);
	c->st.msgs_submitted++;
	return 0;
}

/* The message completes with err now; its packets still out are left to
 * the scoreboard (resent as fillers if lost). */
static void fail_msg(struct tpchan *c, uint32_t i, int err)
{
	struct tmsg *m = &c->m[i];
	uint64_t cookie = m->cookie;

	if (m->state != M_LIVE)
		return;
	if (m->queued)
		q_remove(c, i);
	if (m->outstanding)
		m->state = M_DEAD;
	else
		slot_free(c, i);
	c->st.msgs_failed++;
	c->cb.complete(c->p.cb_arg, cookie, err);
}

void tpchan_reset(struct tpchan *c, int err)
{
	uint32_t n = 0;

	if (err >= 0)
		err = -ECONNRESET;
	/* settle everything first: complete() may submit anew */
	for (uint32_t i = 0; i < c->p.max_msgs; i++) {
		if (c->m[i].state == M_FREE)
			continue;
		if (c->m[i].state == M_LIVE)
			c->cookies[n++] = c->m[i].cookie;
		if (c->m[i].queued)
			q_remove(c, i);
		slot_free(c, i);
	}
	c->cur = NONE;
	sb_tx_clear(c->tx, NULL, NULL);
	c->gbn_una = c->next_psn;
	c->gbn_una_resends = 0;
	c->st.msgs_failed += n;
	for (uint32_t k = 0; k < n; k++)
		c->cb.complete(c->p.cb_arg, c->cookies[k], err);
}

/* ---- sending ---- */

/* The payload of message i at [off, off + len) into dst; nothing for a
 * message that already failed (the packet goes out as a filler). A read()
 * error fails the message and returns false. */
static bool fill_payload(struct tpchan *c, uint32_t i, uint64_t off, uint32_t len, uint8_t *dst)
{
	struct tmsg *m = &c->m[i];
	int r;

	if (m->state != M_LIVE || !len)
		return true;
	r = c->cb.read(c->p.cb_arg, m->cookie, off, dst, len);
	if (r < 0) {
		fail_msg(c, i, r);
		return false;
	}
	return true;
}

/* The header in front of a payload fill_payload() put in place. */
static void write_data(struct tpchan *c, uint32_t i, uint64_t off, uint32_t len, uint32_t psn,
		       uint16_t path, bool retx, uint64_t now, struct tpchan_txpkt *out)
{
	const struct tmsg *m = &c->m[i];
	struct wire_data d = {
		.flags = retx ? WIRE_F_RETX : 0,
		.opcode = m->opcode, .path = path, .psn = psn, .token = c->p.tx_token,
		.dst_ep = m->dst_ep, .dst_conn = m->dst_conn, .msg_id = m->msg_id,
		.msg_len = m->len, .msg_off = off, .rkey = m->rkey, .roff = m->roff,
		.tsval = now, .payload_len = m->state == M_LIVE ? len : 0,
	};
	int r;

	if (c->p.crc) {
		d.flags |= WIRE_F_CRC;
		d.crc = crc32c(0, out->buf + WIRE_DATA_HDR_LEN, d.payload_len);
	}
	/* cannot fail: payload_len <= mss and off + len <= msg_len */
	r = wire_write_data(out->buf, c->p.mtu, &d);
	out->len = r > 0 ? (uint32_t)r : 0;
	out->path = path;
	c->st.data_pkts_tx++;
	c->st.data_bytes_tx += d.payload_len;
}

static bool window_admits(const struct tpchan *c, uint64_t bytes)
{
	uint64_t inflight = sb_tx_inflight_bytes(c->tx);
	uint64_t win = min_u64(c->cc->window(c->cc_st), c->p.max_inflight_bytes);

	return inflight == 0 || sat_add(inflight, bytes) <= win;
}

/* New data may go now: a chunk is half cut, or the next one fits. */
static bool can_send_new(const struct tpchan *c)
{
	const struct tmsg *m;

	if (sb_tx_full(c->tx))
		return false;
	if (c->cur != NONE)
		return true;
	if (c->q_head == NONE)
		return false;
	m = &c->m[c->q_head];
	return window_admits(c, min_u64(c->p.chunk_bytes, m->len - m->next_off));
}

static int send_new(struct tpchan *c, uint64_t now, struct tpchan_txpkt *out, int n, int max)
{
	while (n < max && can_send_new(c)) {
		struct tmsg *m;
		uint64_t off;
		uint32_t i, len, psn;

		if (c->cur == NONE) {
			/* a chunk: one window decision, one path for all its packets */
			i = c->q_head;
			m = &c->m[i];
			c->cur = i;
			c->chunk_end = m->next_off + min_u64(c->p.chunk_bytes, m->len - m->next_off);
			c->chunk_path = paths_pick(c->paths, now);
		}
		i = c->cur;
		m = &c->m[i];
		off = m->next_off;
		len = (uint32_t)min_u64(c->mss, c->chunk_end - off);
		if (!fill_payload(c, i, off, len, out[n].buf + WIRE_DATA_HDR_LEN))
			continue;      /* failed and dequeued; nothing was numbered */
		psn = sb_tx_push(c->tx, &(struct sb_pkt){
			.cookie = (uint64_t)i << OFF_BITS | off, .sent_ns = now,
			.bytes = len, .path = c->chunk_path,
		});
		write_data(c, i, off, len, psn, c->chunk_path, false, now, &out[n]);
		c->next_psn = psn + 1;
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

static int send_lost(struct tpchan *c, uint64_t now, struct tpchan_txpkt *out, int n, int max)
{
	struct sb_pkt sp;
	uint32_t psn;

	while (n < max && sb_tx_next_lost(c->tx, &psn, &sp)) {
		uint32_t i = (uint32_t)(sp.cookie >> OFF_BITS);
		uint64_t off = sp.cookie & OFF_MASK;
		uint16_t path;

		/* Go-Back-N resends everything after a hole: a packet's retx
		 * counts the holes before it too. What says the peer is gone
		 * is the packet at the cumulative point resent too often. */
		if (c->p.go_back_n ? psn == c->gbn_una && c->gbn_una_resends++ >= c->p.max_retx :
				     sp.retx >= c->p.max_retx) {
			tpchan_reset(c, -ETIMEDOUT);
			break;
		}
		/* steer the resend away from the path that lost it */
		paths_on_loss(c->paths, sp.path, now);
		path = paths_pick(c->paths, now);
		/* a read() error fails the message; the resend is then a filler */
		fill_payload(c, i, off, sp.bytes, out[n].buf + WIRE_DATA_HDR_LEN);
		write_data(c, i, off, sp.bytes, psn, path, true, now, &out[n]);
		sb_tx_retransmitted(c->tx, psn, path, now);
		c->st.retx_pkts++;
		n++;
	}
	return n;
}

/* NACKs with `copies` copies left: 2 go out at once, 1 with the next ACK. */
static int send_nacks(struct tpchan *c, struct tpchan_txpkt *out, int n, int max, uint8_t copies)
{
	for (uint32_t k = 0; k < c->nack_n && n < max; k++) {
		struct nack_ent *e = &c->nacks[(c->nack_head + k) % NACK_RING];
		struct wire_nack w = { .token = c->p.tx_token, .psn = e->psn, .msg_id = e->msg_id,
				       .err = e->err };
		int r;

		if (e->copies != copies)
			continue;
		r = wire_write_nack(out[n].buf, c->p.mtu, &w);
		out[n].len = r > 0 ? (uint32_t)r : 0;
		out[n].path = 0;
		if (e->copies-- == 2)
			c->nack_fresh--;
		c->st.nacks_tx++;
		n++;
	}
	while (c->nack_n && c->nacks[c->nack_head].copies == 0) {
		c->nack_head = (c->nack_head + 1) % NACK_RING;
		c->nack_n--;
	}
	return n;
}

static bool ack_due(const struct tpchan *c, uint64_t now)
{
	return c->ack_pending && now >= c->ack_hold_until &&
	       (c->ack_now || c->ack_count >= c->p.ack_every ||
		now - c->ack_first_ns >= c->p.ack_delay_ns);
}

static uint64_t ack_deadline(const struct tpchan *c)
{
	uint64_t t;

	if (!c->ack_pending)
		return UINT64_MAX;
	t = c->ack_now || c->ack_count >= c->p.ack_every ? 0 :
	    sat_add(c->ack_first_ns, c->p.ack_delay_ns);
	return t > c->ack_hold_until ? t : c->ack_hold_until;
}

static int send_acks(struct tpchan *c, uint64_t now, struct tpchan_txpkt *out, int n, int max)
{
	uint32_t copies;

	if (!ack_due(c, now))
		return n;
	n = send_nacks(c, out, n, max, 1);
	copies = c->dupacks_owed > 1 ? c->dupacks_owed : 1;
	while (copies && n < max) {
		struct wire_ack a = { .path = c->ack_path, .token = c->p.tx_token,
				      .cum_psn = sb_rx_cum(c->rx), .tsecr = c->ack_tsecr };
		int r;

		if (!c->p.go_back_n)
			a.sack_words = sb_rx_sack(c->rx, a.sack, c->sack_words);
		r = wire_write_ack(out[n].buf, c->p.mtu, &a);
		out[n].len = r > 0 ? (uint32_t)r : 0;
		out[n].path = c->ack_path;
		c->st.acks_tx++;
		copies--;
		n++;
	}
	if (copies) {
		c->dupacks_owed = copies;      /* out of room: the rest next call */
		return n;
	}
	c->ack_pending = c->ack_now = false;
	c->ack_count = c->dupacks_owed = 0;
	return n;
}

static void check_timer(struct tpchan *c, uint64_t now)
{
	uint64_t oldest = sb_tx_oldest_sent(c->tx), rto = rtt_rto(&c->rtt);

	if (oldest == UINT64_MAX || now < oldest || now - oldest < rto)
		return;
	/* SACK: what was sent an RTO ago; Go-Back-N: everything */
	sb_tx_timeout(c->tx, c->p.go_back_n ? now : now - rto);
	c->st.retx_timeouts++;
	rtt_on_timeout(&c->rtt);
	c->cc->on_loss(c->cc_st, now, true);
}

int tpchan_tx(struct tpchan *c, uint64_t now_ns, struct tpchan_txpkt *out, int max)
{
	int n = 0;

	if (!out || max <= 0)
		return 0;
	check_timer(c, now_ns);
	n = send_nacks(c, out, n, max, 2);
	n = send_acks(c, now_ns, out, n, max);
	n = send_lost(c, now_ns, out, n, max);
	n = send_new(c, now_ns, out, n, max);
	return n;
}

/* ---- receiving ---- */

static void ack_schedule(struct tpchan *c, const struct wire_data *d, uint64_t now, bool counted,
			 bool at_once)
{
	if (!c->ack_pending) {
		/* echo the oldest unacknowledged arrival: the RTT sample then
		 * includes the coalescing delay, and the RTO covers it */
		c->ack_pending = true;
		c->ack_first_ns = now;
		c->ack_tsecr = d->tsval;
		c->ack_path = d->path;
	}
	if (counted)
		c->ack_count++;
	if (at_once)
		c->ack_now = true;
}

static void nack_queue(struct tpchan *c, const struct wire_data *d, int err, uint64_t now)
{
	struct nack_ent *e;

	if (err < -4095)
		err = -EIO;            /* not an errno the wire can carry */
	/* the ACK that covers this psn waits, so that the NACK gets there first */
	if (c->ack_hold_until < sat_add(now, c->p.ack_delay_ns))
		c->ack_hold_until = sat_add(now, c->p.ack_delay_ns);
	for (uint32_t k = 0; k < c->nack_n; k++)
		if (c->nacks[(c->nack_head + k) % NACK_RING].msg_id == d->msg_id &&
		    c->nacks[(c->nack_head + k) % NACK_RING].copies)
			return;        /* one pending NACK per message is enough */
	e = &c->nacks[(c->nack_head + c->nack_n) % NACK_RING];
	*e = (struct nack_ent){ .msg_id = d->msg_id, .psn = d->psn, .err = err, .copies = 2 };
	c->nack_n++;
	c->nack_fresh++;
}

static int rx_data(struct tpchan *c, const struct wire_data *d, uint64_t now)
{
	bool in_order;
	int r;

	if (d->token != c->p.rx_token) {
		c->st.drop_token++;
		return -EACCES;
	}
	if (!wire_crc_ok(d)) {
		c->st.drop_crc++;
		return -EILSEQ;
	}
	if (c->nack_n == NACK_RING) {
		/* no room for the NACK this packet might need: not accepted,
		 * as if past the window; the peer resends it */
		c->st.drop_window++;
		ack_schedule(c, d, now, false, true);
		return -ERANGE;
	}
	r = sb_rx_accept(c->rx, d->psn);
	if (r < 0) {
		c->st.drop_window++;
		ack_schedule(c, d, now, false, true);
		/* Go-Back-N: every packet dropped out of order earns the
		 * sender a duplicate ACK, up to what makes it go back */
		if (c->p.go_back_n && c->dupacks_owed < c->p.dupthresh)
			c->dupacks_owed++;
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
	in_order = d->psn == c->rx_high;
	if ((int32_t)(d->psn + 1 - c->rx_high) > 0)
		c->rx_high = d->psn + 1;
	/* a filler (no payload of a non-empty message) only takes its psn */
	if (d->payload_len || !d->msg_len) {
		r = c->cb.deliver(c->p.cb_arg, d);
		if (r < 0) {
			c->st.drop_refused++;
			nack_queue(c, d, r, now);
		}
	}
	/* a hole opened (psn past the highest) or closed (psn below it) */
	ack_schedule(c, d, now, true, !in_order);
	return 0;
}

static void on_acked(void *arg, uint32_t psn, const struct sb_pkt *p)
{
	struct tpchan *c = arg;
	uint32_t i = (uint32_t)(p->cookie >> OFF_BITS);
	struct tmsg *m = &c->m[i];
	uint32_t lost = sb_tx_lost_pending(c->tx);

	/* the scoreboard settles its counters before calling: a drop in
	 * lost_pending here is this packet, acknowledged before its resend */
	c->lost_acked += c->lost_seen - lost;
	c->lost_seen = lost;
	c->acked_bytes += p->bytes;
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

		slot_free(c, i);
		c->st.msgs_completed++;
		c->cb.complete(c->p.cb_arg, cookie, 0);
	}
}

static int rx_ack(struct tpchan *c, const struct wire_ack *a, uint64_t now)
{
	uint32_t lost0, marked;
	int r;

	if (a->token != c->p.rx_token) {
		c->st.drop_token++;
		return -EACCES;
	}
	lost0 = c->lost_seen = sb_tx_lost_pending(c->tx);
	c->lost_acked = 0;
	c->acked_bytes = 0;
	if (c->p.go_back_n)
		r = sb_tx_ack_gbn(c->tx, a->cum_psn, on_acked, c);
	else
		r = sb_tx_ack(c->tx, a->cum_psn, a->sack, a->sack_words, on_acked, c);
	if (r < 0) {
		c->st.drop_malformed++;        /* acknowledges psns never sent */
		return -EBADMSG;
	}
	c->st.acks_rx++;
	marked = sb_tx_lost_pending(c->tx) + c->lost_acked - lost0;
	if (marked) {
		c->st.fast_retx += marked;
		c->cc->on_loss(c->cc_st, now, false);
	}
	if (r > 0) {
		/* timestamps make the sample unambiguous even for resends; only
		 * an ACK that acknowledges something new is a measurement */
		uint64_t sample = 0;

		if (a->tsecr <= now) {
			sample = now - a->tsecr ? now - a->tsecr : 1;
			rtt_sample(&c->rtt, sample);
			paths_on_rtt(c->paths, a->path, sample);
		}
		c->cc->on_ack(c->cc_st, &(struct cc_ack){
			.now_ns = now, .acked_bytes = c->acked_bytes, .rtt_ns = sample,
			.inflight_bytes = sb_tx_inflight_bytes(c->tx),
			.ecn = (a->flags & WIRE_F_ECE) != 0,
		});
	}
	return 0;
}

static int rx_nack(struct tpchan *c, const struct wire_nack *n)
{
	uint32_t i = (uint32_t)(n->msg_id & (MAX_MSGS_LIMIT - 1));
	struct tmsg *m;

	if (n->token != c->p.rx_token) {
		c->st.drop_token++;
		return -EACCES;
	}
	c->st.nacks_rx++;
	if (i >= c->p.max_msgs)
		return 0;
	m = &c->m[i];
	/* only a message that has packets on the wire can have been refused;
	 * a NACK for one already completed is late and means nothing */
	if (m->state == M_LIVE && m->msg_id == n->msg_id && m->started)
		fail_msg(c, i, n->err);
	return 0;
}

int tpchan_rx(struct tpchan *c, const void *pkt, size_t len, uint64_t now_ns)
{
	struct wire_pkt w;
	int r;

	r = wire_parse(pkt, len, &w);
	if (r == -EPROTO) {
		c->st.drop_version++;
		return r;
	}
	if (r < 0) {
		c->st.drop_malformed++;
		return -EBADMSG;
	}
	switch (w.type) {
	case WIRE_DATA:
		return rx_data(c, &w.data, now_ns);
	case WIRE_ACK:
		return rx_ack(c, &w.ack, now_ns);
	case WIRE_NACK:
		return rx_nack(c, &w.nack);
	}
	c->st.drop_version++;
	return -EPROTO;
}

/* ---- timing and stats ---- */

uint64_t tpchan_next_deadline(const struct tpchan *c)
{
	uint64_t t, oldest;

	if (c->nack_fresh || sb_tx_lost_pending(c->tx) || can_send_new(c))
		return 0;
	t = ack_deadline(c);
	oldest = sb_tx_oldest_sent(c->tx);
	if (oldest != UINT64_MAX)
		t = min_u64(t, sat_add(oldest, rtt_rto(&c->rtt)));
	return t;
}

bool tpchan_tx_ready(const struct tpchan *c, uint64_t now_ns)
{
	return tpchan_next_deadline(c) <= now_ns;
}

void tpchan_get_stats(const struct tpchan *c, struct tpchan_stats *out)
{
	*out = c->st;
	out->inflight_pkts = sb_tx_inflight(c->tx);
	out->inflight_bytes = sb_tx_inflight_bytes(c->tx);
	out->queued_msgs = c->queued;
	out->srtt_ns = c->rtt.srtt_ns;
	out->rto_ns = rtt_rto(&c->rtt);
	out->cwnd_bytes = c->cc->window(c->cc_st);
	out->sack_holes = sb_tx_holes(c->tx);
}
