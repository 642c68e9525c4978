/* SPDX-License-Identifier: MIT */
/*
 * peerframe: length-prefixed protobuf framing for the peer protocol, and the
 * checks every decoded peer message passes before the daemon acts on it.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peerframe.h"

int peerframe_hdr_parse(const uint8_t hdr[FRAME_HDR_LEN], uint32_t *len)
{
	return frame_hdr_parse(hdr, PEER_MSG_MAX, len);
}

int peerframe_pack(const UcclPeer__PeerMsg *m, uint8_t **buf, size_t *len)
{
	if (uccl_peer__peer_msg__get_packed_size(m) == 0)
		return -EMSGSIZE;
	return frame_pack_message(&m->base, PEER_MSG_MAX, buf, len);
}

int peerframe_unpack(const uint8_t *p, size_t len, UcclPeer__PeerMsg **out)
{
	UcclPeer__PeerMsg *m;

	if (len > PEER_MSG_MAX)
		return -EBADMSG;
	m = uccl_peer__peer_msg__unpack(NULL, len, p);
	if (!m)
		return -EBADMSG;
	if (m->body_case == UCCL_PEER__PEER_MSG__BODY__NOT_SET) {
		uccl_peer__peer_msg__free_unpacked(m, NULL);
		return -EPROTO;
	}
	*out = m;
	return 0;
}

const char *peerframe_msg_name(const UcclPeer__PeerMsg *m)
{
	switch (m->body_case) {
	case UCCL_PEER__PEER_MSG__BODY_HELLO: return "hello";
	case UCCL_PEER__PEER_MSG__BODY_ERROR: return "error";
	case UCCL_PEER__PEER_MSG__BODY_KEEPALIVE: return "keepalive";
	case UCCL_PEER__PEER_MSG__BODY_KEEPALIVE_ACK: return "keepalive_ack";
	case UCCL_PEER__PEER_MSG__BODY_LOOKUP_REQ: return "lookup_req";
	case UCCL_PEER__PEER_MSG__BODY_LOOKUP_REP: return "lookup_rep";
	case UCCL_PEER__PEER_MSG__BODY_CONNECT_REQ: return "connect_req";
	case UCCL_PEER__PEER_MSG__BODY_CONNECT_REP: return "connect_rep";
	case UCCL_PEER__PEER_MSG__BODY_CONN_CLOSE: return "conn_close";
	case UCCL_PEER__PEER_MSG__BODY_AUTH: return "auth";
	default: return "unknown";
	}
}

static bool name_chars(const char *s, size_t max, bool colon)
{
	size_t n;

	if (!s)
		return false;
	n = strnlen(s, max + 1);
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-' || (colon && c == ':')))
			return false;
	}
	return true;
}

bool peerframe_name_valid(const char *s)
{
	return name_chars(s, PEER_NAME_MAX, false);
}

bool peerframe_listen_name_valid(const char *s)
{
	return name_chars(s, PEER_LISTEN_NAME_MAX, true);
}

void peerframe_sanitize(char *buf, size_t len, const char *s)
{
	size_t i = 0;

	if (len == 0)
		return;
	for (; s && s[i] && i + 1 < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		buf[i] = ch < 0x20 || ch >= 0x7f ? '?' : (char)ch;
	}
	buf[i] = '\0';
	/* cut: say so, or a long name reads as a shorter one that exists */
	if (s && s[i] && i >= 3)
		memcpy(buf + i - 3, "...", 3);
}

/* A numeric IPv4 or IPv6 address, as inet_pton reads it. */
static bool numeric_address(const char *s)
{
	unsigned char a[16];

	if (!s || strnlen(s, PEER_ADDR_TEXT_MAX) >= PEER_ADDR_TEXT_MAX)
		return false;
	return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

static int check_hello(const UcclPeer__Hello *h, char *why, size_t whylen)
{
	if (h->proto_version != PEER_PROTO_VERSION) {
		snprintf(why, whylen, "peer speaks peer protocol %u, this daemon speaks %u",
			 h->proto_version, PEER_PROTO_VERSION);
		return -EPROTONOSUPPORT;
	}
	/* data packets of another layout would all be dropped: say so now */
	if (!h->has_wire_version || h->wire_version != PEER_WIRE_VERSION) {
		if (h->has_wire_version)
			snprintf(why, whylen, "peer's data packets are wire version %u, this daemon's are %u",
				 h->wire_version, PEER_WIRE_VERSION);
		else
			snprintf(why, whylen, "peer's data packets are wire version 2 or older "
				 "(no wire_version in its hello), this daemon's are %u", PEER_WIRE_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (!peerframe_name_valid(h->host_name)) {
		snprintf(why, whylen, "hello: %s host_name (1..%u of A-Za-z0-9._-)",
			 h->host_name ? "bad" : "no", PEER_NAME_MAX);
		return -EINVAL;
	}
	if (!numeric_address(h->data_address)) {
		snprintf(why, whylen, "hello: %s data_address (a numeric IPv4 or IPv6 address)",
			 h->data_address ? "bad" : "no");
		return -EINVAL;
	}
	if (h->has_listen_port && (h->listen_port == 0 || h->listen_port > 65535)) {
		snprintf(why, whylen, "hello: bad listen_port %u (1..65535)", h->listen_port);
		return -EINVAL;
	}
	if (!h->has_data_port || h->data_port > 65535) {
		snprintf(why, whylen, "hello: %s data_port (0..65535)", h->has_data_port ? "bad" : "no");
		return -EINVAL;
	}
	if (!h->has_data_paths || h->data_paths < PEER_PATHS_MIN || h->data_paths > PEER_PATHS_MAX) {
		snprintf(why, whylen, "hello: %s data_paths (%u..%u)", h->has_data_paths ? "bad" : "no",
			 PEER_PATHS_MIN, PEER_PATHS_MAX);
		return -EINVAL;
	}
	if (h->data_port && h->data_port + h->data_paths - 1 > 65535) {
		snprintf(why, whylen, "hello: data_port %u + %u paths runs past port 65535",
			 h->data_port, h->data_paths);
		return -EINVAL;
	}
	if (h->n_thread_ports > PEER_THREADS_MAX ||
	    (h->n_thread_ports && h->thread_ports[0] != h->data_port)) {
		snprintf(why, whylen, "hello: thread_ports: at most %u, the first equal to data_port",
			 PEER_THREADS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < h->n_thread_ports; i++) {
		/* each bound alone first: the sum could wrap */
		if (h->thread_ports[i] == 0 || h->thread_ports[i] > 65535 ||
		    h->thread_ports[i] + h->data_paths - 1 > 65535) {
			snprintf(why, whylen, "hello: thread_ports[%zu] %u: 1..65535 with %u paths below "
				 "65536", i, h->thread_ports[i], h->data_paths);
			return -EINVAL;
		}
	}
	/* each thread's range is its own: a port must name one thread */
	for (size_t i = 0; i < h->n_thread_ports; i++)
		for (size_t j = i + 1; j < h->n_thread_ports; j++) {
			uint32_t a = h->thread_ports[i], b = h->thread_ports[j];

			if ((a > b ? a - b : b - a) < (h->data_paths ? h->data_paths : 1)) {
				snprintf(why, whylen, "hello: thread_ports[%zu] %u and [%zu] %u "
					 "overlap with %u paths", i, a, j, b, h->data_paths);
				return -EINVAL;
			}
		}
	if (!h->has_mtu || h->mtu < PEER_MTU_MIN || h->mtu > PEER_MTU_MAX) {
		snprintf(why, whylen, "hello: %s mtu (%u..%u)", h->has_mtu ? "bad" : "no",
			 PEER_MTU_MIN, PEER_MTU_MAX);
		return -EINVAL;
	}
	if (!h->has_token || h->token == 0) {
		snprintf(why, whylen, "hello: %s token", h->has_token ? "zero" : "no");
		return -EINVAL;
	}
	if (!h->has_timeout_ms || h->timeout_ms < PEER_TIMEOUT_MIN_MS ||
	    h->timeout_ms > PEER_TIMEOUT_MAX_MS) {
		snprintf(why, whylen, "hello: %s timeout_ms (%u..%u)", h->has_timeout_ms ? "bad" : "no",
			 PEER_TIMEOUT_MIN_MS, PEER_TIMEOUT_MAX_MS);
		return -EINVAL;
	}
	if (h->daemon_version && strnlen(h->daemon_version, 65) > 64) {
		snprintf(why, whylen, "hello: daemon_version longer than 64 bytes");
		return -EINVAL;
	}
	if (h->has_auth_nonce && h->auth_nonce.len != PEER_AUTH_NONCE_LEN) {
		snprintf(why, whylen, "hello: auth_nonce must be %u bytes", PEER_AUTH_NONCE_LEN);
		return -EINVAL;
	}
	return 0;
}

static int check_connect_rep(const UcclPeer__ConnectRep *a, char *why, size_t whylen)
{
	bool ok = a->status == 0;

	if (a->status > 0 || a->status < -4095) {
		snprintf(why, whylen, "connect_rep: status must be 0 or a negative errno (-4095..-1)");
		return -EINVAL;
	}
	if ((bool)a->has_ep_id != ok || (bool)a->has_conn != ok) {
		snprintf(why, whylen, "connect_rep: ep_id and conn must be set exactly when status is 0");
		return -EINVAL;
	}
	return 0;
}

int peerframe_check(const UcclPeer__PeerMsg *m, char *why, size_t whylen)
{
	switch (m->body_case) {
	case UCCL_PEER__PEER_MSG__BODY_HELLO:
		return check_hello(m->hello, why, whylen);
	case UCCL_PEER__PEER_MSG__BODY_ERROR:
		/* an errno: negating INT32_MIN would overflow where it is printed */
		if (m->error->code >= 0 || m->error->code < -4095 ||
		    strnlen(m->error->message, PEER_ERROR_MAX + 1) > PEER_ERROR_MAX) {
			snprintf(why, whylen, "error: code must be a negative errno (-4095..-1), message at most %u bytes",
				 PEER_ERROR_MAX);
			return -EINVAL;
		}
		return 0;
	case UCCL_PEER__PEER_MSG__BODY_KEEPALIVE:
	case UCCL_PEER__PEER_MSG__BODY_KEEPALIVE_ACK:
		return 0;
	case UCCL_PEER__PEER_MSG__BODY_AUTH:
		if (m->auth->proof.len != PEER_AUTH_PROOF_LEN ||
		    (m->auth->has_nonce && m->auth->nonce.len != PEER_AUTH_NONCE_LEN) ||
		    (m->auth->host_name && !peerframe_name_valid(m->auth->host_name))) {
			snprintf(why, whylen, "auth: proof must be %u bytes, nonce %u, host_name 1..%u of "
				 "A-Za-z0-9._-", PEER_AUTH_PROOF_LEN, PEER_AUTH_NONCE_LEN, PEER_NAME_MAX);
			return -EINVAL;
		}
		return 0;
	case UCCL_PEER__PEER_MSG__BODY_LOOKUP_REQ:
		if (!peerframe_listen_name_valid(m->lookup_req->name)) {
			snprintf(why, whylen, "lookup_req: bad name (1..%u of A-Za-z0-9._:-)",
				 PEER_LISTEN_NAME_MAX);
			return -EINVAL;
		}
		return 0;
	case UCCL_PEER__PEER_MSG__BODY_LOOKUP_REP:
		if (m->lookup_rep->found != m->lookup_rep->has_ep_id) {
			snprintf(why, whylen, "lookup_rep: ep_id must be set exactly when found");
			return -EINVAL;
		}
		if (m->lookup_rep->has_thread && m->lookup_rep->thread >= PEER_THREADS_MAX) {
			snprintf(why, whylen, "lookup_rep: thread must be under %u", PEER_THREADS_MAX);
			return -EINVAL;
		}
		return 0;
	case UCCL_PEER__PEER_MSG__BODY_CONNECT_REQ:
		if (!peerframe_listen_name_valid(m->connect_req->name)) {
			snprintf(why, whylen, "connect_req: bad name (1..%u of A-Za-z0-9._:-)",
				 PEER_LISTEN_NAME_MAX);
			return -EINVAL;
		}
		if ((m->connect_req->has_src_thread && m->connect_req->src_thread >= PEER_THREADS_MAX) ||
		    (m->connect_req->has_dst_thread && m->connect_req->dst_thread >= PEER_THREADS_MAX)) {
			snprintf(why, whylen, "connect_req: threads must be under %u", PEER_THREADS_MAX);
			return -EINVAL;
		}
		return 0;
	case UCCL_PEER__PEER_MSG__BODY_CONNECT_REP:
		return check_connect_rep(m->connect_rep, why, whylen);
	case UCCL_PEER__PEER_MSG__BODY_CONN_CLOSE:
		return 0;
	default:
		snprintf(why, whylen, "message names no operation");
		return -EPROTO;
	}
}
