/* SPDX-License-Identifier: MIT */
/*
 * wire: encoder and decoder of the host-to-host packets laid out
 * in docs/wire-protocol.md. The decoder is strict so that every packet has
 * exactly one encoding: lengths must match to the byte, reserved bytes and
 * unknown flag bits must be zero, and the writers refuse to build anything
 * the decoder would refuse. Integers are assembled byte by byte, so the code
 * is independent of host byte order and of the buffer's alignment.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "engine/crc32c.h"
#include "engine/wire.h"

#define DATA_FLAGS (WIRE_F_CRC | WIRE_F_RETX | WIRE_F_ECT | WIRE_F_MORE | WIRE_F_SIGNAL)
#define CREDIT_FLAGS (WIRE_F_GRANT | WIRE_F_REQ)
#define ACK_FLAGS  (WIRE_F_ECE | WIRE_F_SYNC)
#define NACK_FLAGS 0u

/* NACK errors are Linux errnos, which all lie in 1..4095 */
#define NACK_ERR_MIN (-4095)

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_prefix(uint8_t *p, enum wire_type type, uint8_t flags)
{
	p[0] = WIRE_MAGIC;
	p[1] = WIRE_VERSION;
	p[2] = (uint8_t)type;
	p[3] = flags;
}

/* The payload [msg_off, msg_off + payload_len) lies inside the message. */
static bool data_range_ok(uint64_t msg_len, uint64_t msg_off, uint32_t payload_len)
{
	return msg_off <= msg_len && payload_len <= msg_len - msg_off;
}

static bool nack_err_ok(int32_t err)
{
	return err < 0 && err >= NACK_ERR_MIN;
}

/* DATA: everything is checked before *out is touched. */
static int parse_data(const uint8_t *p, size_t len, struct wire_pkt *out)
{
	struct wire_data *d = &out->data;
	uint8_t flags;
	uint32_t payload_len, crc;
	uint64_t msg_len, msg_off;

	if (len < WIRE_DATA_HDR_LEN)
		return -EBADMSG;
	flags = p[3];
	payload_len = wire_get32(p + 12);
	msg_len = wire_get64(p + 40);
	msg_off = wire_get64(p + 48);
	crc = wire_get32(p + 80);
	if ((flags & ~DATA_FLAGS) != 0 || p[5] != 0)
		return -EBADMSG;
	/* without WIRE_F_CRC the crc field is reserved, so that it has one value */
	if (!(flags & WIRE_F_CRC) && crc != 0)
		return -EBADMSG;
	if (payload_len > WIRE_MAX_PAYLOAD || len - WIRE_DATA_HDR_LEN != payload_len)
		return -EBADMSG;
	if (!data_range_ok(msg_len, msg_off, payload_len))
		return -EBADMSG;

	out->type = WIRE_DATA;
	d->flags = flags;
	d->opcode = p[4];
	d->path = get16(p + 6);
	d->psn = wire_get32(p + 8);
	d->payload_len = payload_len;
	d->token = wire_get64(p + 16);
	d->dst_ep = wire_get32(p + 24);
	d->dst_conn = wire_get32(p + 28);
	d->msg_id = wire_get64(p + 32);
	d->msg_len = msg_len;
	d->msg_off = msg_off;
	d->rkey = wire_get64(p + 56);
	d->roff = wire_get64(p + 64);
	d->tsval = wire_get64(p + 72);
	d->crc = crc;
	d->nacks_seen = wire_get32(p + 84);
	d->ord = wire_get64(p + 88);
	d->payload = p + WIRE_DATA_HDR_LEN;   /* at the end of buf when empty */
	return 0;
}

/* A SYNC ACK carries the refusal counters and nothing else (it
 * acknowledges no DATA, so it has no congestion degree either). */
static bool ack_sync_ok(uint8_t flags, uint16_t path, uint32_t words, uint32_t cum, uint64_t tsecr,
			uint32_t hint)
{
	return !(flags & WIRE_F_SYNC) ||
	       (flags == WIRE_F_SYNC && path == 0 && words == 0 && cum == 0 && tsecr == 0 &&
		hint == 0);
}

static int parse_ack(const uint8_t *p, size_t len, struct wire_pkt *out)
{
	struct wire_ack *a = &out->ack;
	uint8_t flags;
	uint16_t path;
	uint32_t words, cum, hint;
	uint64_t tsecr;

	if (len < WIRE_ACK_HDR_LEN)
		return -EBADMSG;
	flags = p[3];
	path = get16(p + 4);
	words = get16(p + 6);
	cum = wire_get32(p + 16);
	tsecr = wire_get64(p + 24);
	hint = wire_get32(p + 36);
	if ((flags & ~ACK_FLAGS) != 0)
		return -EBADMSG;
	if (words > WIRE_SACK_WORDS_MAX || len - WIRE_ACK_HDR_LEN != (size_t)words * 8)
		return -EBADMSG;
	if (!ack_sync_ok(flags, path, words, cum, tsecr, hint))
		return -EBADMSG;

	out->type = WIRE_ACK;
	a->flags = flags;
	a->path = path;
	a->sack_words = words;
	a->token = wire_get64(p + 8);
	a->cum_psn = cum;
	a->nacks_issued = wire_get32(p + 20);
	a->tsecr = tsecr;
	a->nacks_seen = wire_get32(p + 32);
	a->hint_ppm = hint;
	for (uint32_t w = 0; w < words; w++)
		a->sack[w] = wire_get64(p + WIRE_ACK_HDR_LEN + 8 * w);
	return 0;
}

static int parse_nack(const uint8_t *p, size_t len, struct wire_pkt *out)
{
	struct wire_nack *n = &out->nack;
	int32_t err;

	if (len != WIRE_NACK_LEN)
		return -EBADMSG;
	err = (int32_t)wire_get32(p + 20);
	if ((p[3] & ~NACK_FLAGS) != 0 || !nack_err_ok(err))
		return -EBADMSG;

	out->type = WIRE_NACK;
	n->flags = p[3];
	n->seq = wire_get32(p + 4);
	n->token = wire_get64(p + 8);
	n->psn = wire_get32(p + 16);
	n->err = err;
	n->msg_id = wire_get64(p + 24);
	return 0;
}

static int parse_credit(const uint8_t *p, size_t len, struct wire_pkt *out)
{
	if (len != WIRE_CREDIT_LEN)
		return -EBADMSG;
	if ((p[3] & ~CREDIT_FLAGS) != 0 || (p[3] & CREDIT_FLAGS) == 0)
		return -EBADMSG;
	out->type = WIRE_CREDIT;
	out->credit.flags = p[3];
	out->credit.psn = wire_get32(p + 4);
	out->credit.token = wire_get64(p + 8);
	return 0;
}

int wire_parse(const void *buf, size_t len, struct wire_pkt *out)
{
	const uint8_t *p = buf;

	if (len < WIRE_PREFIX_LEN)
		return -EBADMSG;
	if (p[0] != WIRE_MAGIC || p[1] != WIRE_VERSION)
		return -EPROTO;
	/* each parser checks everything before it writes *out */
	switch (p[2]) {
	case WIRE_DATA:
		return parse_data(p, len, out);
	case WIRE_ACK:
		return parse_ack(p, len, out);
	case WIRE_NACK:
		return parse_nack(p, len, out);
	case WIRE_CREDIT:
		return parse_credit(p, len, out);
	default:
		return -EPROTO;
	}
}

size_t wire_first_len(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t want;

	/* what the header says; anything it cannot say (another version or
	 * no prefix: type 0) takes the rest, for wire_parse to refuse as one
	 * packet */
	switch (wire_peek_type(buf, len)) {
	case WIRE_DATA:
		/* compared before adding: a 32-bit size_t would wrap */
		if (len < WIRE_DATA_HDR_LEN || wire_get32(p + 12) > len - WIRE_DATA_HDR_LEN)
			return len;
		want = WIRE_DATA_HDR_LEN + (size_t)wire_get32(p + 12);
		break;
	case WIRE_ACK:
		if (len < WIRE_ACK_HDR_LEN)
			return len;
		want = WIRE_ACK_HDR_LEN + 8 * (size_t)get16(p + 6);
		break;
	case WIRE_NACK:
		want = WIRE_NACK_LEN;
		break;
	case WIRE_CREDIT:
		want = WIRE_CREDIT_LEN;
		break;
	default:
		return len;
	}
	return want < len ? want : len;
}

int wire_write_data(void *buf, size_t cap, const struct wire_data *d)
{
	uint8_t *p = buf;
	size_t len;
	uint32_t crc = 0;

	if ((d->flags & ~DATA_FLAGS) != 0 || d->payload_len > WIRE_MAX_PAYLOAD ||
	    !data_range_ok(d->msg_len, d->msg_off, d->payload_len))
		return -EINVAL;
	len = WIRE_DATA_HDR_LEN + (size_t)d->payload_len;
	if (cap < len)
		return -ENOSPC;

	if (d->payload) {
		/* memmove: the caller may have built the payload in place */
		memmove(p + WIRE_DATA_HDR_LEN, d->payload, d->payload_len);
		if (d->flags & WIRE_F_CRC)
			crc = crc32c(0, p + WIRE_DATA_HDR_LEN, d->payload_len);
	} else if (d->flags & WIRE_F_CRC) {
		crc = d->crc;                  /* the caller fills the payload, so it knows the crc */
	}
	put_prefix(p, WIRE_DATA, d->flags);
	p[4] = d->opcode;
	p[5] = 0;
	put16(p + 6, d->path);
	wire_put32(p + 8, d->psn);
	wire_put32(p + 12, d->payload_len);
	wire_put64(p + 16, d->token);
	wire_put32(p + 24, d->dst_ep);
	wire_put32(p + 28, d->dst_conn);
	wire_put64(p + 32, d->msg_id);
	wire_put64(p + 40, d->msg_len);
	wire_put64(p + 48, d->msg_off);
	wire_put64(p + 56, d->rkey);
	wire_put64(p + 64, d->roff);
	wire_put64(p + 72, d->tsval);
	wire_put32(p + 80, crc);
	wire_put32(p + 84, d->nacks_seen);
	wire_put64(p + 88, d->ord);
	return (int)len;
}

int wire_write_ack(void *buf, size_t cap, const struct wire_ack *a)
{
	uint8_t *p = buf;
	size_t len;

	if ((a->flags & ~ACK_FLAGS) != 0 || a->sack_words > WIRE_SACK_WORDS_MAX ||
	    !ack_sync_ok(a->flags, a->path, a->sack_words, a->cum_psn, a->tsecr, a->hint_ppm))
		return -EINVAL;
	len = WIRE_ACK_HDR_LEN + (size_t)a->sack_words * 8;
	if (cap < len)
		return -ENOSPC;

	put_prefix(p, WIRE_ACK, a->flags);
	put16(p + 4, a->path);
	put16(p + 6, (uint16_t)a->sack_words);
	wire_put64(p + 8, a->token);
	wire_put32(p + 16, a->cum_psn);
	wire_put32(p + 20, a->nacks_issued);
	wire_put64(p + 24, a->tsecr);
	wire_put32(p + 32, a->nacks_seen);
	wire_put32(p + 36, a->hint_ppm);
	for (uint32_t w = 0; w < a->sack_words; w++)
		wire_put64(p + WIRE_ACK_HDR_LEN + 8 * w, a->sack[w]);
	return (int)len;
}

int wire_write_nack(void *buf, size_t cap, const struct wire_nack *n)
{
	uint8_t *p = buf;

	if ((n->flags & ~NACK_FLAGS) != 0 || !nack_err_ok(n->err))
		return -EINVAL;
	if (cap < WIRE_NACK_LEN)
		return -ENOSPC;

	put_prefix(p, WIRE_NACK, n->flags);
	wire_put32(p + 4, n->seq);
	wire_put64(p + 8, n->token);
	wire_put32(p + 16, n->psn);
	wire_put32(p + 20, (uint32_t)n->err);
	wire_put64(p + 24, n->msg_id);
	return (int)WIRE_NACK_LEN;
}

int wire_write_credit(void *buf, size_t cap, const struct wire_credit *c)
{
	uint8_t *p = buf;

	if ((c->flags & ~CREDIT_FLAGS) != 0 || (c->flags & CREDIT_FLAGS) == 0)
		return -EINVAL;
	if (cap < WIRE_CREDIT_LEN)
		return -ENOSPC;
	put_prefix(p, WIRE_CREDIT, c->flags);
	wire_put32(p + 4, c->psn);
	wire_put64(p + 8, c->token);
	return (int)WIRE_CREDIT_LEN;
}

bool wire_crc_ok(const struct wire_data *d)
{
	if (!(d->flags & WIRE_F_CRC))
		return true;
	if (!d->payload && d->payload_len > 0)
		return false;
	return crc32c(0, d->payload, d->payload_len) == d->crc;
}
