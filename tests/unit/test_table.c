/* SPDX-License-Identifier: MIT */
/* table: ucclctl's human units and the sanitising of names it prints. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "client/table.h"

static void bytes_are(uint64_t bytes, const char *want)
{
	char buf[32];

	table_fmt_bytes(buf, sizeof(buf), bytes);
	assert_string_equal(buf, want);
}

/* A count that rounds to 1024 of a unit is one of the next: 1048575 bytes
 * printed "1024.0 KiB" when the unit was chosen before rounding. */
static void test_bytes_take_the_unit_they_round_to(void **state)
{
	(void)state;
	bytes_are(0, "0 B");
	bytes_are(1023, "1023 B");
	bytes_are(1024, "1.0 KiB");
	bytes_are(1536, "1.5 KiB");
	bytes_are(1048524, "1023.9 KiB");
	bytes_are(1048575, "1.0 MiB");
	bytes_are(1048576, "1.0 MiB");
	bytes_are(1073741823, "1.0 GiB");
	bytes_are(UINT64_MAX, "16.0 EiB");
}

static void ms_are(uint64_t ms, const char *want)
{
	char buf[32];

	table_fmt_ms(buf, sizeof(buf), ms);
	assert_string_equal(buf, want);
}

static void test_durations(void **state)
{
	(void)state;
	ms_are(850, "850ms");
	ms_are(42999, "42s");
	ms_are(187000, "3m07s");
	ms_are(18120000, "5h02m");
	ms_are(187200000, "2d04h");
}

/* Control bytes, a backslash and bytes that are not UTF-8 are written
 * out; valid UTF-8 passes. */
static void test_sanitize(void **state)
{
	char *s;

	(void)state;
	s = table_sanitize("a\x1b[2Jb\\c\xff\xc3\xa9");
	assert_non_null(s);
	assert_string_equal(s, "a\\x1b[2Jb\\\\c\\xff\xc3\xa9");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes_take_the_unit_they_round_to),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_sanitize),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
