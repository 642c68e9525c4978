/* SPDX-License-Identifier: MIT */
/*
 * frame: length-prefixed protobuf framing for the control protocol. Every
 * byte that arrives on the control socket is decoded here.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

int frame_hdr_parse(const uint8_t hdr[FRAME_HDR_LEN], uint32_t max, uint32_t *len)
{
	uint32_t n = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 |
		     (uint32_t)hdr[3] << 24;

	if (max > FRAME_MAX_HARD)
		max = FRAME_MAX_HARD;
	if (n == 0 || n > max)
		return -EMSGSIZE;
	*len = n;
	return 0;
}

int frame_pack_message(const ProtobufCMessage *m, size_t max, uint8_t **buf, size_t *len)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *b;

	if (n + FRAME_HDR_LEN > FRAME_MAX_HARD || n > max)
		return -EMSGSIZE;
	b = malloc(n + FRAME_HDR_LEN);
	if (!b)
		return -ENOMEM;
	b[0] = n & 0xff;
	b[1] = (n >> 8) & 0xff;
	b[2] = (n >> 16) & 0xff;
	b[3] = (n >> 24) & 0xff;
	protobuf_c_message_pack(m, b + FRAME_HDR_LEN);
	*buf = b;
	*len = n + FRAME_HDR_LEN;
	return 0;
}

int frame_pack_request(const UcclCtl__Request *r, uint8_t **buf, size_t *len)
{
	return frame_pack_message(&r->base, FRAME_MAX_HARD, buf, len);
}

int frame_pack_reply(const UcclCtl__Reply *r, uint8_t **buf, size_t *len)
{
	return frame_pack_message(&r->base, FRAME_MAX_HARD, buf, len);
}

int frame_unpack_request(const uint8_t *p, size_t len, UcclCtl__Request **out)
{
	UcclCtl__Request *r = uccl_ctl__request__unpack(NULL, len, p);

	if (!r)
		return -EBADMSG;
	if (r->body_case == UCCL_CTL__REQUEST__BODY__NOT_SET) {
		uccl_ctl__request__free_unpacked(r, NULL);
		return -EPROTO;
	}
	*out = r;
	return 0;
}

int frame_unpack_reply(const uint8_t *p, size_t len, UcclCtl__Reply **out)
{
	UcclCtl__Reply *r = uccl_ctl__reply__unpack(NULL, len, p);

	if (!r)
		return -EBADMSG;
	*out = r;
	return 0;
}

int frame_request_nfds(const UcclCtl__Request *r)
{
	if (r->body_case == UCCL_CTL__REQUEST__BODY_MEM_REG)
		return r->mem_reg->kind == UCCL_CTL__MEM_KIND__MEM_MEMFD ? 1 : 0;
	return 0;
}

const char *frame_request_name(const UcclCtl__Request *r)
{
	switch (r->body_case) {
	case UCCL_CTL__REQUEST__BODY_ATTACH: return "attach";
	case UCCL_CTL__REQUEST__BODY_DETACH: return "detach";
	case UCCL_CTL__REQUEST__BODY_MEM_REG: return "mem_reg";
	case UCCL_CTL__REQUEST__BODY_MEM_DEREG: return "mem_dereg";
	case UCCL_CTL__REQUEST__BODY_EP_CREATE: return "ep_create";
	case UCCL_CTL__REQUEST__BODY_EP_DESTROY: return "ep_destroy";
	case UCCL_CTL__REQUEST__BODY_LISTEN: return "listen";
	case UCCL_CTL__REQUEST__BODY_CONNECT: return "connect";
	case UCCL_CTL__REQUEST__BODY_ACCEPT: return "accept";
	case UCCL_CTL__REQUEST__BODY_CLOSE: return "close";
	case UCCL_CTL__REQUEST__BODY_STATUS: return "status";
	case UCCL_CTL__REQUEST__BODY_CLIENTS: return "clients";
	case UCCL_CTL__REQUEST__BODY_ENDPOINTS: return "endpoints";
	case UCCL_CTL__REQUEST__BODY_MRS: return "mrs";
	case UCCL_CTL__REQUEST__BODY_STATS: return "stats";
	case UCCL_CTL__REQUEST__BODY_PEERS: return "peers";
	case UCCL_CTL__REQUEST__BODY_CHANNELS: return "channels";
	case UCCL_CTL__REQUEST__BODY_SET_CC: return "set_cc";
	default: return "unknown";
	}
}
