/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the peer protocol decoder. The input is a byte
 * stream as a daemon reads it from a peer's TCP connection: frames of
 * [u32 LE length][PeerMsg]. Each payload is decoded and checked as the
 * daemon does (peerframe_unpack, peerframe_check); whatever decodes is
 * walked, re-encoded and decoded again, and freed.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/peerframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t str_len(const char *s)
{
	return s ? strlen(s) : 0;
}

/* Touch every string the daemon may log or copy, and hold the checks to
 * what they promise. */
static void walk(const UcclPeer__PeerMsg *m, int checked)
{
	char buf[64];

	peerframe_sanitize(buf, sizeof(buf), peerframe_msg_name(m));
	switch (m->body_case) {
	case UCCL_PEER__PEER_MSG__BODY_HELLO: {
		const UcclPeer__Hello *h = m->hello;

		(void)str_len(h->host_name);
		(void)str_len(h->data_address);
		(void)str_len(h->daemon_version);
		if (checked == 0 &&
		    (h->proto_version != PEER_PROTO_VERSION || !peerframe_name_valid(h->host_name) ||
		     !h->data_address || h->data_paths < PEER_PATHS_MIN || h->data_paths > PEER_PATHS_MAX ||
		     h->mtu < PEER_MTU_MIN || h->mtu > PEER_MTU_MAX || h->token == 0 ||
		     h->data_port > 65535 || strlen(h->host_name) > PEER_NAME_MAX ||
		     !h->has_wire_version || h->wire_version != PEER_WIRE_VERSION))
			abort();
		/* refused as another version only for the peer protocol's or
		 * the data plane's */
		if (checked == 0 && h->has_auth_nonce && h->auth_nonce.len != PEER_AUTH_NONCE_LEN)
			abort();
		if (checked == -EPROTONOSUPPORT && h->proto_version == PEER_PROTO_VERSION &&
		    h->has_wire_version && h->wire_version == PEER_WIRE_VERSION)
			abort();
		break;
	}
	case UCCL_PEER__PEER_MSG__BODY_ERROR:
		peerframe_sanitize(buf, sizeof(buf), m->error->message);
		if (checked == 0 && (m->error->code >= 0 || strlen(m->error->message) > PEER_ERROR_MAX))
			abort();
		break;
	case UCCL_PEER__PEER_MSG__BODY_AUTH:
		/* the daemon copies exactly these lengths */
		(void)str_len(m->auth->host_name);
		if (checked == 0 && (m->auth->proof.len != PEER_AUTH_PROOF_LEN ||
				     (m->auth->has_nonce && m->auth->nonce.len != PEER_AUTH_NONCE_LEN) ||
				     (m->auth->host_name && !peerframe_name_valid(m->auth->host_name))))
			abort();
		break;
	case UCCL_PEER__PEER_MSG__BODY_LOOKUP_REQ:
		if (checked == 0 && !peerframe_listen_name_valid(m->lookup_req->name))
			abort();
		break;
	case UCCL_PEER__PEER_MSG__BODY_LOOKUP_REP:
		if (checked == 0 && m->lookup_rep->found != m->lookup_rep->has_ep_id)
			abort();
		break;
	default:
		break;
	}
}

/* Whether m or any message inside it kept unknown fields (see fuzz_ctl.c:
 * protobuf-c keeps a non-minimal field-0 tag it then refuses to encode). */
static bool has_unknown(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *base = (const char *)m;

	if (m->n_unknown_fields)
		return true;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const ProtobufCMessage *sub;

		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    *(const uint32_t *)(base + f->quantifier_offset) != f->id)
			continue;
		sub = *(ProtobufCMessage *const *)(base + f->offset);
		if (sub && has_unknown(sub))
			return true;
	}
	return false;
}

static void repack(const UcclPeer__PeerMsg *m, int checked)
{
	UcclPeer__PeerMsg *again = NULL;
	uint8_t *buf;
	size_t len;
	int rc;
	char why[PEER_ERROR_MAX];

	/* a decoded payload is at most PEER_MSG_MAX, and re-encodes no longer */
	if (peerframe_pack(m, &buf, &len) < 0)
		abort();
	rc = peerframe_unpack(buf + FRAME_HDR_LEN, len - FRAME_HDR_LEN, &again);
	if (rc < 0 && !has_unknown(&m->base))
		abort();
	if (rc == 0) {
		if (again->body_case != m->body_case)
			abort();
		/* the checks depend on values only, not on the encoding */
		if (peerframe_check(again, why, sizeof(why)) != checked)
			abort();
		uccl_peer__peer_msg__free_unpacked(again, NULL);
	}
	free(buf);
}

static void one_payload(const uint8_t *data, size_t len)
{
	UcclPeer__PeerMsg *m = NULL;
	uint8_t *p = malloc(len ? len : 1);
	char why[PEER_ERROR_MAX];
	int r, checked;

	if (!p)
		abort();
	memcpy(p, data, len);
	r = peerframe_unpack(p, len, &m);
	if (r == 0) {
		why[0] = '\0';
		checked = peerframe_check(m, why, sizeof(why));
		if (checked != 0 && checked != -EINVAL && checked != -EPROTONOSUPPORT)
			abort();
		if (checked < 0 && why[0] == '\0')
			abort();   /* every refusal says why */
		walk(m, checked);
		repack(m, checked);
		uccl_peer__peer_msg__free_unpacked(m, NULL);
	} else if (r != -EBADMSG && r != -EPROTO) {
		abort();
	}
	free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	while (size >= FRAME_HDR_LEN) {
		uint32_t len = 0;
		int r = peerframe_hdr_parse(data, &len);

		if (r < 0) {
			if (r != -EMSGSIZE)
				abort();
			break;   /* the daemon drops the connection here */
		}
		if (len == 0 || len > PEER_MSG_MAX)
			abort();
		data += FRAME_HDR_LEN;
		size -= FRAME_HDR_LEN;
		if (len > size) {
			one_payload(data, size);   /* cut short: must fail or succeed cleanly */
			break;
		}
		one_payload(data, len);
		data += len;
		size -= len;
	}
	return 0;
}
