/* SPDX-License-Identifier: MIT */
/*
 * peerauth: proof that a peer daemon holds the same secret key
 * (peer_key_file), and the MACs on what it sends afterwards. Each side
 * brings a fresh nonce; each proves the key with HMAC-SHA256 over its role,
 * both names, both nonces and a hash of the dialer's hello, so that a proof
 * is good for this connection between these two names only; a session key
 * from the same inputs then authenticates every later message. No I/O but
 * reading the key file; SHA-256 is here because the daemon links no crypto
 * library.
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
void sha256(const void *p, size_t len, uint8_t out[SHA256_LEN]);   /* in one go */
void hmac_sha256(const void *key, size_t keylen, const void *msg, size_t len,
		 uint8_t out[SHA256_LEN]);

struct peerauth_key {
	uint8_t b[PEERAUTH_KEY_MAX];
	uint32_t len;                /* 0: no key (authentication off) */
};

/* Read path into *k: its bytes without trailing white space, PEERAUTH_KEY_MIN
 * to PEERAUTH_KEY_MAX of them. The file must be a regular file of the
 * daemon's user (or root) with no permission bits for group or others.
 * -errno with why filled in otherwise (-EPERM for the owner or mode,
 * -EINVAL for the length). */
int peerauth_key_load(const char *path, struct peerauth_key *k, char *why, size_t whylen);
/* Whether path would load (peerauth_key_load into a key wiped at once):
 * 0, or -errno with why filled in (-ENOMEM: "out of memory"). */
int peerauth_key_check(const char *path, char *why, size_t whylen);

/* What a handshake's proofs and session key are bound to. */
struct peerauth_hs {
	const char *dialer, *acceptor;            /* host names */
	const uint8_t *nd, *na;                   /* nonces, PEERAUTH_NONCE_LEN each */
	const uint8_t *hello_hash;                /* SHA-256 of the dialer's hello (PeerMsg bytes) */
};

/* The proof the dialing side (dialer true) or the accepting side sends. The
 * roles' proofs differ, so neither can be sent back as the other's. */
void peerauth_proof(const struct peerauth_key *k, bool dialer, const struct peerauth_hs *h,
		    uint8_t out[PEERAUTH_PROOF_LEN]);

/* The key that authenticates the connection's later messages. */
void peerauth_session(const struct peerauth_key *k, const struct peerauth_hs *h,
		      uint8_t out[SHA256_LEN]);

#define PEERAUTH_MAC_LEN 16u   /* HMAC-SHA256 truncated (RFC 2104 section 5) */

/* The MAC of message number seq sent by the dialer (from_dialer) or the
 * accepting side: numbering each direction makes a replayed, dropped or
 * reordered message fail too. */
void peerauth_mac(const uint8_t ks[SHA256_LEN], bool from_dialer, uint64_t seq, const void *msg,
		  size_t len, uint8_t out[PEERAUTH_MAC_LEN]);

/* Clear the key's bytes where the compiler cannot skip it. */
void peerauth_key_wipe(struct peerauth_key *k);

/* Constant time: 0 when the len bytes are equal. */
int peerauth_cmp(const uint8_t *x, const uint8_t *y, size_t len);

/* A fresh nonce (getrandom). 0 or -errno. */
int peerauth_nonce(uint8_t out[PEERAUTH_NONCE_LEN]);

#endif
