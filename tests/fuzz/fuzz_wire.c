/* SPDX-License-Identifier: MIT */
/*
 * fuzz_wire: wire_first_len and wire_parse are the first code to touch
 * every byte that arrives from the network. The input is a datagram: cut
 * into packets, it must be cut within itself and the cutting must end.
 * As one packet, it must be refused with -EBADMSG/-EPROTO or decoded
 * without reading past its end (libFuzzer hands over an exactly
 * sized heap copy, so AddressSanitizer sees a one-byte overread). Whatever
 * decodes must be the one canonical encoding of what it decoded: the
 * matching writer, given an exactly sized buffer, rebuilds the input byte
 * for byte. For DATA the writer is run both ways: with the payload left to
 * the caller (it then keeps the crc field as decoded) and with the payload
 * given (it then computes the crc, which matches the input exactly when
 * wire_crc_ok says so). The decoder writes nothing it does not decode: an
 * ACK's SACK words past sack_words keep what the caller had there.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/crc32c.h"
#include "engine/wire.h"

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void check_data(const uint8_t *data, size_t size, uint8_t *out, const struct wire_data *d)
{
	struct wire_data copy = *d;
	bool crc_ok = wire_crc_ok(d);
	int n;

	if (d->payload < data + WIRE_DATA_HDR_LEN || d->payload + d->payload_len != data + size)
		abort();

	/* header only; the payload is copied in afterwards, as a caller would */
	copy.payload = NULL;
	n = wire_write_data(out, size, &copy);
	if (n < 0 || (size_t)n != size)
		abort();
	memcpy(out + WIRE_DATA_HDR_LEN, d->payload, d->payload_len);
	if (memcmp(out, data, size) != 0)
		abort();

	/* payload given: identical except for a crc the writer recomputed */
	memset(out, 0, size);
	n = wire_write_data(out, size, d);
	if (n < 0 || (size_t)n != size)
		abort();
	if (memcmp(out, data, 80) != 0 || memcmp(out + 84, data + 84, size - 84) != 0)
		abort();
	if (d->flags & WIRE_F_CRC) {
		if (le32(out + 80) != crc32c(0, d->payload, d->payload_len))
			abort();
		if (crc_ok != (memcmp(out + 80, data + 80, 4) == 0))
			abort();
	} else if (!crc_ok || le32(out + 80) != 0) {
		abort();
	}

	if (wire_write_data(out, size - 1, d) != -ENOSPC)
		abort();
}

/* The receiver's walk over a datagram (engine_rx): each cut is within
 * what is left and not empty, so the walk ends, having read nothing past
 * the end. */
static void check_walk(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		size_t l = wire_first_len(data + off, size - off);

		if (l == 0 || l > size - off)
			abort();
		off += l;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_pkt pkt;
	uint8_t *out;
	int r, n;

	check_walk(data, size);
	memset(&pkt, 0xa5, sizeof(pkt));
	r = wire_parse(data, size, &pkt);
	if (r < 0) {
		if (r != -EBADMSG && r != -EPROTO)
			abort();
		return 0;
	}
	/* a packet that parses is, alone in a datagram, all of it */
	if (wire_first_len(data, size) != size)
		abort();
	out = malloc(size);                  /* exactly sized: a write past it is caught */
	if (!out)
		return 0;
	switch (pkt.type) {
	case WIRE_DATA:
		check_data(data, size, out, &pkt.data);
		break;
	case WIRE_ACK:
		n = wire_write_ack(out, size, &pkt.ack);
		if (n < 0 || (size_t)n != size || memcmp(out, data, size) != 0)
			abort();
		for (uint32_t w = pkt.ack.sack_words; w < WIRE_SACK_WORDS_MAX; w++)
			if (pkt.ack.sack[w] != 0xa5a5a5a5a5a5a5a5ull)
				abort();
		if (wire_write_ack(out, size - 1, &pkt.ack) != -ENOSPC)
			abort();
		break;
	case WIRE_NACK:
		n = wire_write_nack(out, size, &pkt.nack);
		if (n < 0 || (size_t)n != size || memcmp(out, data, size) != 0)
			abort();
		if (wire_write_nack(out, size - 1, &pkt.nack) != -ENOSPC)
			abort();
		break;
	case WIRE_CREDIT:
		n = wire_write_credit(out, size, &pkt.credit);
		if (n < 0 || (size_t)n != size || memcmp(out, data, size) != 0)
			abort();
		if (wire_write_credit(out, size - 1, &pkt.credit) != -ENOSPC)
			abort();
		break;
	default:
		abort();
	}
	free(out);
	return 0;
}
