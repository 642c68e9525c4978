/* SPDX-License-Identifier: MIT */
/*
 * crc32c: CRC-32C gives the published check values (the "123456789" check
 * and the iSCSI vectors of RFC 3720 B.4), can be fed in pieces, and the
 * table path and whatever path crc32c() picks on this CPU (SSE4.2 on most
 * x86-64) agree with a bit-at-a-time reference at every length and
 * alignment.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/crc32c.h"


typedef uint32_t crc_fn(uint32_t crc, const void *buf, size_t len);

/* The definition, one bit at a time: the yardstick for both paths. */
static uint32_t crc32c_bitwise(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return ~crc;
}

static void check_vectors(crc_fn *f)
{
	uint8_t b[48];

	assert_int_equal(f(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(f(0, NULL, 0), 0);
	assert_int_equal(f(0x12345678u, NULL, 0), 0x12345678u);

	/* RFC 3720 B.4 */
	memset(b, 0, 32);
	assert_int_equal(f(0, b, 32), 0x8A9136AAu);
	memset(b, 0xff, 32);
	assert_int_equal(f(0, b, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	assert_int_equal(f(0, b, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	assert_int_equal(f(0, b, 32), 0x113FDB5Cu);
	/* an iSCSI SCSI Read (10) command PDU */
	static const uint8_t pdu[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	assert_int_equal(f(0, pdu, sizeof(pdu)), 0xD9963A56u);
}

static void test_dispatched_path_gives_the_known_check_values(void **state)
{
	check_vectors(crc32c);
}

static void test_table_path_gives_the_known_check_values(void **state)
{
	check_vectors(crc32c_portable);
}

/* Feeding a buffer in two pieces gives the crc of the whole, wherever it
 * is cut: callers may checksum a payload that spans two buffers. */
static void test_crc_can_be_fed_in_pieces(void **state)
{
	uint8_t b[200];

	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 131 + 17);
	for (size_t cut = 0; cut <= sizeof(b); cut++) {
		assert_int_equal(crc32c(crc32c(0, b, cut), b + cut, sizeof(b) - cut),
				 crc32c(0, b, sizeof(b)));
		assert_int_equal(crc32c_portable(crc32c_portable(0, b, cut), b + cut, sizeof(b) - cut),
				 crc32c(0, b, sizeof(b)));
	}
}

/* Unaligned heads and odd tails: the 8-byte path must handle every start
 * address and length the same as the byte-wise one. */
static void test_all_paths_agree_at_every_length_and_alignment(void **state)
{
	static uint8_t b[16 + 1100];
	uint32_t x = 2463534242u;

	for (size_t i = 0; i < sizeof(b); i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b[i] = (uint8_t)x;
	}
	for (size_t align = 0; align < 16; align++) {
		for (size_t len = 0; len <= 300; len++) {
			uint32_t want = crc32c_bitwise(0, b + align, len);

			assert_int_equal(crc32c(0, b + align, len), want);
			assert_int_equal(crc32c_portable(0, b + align, len), want);
		}
		assert_int_equal(crc32c(0, b + align, 1100), crc32c_bitwise(0, b + align, 1100));
		assert_int_equal(crc32c_portable(0, b + align, 1100),
				 crc32c_bitwise(0, b + align, 1100));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dispatched_path_gives_the_known_check_values),
		cmocka_unit_test(test_table_path_gives_the_known_check_values),
		cmocka_unit_test(test_crc_can_be_fed_in_pieces),
		cmocka_unit_test(test_all_paths_agree_at_every_length_and_alignment),
	};

	return cmocka_run_group_tests_name("crc32c", tests, NULL, NULL);
}
