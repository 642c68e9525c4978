/* SPDX-License-Identifier: MIT */
/*
 * peerauth: proof that a peer daemon holds the same secret key
 * (peer_key_file). Each side brings a fresh nonce and sends
 * HMAC-SHA256(key, its role, the dialer's name, both nonces), so a proof
 * answers this connection only. No I/O but reading the key file; SHA-256 is
 * here because the daemon links no crypto library.
 */
#ifndef UCCL_DAEMON_PEERAUTH_H
#define UCCL_DAEMON_PEERAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PEERAUTH_NONCE_LEN 16u
#define PEERAUTH_PROOF_LEN 32u
#define PEERAUTH_KEY_MIN   16u   /* bytes: shorter keys are refused */
#define PEERAUTH_KEY_MAX   1024u

#define SHA256_LEN 32u

struct sha256 {
	uint32_t h[8];
	uint64_t n;                  /* bytes fed so far */
	uint8_t buf[64];
};

void sha256_init(struct sha256 *s);
void sha256_feed(struct sha256 *s, const void *p, size_t len);
void sha256_end(struct sha256 *s, uint8_t out[SHA256_LEN]);
void hmac_sha256(const void *key, size_t keylen, const void *msg, size_t len,
		 uint8_t out[SHA256_LEN]);

struct peerauth_key {
	uint8_t b[PEERAUTH_KEY_MAX];
	uint32_t len;                /* 0: no key (authentication off) */
};

/* Read path into *k: its bytes without trailing white space, PEERAUTH_KEY_MIN
 * to PEERAUTH_KEY_MAX of them. The file must be a regular file that neither
 * group nor others may read or write. -errno with why filled in otherwise
 * (-EPERM for the mode, -EINVAL for the length). */
int peerauth_key_load(const char *path, struct peerauth_key *k, char *why, size_t whylen);

/* The proof the dialing side (dialer true) or the accepting side sends on
 * the connection whose dialer calls itself dialer_name, with nonces nd (the
 * dialer's) and na. The roles' proofs differ, so one side's proof cannot be
 * echoed back as the other's, and the nonces make it this connection's. */
void peerauth_proof(const struct peerauth_key *k, bool dialer, const char *dialer_name,
		    const uint8_t nd[PEERAUTH_NONCE_LEN], const uint8_t na[PEERAUTH_NONCE_LEN],
		    uint8_t out[PEERAUTH_PROOF_LEN]);

/* Constant time: 0 when the len bytes are equal. */
int peerauth_cmp(const uint8_t *x, const uint8_t *y, size_t len);

/* A fresh nonce (getrandom). 0 or -errno. */
int peerauth_nonce(uint8_t out[PEERAUTH_NONCE_LEN]);

#endif
