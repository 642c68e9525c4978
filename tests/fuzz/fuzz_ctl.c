/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the control protocol decoder. The input is a byte
 * stream as the daemon reads it from a client: frames of [u32 LE length]
 * [payload]. Each payload is decoded as a Request (what the daemon sees) and
 * as a Reply (what the client library sees); whatever decodes is walked,
 * re-encoded and decoded again, and freed.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/frame.h"

#define DEFAULT_MAX_CTL_MSG 65536u   /* conf's default max_ctl_msg */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Touch every byte of a decoded string, so that a bad pointer or a missing
 * terminator shows up under ASan here rather than in the daemon's logs. */
static size_t str_len(const char *s)
{
	return s ? strlen(s) : 0;
}

static void walk_request(const UcclCtl__Request *r)
{
	const char *name = frame_request_name(r);
	int nfds = frame_request_nfds(r);

	if (!name || strcmp(name, "unknown") == 0)
		abort();  /* frame_unpack_request only returns requests with a body */
	if (nfds < 0 || nfds > 1)
		abort();
	switch (r->body_case) {
	case UCCL_CTL__REQUEST__BODY_ATTACH:
		(void)str_len(r->attach->name);
		break;
	case UCCL_CTL__REQUEST__BODY_MEM_REG:
		if (nfds != (r->mem_reg->kind == UCCL_CTL__MEM_KIND__MEM_MEMFD))
			abort();
		break;
	case UCCL_CTL__REQUEST__BODY_LISTEN:
		(void)str_len(r->listen->name);
		break;
	case UCCL_CTL__REQUEST__BODY_CONNECT:
		(void)str_len(r->connect->name);
		break;
	case UCCL_CTL__REQUEST__BODY_SET_CC:
		(void)str_len(r->set_cc->peer);
		(void)str_len(r->set_cc->cc);
		break;
	default:
		break;
	}
}

static void walk_reply(const UcclCtl__Reply *r)
{
	(void)str_len(r->error);
	switch (r->body_case) {
	case UCCL_CTL__REPLY__BODY_ATTACH:
		(void)str_len(r->attach->daemon_version);
		break;
	case UCCL_CTL__REPLY__BODY_ACCEPT:
		(void)str_len(r->accept->peer);
		break;
	case UCCL_CTL__REPLY__BODY_STATUS_REP:
		(void)str_len(r->status_rep->version);
		break;
	case UCCL_CTL__REPLY__BODY_CLIENTS:
		for (size_t i = 0; i < r->clients->n_clients; i++)
			(void)str_len(r->clients->clients[i]->name);
		break;
	case UCCL_CTL__REPLY__BODY_ENDPOINTS:
		for (size_t i = 0; i < r->endpoints->n_endpoints; i++)
			(void)str_len(r->endpoints->endpoints[i]->name);
		break;
	case UCCL_CTL__REPLY__BODY_MRS:
		for (size_t i = 0; i < r->mrs->n_mrs; i++)
			(void)r->mrs->mrs[i]->len;
		break;
	case UCCL_CTL__REPLY__BODY_STATS:
		for (size_t i = 0; i < r->stats->n_counters; i++)
			(void)str_len(r->stats->counters[i]->name);
		break;
	case UCCL_CTL__REPLY__BODY_CHANNELS:
		for (size_t i = 0; i < r->channels->n_channels; i++)
			(void)str_len(r->channels->channels[i]->peer);
		(void)str_len(r->channels->nic->data_address);
		break;
	default:
		break;
	}
}

/* Whether m or any message inside it kept unknown fields. Walks the
 * descriptors, so it also reads every nested message that was decoded. */
static bool has_unknown(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *base = (const char *)m;

	if (m->n_unknown_fields)
		return true;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];

		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			ProtobufCMessage *const *v = *(ProtobufCMessage *const *const *)(base + f->offset);

			for (size_t j = 0; j < n; j++)
				if (has_unknown(v[j]))
					return true;
		} else {
			const ProtobufCMessage *sub;

			if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
			    *(const uint32_t *)(base + f->quantifier_offset) != f->id)
				continue;
			sub = *(ProtobufCMessage *const *)(base + f->offset);
			if (sub && has_unknown(sub))
				return true;
		}
	}
	return false;
}

/* What decoded must encode, and the encoding must decode to the same kind.
 * One exception: protobuf-c 1.4 accepts field number 0 when its tag is a
 * non-minimal varint (80 00), keeps it as an unknown field, and re-encodes
 * it as 00, which it then refuses. The daemon never re-encodes what a client
 * sent, so a message with unknown fields only has to encode without harm. */
static void repack_request(const UcclCtl__Request *r)
{
	UcclCtl__Request *again = NULL;
	uint8_t *buf;
	size_t len;
	int rc;

	if (frame_pack_request(r, &buf, &len) < 0)
		abort();
	rc = frame_unpack_request(buf + FRAME_HDR_LEN, len - FRAME_HDR_LEN, &again);
	if (rc < 0 && !has_unknown(&r->base))
		abort();
	if (rc == 0) {
		if (again->seq != r->seq || again->body_case != r->body_case)
			abort();
		uccl_ctl__request__free_unpacked(again, NULL);
	}
	free(buf);
}

static void repack_reply(const UcclCtl__Reply *r)
{
	UcclCtl__Reply *again = NULL;
	uint8_t *buf;
	size_t len;
	int rc;

	if (frame_pack_reply(r, &buf, &len) < 0)
		abort();
	rc = frame_unpack_reply(buf + FRAME_HDR_LEN, len - FRAME_HDR_LEN, &again);
	if (rc < 0 && !has_unknown(&r->base))
		abort();
	if (rc == 0) {
		if (again->seq != r->seq || again->status != r->status ||
		    again->body_case != r->body_case)
			abort();
		uccl_ctl__reply__free_unpacked(again, NULL);
	}
	free(buf);
}

/* Decoded from an exactly-sized copy, so that ASan sees a read past the
 * payload even when the next frame's bytes follow it in the input. */
static void one_payload(const uint8_t *data, size_t len)
{
	UcclCtl__Request *rq = NULL;
	UcclCtl__Reply *rp = NULL;
	uint8_t *p = malloc(len ? len : 1);
	int r;

	if (!p)
		abort();
	memcpy(p, data, len);
	r = frame_unpack_request(p, len, &rq);
	if (r == 0) {
		walk_request(rq);
		repack_request(rq);
		uccl_ctl__request__free_unpacked(rq, NULL);
	} else if (r != -EBADMSG && r != -EPROTO) {
		abort();
	}
	r = frame_unpack_reply(p, len, &rp);
	if (r == 0) {
		walk_reply(rp);
		repack_reply(rp);
		uccl_ctl__reply__free_unpacked(rp, NULL);
	} else if (r != -EBADMSG) {
		abort();
	}
	free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	while (size >= FRAME_HDR_LEN) {
		uint32_t len = 0, hard = 0;
		int r = frame_hdr_parse(data, DEFAULT_MAX_CTL_MSG, &len);
		int rh = frame_hdr_parse(data, UINT32_MAX, &hard);

		/* No max may raise the limit past FRAME_MAX_HARD, and a length the
		 * smaller max accepts the hard cap accepts too. */
		if (rh == 0 && (hard == 0 || hard > FRAME_MAX_HARD))
			abort();
		if (r == 0 && (rh != 0 || hard != len || len > DEFAULT_MAX_CTL_MSG))
			abort();
		if (r < 0) {
			if (r != -EMSGSIZE)
				abort();
			break;   /* the daemon drops the client here */
		}
		data += FRAME_HDR_LEN;
		size -= FRAME_HDR_LEN;
		if (len > size) {
			/* A truncated frame: decoding the part that is there must
			 * fail or succeed cleanly, never read past it. */
			one_payload(data, size);
			break;
		}
		one_payload(data, len);
		data += len;
		size -= len;
	}
	return 0;
}
