/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for peerframe: the peer protocol's framing (length limits),
 * round trips of every message, decoding of bytes that are not a message,
 * and the value checks a daemon applies before it acts on a message, with
 * the exact reasons it logs and sends back.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/peerframe.h"

static UcclPeer__Hello good_hello(void)
{
	UcclPeer__Hello h = UCCL_PEER__HELLO__INIT;

	h.proto_version = PEER_PROTO_VERSION;
	h.host_name = "node-a";
	h.data_address = "10.0.0.1";
	h.has_data_port = h.has_data_paths = h.has_mtu = h.has_token = h.has_timeout_ms = 1;
	h.data_port = 40000;
	h.data_paths = 64;
	h.mtu = 1500;
	h.token = 0x1122334455667788ULL;
	h.timeout_ms = 3000;
	h.has_wire_version = 1;
	h.wire_version = PEER_WIRE_VERSION;
	return h;
}

static UcclPeer__PeerMsg *round_trip(const UcclPeer__PeerMsg *m)
{
	UcclPeer__PeerMsg *out = NULL;
	uint32_t len = 0;
	uint8_t *buf;
	size_t n;

	assert_int_equal(peerframe_pack(m, &buf, &n), 0);
	assert_int_equal(peerframe_hdr_parse(buf, &len), 0);
	assert_int_equal(len + FRAME_HDR_LEN, n);
	assert_int_equal(peerframe_unpack(buf + FRAME_HDR_LEN, len, &out), 0);
	free(buf);
	return out;
}

/* The check of m: its status, and its reason in why. */
static int check(const UcclPeer__PeerMsg *m, char *why)
{
	why[0] = '\0';
	return peerframe_check(m, why, PEER_ERROR_MAX);
}

static int check_hello(const UcclPeer__Hello *h, char *why)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;

	m.body_case = UCCL_PEER__PEER_MSG__BODY_HELLO;
	m.hello = (UcclPeer__Hello *)h;
	return check(&m, why);
}

/* ---- framing ------------------------------------------------------------ */

static void test_header_limits(void **state)
{
	uint8_t zero[4] = { 0, 0, 0, 0 }, max[4] = { 0, 0, 1, 0 }, over[4] = { 1, 0, 1, 0 };
	uint8_t huge[4] = { 0xff, 0xff, 0xff, 0xff };
	uint32_t len = 7;

	assert_int_equal(peerframe_hdr_parse(zero, &len), -EMSGSIZE);
	assert_int_equal(peerframe_hdr_parse(max, &len), 0);
	assert_int_equal(len, 65536);
	assert_int_equal(peerframe_hdr_parse(over, &len), -EMSGSIZE);
	assert_int_equal(peerframe_hdr_parse(huge, &len), -EMSGSIZE);
}

/* An Error whose message would make the payload exceed 64 KiB is not built. */
static void test_pack_refuses_oversized(void **state)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__Error e = UCCL_PEER__ERROR__INIT;
	char *big = malloc(PEER_MSG_MAX + 1);
	uint8_t *buf = NULL;
	size_t len;

	memset(big, 'x', PEER_MSG_MAX);
	big[PEER_MSG_MAX] = '\0';
	e.code = -EINVAL;
	e.message = big;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_ERROR;
	m.error = &e;
	assert_int_equal(peerframe_pack(&m, &buf, &len), -EMSGSIZE);
	assert_null(buf);
	free(big);
}

static void test_round_trip_every_message(void **state)
{
	UcclPeer__Hello h = good_hello();
	UcclPeer__Error e = UCCL_PEER__ERROR__INIT;
	UcclPeer__Keepalive k = UCCL_PEER__KEEPALIVE__INIT;
	UcclPeer__KeepaliveAck ka = UCCL_PEER__KEEPALIVE_ACK__INIT;
	UcclPeer__LookupReq lq = UCCL_PEER__LOOKUP_REQ__INIT;
	UcclPeer__LookupRep lr = UCCL_PEER__LOOKUP_REP__INIT;
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT, *out;
	char why[PEER_ERROR_MAX];

	m.body_case = UCCL_PEER__PEER_MSG__BODY_HELLO;
	m.hello = &h;
	out = round_trip(&m);
	assert_string_equal(peerframe_msg_name(out), "hello");
	assert_string_equal(out->hello->host_name, "node-a");
	assert_int_equal(out->hello->token, 0x1122334455667788ULL);
	assert_int_equal(out->hello->mtu, 1500);
	assert_int_equal(check(out, why), 0);
	uccl_peer__peer_msg__free_unpacked(out, NULL);

	e.code = -EPROTONOSUPPORT;
	e.message = "no";
	m.body_case = UCCL_PEER__PEER_MSG__BODY_ERROR;
	m.error = &e;
	out = round_trip(&m);
	assert_string_equal(peerframe_msg_name(out), "error");
	assert_int_equal(out->error->code, -EPROTONOSUPPORT);
	assert_int_equal(check(out, why), 0);
	uccl_peer__peer_msg__free_unpacked(out, NULL);

	k.seq = 3;
	k.sent_us = 99;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_KEEPALIVE;
	m.keepalive = &k;
	out = round_trip(&m);
	assert_string_equal(peerframe_msg_name(out), "keepalive");
	assert_int_equal(out->keepalive->seq, 3);
	uccl_peer__peer_msg__free_unpacked(out, NULL);

	ka.seq = 3;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_KEEPALIVE_ACK;
	m.keepalive_ack = &ka;
	out = round_trip(&m);
	assert_string_equal(peerframe_msg_name(out), "keepalive_ack");
	uccl_peer__peer_msg__free_unpacked(out, NULL);

	lq.id = 5;
	lq.name = "svc:rank-0";
	m.body_case = UCCL_PEER__PEER_MSG__BODY_LOOKUP_REQ;
	m.lookup_req = &lq;
	out = round_trip(&m);
	assert_string_equal(peerframe_msg_name(out), "lookup_req");
	assert_string_equal(out->lookup_req->name, "svc:rank-0");
	assert_int_equal(check(out, why), 0);
	uccl_peer__peer_msg__free_unpacked(out, NULL);

	lr.id = 5;
	lr.found = 1;
	lr.has_ep_id = 1;
	lr.ep_id = 0;   /* endpoint 0 exists */
	m.body_case = UCCL_PEER__PEER_MSG__BODY_LOOKUP_REP;
	m.lookup_rep = &lr;
	out = round_trip(&m);
	assert_string_equal(peerframe_msg_name(out), "lookup_rep");
	assert_true(out->lookup_rep->found && out->lookup_rep->has_ep_id);
	assert_int_equal(check(out, why), 0);
	uccl_peer__peer_msg__free_unpacked(out, NULL);
}

/* ---- decoding what is not a message ---------------------------------------- */

static void test_unpack_bad_bytes(void **state)
{
	static const uint8_t junk[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	/* a body of a later version (field 99): decodes, names nothing */
	static const uint8_t future[] = { 0x98, 0x06, 0x00 };
	/* a hello with its required proto_version missing */
	static const uint8_t no_version[] = { 0x0a, 0x02, 0x12, 0x00 };
	UcclPeer__PeerMsg *out = NULL;

	assert_int_equal(peerframe_unpack(junk, sizeof(junk), &out), -EBADMSG);
	assert_int_equal(peerframe_unpack(future, sizeof(future), &out), -EPROTO);
	assert_int_equal(peerframe_unpack(no_version, sizeof(no_version), &out), -EBADMSG);
	assert_int_equal(peerframe_unpack(future, 0, &out), -EPROTO);
	assert_null(out);
}

/* A hello of any version decodes, so that the answer can name both. */
static void test_hello_of_another_version_decodes(void **state)
{
	static const uint8_t v7[] = { 0x0a, 0x02, 0x08, 0x07 };
	UcclPeer__PeerMsg *out = NULL;
	char why[PEER_ERROR_MAX];

	assert_int_equal(peerframe_unpack(v7, sizeof(v7), &out), 0);
	assert_int_equal(check(out, why), -EPROTONOSUPPORT);
	assert_string_equal(why, "peer speaks peer protocol 7, this daemon speaks 1");
	uccl_peer__peer_msg__free_unpacked(out, NULL);
}

/* ---- checks ------------------------------------------------------------------ */

static void test_hello_checks(void **state)
{
	UcclPeer__Hello h;
	char why[PEER_ERROR_MAX];

	h = good_hello();
	assert_int_equal(check_hello(&h, why), 0);
	h.data_address = "fd00::1";
	h.data_port = 0;              /* not set yet is fine */
	h.data_paths = 256;
	h.mtu = 9000;
	assert_int_equal(check_hello(&h, why), 0);

	/* another data-plane layout: every data packet would be dropped */
	h = good_hello();
	h.wire_version = 4;
	assert_int_equal(check_hello(&h, why), -EPROTONOSUPPORT);
	assert_string_equal(why, "peer's data packets are wire version 4, this daemon's are 5");
	h.has_wire_version = 0;
	assert_int_equal(check_hello(&h, why), -EPROTONOSUPPORT);
	assert_string_equal(why, "peer's data packets are wire version 2 or older "
			    "(no wire_version in its hello), this daemon's are 5");

	/* listen_port: optional, 1..65535 when given */
	h = good_hello();
	h.has_listen_port = 1;
	h.listen_port = 7401;
	assert_int_equal(check_hello(&h, why), 0);
	h.listen_port = 0;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: bad listen_port 0 (1..65535)");
	h.listen_port = 65536;
	assert_int_equal(check_hello(&h, why), -EINVAL);

	/* max_inflight_bytes: optional, and any value passes (the receiver
	 * takes the nearest of uccl.conf's range: a later daemon's wider
	 * range must not stop peering) */
	h = good_hello();
	h.has_max_inflight_bytes = 1;
	h.max_inflight_bytes = 0;
	assert_int_equal(check_hello(&h, why), 0);
	h.max_inflight_bytes = UINT64_MAX;
	assert_int_equal(check_hello(&h, why), 0);

	h = good_hello();
	h.host_name = NULL;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: no host_name (1..32 of A-Za-z0-9._-)");
	h.host_name = "a b";
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: bad host_name (1..32 of A-Za-z0-9._-)");
	h.host_name = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";   /* 33 */
	assert_int_equal(check_hello(&h, why), -EINVAL);

	h = good_hello();
	h.data_address = "example.com";
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: bad data_address (a numeric IPv4 or IPv6 address)");
	h.data_address = NULL;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: no data_address (a numeric IPv4 or IPv6 address)");

	h = good_hello();
	h.data_port = 65536;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: bad data_port (0..65535)");
	h = good_hello();
	h.data_port = 65500;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: data_port 65500 + 64 paths runs past port 65535");
	h = good_hello();
	h.data_paths = 0;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: bad data_paths (1..256)");
	h.data_paths = 257;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	h = good_hello();
	h.has_mtu = 0;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: no mtu (576..9000)");
	h.has_mtu = 1;
	h.mtu = 575;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	h.mtu = 9001;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	h = good_hello();
	h.token = 0;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: zero token");
	h.has_token = 0;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: no token");
	h = good_hello();
	h.timeout_ms = 199;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: bad timeout_ms (200..60000)");
	h.timeout_ms = 60001;
	assert_int_equal(check_hello(&h, why), -EINVAL);

	/* the version is checked first: nothing else of a foreign hello matters */
	h = good_hello();
	h.proto_version = 2;
	h.mtu = 1;
	assert_int_equal(check_hello(&h, why), -EPROTONOSUPPORT);
	assert_string_equal(why, "peer speaks peer protocol 2, this daemon speaks 1");
}

static void test_other_checks(void **state)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__Error e = UCCL_PEER__ERROR__INIT;
	UcclPeer__LookupReq lq = UCCL_PEER__LOOKUP_REQ__INIT;
	UcclPeer__LookupRep lr = UCCL_PEER__LOOKUP_REP__INIT;
	char why[PEER_ERROR_MAX], longname[80];

	e.code = 0;
	e.message = "x";
	m.body_case = UCCL_PEER__PEER_MSG__BODY_ERROR;
	m.error = &e;
	assert_int_equal(check(&m, why), -EINVAL);
	/* not an errno; negating it where it is printed would overflow */
	e.code = INT32_MIN;
	assert_int_equal(check(&m, why), -EINVAL);
	e.code = -4096;
	assert_int_equal(check(&m, why), -EINVAL);
	e.code = -ECONNRESET;
	assert_int_equal(check(&m, why), 0);

	m.body_case = UCCL_PEER__PEER_MSG__BODY_LOOKUP_REQ;
	m.lookup_req = &lq;
	lq.name = "a/b";
	assert_int_equal(check(&m, why), -EINVAL);
	assert_string_equal(why, "lookup_req: bad name (1..64 of A-Za-z0-9._:-)");
	lq.name = "";
	assert_int_equal(check(&m, why), -EINVAL);
	memset(longname, 'n', 65);
	longname[65] = '\0';
	lq.name = longname;
	assert_int_equal(check(&m, why), -EINVAL);
	longname[64] = '\0';
	assert_int_equal(check(&m, why), 0);

	m.body_case = UCCL_PEER__PEER_MSG__BODY_LOOKUP_REP;
	m.lookup_rep = &lr;
	lr.found = 1;   /* without its ep_id */
	assert_int_equal(check(&m, why), -EINVAL);
	lr.found = 0;
	lr.has_ep_id = 1;
	assert_int_equal(check(&m, why), -EINVAL);
	lr.has_ep_id = 0;
	assert_int_equal(check(&m, why), 0);
	lr.found = lr.has_ep_id = lr.has_thread = 1;
	lr.thread = 15;
	assert_int_equal(check(&m, why), 0);
	lr.thread = 16;
	assert_int_equal(check(&m, why), -EINVAL);
	assert_string_equal(why, "lookup_rep: thread must be under 16");
}

/* Engine threads in hello and connect_req: bounded and consistent. */
static void test_thread_fields(void **state)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__ConnectReq cq = UCCL_PEER__CONNECT_REQ__INIT;
	uint32_t ports[17];
	UcclPeer__Hello h;
	char why[PEER_ERROR_MAX];

	(void)state;
	h = good_hello();
	for (int i = 0; i < 17; i++)
		ports[i] = 40000 + 64 * (uint32_t)i;
	h.thread_ports = ports;
	h.n_thread_ports = 16;
	assert_int_equal(check_hello(&h, why), 0);
	h.n_thread_ports = 17;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: thread_ports: at most 16, the first equal to data_port");
	h.n_thread_ports = 2;
	ports[0] = 40001;             /* thread 0 is data_port */
	assert_int_equal(check_hello(&h, why), -EINVAL);
	ports[0] = 40000;
	ports[1] = 0;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: thread_ports[1] 0: 1..65535 with 64 paths below 65536");
	ports[1] = 65500;             /* its 64 paths run past 65535 */
	assert_int_equal(check_hello(&h, why), -EINVAL);
	ports[1] = UINT32_MAX - 10;   /* + paths would wrap to a small port */
	assert_int_equal(check_hello(&h, why), -EINVAL);
	ports[1] = 65472;
	assert_int_equal(check_hello(&h, why), 0);
	/* a port must name one thread: equal or overlapping ranges are refused */
	ports[1] = 40000;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	assert_string_equal(why, "hello: thread_ports[0] 40000 and [1] 40000 overlap with 64 paths");
	ports[1] = 40063;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	ports[1] = 39937;
	assert_int_equal(check_hello(&h, why), -EINVAL);
	ports[1] = 40064;
	assert_int_equal(check_hello(&h, why), 0);

	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONNECT_REQ;
	m.connect_req = &cq;
	cq.name = "svc";
	cq.has_src_thread = cq.has_dst_thread = 1;
	cq.src_thread = 15;
	cq.dst_thread = 0;
	assert_int_equal(check(&m, why), 0);
	cq.dst_thread = 16;
	assert_int_equal(check(&m, why), -EINVAL);
	assert_string_equal(why, "connect_req: threads must be under 16");
	cq.dst_thread = 1;
	cq.src_thread = UINT32_MAX;
	assert_int_equal(check(&m, why), -EINVAL);
}

/* The messages that connect endpoints across hosts survive the trip, and
 * the answer names the remote side only on success. */
static void test_round_trip_connect_messages(void **state)
{
	UcclPeer__ConnectReq cq = UCCL_PEER__CONNECT_REQ__INIT;
	UcclPeer__ConnectRep cr = UCCL_PEER__CONNECT_REP__INIT;
	UcclPeer__ConnClose cc = UCCL_PEER__CONN_CLOSE__INIT;
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT, *out;
	char why[PEER_ERROR_MAX];

	cq.id = 9;
	cq.name = "svc:rank-1";
	cq.src_ep = 3;
	cq.src_conn = 0;   /* connection 0 exists */
	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONNECT_REQ;
	m.connect_req = &cq;
	out = round_trip(&m);
	assert_string_equal(peerframe_msg_name(out), "connect_req");
	assert_int_equal(out->connect_req->id, 9);
	assert_string_equal(out->connect_req->name, "svc:rank-1");
	assert_int_equal(out->connect_req->src_ep, 3);
	assert_int_equal(out->connect_req->src_conn, 0);
	assert_int_equal(check(out, why), 0);
	uccl_peer__peer_msg__free_unpacked(out, NULL);

	cr.id = 9;
	cr.status = 0;
	cr.has_ep_id = cr.has_conn = 1;
	cr.ep_id = 5;
	cr.conn = 17;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONNECT_REP;
	m.connect_rep = &cr;
	out = round_trip(&m);
	assert_string_equal(peerframe_msg_name(out), "connect_rep");
	assert_int_equal(out->connect_rep->status, 0);
	assert_true(out->connect_rep->has_ep_id && out->connect_rep->has_conn);
	assert_int_equal(out->connect_rep->ep_id, 5);
	assert_int_equal(out->connect_rep->conn, 17);
	assert_int_equal(check(out, why), 0);
	uccl_peer__peer_msg__free_unpacked(out, NULL);

	cr.status = -ECONNREFUSED;
	cr.has_ep_id = cr.has_conn = 0;
	out = round_trip(&m);
	assert_int_equal(out->connect_rep->status, -ECONNREFUSED);
	assert_false(out->connect_rep->has_ep_id || out->connect_rep->has_conn);
	assert_int_equal(check(out, why), 0);
	uccl_peer__peer_msg__free_unpacked(out, NULL);

	cc.ep_id = 5;
	cc.conn = 17;
	cc.src_ep = 3;
	cc.src_conn = 0;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONN_CLOSE;
	m.conn_close = &cc;
	out = round_trip(&m);
	assert_string_equal(peerframe_msg_name(out), "conn_close");
	assert_int_equal(out->conn_close->ep_id, 5);
	assert_int_equal(out->conn_close->conn, 17);
	assert_int_equal(out->conn_close->src_ep, 3);
	assert_int_equal(out->conn_close->src_conn, 0);
	assert_int_equal(check(out, why), 0);
	uccl_peer__peer_msg__free_unpacked(out, NULL);
}

/* A ConnectReq or ConnClose with a required field missing does not decode. */
static void test_connect_messages_need_their_fields(void **state)
{
	/* connect_req { id: 1, name: "a" }: no src_ep, src_conn */
	static const uint8_t req_short[] = { 0x3a, 0x05, 0x08, 0x01, 0x12, 0x01, 0x61 };
	/* connect_rep { id: 1 }: no status */
	static const uint8_t rep_short[] = { 0x42, 0x02, 0x08, 0x01 };
	/* conn_close { ep_id: 1, conn: 2, src_ep: 3 }: no src_conn */
	static const uint8_t close_short[] = { 0x4a, 0x06, 0x08, 0x01, 0x10, 0x02, 0x18, 0x03 };
	/* conn_close { 1, 2, 3, 4 } */
	static const uint8_t close_full[] = { 0x4a, 0x08, 0x08, 0x01, 0x10, 0x02, 0x18, 0x03,
					      0x20, 0x04 };
	UcclPeer__PeerMsg *out = NULL;

	assert_int_equal(peerframe_unpack(req_short, sizeof(req_short), &out), -EBADMSG);
	assert_int_equal(peerframe_unpack(rep_short, sizeof(rep_short), &out), -EBADMSG);
	assert_int_equal(peerframe_unpack(close_short, sizeof(close_short), &out), -EBADMSG);
	assert_null(out);
	assert_int_equal(peerframe_unpack(close_full, sizeof(close_full), &out), 0);
	assert_int_equal(out->conn_close->src_conn, 4);
	uccl_peer__peer_msg__free_unpacked(out, NULL);
}

static void test_connect_checks(void **state)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__ConnectReq cq = UCCL_PEER__CONNECT_REQ__INIT;
	UcclPeer__ConnectRep cr = UCCL_PEER__CONNECT_REP__INIT;
	char why[PEER_ERROR_MAX], longname[80];

	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONNECT_REQ;
	m.connect_req = &cq;
	cq.name = "svc";
	assert_int_equal(check(&m, why), 0);
	cq.name = "a b";
	assert_int_equal(check(&m, why), -EINVAL);
	assert_string_equal(why, "connect_req: bad name (1..64 of A-Za-z0-9._:-)");
	cq.name = "";
	assert_int_equal(check(&m, why), -EINVAL);
	cq.name = NULL;
	assert_int_equal(check(&m, why), -EINVAL);
	memset(longname, 'n', 65);
	longname[65] = '\0';
	cq.name = longname;
	assert_int_equal(check(&m, why), -EINVAL);
	longname[64] = '\0';
	assert_int_equal(check(&m, why), 0);

	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONNECT_REP;
	m.connect_rep = &cr;
	/* success names the remote side: both fields, or it is refused */
	cr.status = 0;
	assert_int_equal(check(&m, why), -EINVAL);
	assert_string_equal(why, "connect_rep: ep_id and conn must be set exactly when status is 0");
	cr.has_ep_id = 1;
	assert_int_equal(check(&m, why), -EINVAL);
	cr.has_conn = 1;
	assert_int_equal(check(&m, why), 0);
	/* a failure names nothing */
	cr.status = -ENOENT;
	assert_int_equal(check(&m, why), -EINVAL);
	assert_string_equal(why, "connect_rep: ep_id and conn must be set exactly when status is 0");
	cr.has_ep_id = 0;
	assert_int_equal(check(&m, why), -EINVAL);
	cr.has_conn = 0;
	assert_int_equal(check(&m, why), 0);
	cr.status = -4095;
	assert_int_equal(check(&m, why), 0);
	/* a status is 0 or an errno */
	cr.status = 1;
	assert_int_equal(check(&m, why), -EINVAL);
	assert_string_equal(why, "connect_rep: status must be 0 or a negative errno (-4095..-1)");
	cr.status = -4096;
	assert_int_equal(check(&m, why), -EINVAL);
	cr.status = INT32_MIN;
	assert_int_equal(check(&m, why), -EINVAL);
}

static void test_names_and_sanitize(void **state)
{
	char buf[8];

	assert_true(peerframe_name_valid("a"));
	assert_true(peerframe_name_valid("Node-1.rack_2"));
	assert_false(peerframe_name_valid(""));
	assert_false(peerframe_name_valid("a:b"));
	assert_false(peerframe_name_valid(NULL));
	assert_true(peerframe_listen_name_valid("a:b"));
	assert_false(peerframe_listen_name_valid("a/b"));

	peerframe_sanitize(buf, sizeof(buf), "ab\x1b[31m");
	assert_string_equal(buf, "ab?[31m");
	/* a cut name says so: a 100-character peer name echoed as the first
	 * 32 read as another name */
	peerframe_sanitize(buf, sizeof(buf), "ab\x1b[31mcdef");
	assert_string_equal(buf, "ab?[...");
	peerframe_sanitize(buf, sizeof(buf), NULL);
	assert_string_equal(buf, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_limits),
		cmocka_unit_test(test_pack_refuses_oversized),
		cmocka_unit_test(test_round_trip_every_message),
		cmocka_unit_test(test_unpack_bad_bytes),
		cmocka_unit_test(test_hello_of_another_version_decodes),
		cmocka_unit_test(test_hello_checks),
		cmocka_unit_test(test_thread_fields),
		cmocka_unit_test(test_other_checks),
		cmocka_unit_test(test_round_trip_connect_messages),
		cmocka_unit_test(test_connect_messages_need_their_fields),
		cmocka_unit_test(test_connect_checks),
		cmocka_unit_test(test_names_and_sanitize),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
