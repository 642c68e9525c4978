/* SPDX-License-Identifier: MIT */
/*
 * peerframe: framing, codec and checks of the daemon-to-daemon control
 * protocol (proto/peer.proto, docs/peer-protocol.md). A frame is the control
 * protocol's u32 little-endian length (proto/frame.h's header) followed by a
 * packed PeerMsg of at most PEER_MSG_MAX bytes. Pure functions over bytes, no
 * I/O: every byte a peer daemon sends is decoded and checked here, and the
 * tests/fuzz/fuzz_peer target feeds it arbitrary streams.
 */
#ifndef UCCL_PROTO_PEERFRAME_H
#define UCCL_PROTO_PEERFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "peer.pb-c.h"

#define PEER_PROTO_VERSION   1u
/* Hello.wire_version: engine/wire.h WIRE_VERSION (daemon/peer.c checks they
 * agree at compile time; proto/ does not depend on engine/) */
#define PEER_WIRE_VERSION    5u
#define PEER_MSG_MAX         (64u * 1024)  /* largest payload, both directions */
#define PEER_NAME_MAX        32u           /* host and peer names */
#define PEER_LISTEN_NAME_MAX 64u           /* endpoint listen names (daemon/names.h) */
#define PEER_ERROR_MAX       256u          /* bytes of an Error's message */
#define PEER_ADDR_TEXT_MAX   46u           /* INET6_ADDRSTRLEN */
#define PEER_PATHS_MIN       1u
#define PEER_PATHS_MAX       256u
#define PEER_THREADS_MAX     16u           /* engine threads a hello may announce */
#define PEER_MTU_MIN         576u
#define PEER_MTU_MAX         9000u
/* a hello's max_inflight_bytes counts as the nearest of these (uccl.conf's
 * range): a later daemon's wider range must not stop peering */
#define PEER_INFLIGHT_MIN    (64ull << 10)
#define PEER_INFLIGHT_MAX    (1ull << 30)
#define PEER_TIMEOUT_MIN_MS  200u
#define PEER_TIMEOUT_MAX_MS  60000u
#define PEER_AUTH_NONCE_LEN  16u           /* hello's auth_nonce */
#define PEER_AUTH_PROOF_LEN  32u           /* Auth's proof: HMAC-SHA256 */

/* Payload length announced by hdr: 0, or -EMSGSIZE if zero or over
 * PEER_MSG_MAX. */
int peerframe_hdr_parse(const uint8_t hdr[FRAME_HDR_LEN], uint32_t *len);

/* Pack a message with its length prefix into a malloc'd buffer. -EMSGSIZE
 * if the payload would exceed PEER_MSG_MAX, -ENOMEM. */
int peerframe_pack(const UcclPeer__PeerMsg *m, uint8_t **buf, size_t *len);

/* Decode a payload (without the prefix). -EBADMSG if it does not parse,
 * -EPROTO if it parses but carries no body this version knows. Free with
 * uccl_peer__peer_msg__free_unpacked(). */
int peerframe_unpack(const uint8_t *p, size_t len, UcclPeer__PeerMsg **out);

/* Check the values of a decoded message against the protocol's rules. 0,
 * or -EPROTONOSUPPORT (a hello of another protocol version: the message
 * names both versions) or -EINVAL, with a one-line reason written to why. */
int peerframe_check(const UcclPeer__PeerMsg *m, char *why, size_t whylen);

/* Name of a message kind for logs: "hello", "keepalive", ... "unknown". */
const char *peerframe_msg_name(const UcclPeer__PeerMsg *m);

/* 1..PEER_NAME_MAX characters of [A-Za-z0-9._-]. */
bool peerframe_name_valid(const char *s);
/* 1..PEER_LISTEN_NAME_MAX characters of [A-Za-z0-9._:-], as names_valid(). */
bool peerframe_listen_name_valid(const char *s);

/* Copy untrusted text into buf (len bytes) with every byte outside
 * printable ASCII as '?', cut at len - 1 bytes (its last three then
 * "...", when len is at least 4; '.' is a name character, so a name cut
 * so reads as one ending in "..."); for logs and replies. */
void peerframe_sanitize(char *buf, size_t len, const char *s);

#endif
