/* SPDX-License-Identifier: MIT */
/*
 * tpchan: the transport channel to one remote host, shared by every endpoint
 * that talks to it (state grows as endpoints + hosts). Sans-I/O: the caller
 * feeds it messages to send, received packets and the time; it hands back
 * packets to transmit, delivers arriving payloads through a callback, and
 * reports message completions.
 *
 * What it does: cuts messages into chunks (the unit of congestion-control
 * and path decisions) and chunks into packets that fit the MTU; numbers
 * packets (psn) and keeps them on the sender scoreboard until acknowledged;
 * selective retransmission on SACK holes (fast retransmit) and on timeout
 * (RTO from measured RTT; a tail loss probe resends the newest packet
 * two RTTs after the last DATA when nothing else can go, so that a lost
 * tail does not wait for the RTO), or Go-Back-N when configured; ACK coalescing on
 * the receive side (every `ack_every` packets or after `ack_delay_ns`,
 * at once when a hole appears or a message ends); duplicate suppression;
 * flow control (bytes in flight and queued messages are bounded;
 * tpchan_submit says -EAGAIN);
 * congestion control through struct cc_ops; path choice per chunk through
 * struct paths. It is reliable and unordered: a message completes when all
 * of its packets are acknowledged, in whatever order, and every refusal the
 * receiver issued before acknowledging them has arrived (refusals are
 * numbered, counted in ACKs and resent until confirmed, so a refused message
 * never completes as a success); ordering between operations is the job of
 * the layer above.
 */
#ifndef UCCL_ENGINE_TPCHAN_H
#define UCCL_ENGINE_TPCHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/cc/cc.h"
#include "engine/paths.h"
#include "engine/wire.h"

struct tpchan;

struct tpchan_cb {
	/* Sender: copy bytes [off, off+len) of the message with this cookie
	 * into dst (a packet payload being built). 0, or a negative errno:
	 * the message then completes with that error. */
	int (*read)(void *arg, uint64_t cookie, uint64_t off, void *dst, uint32_t len);
	/* Sender, optional, used only with tpchan_params.tx_gather: where
	 * bytes [off, off+len) of the message lie in memory the caller can
	 * send from directly, or NULL (then read() copies them). The bytes
	 * must stay readable until the packet has been handed on. */
	const void *(*map)(void *arg, uint64_t cookie, uint64_t off, uint32_t len);
	/* Receiver: a new (not duplicate) DATA packet with the right token and
	 * a good crc. The layer above checks endpoint, key and bounds and
	 * writes the payload at its final place. 0, or a negative errno: the
	 * packet is still acknowledged (it arrived) and a refusal record (NACK)
	 * carrying the error goes back, reliably: the sender's message then
	 * completes with that error, never with 0. */
	int (*deliver)(void *arg, const struct wire_data *d);
	/* Sender: every packet of the message was acknowledged and no refusal
	 * can be outstanding for it (res 0), the receiver refused it (NACK: its
	 * error), or the channel was reset (tpchan_reset's error). Called
	 * exactly once per submitted message. */
	void (*complete)(void *arg, uint64_t cookie, int res);
	/* Sender, optional: the channel gave up on its peer (a packet went
	 * unacknowledged through max_retx timeouts). Called once per give-up,
	 * before the messages it fails complete with -ETIMEDOUT, and also
	 * when none was live (only failed ones still had packets out). */
	void (*gave_up)(void *arg);
};

/* Largest tpchan_params.path_run_bytes (the daemon's and the simulator's
 * bound too). */
#define TPCHAN_MAX_PATH_RUN (16u << 20)

/* The longest packet a channel builds (its mtu at most): a jumbo frame.
 * The daemon's packet buffers are sized for it. */
#define TPCHAN_MTU_MAX 9000u

struct tpchan_params {
	uint64_t tx_token;             /* the peer's token: put in packets we send */
	uint64_t rx_token;             /* ours: packets from the peer must carry it */
	uint32_t mtu;                  /* UDP payload bytes per packet, header included;
					* at most TPCHAN_MTU_MAX */
	uint32_t chunk_bytes;          /* default 32768 */
	uint32_t npaths;               /* 1 .. PATHS_MAX */
	uint32_t max_inflight_pkts;    /* sender scoreboard, power of two >= 1024 */
	uint32_t rx_window_pkts;       /* receiver window, >= max_inflight_pkts */
	uint64_t max_inflight_bytes;   /* flow control: cap on the CC window */
	uint32_t max_msgs;             /* messages queued or in flight */
	bool go_back_n;                /* recovery mode: false = SACK */
	/* cut chunks smaller than chunk_bytes (never below one MSS) while the
	 * CC window is under 4 chunks (window / 4) or recent loss is above 1%
	 * (chunk_bytes / 4); back to chunk_bytes when that clears */
	bool adaptive_chunk;
	/* send crc32c with every DATA packet and drop (drop_crc) any that
	 * arrives without one; without it, a crc that comes is still checked */
	bool crc;
	/* DATA packets may point at their payload where cb->map says it lies
	 * instead of copying it behind the header (tpchan_txpkt.payload): the
	 * caller's NIC gathers the two. Not with crc (the sum is over a copy). */
	bool tx_gather;
	uint64_t rto_init_ns, rto_min_ns, rto_max_ns;
	/* a packet the retransmission timer finds lost more often than this
	 * (Go-Back-N: resent this often at the cumulative point) means the
	 * peer is gone: the channel fails (-ETIMEDOUT). Resends that SACKs
	 * call for do not count: the peer is answering. */
	uint32_t max_retx;
	uint64_t ack_delay_ns;         /* longest an ACK waits to be coalesced */
	uint32_t ack_every;            /* ACK at least every this many DATA packets */
	/* 0: the ACK of a message's last packet goes at once. Else, while
	 * the peer's messages get replies (DATA went back within this long
	 * of a message's end; one hold that runs out ends it), it waits up
	 * to this long for DATA going back to leave in the same batch, and
	 * while an ACK is pending any DATA sent takes it along: a request-
	 * response exchange then costs one send per turn, not two. Holes
	 * and duplicates are still acknowledged at once. */
	uint64_t ack_hold_ns;
	uint32_t dupthresh;            /* SACKed packets above a hole that make it lost */
	/* SACK mode: true turns the reordering window (RACK) off, so that
	 * dupthresh alone declares a hole lost; default (false) on */
	bool rack_off;
	uint64_t path_loss_hold_ns;
	/* pick a path for every packet instead of once per chunk (the chunk
	 * stays the unit of window decisions): finer spraying, but a NIC that
	 * batches a chunk's packets per path (UDP GSO) batches less */
	bool path_per_packet;
	/* 0: a path per chunk. Else chunks keep their path until this many
	 * bytes went on it, so that a NIC batching per path (UDP GSO) can
	 * batch across chunks; the window still moves a chunk at a time.
	 * Chunks are then cut at whole packets. path_per_packet overrides
	 * the path choice (not the cut). At most TPCHAN_MAX_PATH_RUN. */
	uint32_t path_run_bytes;
	const struct cc_ops *cc;       /* NULL: cc_window_ops */
	uint64_t cc_delay_slack_ns;    /* cc_params.delay_slack_ns (0: the module's default) */
	uint64_t cc_line_rate_bps;     /* cc_params.line_rate_bps (0: unknown) */
	uint64_t cc_base_rtt_ns;       /* cc_params.base_rtt_ns: the fabric's unloaded RTT
					* (0: each controller learns the lowest it sees) */
	uint64_t seed;                 /* path choice randomness */
	/* The sequence number of the first packet each way; both ends must
	 * agree. The daemon uses 0; tests start near the wrap. */
	uint32_t first_psn;
	/* The per-packet state (scoreboards, message table, refusal records,
	 * per-path table) is allocated on first use and released after the
	 * channel has been idle this long: nothing queued, in flight or held,
	 * no holes either way, no refusal record unconfirmed. 0: never.
	 * With it set, an idle channel with no timer running also keeps its
	 * fixed part packed (about a fifth of its size) until the next call
	 * that needs it, from creation on; freeze_off keeps it unpacked. */
	uint64_t idle_release_ns;
	bool freeze_off;
	const struct tpchan_cb *cb;    /* read while the channel lives (an idle one
					* reads it again when it wakes) */
	void *cb_arg;
};

struct tpchan_msg {
	uint64_t cookie;               /* returned in complete() */
	uint8_t opcode;                /* enum uccl_opcode */
	uint32_t dst_ep, dst_conn;
	uint64_t rkey;                 /* PUT: remote key; SEND: tag */
	uint64_t roff;                 /* PUT: remote offset */
	uint64_t ord;                  /* carried in every packet (wire_data.ord) */
	uint64_t len;                  /* 0 allowed (SIGNAL): one packet, no payload */
	uint8_t flags;                 /* set in every packet: WIRE_F_SIGNAL or 0 */
};

struct tpchan_txpkt {
	uint8_t *buf;                  /* caller's buffer of at least mtu bytes */
	uint32_t len;                  /* set by tpchan_tx */
	uint16_t path;                 /* set by tpchan_tx */
	/* set by tpchan_tx when tx_gather let it: the packet is buf[0, hdr_len)
	 * followed by payload[0, len - hdr_len); else payload is NULL and the
	 * whole packet is in buf */
	const uint8_t *payload;
	uint32_t hdr_len;
	/* set by tpchan_tx: not DATA (ACK, NACK, CREDIT). The receiver does
	 * not care which path it came on, so a backend may send it on another
	 * path's socket to batch it with the packets around it. */
	bool any_path;
};

struct tpchan_stats {
	uint64_t msgs_submitted, msgs_completed, msgs_failed;
	uint64_t data_pkts_tx, data_bytes_tx, retx_pkts, retx_timeouts, fast_retx;
	uint64_t acks_tx, nacks_tx, acks_rx, nacks_rx;
	uint64_t acks_held;            /* ack_hold_ns: ACKs of a message's end that waited */
	uint64_t acks_with_data;       /* of those, ones that led DATA going back */
	uint64_t ack_holds_expired;    /* of those, ones whose wait ran out first */
	uint64_t nacks_retx;           /* refusal records sent again, unconfirmed */
	uint64_t msgs_held;            /* completions that waited for refusal records */
	uint64_t data_pkts_rx, data_bytes_rx, dup_pkts_rx;
	uint64_t drop_malformed, drop_version, drop_token, drop_crc, drop_window, drop_refused;
	uint64_t inflight_pkts, inflight_bytes, queued_msgs;
	uint64_t nacks_pending;        /* refusal records the peer has not confirmed */
	uint64_t credits_tx, credits_rx; /* CREDIT packets */
	uint64_t credit_reqs_tx;       /* of those sent, ones asking for credit */
	uint64_t credit_granted_pkts;  /* packets' worth of credit granted to the peer */
	uint64_t tlp_probes;           /* tail loss probes: the newest packet resent early */
	uint64_t rto_spurious;         /* retransmission timeouts whose originals arrived */
	uint64_t path_load_pkts;       /* now: packets the path table counts in flight */
	uint64_t spurious_retx;        /* resends acknowledged by an ACK an older copy triggered */
	uint64_t srtt_ns, rto_ns, cwnd_bytes;
	uint64_t small_chunks;         /* adaptive_chunk: chunks cut below chunk_bytes */
	uint32_t loss_ppm;             /* recent loss estimate (about the last 256 packets) */
	uint32_t sack_holes;
	uint64_t state_bytes;          /* heap bytes the channel holds now */
	uint64_t state_releases;       /* times the idle channel released its state */
	uint64_t drop_nomem;           /* packets dropped: no memory to track them */
};

struct tpchan *tpchan_new(const struct tpchan_params *p);   /* NULL on bad params */
/* Whether tpchan_new would take p, callbacks aside: for a caller that hands
 * p to another thread to build the channel and must report bad params now. */
bool tpchan_params_ok(const struct tpchan_params *p);
/* max_inflight_pkts (and rx_window_pkts) that let max_inflight_bytes be in
 * flight in full packets of this mtu: a power of two, at least the default
 * (4096), at most 2^30. */
uint32_t tpchan_inflight_pkts(uint64_t max_inflight_bytes, uint32_t mtu);
struct tpchan *tpchan_free(struct tpchan *c);                 /* accepts NULL */

/* Queue a message. -EAGAIN when max_msgs are queued or in flight
 * (backpressure: nothing is dropped), or when called from read() while the
 * message table would have to grow; -EINVAL for a bad message; -ENOMEM
 * when the send state (allocated on use) cannot be. */
int tpchan_submit(struct tpchan *c, const struct tpchan_msg *m);

/* Build up to max packets to send now: NACKs and ACKs first, then lost
 * packets, then new data as the window allows (and a SYNC ACK if a NACK
 * arrived and nothing else reports it). Returns how many were built. */
int tpchan_tx(struct tpchan *c, uint64_t now_ns, struct tpchan_txpkt *out, int max);

/* Feed one received packet. 0 if used, else a negative errno saying why it
 * was dropped (counted in the stats): -EBADMSG, -EPROTO, -EACCES (token),
 * -EILSEQ (bad crc, or none on a crc channel), -ERANGE (outside the receive window), -ENOMEM (the
 * receive state could not be allocated; the peer resends). */
int tpchan_rx(struct tpchan *c, const void *pkt, size_t len, uint64_t now_ns);
/* The same for a packet whose IP header carried a CE mark (ce): the ACK
 * for it goes at once and carries WIRE_F_ECE. */
int tpchan_rx_ce(struct tpchan *c, const void *pkt, size_t len, uint64_t now_ns, bool ce);
/* The same with the in-band congestion degree the fabric stamped on the
 * packet (hint_ppm, ppm of the marking range, 0 = none; cc_ack.hint_ppm):
 * the next ACK carries the highest degree of the DATA it acknowledges, and
 * the sender hands it to its congestion controller. The UDP backend has
 * no such report and passes 0. */
int tpchan_rx_ext(struct tpchan *c, const void *pkt, size_t len, uint64_t now_ns, bool ce,
		  uint32_t hint_ppm);

/* When tpchan_tx should next be called even without new input (ACK delay,
 * retransmission timer, refusal resend, releasing an idle channel's state);
 * UINT64_MAX if never. O(1). After a
 * DATA packet it may be early: tpchan_tx then sends nothing and sets it
 * right. Never late. */
uint64_t tpchan_next_deadline(const struct tpchan *c);
/* tpchan_next_deadline(c) <= now_ns: tpchan_tx has (or may have, see
 * above) something to send right now. */
bool tpchan_tx_ready(const struct tpchan *c, uint64_t now_ns);

/* Fail every queued and in-flight message with err (peer gone). */
void tpchan_reset(struct tpchan *c, int err);

void tpchan_get_stats(const struct tpchan *c, struct tpchan_stats *out);
/* Each path's state (paths.h) into out[0..max): the number written, 0 when
 * the channel holds no per-path state now (it releases it, counts
 * included, after idle_release_ns without traffic). */
uint32_t tpchan_path_stats(const struct tpchan *c, struct paths_stat *out, uint32_t max);

/*
 * Receiver-driven credit, the receiving side (docs/wire-protocol.md,
 * "Credit"). A peer whose cc is in credit mode (CC_F_CREDIT, "eqds") sends
 * new data only within the credit this side grants; the host's pull pacer
 * (engine/pull.h) decides when and to whom. wanted: the peer says it has
 * data waiting and the credit already granted does not run too far ahead
 * of what arrived. grant: extend the peer's credit by about `bytes` (whole
 * packets, at least one, up to the cap wanted looks at); the GRANT goes
 * with the next tpchan_tx. Returns the wire bytes the grant lets in (at the
 * mean size of the packets received so far), for the pacer's accounting:
 * 0 when the cap was reached (nothing granted).
 */
bool tpchan_credit_wanted(const struct tpchan *c);
uint64_t tpchan_credit_grant(struct tpchan *c, uint64_t bytes);
/* The congestion controller's name and up to n (name, value) pairs of its
 * state (cc_ops.describe); returns how many pairs. */
const char *tpchan_cc_name(const struct tpchan *c);
int tpchan_cc_describe(const struct tpchan *c, const char **names, uint64_t *values, int n);
/* Replace the congestion controller at run time. The new one starts from the
 * current window (within chunk_bytes .. max_inflight_bytes) rather than the
 * initial one; packets in flight stay in flight. 0, -EINVAL (ops incomplete)
 * or -ENOMEM; on failure the old controller stays. */
int tpchan_set_cc(struct tpchan *c, const struct cc_ops *ops);

#endif
