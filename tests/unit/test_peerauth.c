/* SPDX-License-Identifier: MIT */
/*
 * peerauth: SHA-256 gives the FIPS 180 example digests, fed whole or in
 * pieces; HMAC-SHA256 gives RFC 4231's; key files are refused when others
 * may read them, when too short or too long, or not regular; and a proof
 * changes with every input it binds (role, name, nonces, key).
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/peerauth.h"

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void sha_hex(const void *p, size_t n, char out[65])
{
	uint8_t d[SHA256_LEN];

	sha256(p, n, d);
	hex(d, sizeof(d), out);
}

static void test_sha256_vectors(void **state)
{
	char out[65];
	struct sha256 s;
	uint8_t d[SHA256_LEN];
	static char a[1000];

	(void)state;
	sha_hex("", 0, out);
	assert_string_equal(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha_hex("abc", 3, out);
	assert_string_equal(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, out);
	assert_string_equal(out, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* a million 'a', in odd-sized pieces that cross the 64-byte blocks */
	memset(a, 'a', sizeof(a));
	sha256_init(&s);
	for (size_t left = 1000000, k = 0; left; k++) {
		size_t n = 1 + (k * 37) % 999;

		n = n < left ? n : left;
		sha256_feed(&s, a, n);
		left -= n;
	}
	sha256_end(&s, d);
	hex(d, sizeof(d), out);
	assert_string_equal(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_sha256_pieces_match_whole(void **state)
{
	uint8_t buf[200], whole[SHA256_LEN], parts[SHA256_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	for (size_t n = 0; n <= sizeof(buf); n++) {
		for (size_t cut = 0; cut <= n; cut += 13) {
			struct sha256 s;

			sha256_init(&s);
			sha256_feed(&s, buf, n);
			sha256_end(&s, whole);
			sha256_init(&s);
			sha256_feed(&s, buf, cut);
			sha256_feed(&s, buf + cut, n - cut);
			sha256_end(&s, parts);
			assert_memory_equal(whole, parts, SHA256_LEN);
		}
	}
}

static void test_hmac_rfc4231(void **state)
{
	uint8_t key[131], d[SHA256_LEN];
	char out[65];

	(void)state;
	memset(key, 0x0b, 20);
	hmac_sha256(key, 20, "Hi There", 8, d);
	hex(d, sizeof(d), out);
	assert_string_equal(out, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
	hex(d, sizeof(d), out);
	assert_string_equal(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	/* test case 6: a key longer than the block is hashed first */
	memset(key, 0xaa, sizeof(key));
	hmac_sha256(key, sizeof(key), "Test Using Larger Than Block-Size Key - Hash Key First", 54, d);
	hex(d, sizeof(d), out);
	assert_string_equal(out, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static char dir[64];

static int setup_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_peerauth.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_key(const char *name, const void *b, size_t n, mode_t mode, char *path)
{
	FILE *f;

	sprintf(path, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_key_file_checks(void **state)
{
	struct peerauth_key k;
	char path[128], link[160], why[256];
	uint8_t big[PEERAUTH_KEY_MAX + 1];

	(void)state;
	/* trailing white space is not part of the key */
	write_key("ok", "0123456789abcdef\n", 17, 0600, path);
	assert_int_equal(peerauth_key_load(path, &k, why, sizeof(why)), 0);
	assert_int_equal(k.len, 16);
	assert_memory_equal(k.b, "0123456789abcdef", 16);
	write_key("ro", "0123456789abcdef \r\n\t", 20, 0400, path);
	assert_int_equal(peerauth_key_load(path, &k, why, sizeof(why)), 0);
	assert_int_equal(k.len, 16);

	/* group or others may read it: refused, and the message says how to fix it */
	write_key("open", "0123456789abcdef", 16, 0640, path);
	assert_int_equal(peerauth_key_load(path, &k, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "mode 0640"));
	assert_non_null(strstr(why, "chmod 600"));
	assert_int_equal(k.len, 0);
	write_key("open2", "0123456789abcdef", 16, 0604, path);
	assert_int_equal(peerauth_key_load(path, &k, why, sizeof(why)), -EPERM);

	/* too short once the newline is gone; too long */
	write_key("short", "0123456789abcde\n", 16, 0600, path);
	assert_int_equal(peerauth_key_load(path, &k, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "16 to 1024 bytes"));
	memset(big, 'x', sizeof(big));
	write_key("max", big, PEERAUTH_KEY_MAX, 0600, path);
	assert_int_equal(peerauth_key_load(path, &k, why, sizeof(why)), 0);
	assert_int_equal(k.len, PEERAUTH_KEY_MAX);
	write_key("long", big, sizeof(big), 0600, path);
	assert_int_equal(peerauth_key_load(path, &k, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "longer"));
	assert_int_equal(k.len, 0);
	/* the longest key with white space after it */
	memset(big, ' ', sizeof(big));
	memset(big, 'y', PEERAUTH_KEY_MAX);
	big[PEERAUTH_KEY_MAX] = '\n';
	write_key("max-nl", big, PEERAUTH_KEY_MAX + 1, 0600, path);
	assert_int_equal(peerauth_key_load(path, &k, why, sizeof(why)), 0);
	assert_int_equal(k.len, PEERAUTH_KEY_MAX);
	/* someone else's file, whatever its mode (only root can make one here) */
	if (geteuid() == 0) {
		write_key("theirs", "0123456789abcdef", 16, 0600, path);
		assert_int_equal(chown(path, 4321, 4321), 0);
		assert_int_equal(peerauth_key_load(path, &k, why, sizeof(why)), -EPERM);
		assert_non_null(strstr(why, "owned by uid 4321"));
	}

	/* not there, a directory, a symbolic link */
	sprintf(path, "%s/none", dir);
	assert_int_equal(peerauth_key_load(path, &k, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, path));
	assert_int_equal(peerauth_key_load(dir, &k, why, sizeof(why)), -EINVAL);
	write_key("target", "0123456789abcdef", 16, 0600, path);
	sprintf(link, "%s/link", dir);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(peerauth_key_load(link, &k, why, sizeof(why)), -ELOOP);
}

static void test_proof_binds_every_input(void **state)
{
	struct peerauth_key k1 = { .len = 16 }, k2 = { .len = 16 };
	uint8_t nd[PEERAUTH_NONCE_LEN] = { 1 }, na[PEERAUTH_NONCE_LEN] = { 2 }, hh[SHA256_LEN] = { 3 };
	uint8_t p[PEERAUTH_PROOF_LEN], q[PEERAUTH_PROOF_LEN], ks[SHA256_LEN];
	struct peerauth_hs h = { "a", "b", nd, na, hh }, x;

	(void)state;
	memcpy(k1.b, "0123456789abcdef", 16);
	memcpy(k2.b, "0123456789abcdeF", 16);
	peerauth_proof(&k1, true, &h, p);
	peerauth_proof(&k1, true, &h, q);
	assert_int_equal(peerauth_cmp(p, q, sizeof(p)), 0);
	/* the other role or key */
	peerauth_proof(&k1, false, &h, q);
	assert_int_equal(peerauth_cmp(p, q, sizeof(p)), 1);
	peerauth_proof(&k2, true, &h, q);
	assert_int_equal(peerauth_cmp(p, q, sizeof(p)), 1);
	/* either name, the names swapped or run together differently */
	x = h, x.dialer = "c";
	peerauth_proof(&k1, true, &x, q);
	assert_int_equal(peerauth_cmp(p, q, sizeof(p)), 1);
	x = h, x.acceptor = "c";
	peerauth_proof(&k1, true, &x, q);
	assert_int_equal(peerauth_cmp(p, q, sizeof(p)), 1);
	x = h, x.dialer = "b", x.acceptor = "a";
	peerauth_proof(&k1, true, &x, q);
	assert_int_equal(peerauth_cmp(p, q, sizeof(p)), 1);
	x = h, x.dialer = "ab", x.acceptor = "";
	peerauth_proof(&k1, true, &x, q);
	assert_int_equal(peerauth_cmp(p, q, sizeof(p)), 1);
	/* the nonces swapped, either changed, the hello's hash */
	x = h, x.nd = na, x.na = nd;
	peerauth_proof(&k1, true, &x, q);
	assert_int_equal(peerauth_cmp(p, q, sizeof(p)), 1);
	nd[15] ^= 0x80;
	peerauth_proof(&k1, true, &h, q);
	assert_int_equal(peerauth_cmp(p, q, sizeof(p)), 1);
	nd[15] ^= 0x80;
	hh[31] ^= 1;
	peerauth_proof(&k1, true, &h, q);
	assert_int_equal(peerauth_cmp(p, q, sizeof(p)), 1);
	hh[31] ^= 1;
	/* the session key is neither proof */
	peerauth_session(&k1, &h, ks);
	assert_int_equal(peerauth_cmp(p, ks, sizeof(p)), 1);
	peerauth_proof(&k1, false, &h, q);
	assert_int_equal(peerauth_cmp(q, ks, sizeof(q)), 1);
}

/* The MAC is HMAC-SHA256(ks, direction || seq LE || message), cut to 16 bytes. */
static void test_mac(void **state)
{
	uint8_t ks[SHA256_LEN], msg[300], buf[9 + sizeof(msg)], full[SHA256_LEN], m1[PEERAUTH_MAC_LEN],
		m2[PEERAUTH_MAC_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(ks); i++)
		ks[i] = (uint8_t)(i * 11);
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 5 + 1);
	buf[0] = 'D';
	for (int i = 0; i < 8; i++)
		buf[1 + i] = (uint8_t)(0x0102030405060708ull >> (8 * i));
	memcpy(buf + 9, msg, sizeof(msg));
	hmac_sha256(ks, sizeof(ks), buf, sizeof(buf), full);
	peerauth_mac(ks, true, 0x0102030405060708ull, msg, sizeof(msg), m1);
	assert_memory_equal(m1, full, PEERAUTH_MAC_LEN);
	/* direction and number change it */
	peerauth_mac(ks, false, 0x0102030405060708ull, msg, sizeof(msg), m2);
	assert_memory_not_equal(m1, m2, sizeof(m1));
	peerauth_mac(ks, true, 0x0102030405060709ull, msg, sizeof(msg), m2);
	assert_memory_not_equal(m1, m2, sizeof(m1));
}

static void test_nonces_differ(void **state)
{
	uint8_t a[PEERAUTH_NONCE_LEN], b[PEERAUTH_NONCE_LEN];

	(void)state;
	assert_int_equal(peerauth_nonce(a), 0);
	assert_int_equal(peerauth_nonce(b), 0);
	assert_memory_not_equal(a, b, sizeof(a));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_vectors),
		cmocka_unit_test(test_sha256_pieces_match_whole),
		cmocka_unit_test(test_hmac_rfc4231),
		cmocka_unit_test(test_key_file_checks),
		cmocka_unit_test(test_proof_binds_every_input),
		cmocka_unit_test(test_mac),
		cmocka_unit_test(test_nonces_differ),
	};

	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
