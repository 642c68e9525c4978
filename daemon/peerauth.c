/* SPDX-License-Identifier: MIT */
/* peerauth: SHA-256 (FIPS 180-4), HMAC (RFC 2104) and the peers' proofs. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "peerauth.h"

static const uint32_t K256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static void sha256_block(struct sha256 *s, const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = s->h[0]; b = s->h[1]; c = s->h[2]; d = s->h[3];
	e = s->h[4]; f = s->h[5]; g = s->h[6]; h = s->h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) +
			      K256[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));

		h = g; g = f; f = e; e = d + t1;
		d = c; c = b; b = a; a = t1 + t2;
	}
	s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d;
	s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}

void sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(s->h, iv, sizeof(iv));
	s->n = 0;
}

void sha256_feed(struct sha256 *s, const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t have = s->n % 64;

	s->n += len;
	if (have) {
		size_t take = 64 - have < len ? 64 - have : len;

		memcpy(s->buf + have, b, take);
		b += take;
		len -= take;
		if (have + take < 64)
			return;
		sha256_block(s, s->buf);
	}
	for (; len >= 64; b += 64, len -= 64)
		sha256_block(s, b);
	memcpy(s->buf, b, len);
}

void sha256_end(struct sha256 *s, uint8_t out[SHA256_LEN])
{
	uint64_t bits = s->n * 8;
	uint8_t pad[72] = { 0x80 };
	size_t have = s->n % 64;
	size_t padlen = (have < 56 ? 56 : 120) - have;

	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (uint8_t)(bits >> (56 - 8 * i));
	sha256_feed(s, pad, padlen + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
}

void sha256(const void *p, size_t len, uint8_t out[SHA256_LEN])
{
	struct sha256 s;

	sha256_init(&s);
	sha256_feed(&s, p, len);
	sha256_end(&s, out);
}

/* HMAC over a then b, without joining them */
static void hmac2(const void *key, size_t keylen, const void *a, size_t alen, const void *b,
		  size_t blen, uint8_t out[SHA256_LEN])
{
	uint8_t k[64] = { 0 }, pad[64], inner[SHA256_LEN];
	struct sha256 s;

	if (keylen > 64) {
		sha256_init(&s);
		sha256_feed(&s, key, keylen);
		sha256_end(&s, k);
	} else {
		memcpy(k, key, keylen);
	}
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&s);
	sha256_feed(&s, pad, 64);
	sha256_feed(&s, a, alen);
	sha256_feed(&s, b, blen);
	sha256_end(&s, inner);
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&s);
	sha256_feed(&s, pad, 64);
	sha256_feed(&s, inner, sizeof(inner));
	sha256_end(&s, out);
	/* the key, padded, and hash states that held it */
	explicit_bzero(k, sizeof(k));
	explicit_bzero(pad, sizeof(pad));
	explicit_bzero(&s, sizeof(s));
}

void hmac_sha256(const void *key, size_t keylen, const void *msg, size_t len,
		 uint8_t out[SHA256_LEN])
{
	hmac2(key, keylen, msg, len, "", 0, out);
}

int peerauth_key_load(const char *path, struct peerauth_key *k, char *why, size_t whylen)
{
	/* room for white space after a key of the longest length */
	uint8_t buf[PEERAUTH_KEY_MAX + 64];
	struct stat st;
	ssize_t n;
	int fd, r;

	k->len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		snprintf(why, whylen, "peer_key_file %s: %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(why, whylen, "peer_key_file %s: %s", path, strerror(-r));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		snprintf(why, whylen, "peer_key_file %s: not a regular file", path);
		goto out;
	}
	/* a key others can read, or replace, is no secret; ssh refuses such keys too */
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		r = -EPERM;
		snprintf(why, whylen, "peer_key_file %s: owned by uid %u, not by the daemon's user (%u) "
			 "or root", path, (unsigned)st.st_uid, (unsigned)geteuid());
		goto out;
	}
	if (st.st_mode & 077) {
		r = -EPERM;
		snprintf(why, whylen, "peer_key_file %s: mode %04o lets group or others at it "
			 "(chmod 600)", path, (unsigned)(st.st_mode & 07777));
		goto out;
	}
	n = read(fd, buf, sizeof(buf));
	if (n < 0) {
		r = -errno;
		snprintf(why, whylen, "peer_key_file %s: %s", path, strerror(-r));
		goto out;
	}
	if (n == (ssize_t)sizeof(buf)) {
		n = PEERAUTH_KEY_MAX + 1;      /* longer than any key, whatever follows */
	} else {
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
				 buf[n - 1] == '\t'))
			n--;
	}
	if (n < (ssize_t)PEERAUTH_KEY_MIN || n > (ssize_t)PEERAUTH_KEY_MAX) {
		r = -EINVAL;
		snprintf(why, whylen, "peer_key_file %s: the key must be %u to %u bytes%s", path,
			 PEERAUTH_KEY_MIN, PEERAUTH_KEY_MAX,
			 n > (ssize_t)PEERAUTH_KEY_MAX ? " (it is longer)" : "");
		goto out;
	}
	memcpy(k->b, buf, (size_t)n);
	k->len = (uint32_t)n;
	r = 0;
out:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return r;
}

/* label, then each name length-prefixed, the nonces and the hello's hash:
 * no two handshakes encode alike */
static size_t transcript(uint8_t *m, const char *label, const struct peerauth_hs *h)
{
	size_t o = strlen(label) + 1;

	memcpy(m, label, o);
	for (int i = 0; i < 2; i++) {
		const char *name = i ? h->acceptor : h->dialer;
		size_t nl = strnlen(name, 255);

		m[o++] = (uint8_t)nl;
		memcpy(m + o, name, nl);
		o += nl;
	}
	memcpy(m + o, h->nd, PEERAUTH_NONCE_LEN);
	o += PEERAUTH_NONCE_LEN;
	memcpy(m + o, h->na, PEERAUTH_NONCE_LEN);
	o += PEERAUTH_NONCE_LEN;
	memcpy(m + o, h->hello_hash, SHA256_LEN);
	return o + SHA256_LEN;
}

#define TRANSCRIPT_MAX (40 + 2 * 256 + 2 * PEERAUTH_NONCE_LEN + SHA256_LEN)

void peerauth_proof(const struct peerauth_key *k, bool dialer, const struct peerauth_hs *h,
		    uint8_t out[PEERAUTH_PROOF_LEN])
{
	uint8_t m[TRANSCRIPT_MAX];
	size_t n = transcript(m, dialer ? "ucclsvcd peer auth v1 dialer" :
			      "ucclsvcd peer auth v1 acceptor", h);

	hmac_sha256(k->b, k->len, m, n, out);
}

void peerauth_session(const struct peerauth_key *k, const struct peerauth_hs *h,
		      uint8_t out[SHA256_LEN])
{
	uint8_t m[TRANSCRIPT_MAX];
	size_t n = transcript(m, "ucclsvcd peer session v1", h);

	hmac_sha256(k->b, k->len, m, n, out);
}

void peerauth_mac(const uint8_t ks[SHA256_LEN], bool from_dialer, uint64_t seq, const void *msg,
		  size_t len, uint8_t out[PEERAUTH_MAC_LEN])
{
	uint8_t hdr[9], full[SHA256_LEN];

	hdr[0] = from_dialer ? 'D' : 'A';
	for (int i = 0; i < 8; i++)
		hdr[1 + i] = (uint8_t)(seq >> (8 * i));
	hmac2(ks, SHA256_LEN, hdr, sizeof(hdr), msg, len, full);
	memcpy(out, full, PEERAUTH_MAC_LEN);
}

void peerauth_key_wipe(struct peerauth_key *k)
{
	explicit_bzero(k, sizeof(*k));
}

int peerauth_key_check(const char *path, char *why, size_t whylen)
{
	struct peerauth_key *k = calloc(1, sizeof(*k));   /* up to 1 KiB: not on the stack */
	int r;

	if (!k) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	r = peerauth_key_load(path, k, why, whylen);
	peerauth_key_wipe(k);
	free(k);
	return r;
}

int peerauth_cmp(const uint8_t *x, const uint8_t *y, size_t len)
{
	uint8_t d = 0;

	for (size_t i = 0; i < len; i++)
		d |= x[i] ^ y[i];
	return d != 0;
}

int peerauth_nonce(uint8_t out[PEERAUTH_NONCE_LEN])
{
	ssize_t n = getrandom(out, PEERAUTH_NONCE_LEN, GRND_NONBLOCK);

	if (n < 0)
		return -errno;
	return n == PEERAUTH_NONCE_LEN ? 0 : -EAGAIN;
}
