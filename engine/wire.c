/* SPDX-License-Identifier: MIT */
/*
 * wire: encoder and decoder of the version 1 host-to-host packets laid out
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

#define WIRE_PREFIX_LEN 4u

#define DATA_FLAGS (WIRE_F_CRC | WIRE_F_RETX | WIRE_F_ECT)
#define ACK_FLAGS  WIRE_F_ECE
#define NACK_FLAGS 0u

/* NACK errors are Linux errnos, which all lie in 1..4095 */
#define NACK_ERR_MIN (-4095)

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
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

static int parse_data(const uint8_t *p, size_t len, struct wire_data *d)
{
	if (len < WIRE_DATA_HDR_LEN)
		return -EBADMSG;
	d->flags = p[3];
	d->opcode = p[4];
	d->path = get16(p + 6);
	d->psn = get32(p + 8);
	d->payload_len = get32(p + 12);
	d->token = get64(p + 16);
	d->dst_ep = get32(p + 24);
	d->dst_conn = get32(p + 28);
	d->msg_id = get64(p + 32);
	d->msg_len = get64(p + 40);
	d->msg_off = get64(p + 48);
	d->rkey = get64(p + 56);
	d->roff = get64(p + 64);
	d->tsval = get64(p + 72);
	d->crc = get32(p + 80);
	d->payload = p + WIRE_DATA_HDR_LEN;   /* at the end of buf when empty */

	if ((d->flags & ~DATA_FLAGS) != 0 || p[5] != 0 || get32(p + 84) != 0)
		return -EBADMSG;
	/* without WIRE_F_CRC the crc field is reserved, so that it has one value */
	if (!(d->flags & WIRE_F_CRC) && d->crc != 0)
		return -EBADMSG;
	if (d->payload_len > WIRE_MAX_PAYLOAD || len - WIRE_DATA_HDR_LEN != d->payload_len)
		return -EBADMSG;
	if (!data_range_ok(d->msg_len, d->msg_off, d->payload_len))
		return -EBADMSG;
	return 0;
}

static int parse_ack(const uint8_t *p, size_t len, struct wire_ack *a)
{
	if (len < WIRE_ACK_HDR_LEN)
		return -EBADMSG;
	a->flags = p[3];
	a->path = get16(p + 4);
	a->sack_words = get16(p + 6);
	a->token = get64(p + 8);
	a->cum_psn = get32(p + 16);
	a->tsecr = get64(p + 24);

	if ((a->flags & ~ACK_FLAGS) != 0 || get32(p + 20) != 0)
		return -EBADMSG;
	if (a->sack_words > WIRE_SACK_WORDS_MAX ||
	    len - WIRE_ACK_HDR_LEN != (size_t)a->sack_words * 8)
		return -EBADMSG;
	for (uint32_t w = 0; w < a->sack_words; w++)
		a->sack[w] = get64(p + WIRE_ACK_HDR_LEN + 8 * w);
	return 0;
}

static int parse_nack(const uint8_t *p, size_t len, struct wire_nack *n)
{
	if (len != WIRE_NACK_LEN)
		return -EBADMSG;
	n->flags = p[3];
	n->token = get64(p + 8);
	n->psn = get32(p + 16);
	n->err = (int32_t)get32(p + 20);
	n->msg_id = get64(p + 24);

	if ((n->flags & ~NACK_FLAGS) != 0 || get32(p + 4) != 0 || !nack_err_ok(n->err))
		return -EBADMSG;
	return 0;
}

int wire_parse(const void *buf, size_t len, struct wire_pkt *out)
{
	const uint8_t *p = buf;
	struct wire_pkt pkt;
	int r;

	if (len < WIRE_PREFIX_LEN)
		return -EBADMSG;
	if (p[0] != WIRE_MAGIC || p[1] != WIRE_VERSION)
		return -EPROTO;
	memset(&pkt, 0, sizeof(pkt));     /* ACK words past sack_words read as 0 */
	switch (p[2]) {
	case WIRE_DATA:
		pkt.type = WIRE_DATA;
		r = parse_data(p, len, &pkt.data);
		break;
	case WIRE_ACK:
		pkt.type = WIRE_ACK;
		r = parse_ack(p, len, &pkt.ack);
		break;
	case WIRE_NACK:
		pkt.type = WIRE_NACK;
		r = parse_nack(p, len, &pkt.nack);
		break;
	default:
		return -EPROTO;
	}
	if (r < 0)
		return r;
	*out = pkt;                      /* output written only on success */
	return 0;
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
	put32(p + 8, d->psn);
	put32(p + 12, d->payload_len);
	put64(p + 16, d->token);
	put32(p + 24, d->dst_ep);
	put32(p + 28, d->dst_conn);
	put64(p + 32, d->msg_id);
	put64(p + 40, d->msg_len);
	put64(p + 48, d->msg_off);
	put64(p + 56, d->rkey);
	put64(p + 64, d->roff);
	put64(p + 72, d->tsval);
	put32(p + 80, crc);
	put32(p + 84, 0);
	return (int)len;
}

int wire_write_ack(void *buf, size_t cap, const struct wire_ack *a)
{
	uint8_t *p = buf;
	size_t len;

	if ((a->flags & ~ACK_FLAGS) != 0 || a->sack_words > WIRE_SACK_WORDS_MAX)
		return -EINVAL;
	len = WIRE_ACK_HDR_LEN + (size_t)a->sack_words * 8;
	if (cap < len)
		return -ENOSPC;

	put_prefix(p, WIRE_ACK, a->flags);
	put16(p + 4, a->path);
	put16(p + 6, (uint16_t)a->sack_words);
	put64(p + 8, a->token);
	put32(p + 16, a->cum_psn);
	put32(p + 20, 0);
	put64(p + 24, a->tsecr);
	for (uint32_t w = 0; w < a->sack_words; w++)
		put64(p + WIRE_ACK_HDR_LEN + 8 * w, a->sack[w]);
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
	put32(p + 4, 0);
	put64(p + 8, n->token);
	put32(p + 16, n->psn);
	put32(p + 20, (uint32_t)n->err);
	put64(p + 24, n->msg_id);
	return (int)WIRE_NACK_LEN;
}

bool wire_crc_ok(const struct wire_data *d)
{
	if (!(d->flags & WIRE_F_CRC))
		return true;
	if (!d->payload && d->payload_len > 0)
		return false;
	return crc32c(0, d->payload, d->payload_len) == d->crc;
}
