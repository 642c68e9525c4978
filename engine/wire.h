/* SPDX-License-Identifier: MIT */
/*
 * wire: the host-to-host packet format (version 5), specified in
 * docs/wire-protocol.md. Pure functions: wire_parse() is the one decoder of
 * bytes that arrive from the network (it has a fuzz target); the writers
 * build packets into caller buffers. All integers are little endian on the
 * wire; the structs below are the decoded, host-order view, not the layout.
 *
 * Every packet starts with a 4-byte prefix: magic 0x55 ('U'), version, type,
 * flags. A packet is bound to a channel by the 64-bit random token the
 * receiver handed out; the caller compares it (wire_parse does not know
 * tokens). Refusals (NACKs) are numbered, and DATA and ACKs carry refusal
 * counters, so that they can be made reliable (the "Refusals" section of
 * the spec); the codec only carries the numbers.
 */
#ifndef UCCL_ENGINE_WIRE_H
#define UCCL_ENGINE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define WIRE_MAGIC        0x55u
#define WIRE_PREFIX_LEN   4u           /* magic, version, type, flags */
#define WIRE_VERSION      5u          /* 3: DATA carries ord; 4: packets share datagrams;
					* 5: the SIGNAL flag of DATA */
#define WIRE_DATA_HDR_LEN 96u          /* bytes before the payload of a DATA packet */
#define WIRE_ACK_HDR_LEN  40u          /* bytes before the SACK words of an ACK */
#define WIRE_NACK_LEN     32u
#define WIRE_CREDIT_LEN   16u
#define WIRE_SACK_WORDS_MAX 16u        /* 1024 packets past the cumulative point */
#define WIRE_MAX_PAYLOAD  65000u       /* largest payload one DATA packet may carry */

enum wire_type {
	WIRE_DATA = 1,
	WIRE_ACK  = 2,
	WIRE_NACK = 3,                 /* a delivered packet was refused by the receiver */
	WIRE_CREDIT = 4,               /* receiver-driven credit: a grant and/or a request */
};

/* flags of DATA */
#define WIRE_F_CRC   0x01u             /* crc32c of the payload is valid */
#define WIRE_F_RETX  0x02u             /* a retransmission */
#define WIRE_F_ECT   0x04u             /* sender is ECN capable (informational) */
#define WIRE_F_MORE  0x08u             /* credit mode: the sender has more data queued */
#define WIRE_F_SIGNAL 0x10u            /* PUT, put void: raise the semaphore once it settled */
/* flags of ACK */
#define WIRE_F_ECE   0x01u             /* the acknowledged packet carried a CE mark */
#define WIRE_F_SYNC  0x02u             /* carries only the refusal counters: acknowledges no DATA */
/* flags of CREDIT (at least one is set) */
#define WIRE_F_GRANT 0x01u             /* psn: the peer may send new DATA with psns before it */
#define WIRE_F_REQ   0x02u             /* the sender is out of credit with data queued */

struct wire_data {
	uint8_t  flags;
	uint8_t  opcode;               /* enum uccl_opcode of the message */
	uint16_t path;                 /* sender's path index */
	uint32_t psn;                  /* channel packet sequence number */
	uint64_t token;
	uint32_t dst_ep;               /* endpoint id at the receiving daemon */
	uint32_t dst_conn;             /* connection id at that endpoint */
	uint64_t msg_id;               /* sender's message number on this channel */
	uint64_t msg_len;              /* whole message length */
	uint64_t msg_off;              /* offset of this payload in the message */
	uint64_t rkey;                 /* PUT/GET: remote key; SEND: tag */
	uint64_t roff;                 /* PUT: remote offset of the message start */
	uint64_t tsval;                /* sender clock, echoed by the ACK */
	uint32_t crc;                  /* crc32c(payload) when WIRE_F_CRC */
	uint32_t nacks_seen;           /* refusals of this direction's DATA the sender has seen */
	/* PUT and put void: the put's number on its connection; SIGNAL: the
	 * puts issued before it on its connection; else 0 */
	uint64_t ord;
	uint32_t payload_len;
	const uint8_t *payload;        /* points into the parsed buffer */
};

struct wire_ack {
	uint8_t  flags;
	uint16_t path;                 /* path of the packet that triggered it */
	uint64_t token;
	uint32_t cum_psn;              /* every psn before this one has arrived */
	uint32_t nacks_issued;         /* refusals the ACK's sender issued for DATA it received */
	uint32_t nacks_seen;           /* refusals of the ACK's sender's own DATA it has seen */
	uint64_t tsecr;                /* tsval of the packet that triggered it */
	/* the highest in-band congestion degree (ppm of the marking range) of
	 * the DATA this ACK acknowledges; 0 = none reported. Any value parses;
	 * readers take values above 1000000 as 1000000. 0 in a SYNC ACK. */
	uint32_t hint_ppm;
	uint32_t sack_words;           /* 0 .. WIRE_SACK_WORDS_MAX */
	/* bit i of word w set: psn cum_psn + 1 + 64*w + i has arrived; only
	 * the first sack_words words are decoded, the rest are not written */
	uint64_t sack[WIRE_SACK_WORDS_MAX];
};

struct wire_nack {
	uint8_t  flags;
	uint32_t seq;                  /* refusal number, 1, 2, ... per channel direction */
	uint64_t token;
	uint32_t psn;                  /* the refused packet */
	uint64_t msg_id;               /* its message */
	int32_t  err;                  /* negative errno: why (-EACCES, -ERANGE, ...) */
};

/* Receiver-driven credit (EQDS-style, docs/wire-protocol.md "Credit"). A
 * GRANT goes from a data receiver to the data sender: new DATA may use psns
 * before `psn` (cumulative, so a lost grant is repaired by the next). A REQ
 * goes from a data sender that is out of credit while data waits; its psn
 * is the sender's next new psn (informational). */
struct wire_credit {
	uint8_t  flags;
	uint32_t psn;
	uint64_t token;                /* the packet receiver's token for this channel */
};

struct wire_pkt {
	enum wire_type type;
	union {
		struct wire_data data;
		struct wire_ack ack;
		struct wire_nack nack;
		struct wire_credit credit;
	};
};

/* Little-endian loads and stores, as the wire uses them (also for the
 * payloads the receiving layer defines, such as a get request). On a
 * little-endian host each is one unaligned load or store (memcpy); gcc
 * did not always merge the byte-wise form once the writers were inlined,
 * and some of a DATA header's 64-bit fields took eight byte stores. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline uint32_t wire_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t wire_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void wire_put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static inline void wire_put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}
#else
static inline uint32_t wire_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t wire_get64(const uint8_t *p)
{
	return (uint64_t)wire_get32(p) | (uint64_t)wire_get32(p + 4) << 32;
}

static inline void wire_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

static inline void wire_put64(uint8_t *p, uint64_t v)
{
	wire_put32(p, (uint32_t)v);
	wire_put32(p + 4, (uint32_t)(v >> 32));
}
#endif

/* Decode len bytes. 0, or -EBADMSG (truncated, lengths inconsistent,
 * reserved bits set), -EPROTO (bad magic, unknown version or type).
 * Does not check tokens or the crc. Writes *out only on success, and then
 * only the member of its type (of an ACK's sack, only sack_words words). */
int wire_parse(const void *buf, size_t len, struct wire_pkt *out);

/* A datagram carries one or more packets back to back (since version 4):
 * the length of the first of len bytes, as its header gives it, at most
 * len. Bytes whose header cannot say (too short, foreign, a length past
 * the end) are all one packet, len, for wire_parse to refuse. 0 only for
 * len 0, so a walk that takes this many bytes at a time ends. */
size_t wire_first_len(const void *buf, size_t len);

/* The type of the packet at buf (len bytes) if its prefix is this
 * version's, else 0. Says nothing of the rest: only wire_parse does. */
static inline unsigned wire_peek_type(const void *buf, size_t len)
{
	const uint8_t *p = buf;

	return len >= WIRE_PREFIX_LEN && p[0] == WIRE_MAGIC && p[1] == WIRE_VERSION ? p[2] : 0;
}

/* Encode into buf (cap bytes). Return the packet length, or -ENOSPC.
 * wire_write_data copies d->payload_len bytes from d->payload unless
 * d->payload is NULL (then the caller fills buf + WIRE_DATA_HDR_LEN) and
 * computes the crc when flags has WIRE_F_CRC and payload is given. */
int wire_write_data(void *buf, size_t cap, const struct wire_data *d);
int wire_write_ack(void *buf, size_t cap, const struct wire_ack *a);
int wire_write_nack(void *buf, size_t cap, const struct wire_nack *n);
int wire_write_credit(void *buf, size_t cap, const struct wire_credit *c);

/* true if the payload's crc32c matches (always true without WIRE_F_CRC). */
bool wire_crc_ok(const struct wire_data *d);

#endif
