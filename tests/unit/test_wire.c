/* SPDX-License-Identifier: MIT */
/*
 * wire: the packet format (version 5). Every type survives a round trip and
 * lands at the byte offsets docs/wire-protocol.md gives; the decoder refuses
 * every truncation, every length that disagrees with the header, foreign
 * magic, versions and types, unknown flags, non-zero reserved bytes and
 * out-of-range fields; the crc catches any flipped payload bit; the writers
 * refuse small buffers and inputs the decoder would refuse.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/crc32c.h"
#include "engine/wire.h"

#define BUF_LEN (WIRE_DATA_HDR_LEN + WIRE_MAX_PAYLOAD + 16)

static uint8_t buf[BUF_LEN];
static uint8_t payload[WIRE_MAX_PAYLOAD + 1];

static int setup(void **state)
{
	(void)state;
	memset(buf, 0xee, sizeof(buf));
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	return 0;
}

/* A PUT of 100 bytes at offset 1000 of a 4096-byte message. */
static struct wire_data sample_data(void)
{
	return (struct wire_data){
		.flags = WIRE_F_CRC | WIRE_F_RETX,
		.opcode = 2,
		.path = 0x1234,
		.psn = 0x89abcdefu,
		.token = 0x0102030405060708ull,
		.dst_ep = 0x11121314u,
		.dst_conn = 0x21222324u,
		.msg_id = 0x3132333435363738ull,
		.msg_len = 4096,
		.msg_off = 1000,
		.rkey = 0x4142434445464748ull,
		.roff = 0x5152535455565758ull,
		.tsval = 0x6162636465666768ull,
		.nacks_seen = 0x71727374u,
		.ord = 0x9192939495969798ull,
		.payload_len = 100,
		.payload = payload,
	};
}

static struct wire_ack sample_ack(uint32_t words)
{
	struct wire_ack a = {
		.flags = WIRE_F_ECE,
		.path = 0xbeef,
		.token = 0x0102030405060708ull,
		.cum_psn = 0xfffffff0u,
		.nacks_issued = 0x71727374u,
		.nacks_seen = 0x81828384u,
		.tsecr = 0x6162636465666768ull,
		.hint_ppm = 0x91929394u,
		.sack_words = words,
	};

	for (uint32_t w = 0; w < words; w++)
		a.sack[w] = 0x8000000000000001ull ^ ((uint64_t)w << 8);
	return a;
}

static struct wire_nack sample_nack(void)
{
	return (struct wire_nack){
		.seq = 0x91929394u,
		.token = 0x0102030405060708ull,
		.psn = 77,
		.msg_id = 0x3132333435363738ull,
		.err = -EACCES,
	};
}

static size_t write_data(const struct wire_data *d)
{
	int n = wire_write_data(buf, sizeof(buf), d);

	assert_true(n > 0);
	return (size_t)n;
}

static size_t write_ack(const struct wire_ack *a)
{
	int n = wire_write_ack(buf, sizeof(buf), a);

	assert_true(n > 0);
	return (size_t)n;
}

static size_t write_nack(const struct wire_nack *nk)
{
	int n = wire_write_nack(buf, sizeof(buf), nk);

	assert_true(n > 0);
	return (size_t)n;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

static void assert_le(const uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		assert_int_equal(p[i], (uint8_t)(v >> 8 * i));
}

static int parse(size_t len)
{
	struct wire_pkt pkt;

	return wire_parse(buf, len, &pkt);
}

/* ---- round trips and layout ---- */

static void test_data_round_trip_with_payload_and_crc(void **state)
{
	struct wire_data d = sample_data();
	struct wire_pkt pkt;
	size_t len = write_data(&d);

	assert_int_equal(len, WIRE_DATA_HDR_LEN + 100);
	assert_int_equal(wire_parse(buf, len, &pkt), 0);
	assert_int_equal(pkt.type, WIRE_DATA);
	assert_int_equal(pkt.data.flags, d.flags);
	assert_int_equal(pkt.data.opcode, d.opcode);
	assert_int_equal(pkt.data.path, d.path);
	assert_int_equal(pkt.data.psn, d.psn);
	assert_int_equal(pkt.data.token, d.token);
	assert_int_equal(pkt.data.dst_ep, d.dst_ep);
	assert_int_equal(pkt.data.dst_conn, d.dst_conn);
	assert_int_equal(pkt.data.msg_id, d.msg_id);
	assert_int_equal(pkt.data.msg_len, d.msg_len);
	assert_int_equal(pkt.data.msg_off, d.msg_off);
	assert_int_equal(pkt.data.rkey, d.rkey);
	assert_int_equal(pkt.data.roff, d.roff);
	assert_int_equal(pkt.data.tsval, d.tsval);
	assert_int_equal(pkt.data.nacks_seen, d.nacks_seen);
	assert_int_equal(pkt.data.ord, d.ord);
	assert_int_equal(pkt.data.payload_len, 100);
	assert_int_equal(pkt.data.crc, crc32c(0, payload, 100));
	assert_memory_equal(pkt.data.payload, payload, 100);
	assert_true(wire_crc_ok(&pkt.data));
}

/* The payload is not copied out: the pointer is the byte after the header. */
static void test_data_payload_points_into_the_buffer(void **state)
{
	struct wire_data d = sample_data();
	struct wire_pkt pkt;
	size_t len = write_data(&d);

	assert_int_equal(wire_parse(buf, len, &pkt), 0);
	assert_ptr_equal(pkt.data.payload, buf + WIRE_DATA_HDR_LEN);
}

/* SIGNAL: a zero-length message is one packet with no payload. */
static void test_data_round_trip_without_payload(void **state)
{
	struct wire_data d = sample_data();
	struct wire_pkt pkt;
	size_t len;

	d.flags = WIRE_F_ECT;
	d.opcode = 4;
	d.msg_len = 0;
	d.msg_off = 0;
	d.payload_len = 0;
	d.payload = NULL;
	d.crc = 0xdeadbeef;                /* ignored without WIRE_F_CRC */
	len = write_data(&d);

	assert_int_equal(len, WIRE_DATA_HDR_LEN);
	assert_int_equal(wire_parse(buf, len, &pkt), 0);
	assert_int_equal(pkt.type, WIRE_DATA);
	assert_int_equal(pkt.data.flags, WIRE_F_ECT);
	assert_int_equal(pkt.data.payload_len, 0);
	assert_int_equal(pkt.data.msg_len, 0);
	assert_int_equal(pkt.data.crc, 0);
	assert_true(wire_crc_ok(&pkt.data));
}

/* The largest payload fits, and one that ends exactly at msg_len is fine. */
static void test_data_round_trip_of_the_largest_payload(void **state)
{
	struct wire_data d = sample_data();
	struct wire_pkt pkt;
	size_t len;

	d.payload_len = WIRE_MAX_PAYLOAD;
	d.msg_len = 3 * (uint64_t)WIRE_MAX_PAYLOAD;
	d.msg_off = d.msg_len - WIRE_MAX_PAYLOAD;
	len = write_data(&d);

	assert_int_equal(len, WIRE_DATA_HDR_LEN + WIRE_MAX_PAYLOAD);
	assert_int_equal(wire_parse(buf, len, &pkt), 0);
	assert_int_equal(pkt.data.payload_len, WIRE_MAX_PAYLOAD);
	assert_memory_equal(pkt.data.payload, payload, WIRE_MAX_PAYLOAD);
	assert_true(wire_crc_ok(&pkt.data));
}

/* Every field lands at its documented offset, little endian. */
static void test_data_layout_matches_the_spec(void **state)
{
	struct wire_data d = sample_data();
	uint32_t crc = crc32c(0, payload, 100);

	write_data(&d);

	assert_int_equal(buf[0], 0x55);
	assert_int_equal(buf[1], 5);
	assert_int_equal(buf[2], WIRE_DATA);
	assert_int_equal(buf[3], WIRE_F_CRC | WIRE_F_RETX);
	assert_int_equal(buf[4], 2);
	assert_int_equal(buf[5], 0);
	assert_le(buf + 6, d.path, 2);
	assert_le(buf + 8, d.psn, 4);
	assert_le(buf + 12, 100, 4);
	assert_le(buf + 16, d.token, 8);
	assert_le(buf + 24, d.dst_ep, 4);
	assert_le(buf + 28, d.dst_conn, 4);
	assert_le(buf + 32, d.msg_id, 8);
	assert_le(buf + 40, d.msg_len, 8);
	assert_le(buf + 48, d.msg_off, 8);
	assert_le(buf + 56, d.rkey, 8);
	assert_le(buf + 64, d.roff, 8);
	assert_le(buf + 72, d.tsval, 8);
	assert_le(buf + 80, crc, 4);
	assert_le(buf + 84, d.nacks_seen, 4);
	assert_le(buf + 88, d.ord, 8);
	assert_memory_equal(buf + 96, payload, 100);
}

/* payload NULL: the writer builds the header only and takes the crc the
 * caller computed; the bytes after the header are the caller's. */
static void test_data_writer_leaves_the_payload_to_the_caller(void **state)
{
	struct wire_data d = sample_data();
	struct wire_pkt pkt;
	size_t len;

	d.payload = NULL;
	d.crc = crc32c(0, payload, 100);
	len = write_data(&d);

	assert_int_equal(len, WIRE_DATA_HDR_LEN + 100);
	for (size_t i = WIRE_DATA_HDR_LEN; i < len; i++)
		assert_int_equal(buf[i], 0xee);
	assert_le(buf + 80, d.crc, 4);
	memcpy(buf + WIRE_DATA_HDR_LEN, payload, 100);
	assert_int_equal(wire_parse(buf, len, &pkt), 0);
	assert_true(wire_crc_ok(&pkt.data));
}

/* A payload already in place (payload == buf + header) gets its crc. */
static void test_data_writer_accepts_a_payload_built_in_place(void **state)
{
	struct wire_data d = sample_data();
	struct wire_pkt pkt;
	size_t len;

	memcpy(buf + WIRE_DATA_HDR_LEN, payload, 100);
	d.payload = buf + WIRE_DATA_HDR_LEN;
	len = write_data(&d);

	assert_int_equal(wire_parse(buf, len, &pkt), 0);
	assert_memory_equal(pkt.data.payload, payload, 100);
	assert_int_equal(pkt.data.crc, crc32c(0, payload, 100));
}

static void test_ack_round_trip_with_0_1_and_16_sack_words(void **state)
{
	static const uint32_t words[] = { 0, 1, WIRE_SACK_WORDS_MAX };

	for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
		struct wire_ack a = sample_ack(words[k]);
		struct wire_pkt pkt;
		size_t len = write_ack(&a);

		assert_int_equal(len, WIRE_ACK_HDR_LEN + 8 * words[k]);
		assert_int_equal(wire_parse(buf, len, &pkt), 0);
		assert_int_equal(pkt.type, WIRE_ACK);
		assert_int_equal(pkt.ack.flags, WIRE_F_ECE);
		assert_int_equal(pkt.ack.path, a.path);
		assert_int_equal(pkt.ack.token, a.token);
		assert_int_equal(pkt.ack.cum_psn, a.cum_psn);
		assert_int_equal(pkt.ack.nacks_issued, a.nacks_issued);
		assert_int_equal(pkt.ack.nacks_seen, a.nacks_seen);
		assert_int_equal(pkt.ack.tsecr, a.tsecr);
		assert_int_equal(pkt.ack.hint_ppm, a.hint_ppm);
		assert_int_equal(pkt.ack.sack_words, words[k]);
		if (words[k])
			assert_memory_equal(pkt.ack.sack, a.sack, 8 * words[k]);
	}
}

/* Only the announced SACK words are decoded; the rest of the array is left
 * as it was (nobody reads past sack_words). */
static void test_ack_decodes_only_the_announced_sack_words(void **state)
{
	struct wire_ack a = sample_ack(2);
	struct wire_pkt pkt;
	size_t len = write_ack(&a);

	memset(&pkt, 0xa5, sizeof(pkt));
	assert_int_equal(wire_parse(buf, len, &pkt), 0);
	assert_memory_equal(pkt.ack.sack, a.sack, 16);
	for (uint32_t w = 2; w < WIRE_SACK_WORDS_MAX; w++)
		assert_true(pkt.ack.sack[w] == 0xa5a5a5a5a5a5a5a5ull);
}

/* A SYNC ACK carries the refusal counters and nothing else. */
static void test_sync_ack_round_trip(void **state)
{
	struct wire_ack a = { .flags = WIRE_F_SYNC, .token = 0x0102030405060708ull,
			      .nacks_issued = 7, .nacks_seen = 0xffffffffu };
	struct wire_pkt pkt;
	size_t len = write_ack(&a);

	assert_int_equal(len, WIRE_ACK_HDR_LEN);
	assert_int_equal(buf[3], WIRE_F_SYNC);
	assert_le(buf + 20, 7, 4);
	assert_le(buf + 32, 0xffffffffu, 4);
	assert_int_equal(wire_parse(buf, len, &pkt), 0);
	assert_int_equal(pkt.type, WIRE_ACK);
	assert_int_equal(pkt.ack.flags, WIRE_F_SYNC);
	assert_int_equal(pkt.ack.token, a.token);
	assert_int_equal(pkt.ack.nacks_issued, 7);
	assert_int_equal(pkt.ack.nacks_seen, 0xffffffffu);
	assert_int_equal(pkt.ack.cum_psn, 0);
	assert_int_equal(pkt.ack.tsecr, 0);
	assert_int_equal(pkt.ack.path, 0);
	assert_int_equal(pkt.ack.hint_ppm, 0);
	assert_int_equal(pkt.ack.sack_words, 0);
}

/* ...so a SYNC ACK with a path, a cumulative point, an echo, a congestion
 * degree, SACK words or ECE is malformed, and the writer will not build one. */
static void test_sync_ack_with_acknowledgement_fields_is_malformed(void **state)
{
	struct wire_ack a = { .flags = WIRE_F_SYNC, .token = 1, .nacks_issued = 2 };
	struct wire_ack b;
	size_t len = write_ack(&a);
	static const size_t offs[] = { 4, 5, 16, 19, 24, 31, 36, 39 };

	for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
		len = write_ack(&a);
		buf[offs[k]] = 1;
		assert_int_equal(parse(len), -EBADMSG);
	}
	len = write_ack(&a);
	buf[3] |= WIRE_F_ECE;
	assert_int_equal(parse(len), -EBADMSG);
	len = write_ack(&a);
	buf[6] = 1;                            /* one SACK word, and its bytes */
	memset(buf + len, 0, 8);
	assert_int_equal(parse(len + 8), -EBADMSG);

	b = a;
	b.path = 1;
	assert_int_equal(wire_write_ack(buf, sizeof(buf), &b), -EINVAL);
	b = a;
	b.cum_psn = 1;
	assert_int_equal(wire_write_ack(buf, sizeof(buf), &b), -EINVAL);
	b = a;
	b.tsecr = 1;
	assert_int_equal(wire_write_ack(buf, sizeof(buf), &b), -EINVAL);
	b = a;
	b.sack_words = 1;
	assert_int_equal(wire_write_ack(buf, sizeof(buf), &b), -EINVAL);
	b = a;
	b.hint_ppm = 1;
	assert_int_equal(wire_write_ack(buf, sizeof(buf), &b), -EINVAL);
	b = a;
	b.flags |= WIRE_F_ECE;
	assert_int_equal(wire_write_ack(buf, sizeof(buf), &b), -EINVAL);
}

static void test_ack_layout_matches_the_spec(void **state)
{
	struct wire_ack a = sample_ack(2);

	write_ack(&a);

	assert_int_equal(buf[0], 0x55);
	assert_int_equal(buf[1], 5);
	assert_int_equal(buf[2], WIRE_ACK);
	assert_int_equal(buf[3], WIRE_F_ECE);
	assert_le(buf + 4, a.path, 2);
	assert_le(buf + 6, 2, 2);
	assert_le(buf + 8, a.token, 8);
	assert_le(buf + 16, a.cum_psn, 4);
	assert_le(buf + 20, a.nacks_issued, 4);
	assert_le(buf + 24, a.tsecr, 8);
	assert_le(buf + 32, a.nacks_seen, 4);
	assert_le(buf + 36, a.hint_ppm, 4);
	assert_le(buf + 40, a.sack[0], 8);
	assert_le(buf + 48, a.sack[1], 8);
}

static void test_nack_round_trip(void **state)
{
	static const int32_t errs[] = { -ENOENT, -EACCES, -ERANGE, -1, -4095 };

	for (size_t k = 0; k < sizeof(errs) / sizeof(errs[0]); k++) {
		struct wire_nack nk = sample_nack();
		struct wire_pkt pkt;
		size_t len;

		nk.err = errs[k];
		len = write_nack(&nk);
		assert_int_equal(len, WIRE_NACK_LEN);
		assert_int_equal(wire_parse(buf, len, &pkt), 0);
		assert_int_equal(pkt.type, WIRE_NACK);
		assert_int_equal(pkt.nack.flags, 0);
		assert_int_equal(pkt.nack.seq, nk.seq);
		assert_int_equal(pkt.nack.token, nk.token);
		assert_int_equal(pkt.nack.psn, nk.psn);
		assert_int_equal(pkt.nack.msg_id, nk.msg_id);
		assert_int_equal(pkt.nack.err, errs[k]);
	}
}

static void test_nack_layout_matches_the_spec(void **state)
{
	struct wire_nack nk = sample_nack();

	write_nack(&nk);

	assert_int_equal(buf[0], 0x55);
	assert_int_equal(buf[1], 5);
	assert_int_equal(buf[2], WIRE_NACK);
	assert_int_equal(buf[3], 0);
	assert_le(buf + 4, nk.seq, 4);
	assert_le(buf + 8, nk.token, 8);
	assert_le(buf + 16, nk.psn, 4);
	assert_le(buf + 20, (uint32_t)-EACCES, 4);
	assert_le(buf + 24, nk.msg_id, 8);
}

/* ---- malformed input ---- */

/* A refused packet leaves the caller's struct alone. */
static void test_parse_writes_nothing_on_failure(void **state)
{
	struct wire_data d = sample_data();
	struct wire_pkt pkt, before;
	size_t len = write_data(&d);

	memset(&pkt, 0xa5, sizeof(pkt));
	before = pkt;
	assert_int_equal(wire_parse(buf, len - 1, &pkt), -EBADMSG);
	assert_memory_equal(&pkt, &before, sizeof(pkt));
}

/* Decode the first len bytes of buf from an exactly sized heap copy, so
 * that a sanitizer build catches a read past len. */
static int parse_copy(size_t len)
{
	struct wire_pkt pkt;
	uint8_t *p = malloc(len);
	int r;

	assert_true(p != NULL || len == 0);
	if (len > 0)
		memcpy(p, buf, len);
	r = wire_parse(p, len, &pkt);
	free(p);
	return r;
}

/* Each prefix of each packet, down to the empty one, is refused. */
static void test_every_truncation_of_every_type_is_malformed(void **state)
{
	struct wire_data d = sample_data();
	struct wire_data sig = sample_data();
	struct wire_ack a0 = sample_ack(0), a16 = sample_ack(WIRE_SACK_WORDS_MAX);
	struct wire_nack nk = sample_nack();
	size_t full;

	sig.msg_len = sig.msg_off = 0;
	sig.payload_len = 0;

	for (int k = 0; k < 5; k++) {
		switch (k) {
		case 0: full = write_data(&d); break;
		case 1: full = write_data(&sig); break;
		case 2: full = write_ack(&a0); break;
		case 3: full = write_ack(&a16); break;
		default: full = write_nack(&nk); break;
		}
		assert_int_equal(parse_copy(full), 0);
		for (size_t len = 0; len < full; len++)
			assert_int_equal(parse_copy(len), -EBADMSG);
	}
}

/* Trailing bytes are not padding: the length must match the header. */
static void test_trailing_bytes_are_malformed(void **state)
{
	struct wire_data d = sample_data();
	struct wire_ack a = sample_ack(3);
	struct wire_nack nk = sample_nack();

	assert_int_equal(parse(write_data(&d) + 1), -EBADMSG);
	assert_int_equal(parse(write_ack(&a) + 1), -EBADMSG);
	assert_int_equal(parse(write_ack(&a) + 8), -EBADMSG);   /* one more word than announced */
	assert_int_equal(parse(write_nack(&nk) + 1), -EBADMSG);
}

/* Version 4: a datagram carries packets back to back; wire_first_len cuts
 * the first from the rest by its header alone. */
static void test_first_len_walks_packets_back_to_back(void **state)
{
	struct wire_data d = sample_data();
	struct wire_ack a = sample_ack(3);
	struct wire_nack nk = sample_nack();
	struct wire_credit cr = { .flags = WIRE_F_GRANT, .psn = 9, .token = 5 };
	static const int types[] = { WIRE_ACK, WIRE_DATA, WIRE_NACK, WIRE_CREDIT };
	size_t lens[4], off = 0, n = 0;
	struct wire_pkt pkt;
	int r;

	(void)state;
	r = wire_write_ack(buf + off, sizeof(buf) - off, &a);
	assert_int_equal(r, WIRE_ACK_HDR_LEN + 3 * 8);
	lens[n++] = (size_t)r, off += (size_t)r;
	r = wire_write_data(buf + off, sizeof(buf) - off, &d);
	assert_int_equal(r, WIRE_DATA_HDR_LEN + 100);
	lens[n++] = (size_t)r, off += (size_t)r;
	r = wire_write_nack(buf + off, sizeof(buf) - off, &nk);
	lens[n++] = (size_t)r, off += (size_t)r;
	r = wire_write_credit(buf + off, sizeof(buf) - off, &cr);
	lens[n++] = (size_t)r, off += (size_t)r;

	/* each cut is one packet that parses; the whole does not */
	assert_int_equal(wire_parse(buf, off, &pkt), -EBADMSG);
	for (size_t i = 0, at = 0; i < n; i++) {
		size_t l = wire_first_len(buf + at, off - at);

		assert_int_equal(l, lens[i]);
		assert_int_equal(wire_parse(buf + at, l, &pkt), 0);
		assert_int_equal(pkt.type, types[i]);
		at += l;
	}
	assert_int_equal(wire_first_len(buf, 0), 0);
}

/* wire_peek_type names the type of this version's packets only, and of
 * nothing shorter than the prefix (engine_rx sorts DATA first by it). */
static void test_peek_type_reads_this_versions_prefix_only(void **state)
{
	struct wire_data d = sample_data();
	struct wire_ack a = sample_ack(2);
	size_t len;

	(void)state;
	len = write_data(&d);
	assert_int_equal(wire_peek_type(buf, len), WIRE_DATA);
	assert_int_equal(wire_peek_type(buf, WIRE_PREFIX_LEN), WIRE_DATA);
	assert_int_equal(wire_peek_type(buf, WIRE_PREFIX_LEN - 1), 0);
	buf[1] = 3;                                                /* another version */
	assert_int_equal(wire_peek_type(buf, len), 0);
	buf[1] = WIRE_VERSION;
	buf[0] = 0x56;                                             /* not our magic */
	assert_int_equal(wire_peek_type(buf, len), 0);
	len = (size_t)wire_write_ack(buf, sizeof(buf), &a);
	assert_int_equal(wire_peek_type(buf, len), WIRE_ACK);
}

/* What the header cannot vouch for is one packet, the rest of the
 * datagram, which wire_parse then refuses: nothing past the end is read,
 * and the walk always moves on. */
static void test_first_len_gives_the_rest_to_what_it_cannot_read(void **state)
{
	struct wire_data d = sample_data();
	struct wire_ack a = sample_ack(2);
	size_t len;

	(void)state;
	len = write_data(&d);
	assert_int_equal(wire_first_len(buf, len - 1), len - 1);   /* payload cut short */
	assert_int_equal(parse(len - 1), -EBADMSG);
	assert_int_equal(wire_first_len(buf, WIRE_DATA_HDR_LEN - 1), WIRE_DATA_HDR_LEN - 1);
	assert_int_equal(wire_first_len(buf, 3), 3);
	put_le32(buf + 12, UINT32_MAX);                            /* a length past any datagram */
	assert_int_equal(wire_first_len(buf, len + 7), len + 7);
	put_le32(buf + 12, 0xffffffa0u);                           /* 96 + this wraps to 0 in 32 bits */
	assert_int_equal(wire_first_len(buf, len + 7), len + 7);
	buf[1] = 3;                                                /* another version */
	assert_int_equal(wire_first_len(buf, len + 7), len + 7);
	buf[1] = WIRE_VERSION;
	buf[2] = 9;                                                /* an unknown type */
	assert_int_equal(wire_first_len(buf, len + 7), len + 7);

	len = write_ack(&a);
	assert_int_equal(wire_first_len(buf, len + 5), len);       /* 5 bytes follow */
	assert_int_equal(wire_first_len(buf, WIRE_ACK_HDR_LEN - 1), WIRE_ACK_HDR_LEN - 1);
	buf[6] = 200;                                              /* more words than allowed */
	assert_int_equal(wire_first_len(buf, len + 5), len + 5);
	assert_int_equal(parse(len + 5), -EBADMSG);
	assert_int_equal(wire_first_len(buf, 40), 40);
}

static void test_data_payload_len_must_match_the_packet_length(void **state)
{
	struct wire_data d = sample_data();
	size_t len = write_data(&d);

	put_le32(buf + 12, 99);
	assert_int_equal(parse(len), -EBADMSG);
	put_le32(buf + 12, 101);
	assert_int_equal(parse(len), -EBADMSG);
	put_le32(buf + 12, UINT32_MAX);
	assert_int_equal(parse(len), -EBADMSG);
}

static void test_ack_sack_words_must_match_the_packet_length(void **state)
{
	struct wire_ack a = sample_ack(4);
	size_t len = write_ack(&a);

	buf[6] = 3;
	assert_int_equal(parse(len), -EBADMSG);
	buf[6] = 5;
	assert_int_equal(parse(len), -EBADMSG);
}

/* Not ours, or not this version: -EPROTO, counted apart from garbage. */
static void test_bad_magic_version_or_type_is_a_protocol_error(void **state)
{
	struct wire_nack nk = sample_nack();
	size_t len = write_nack(&nk);
	static const uint8_t bad_types[] = { 0, 5, 0x80, 0xff };

	buf[0] = 0x54;
	assert_int_equal(parse(len), -EPROTO);
	buf[0] = WIRE_MAGIC;
	buf[1] = 0;
	assert_int_equal(parse(len), -EPROTO);
	buf[1] = 2;                          /* retired: DATA had no ord */
	assert_int_equal(parse(len), -EPROTO);
	buf[1] = 3;                          /* retired: one packet a datagram */
	assert_int_equal(parse(len), -EPROTO);
	buf[1] = 4;                          /* retired: DATA had no SIGNAL flag */
	assert_int_equal(parse(len), -EPROTO);
	buf[1] = 6;
	assert_int_equal(parse(len), -EPROTO);
	buf[1] = WIRE_VERSION;
	for (size_t k = 0; k < sizeof(bad_types); k++) {
		buf[2] = bad_types[k];
		assert_int_equal(parse(len), -EPROTO);
	}
	/* the prefix is judged first, whatever the length */
	buf[2] = 0x7f;
	assert_int_equal(parse(4), -EPROTO);
	assert_int_equal(parse(1000), -EPROTO);
	buf[2] = WIRE_NACK;
	assert_int_equal(parse(len), 0);
}

static void test_unknown_flag_bits_are_malformed(void **state)
{
	struct wire_data d = sample_data();
	struct wire_ack a = sample_ack(1);
	struct wire_nack nk = sample_nack();

	for (int bit = 0; bit < 8; bit++) {
		uint8_t f = (uint8_t)(1u << bit);
		size_t len;

		len = write_data(&d);
		buf[3] |= f;
		assert_int_equal(parse(len), (f & 0x1f) ? 0 : -EBADMSG);

		len = write_ack(&a);
		buf[3] |= f;
		assert_int_equal(parse(len), f == WIRE_F_ECE ? 0 : -EBADMSG);

		len = write_nack(&nk);
		buf[3] |= f;
		assert_int_equal(parse(len), -EBADMSG);
	}
}

/* Reserved bytes must be zero, so that a later version can give them a
 * meaning and so that every packet has one encoding. */
static void test_reserved_bytes_must_be_zero(void **state)
{
	struct wire_data d = sample_data();
	size_t len;

	len = write_data(&d);
	buf[5] = 0x01;
	assert_int_equal(parse(len), -EBADMSG);
	/* an ACK's bytes 36..39 became hint_ppm in version 2 (see below); a
	 * NACK has no reserved bytes left, only its flags */
}

/* An ACK's hint_ppm (bytes 36..39, reserved before it had a meaning) takes
 * any value: 0 (none), the ppm range, and values past it, which readers
 * clamp. */
static void test_ack_hint_takes_any_value(void **state)
{
	static const uint32_t v[] = { 0, 1, 500000, 1000000, 1000001, 0xffffffffu };
	struct wire_ack a = sample_ack(1);
	struct wire_pkt pkt;

	for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
		size_t len;

		a.hint_ppm = v[k];
		len = write_ack(&a);
		assert_le(buf + 36, v[k], 4);
		assert_int_equal(wire_parse(buf, len, &pkt), 0);
		assert_int_equal(pkt.ack.hint_ppm, v[k]);
		/* and every byte of it is read, not only the low one */
		for (size_t off = 36; off < 40; off++) {
			len = write_ack(&a);
			buf[off] ^= 0x80;
			assert_int_equal(wire_parse(buf, len, &pkt), 0);
			assert_int_equal(pkt.ack.hint_ppm, v[k] ^ (0x80u << 8 * (off - 36)));
		}
	}
}

/* Without WIRE_F_CRC the crc field means nothing and must be zero. */
static void test_crc_field_without_the_crc_flag_must_be_zero(void **state)
{
	struct wire_data d = sample_data();
	size_t len;

	d.flags = 0;
	d.crc = 0x12345678;
	len = write_data(&d);
	assert_le(buf + 80, 0, 4);
	assert_int_equal(parse(len), 0);
	buf[83] = 1;
	assert_int_equal(parse(len), -EBADMSG);
}

static void test_oversize_payload_is_malformed(void **state)
{
	struct wire_data d = sample_data();
	size_t len;

	d.payload_len = WIRE_MAX_PAYLOAD;
	d.msg_len = UINT64_MAX;
	len = write_data(&d);
	assert_int_equal(parse(len), 0);

	/* one byte more, with the length and the message consistent */
	buf[len] = 0;
	put_le32(buf + 12, WIRE_MAX_PAYLOAD + 1);
	buf[3] = 0;                           /* no crc to get in the way */
	put_le32(buf + 80, 0);
	assert_int_equal(parse(len + 1), -EBADMSG);
}

static void test_payload_outside_the_message_is_malformed(void **state)
{
	struct wire_data d = sample_data();
	size_t len = write_data(&d);         /* 100 bytes at 1000 of 4096 */

	put_le64(buf + 48, 3996);             /* ends exactly at msg_len */
	assert_int_equal(parse(len), 0);
	put_le64(buf + 48, 3997);             /* one byte past */
	assert_int_equal(parse(len), -EBADMSG);
	put_le64(buf + 48, 5000);             /* starts past the end */
	assert_int_equal(parse(len), -EBADMSG);
	put_le64(buf + 40, 0);                /* an empty message carries nothing */
	put_le64(buf + 48, 0);
	assert_int_equal(parse(len), -EBADMSG);
}

/* msg_off + payload_len must not wrap around to look small. */
static void test_msg_off_overflow_is_malformed(void **state)
{
	struct wire_data d = sample_data();
	size_t len = write_data(&d);

	put_le64(buf + 40, UINT64_MAX);
	put_le64(buf + 48, UINT64_MAX - 100); /* the last 100 bytes: fine */
	assert_int_equal(parse(len), 0);
	put_le64(buf + 48, UINT64_MAX - 99);  /* msg_off + 100 wraps to 0 */
	assert_int_equal(parse(len), -EBADMSG);
	put_le64(buf + 40, 50);
	put_le64(buf + 48, UINT64_MAX - 20);
	assert_int_equal(parse(len), -EBADMSG);
}

static void test_more_than_16_sack_words_is_malformed(void **state)
{
	struct wire_ack a = sample_ack(WIRE_SACK_WORDS_MAX);
	size_t len = write_ack(&a);

	/* a 17th word, with the length to match */
	memset(buf + len, 0xff, 8);
	buf[6] = WIRE_SACK_WORDS_MAX + 1;
	assert_int_equal(parse(len + 8), -EBADMSG);
	buf[6] = 0xff;
	buf[7] = 0xff;
	assert_int_equal(parse(len + 8), -EBADMSG);
}

/* err is a negative errno: 0, positive and below -4095 are refused. */
static void test_nack_err_must_be_a_negative_errno(void **state)
{
	static const int32_t bad[] = { 0, 1, EACCES, INT32_MAX, -4096, INT32_MIN };
	struct wire_nack nk = sample_nack();
	size_t len = write_nack(&nk);

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		put_le32(buf + 20, (uint32_t)bad[k]);
		assert_int_equal(parse(len), -EBADMSG);
	}
	put_le32(buf + 20, (uint32_t)-4095);
	assert_int_equal(parse(len), 0);
}

/* ---- crc ---- */

static void test_crc_catches_every_flipped_payload_bit(void **state)
{
	struct wire_data d = sample_data();
	struct wire_pkt pkt;
	size_t len = write_data(&d);

	for (size_t bit = 0; bit < 8 * 100; bit++) {
		buf[WIRE_DATA_HDR_LEN + bit / 8] ^= (uint8_t)(1u << bit % 8);
		assert_int_equal(wire_parse(buf, len, &pkt), 0);   /* parse does not check it */
		assert_false(wire_crc_ok(&pkt.data));
		buf[WIRE_DATA_HDR_LEN + bit / 8] ^= (uint8_t)(1u << bit % 8);
	}
	for (int bit = 0; bit < 32; bit++) {
		buf[80 + bit / 8] ^= (uint8_t)(1u << bit % 8);
		assert_int_equal(wire_parse(buf, len, &pkt), 0);
		assert_false(wire_crc_ok(&pkt.data));
		buf[80 + bit / 8] ^= (uint8_t)(1u << bit % 8);
	}
	assert_int_equal(wire_parse(buf, len, &pkt), 0);
	assert_true(wire_crc_ok(&pkt.data));
}

/* Without WIRE_F_CRC nothing is checked. */
static void test_crc_ok_without_the_crc_flag(void **state)
{
	struct wire_data d = sample_data();
	struct wire_pkt pkt;
	size_t len;

	d.flags = 0;
	len = write_data(&d);
	buf[WIRE_DATA_HDR_LEN] ^= 1;
	assert_int_equal(wire_parse(buf, len, &pkt), 0);
	assert_true(wire_crc_ok(&pkt.data));
}

/* ---- writers ---- */

/* One byte short: -ENOSPC, and nothing written. */
static void test_writers_need_room_for_the_whole_packet(void **state)
{
	struct wire_data d = sample_data();
	struct wire_ack a = sample_ack(5);
	struct wire_nack nk = sample_nack();
	static uint8_t canary[BUF_LEN];

	memset(canary, 0xee, sizeof(canary));
	assert_int_equal(wire_write_data(buf, WIRE_DATA_HDR_LEN + 99, &d), -ENOSPC);
	assert_int_equal(wire_write_data(buf, 0, &d), -ENOSPC);
	assert_int_equal(wire_write_ack(buf, WIRE_ACK_HDR_LEN + 39, &a), -ENOSPC);
	assert_int_equal(wire_write_nack(buf, WIRE_NACK_LEN - 1, &nk), -ENOSPC);
	assert_memory_equal(buf, canary, sizeof(buf));

	assert_int_equal(wire_write_data(buf, WIRE_DATA_HDR_LEN + 100, &d), WIRE_DATA_HDR_LEN + 100);
	assert_int_equal(wire_write_ack(buf, WIRE_ACK_HDR_LEN + 40, &a), WIRE_ACK_HDR_LEN + 40);
	assert_int_equal(wire_write_nack(buf, WIRE_NACK_LEN, &nk), WIRE_NACK_LEN);
}

/* The writers build nothing the decoder would refuse; bad input is
 * -EINVAL even when the buffer is also too small. */
static void test_writers_refuse_what_the_decoder_would_refuse(void **state)
{
	struct wire_data d;
	struct wire_ack a;
	struct wire_nack nk;
	static uint8_t canary[BUF_LEN];

	memset(canary, 0xee, sizeof(canary));

	d = sample_data();
	d.payload_len = WIRE_MAX_PAYLOAD + 1;
	d.msg_len = UINT64_MAX;
	assert_int_equal(wire_write_data(buf, sizeof(buf), &d), -EINVAL);
	assert_int_equal(wire_write_data(buf, 0, &d), -EINVAL);
	d = sample_data();
	d.flags = 0x20;
	assert_int_equal(wire_write_data(buf, sizeof(buf), &d), -EINVAL);
	d = sample_data();
	d.msg_off = 3997;                    /* 100 bytes past 4096 */
	assert_int_equal(wire_write_data(buf, sizeof(buf), &d), -EINVAL);
	d.msg_len = UINT64_MAX;
	d.msg_off = UINT64_MAX - 99;         /* msg_off + 100 wraps to 0 */
	assert_int_equal(wire_write_data(buf, sizeof(buf), &d), -EINVAL);

	a = sample_ack(0);
	a.sack_words = WIRE_SACK_WORDS_MAX + 1;
	assert_int_equal(wire_write_ack(buf, sizeof(buf), &a), -EINVAL);
	a.sack_words = 0;
	a.flags = 0x02;
	assert_int_equal(wire_write_ack(buf, sizeof(buf), &a), -EINVAL);

	nk = sample_nack();
	nk.err = 0;
	assert_int_equal(wire_write_nack(buf, sizeof(buf), &nk), -EINVAL);
	nk.err = EACCES;
	assert_int_equal(wire_write_nack(buf, sizeof(buf), &nk), -EINVAL);
	nk.err = -4096;
	assert_int_equal(wire_write_nack(buf, sizeof(buf), &nk), -EINVAL);
	nk.err = -EACCES;
	nk.flags = 1;
	assert_int_equal(wire_write_nack(buf, 0, &nk), -EINVAL);

	assert_memory_equal(buf, canary, sizeof(buf));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_data_round_trip_with_payload_and_crc, setup),
		cmocka_unit_test_setup(test_data_payload_points_into_the_buffer, setup),
		cmocka_unit_test_setup(test_data_round_trip_without_payload, setup),
		cmocka_unit_test_setup(test_data_round_trip_of_the_largest_payload, setup),
		cmocka_unit_test_setup(test_data_layout_matches_the_spec, setup),
		cmocka_unit_test_setup(test_data_writer_leaves_the_payload_to_the_caller, setup),
		cmocka_unit_test_setup(test_data_writer_accepts_a_payload_built_in_place, setup),
		cmocka_unit_test_setup(test_ack_round_trip_with_0_1_and_16_sack_words, setup),
		cmocka_unit_test_setup(test_ack_layout_matches_the_spec, setup),
		cmocka_unit_test_setup(test_ack_decodes_only_the_announced_sack_words, setup),
		cmocka_unit_test_setup(test_sync_ack_round_trip, setup),
		cmocka_unit_test_setup(test_sync_ack_with_acknowledgement_fields_is_malformed, setup),
		cmocka_unit_test_setup(test_nack_round_trip, setup),
		cmocka_unit_test_setup(test_nack_layout_matches_the_spec, setup),
		cmocka_unit_test_setup(test_parse_writes_nothing_on_failure, setup),
		cmocka_unit_test_setup(test_every_truncation_of_every_type_is_malformed, setup),
		cmocka_unit_test_setup(test_trailing_bytes_are_malformed, setup),
		cmocka_unit_test_setup(test_first_len_walks_packets_back_to_back, setup),
		cmocka_unit_test_setup(test_first_len_gives_the_rest_to_what_it_cannot_read, setup),
		cmocka_unit_test_setup(test_data_payload_len_must_match_the_packet_length, setup),
		cmocka_unit_test_setup(test_ack_sack_words_must_match_the_packet_length, setup),
		cmocka_unit_test_setup(test_bad_magic_version_or_type_is_a_protocol_error, setup),
		cmocka_unit_test_setup(test_unknown_flag_bits_are_malformed, setup),
		cmocka_unit_test_setup(test_reserved_bytes_must_be_zero, setup),
		cmocka_unit_test_setup(test_ack_hint_takes_any_value, setup),
		cmocka_unit_test_setup(test_crc_field_without_the_crc_flag_must_be_zero, setup),
		cmocka_unit_test_setup(test_oversize_payload_is_malformed, setup),
		cmocka_unit_test_setup(test_payload_outside_the_message_is_malformed, setup),
		cmocka_unit_test_setup(test_msg_off_overflow_is_malformed, setup),
		cmocka_unit_test_setup(test_more_than_16_sack_words_is_malformed, setup),
		cmocka_unit_test_setup(test_nack_err_must_be_a_negative_errno, setup),
		cmocka_unit_test_setup(test_crc_catches_every_flipped_payload_bit, setup),
		cmocka_unit_test_setup(test_crc_ok_without_the_crc_flag, setup),
		cmocka_unit_test_setup(test_writers_need_room_for_the_whole_packet, setup),
		cmocka_unit_test_setup(test_writers_refuse_what_the_decoder_would_refuse, setup),
		cmocka_unit_test_setup(test_peek_type_reads_this_versions_prefix_only, setup),
	};

	return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
