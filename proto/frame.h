/* SPDX-License-Identifier: MIT */
/*
 * frame: the control protocol's framing and codec. A frame is a u32
 * little-endian payload length followed by a packed Request or Reply. Pure
 * functions over bytes (no I/O), shared by the daemon, the client library and
 * the fuzz target, so that every decoder of untrusted bytes is this one.
 */
#ifndef UCCL_PROTO_FRAME_H
#define UCCL_PROTO_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include "ctl.pb-c.h"

#define UCCL_PROTO_VERSION   1u
#define FRAME_HDR_LEN        4u
#define FRAME_MAX_HARD       (1u << 20)  /* no config may raise the limit past this */

/* Length of the payload announced by hdr; -EMSGSIZE if over max or zero. */
int frame_hdr_parse(const uint8_t hdr[FRAME_HDR_LEN], uint32_t max, uint32_t *len);

/* Pack any protobuf-c message of at most max bytes with its length prefix
 * into a malloc'd buffer (-EMSGSIZE if larger). */
int frame_pack_message(const ProtobufCMessage *m, size_t max, uint8_t **buf, size_t *len);
/* Pack a message with its length prefix into a malloc'd buffer. */
int frame_pack_request(const UcclCtl__Request *r, uint8_t **buf, size_t *len);
int frame_pack_reply(const UcclCtl__Reply *r, uint8_t **buf, size_t *len);

/* Decode a payload (without the prefix). -EBADMSG if it does not parse,
 * -EPROTO if it parses but names no operation. Free with the pb-c free. */
int frame_unpack_request(const uint8_t *p, size_t len, UcclCtl__Request **out);
int frame_unpack_reply(const uint8_t *p, size_t len, UcclCtl__Reply **out);

/* How many fds a request of this kind carries (0 or 1). */
int frame_request_nfds(const UcclCtl__Request *r);

/* Name of a request kind, for logs ("attach", "mem_reg", ...). */
const char *frame_request_name(const UcclCtl__Request *r);

#endif
