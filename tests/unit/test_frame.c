/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the control protocol's framing (frame) and its transport
 * over Unix sockets (ctlio): codec round trips, length limits, what broken
 * bytes decode to, and that fds passed with a frame arrive with that frame,
 * that surplus fds are closed, and that EOF and deadlines are reported.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/ctlio.h"
#include "proto/frame.h"

/* ---- helpers ------------------------------------------------------------ */

static uint32_t hdr_len(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* Pack r, check the prefix, unpack the payload again. */
static UcclCtl__Request *round_trip_request(const UcclCtl__Request *r)
{
	UcclCtl__Request *out = NULL;
	uint8_t *buf;
	size_t len;

	assert_int_equal(frame_pack_request(r, &buf, &len), 0);
	assert_true(len > FRAME_HDR_LEN);
	assert_int_equal(hdr_len(buf), len - FRAME_HDR_LEN);
	assert_int_equal(frame_unpack_request(buf + FRAME_HDR_LEN, len - FRAME_HDR_LEN, &out), 0);
	free(buf);
	return out;
}

static UcclCtl__Reply *round_trip_reply(const UcclCtl__Reply *r)
{
	UcclCtl__Reply *out = NULL;
	uint8_t *buf;
	size_t len;

	assert_int_equal(frame_pack_reply(r, &buf, &len), 0);
	assert_int_equal(hdr_len(buf), len - FRAME_HDR_LEN);
	assert_int_equal(frame_unpack_reply(buf + FRAME_HDR_LEN, len - FRAME_HDR_LEN, &out), 0);
	free(buf);
	return out;
}

static int count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static bool fd_is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* A sealed memfd holding text, as a client makes one for MEM_MEMFD. */
static int sealed_memfd(const char *text)
{
	int fd = memfd_create("test_frame", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	return fd;
}

static void expect_memfd(int fd, const char *text)
{
	char buf[64] = "";

	assert_int_equal(pread(fd, buf, sizeof(buf) - 1, 0), (ssize_t)strlen(text));
	assert_string_equal(buf, text);
	assert_int_equal(fcntl(fd, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW);
}

static void socket_pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

/* A packed request frame: seq plus a status body (small, no fds). */
static uint8_t *status_frame(uint32_t seq, size_t *len)
{
	UcclCtl__StatusReq st = UCCL_CTL__STATUS_REQ__INIT;
	UcclCtl__Request r = UCCL_CTL__REQUEST__INIT;
	uint8_t *buf;

	r.seq = seq;
	r.body_case = UCCL_CTL__REQUEST__BODY_STATUS;
	r.status = &st;
	assert_int_equal(frame_pack_request(&r, &buf, len), 0);
	return buf;
}

static uint8_t *mem_reg_frame(uint32_t seq, uint64_t mlen, size_t *len)
{
	UcclCtl__MemRegReq m = UCCL_CTL__MEM_REG_REQ__INIT;
	UcclCtl__Request r = UCCL_CTL__REQUEST__INIT;
	uint8_t *buf;

	m.kind = UCCL_CTL__MEM_KIND__MEM_MEMFD;
	m.len = mlen;
	r.seq = seq;
	r.body_case = UCCL_CTL__REQUEST__BODY_MEM_REG;
	r.mem_reg = &m;
	assert_int_equal(frame_pack_request(&r, &buf, len), 0);
	return buf;
}

/* Read until a frame is complete; the socket has it all already. */
static void read_frame(struct ctlio_rx *rx, int fd)
{
	assert_int_equal(ctlio_rx_read(rx, fd), 1);
}

static UcclCtl__Request *decode_rx(const struct ctlio_rx *rx)
{
	UcclCtl__Request *r = NULL;

	assert_int_equal(frame_unpack_request(rx->buf, rx->need, &r), 0);
	return r;
}

/* ---- codec ---------------------------------------------------------------- */

static void test_request_round_trip_every_kind(void **state)
{
	UcclCtl__AttachReq at = UCCL_CTL__ATTACH_REQ__INIT;
	UcclCtl__DetachReq de = UCCL_CTL__DETACH_REQ__INIT;
	UcclCtl__MemRegReq mr = UCCL_CTL__MEM_REG_REQ__INIT;
	UcclCtl__MemDeregReq md = UCCL_CTL__MEM_DEREG_REQ__INIT;
	UcclCtl__EpCreateReq ec = UCCL_CTL__EP_CREATE_REQ__INIT;
	UcclCtl__EpDestroyReq ed = UCCL_CTL__EP_DESTROY_REQ__INIT;
	UcclCtl__ListenReq li = UCCL_CTL__LISTEN_REQ__INIT;
	UcclCtl__ConnectReq co = UCCL_CTL__CONNECT_REQ__INIT;
	UcclCtl__AcceptReq ac = UCCL_CTL__ACCEPT_REQ__INIT;
	UcclCtl__CloseReq cl = UCCL_CTL__CLOSE_REQ__INIT;
	UcclCtl__StatusReq st = UCCL_CTL__STATUS_REQ__INIT;
	UcclCtl__ClientsReq cs = UCCL_CTL__CLIENTS_REQ__INIT;
	UcclCtl__EndpointsReq es = UCCL_CTL__ENDPOINTS_REQ__INIT;
	UcclCtl__MrsReq ms = UCCL_CTL__MRS_REQ__INIT;
	UcclCtl__StatsReq ss = UCCL_CTL__STATS_REQ__INIT;
	static const struct {
		UcclCtl__Request__BodyCase body;
		const char *name;
	} kinds[] = {
		{ UCCL_CTL__REQUEST__BODY_ATTACH, "attach" },
		{ UCCL_CTL__REQUEST__BODY_DETACH, "detach" },
		{ UCCL_CTL__REQUEST__BODY_MEM_REG, "mem_reg" },
		{ UCCL_CTL__REQUEST__BODY_MEM_DEREG, "mem_dereg" },
		{ UCCL_CTL__REQUEST__BODY_EP_CREATE, "ep_create" },
		{ UCCL_CTL__REQUEST__BODY_EP_DESTROY, "ep_destroy" },
		{ UCCL_CTL__REQUEST__BODY_LISTEN, "listen" },
		{ UCCL_CTL__REQUEST__BODY_CONNECT, "connect" },
		{ UCCL_CTL__REQUEST__BODY_ACCEPT, "accept" },
		{ UCCL_CTL__REQUEST__BODY_CLOSE, "close" },
		{ UCCL_CTL__REQUEST__BODY_STATUS, "status" },
		{ UCCL_CTL__REQUEST__BODY_CLIENTS, "clients" },
		{ UCCL_CTL__REQUEST__BODY_ENDPOINTS, "endpoints" },
		{ UCCL_CTL__REQUEST__BODY_MRS, "mrs" },
		{ UCCL_CTL__REQUEST__BODY_STATS, "stats" },
	};
	void *bodies[] = { &at, &de, &mr, &md, &ec, &ed, &li, &co, &ac, &cl, &st, &cs, &es, &ms, &ss };

	at.proto_version = UCCL_PROTO_VERSION;
	at.name = "trainer-7";
	at.has_observer = 1;
	at.observer = 1;
	mr.kind = UCCL_CTL__MEM_KIND__MEM_VADDR;
	mr.len = 1ULL << 33;
	mr.has_addr = 1;
	mr.addr = 0x7f0000001000ULL;
	md.mr_id = 9;
	ec.has_sq_entries = 1;
	ec.sq_entries = 4096;
	ec.has_sqe_size = 1;
	ec.sqe_size = 64;
	ed.ep_id = 3;
	li.ep_id = 4;
	li.name = "svc";
	co.ep_id = 5;
	co.name = "svc";
	co.has_timeout_ms = 1;
	co.timeout_ms = 2500;
	ac.ep_id = 6;
	cl.ep_id = 7;
	cl.conn_id = 8;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		UcclCtl__Request r = UCCL_CTL__REQUEST__INIT, *out;

		r.seq = 1000 + (uint32_t)i;
		r.body_case = kinds[i].body;
		r.attach = bodies[i]; /* the oneof is a union of pointers */
		out = round_trip_request(&r);
		assert_int_equal(out->seq, 1000 + i);
		assert_int_equal(out->body_case, kinds[i].body);
		assert_string_equal(frame_request_name(out), kinds[i].name);
		switch (out->body_case) {
		case UCCL_CTL__REQUEST__BODY_ATTACH:
			assert_int_equal(out->attach->proto_version, UCCL_PROTO_VERSION);
			assert_string_equal(out->attach->name, "trainer-7");
			assert_true(out->attach->has_observer && out->attach->observer);
			break;
		case UCCL_CTL__REQUEST__BODY_MEM_REG:
			assert_int_equal(out->mem_reg->kind, UCCL_CTL__MEM_KIND__MEM_VADDR);
			assert_int_equal(out->mem_reg->len, 1ULL << 33);
			assert_int_equal(out->mem_reg->addr, 0x7f0000001000ULL);
			break;
		case UCCL_CTL__REQUEST__BODY_EP_CREATE:
			assert_int_equal(out->ep_create->sq_entries, 4096);
			assert_false(out->ep_create->has_cq_entries);
			assert_int_equal(out->ep_create->sqe_size, 64);
			break;
		case UCCL_CTL__REQUEST__BODY_CONNECT:
			assert_string_equal(out->connect->name, "svc");
			assert_int_equal(out->connect->timeout_ms, 2500);
			break;
		case UCCL_CTL__REQUEST__BODY_CLOSE:
			assert_int_equal(out->close->ep_id, 7);
			assert_int_equal(out->close->conn_id, 8);
			break;
		default:
			break;
		}
		uccl_ctl__request__free_unpacked(out, NULL);
	}
}

static void test_reply_round_trip(void **state)
{
	UcclCtl__Reply r = UCCL_CTL__REPLY__INIT, *out;
	UcclCtl__AttachRep at = UCCL_CTL__ATTACH_REP__INIT;
	UcclCtl__EpCreateRep ep = UCCL_CTL__EP_CREATE_REP__INIT;
	UcclCtl__ClientsRep cr = UCCL_CTL__CLIENTS_REP__INIT;
	UcclCtl__ClientInfo ci[3] = { UCCL_CTL__CLIENT_INFO__INIT, UCCL_CTL__CLIENT_INFO__INIT,
				      UCCL_CTL__CLIENT_INFO__INIT };
	UcclCtl__ClientInfo *cip[3] = { &ci[0], &ci[1], &ci[2] };

	/* attach */
	at.proto_version = UCCL_PROTO_VERSION;
	at.client_id = 17;
	at.daemon_version = "0.1.0";
	r.seq = 1;
	r.body_case = UCCL_CTL__REPLY__BODY_ATTACH;
	r.attach = &at;
	out = round_trip_reply(&r);
	assert_int_equal(out->status, 0);
	assert_int_equal(out->body_case, UCCL_CTL__REPLY__BODY_ATTACH);
	assert_int_equal(out->attach->client_id, 17);
	assert_string_equal(out->attach->daemon_version, "0.1.0");
	uccl_ctl__reply__free_unpacked(out, NULL);

	/* ep_create (its fds travel beside the frame, not in it) */
	ep.ep_id = 2;
	ep.shm_size = 1 << 21;
	r.seq = 2;
	r.body_case = UCCL_CTL__REPLY__BODY_EP_CREATE;
	r.ep_create = &ep;
	out = round_trip_reply(&r);
	assert_int_equal(out->ep_create->ep_id, 2);
	assert_int_equal(out->ep_create->shm_size, 1 << 21);
	uccl_ctl__reply__free_unpacked(out, NULL);

	/* a repeated body */
	for (int i = 0; i < 3; i++) {
		ci[i].id = (uint32_t)i + 1;
		ci[i].pid = 100 + (uint32_t)i;
		ci[i].name = i == 1 ? "named" : NULL;
		ci[i].registered_bytes = 1ULL << (40 + i);
	}
	cr.n_clients = 3;
	cr.clients = cip;
	r.seq = 3;
	r.body_case = UCCL_CTL__REPLY__BODY_CLIENTS;
	r.clients = &cr;
	out = round_trip_reply(&r);
	assert_int_equal(out->clients->n_clients, 3);
	assert_int_equal(out->clients->clients[2]->pid, 102);
	assert_null(out->clients->clients[0]->name);
	assert_string_equal(out->clients->clients[1]->name, "named");
	assert_int_equal(out->clients->clients[2]->registered_bytes, 1ULL << 42);
	uccl_ctl__reply__free_unpacked(out, NULL);

	/* an error reply has a status, a reason and no body; that is valid */
	r = (UcclCtl__Reply)UCCL_CTL__REPLY__INIT;
	r.seq = 4;
	r.status = -EPROTONOSUPPORT;
	r.error = "protocol version 2 not supported (daemon speaks 1)";
	out = round_trip_reply(&r);
	assert_int_equal(out->seq, 4);
	assert_int_equal(out->status, -EPROTONOSUPPORT);
	assert_string_equal(out->error, "protocol version 2 not supported (daemon speaks 1)");
	assert_int_equal(out->body_case, UCCL_CTL__REPLY__BODY__NOT_SET);
	uccl_ctl__reply__free_unpacked(out, NULL);
}

static void test_hdr_parse_limits(void **state)
{
	uint8_t h[FRAME_HDR_LEN];
	uint32_t len = 12345;

	/* zero length */
	memset(h, 0, sizeof(h));
	assert_int_equal(frame_hdr_parse(h, 65536, &len), -EMSGSIZE);
	assert_int_equal(len, 12345); /* untouched on error */
	/* little endian, and exactly max is fine */
	h[0] = 0x00; h[1] = 0x00; h[2] = 0x01; h[3] = 0x00;
	assert_int_equal(frame_hdr_parse(h, 65536, &len), 0);
	assert_int_equal(len, 65536);
	h[0] = 0x01; h[1] = 0x02; h[2] = 0x00; h[3] = 0x00;
	assert_int_equal(frame_hdr_parse(h, 65536, &len), 0);
	assert_int_equal(len, 0x0201);
	/* one over max */
	h[0] = 0x01; h[1] = 0x00; h[2] = 0x01; h[3] = 0x00;
	assert_int_equal(frame_hdr_parse(h, 65536, &len), -EMSGSIZE);
	/* a max above the hard cap is clamped to it */
	h[0] = 0x00; h[1] = 0x00; h[2] = 0x10; h[3] = 0x00;
	assert_int_equal(frame_hdr_parse(h, UINT32_MAX, &len), 0);
	assert_int_equal(len, FRAME_MAX_HARD);
	h[0] = 0x01;
	assert_int_equal(frame_hdr_parse(h, UINT32_MAX, &len), -EMSGSIZE);
	memset(h, 0xff, sizeof(h));
	assert_int_equal(frame_hdr_parse(h, UINT32_MAX, &len), -EMSGSIZE);
}

static void test_pack_refuses_over_hard_cap(void **state)
{
	UcclCtl__Reply r = UCCL_CTL__REPLY__INIT;
	size_t n = FRAME_MAX_HARD;
	char *big = malloc(n + 1);
	uint8_t *buf = NULL;
	size_t len = 0;

	memset(big, 'x', n);
	big[n] = '\0';
	r.error = big;
	assert_int_equal(frame_pack_reply(&r, &buf, &len), -EMSGSIZE);
	assert_null(buf);
	/* shrink it until the whole frame fits exactly-ish */
	big[FRAME_MAX_HARD - 64] = '\0';
	assert_int_equal(frame_pack_reply(&r, &buf, &len), 0);
	assert_true(len <= FRAME_MAX_HARD);
	free(buf);
	free(big);
}

/* Every strict prefix of a request is refused: either it does not parse, or
 * (cut right after seq) it parses but names no operation. */
static void test_truncated_payloads_are_refused(void **state)
{
	UcclCtl__ConnectReq co = UCCL_CTL__CONNECT_REQ__INIT;
	UcclCtl__Request r = UCCL_CTL__REQUEST__INIT, *out = NULL;
	int eproto = 0;
	uint8_t *buf;
	size_t len;

	co.ep_id = 1;
	co.name = "a-listener-name";
	co.has_timeout_ms = 1;
	co.timeout_ms = 1000;
	r.seq = 300;
	r.body_case = UCCL_CTL__REQUEST__BODY_CONNECT;
	r.connect = &co;
	assert_int_equal(frame_pack_request(&r, &buf, &len), 0);
	for (size_t n = 0; n < len - FRAME_HDR_LEN; n++) {
		int rc = frame_unpack_request(buf + FRAME_HDR_LEN, n, &out);

		assert_true(rc == -EBADMSG || rc == -EPROTO);
		eproto += rc == -EPROTO;
	}
	assert_int_equal(eproto, 1);
	free(buf);
}

static void test_garbage_is_ebadmsg(void **state)
{
	static const uint8_t invalid_wire_type[] = { 0x0f, 0x01 };   /* field 1, type 7 */
	static const uint8_t endless_varint[] = { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
						  0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t overlong_body[] = { 0x08, 0x01, 0x52, 0x7f, 0x08 };
	static const uint8_t text[] = "GET / HTTP/1.1\r\n\r\n";
	UcclCtl__Request *rq = NULL;
	UcclCtl__Reply *rp = NULL;
	unsigned seed = 12345;
	uint8_t rnd[64];

	assert_int_equal(frame_unpack_request(invalid_wire_type, sizeof(invalid_wire_type), &rq),
			 -EBADMSG);
	assert_int_equal(frame_unpack_request(endless_varint, sizeof(endless_varint), &rq),
			 -EBADMSG);
	assert_int_equal(frame_unpack_request(overlong_body, sizeof(overlong_body), &rq),
			 -EBADMSG);
	assert_int_equal(frame_unpack_request(text, sizeof(text) - 1, &rq), -EBADMSG);
	assert_int_equal(frame_unpack_reply(text, sizeof(text) - 1, &rp), -EBADMSG);
	assert_null(rq);
	assert_null(rp);

	/* Random bytes: a fixed seed, so the outcome is the same every run. Random
	 * data almost never holds a required seq and a body; count what did. */
	int bad = 0;
	for (int i = 0; i < 20000; i++) {
		size_t n = 1 + (size_t)(rand_r(&seed) % (int)sizeof(rnd));
		int rc;

		for (size_t j = 0; j < n; j++)
			rnd[j] = (uint8_t)rand_r(&seed);
		rc = frame_unpack_request(rnd, n, &rq);
		if (rc == 0)
			uccl_ctl__request__free_unpacked(rq, NULL);
		else
			assert_true(rc == -EBADMSG || rc == -EPROTO);
		bad += rc == -EBADMSG;
		rc = frame_unpack_reply(rnd, n, &rp);
		if (rc == 0)
			uccl_ctl__reply__free_unpacked(rp, NULL);
		else
			assert_int_equal(rc, -EBADMSG);
	}
	assert_true(bad > 19900);
}

static void test_request_without_body_is_eproto(void **state)
{
	UcclCtl__Request r = UCCL_CTL__REQUEST__INIT, *out = NULL;
	uint8_t *buf;
	size_t len;

	r.seq = 5;
	assert_string_equal(frame_request_name(&r), "unknown");
	assert_int_equal(frame_request_nfds(&r), 0);
	assert_int_equal(frame_pack_request(&r, &buf, &len), 0);
	assert_int_equal(frame_unpack_request(buf + FRAME_HDR_LEN, len - FRAME_HDR_LEN, &out),
			 -EPROTO);
	assert_null(out);
	free(buf);

	/* a body this daemon does not know (field 99) is skipped as unknown, so the
	 * request names no operation either */
	static const uint8_t future[] = { 0x08, 0x05, 0x9a, 0x06, 0x00 };
	assert_int_equal(frame_unpack_request(future, sizeof(future), &out), -EPROTO);
}

static void test_request_nfds(void **state)
{
	UcclCtl__MemRegReq m = UCCL_CTL__MEM_REG_REQ__INIT;
	UcclCtl__AttachReq a = UCCL_CTL__ATTACH_REQ__INIT;
	UcclCtl__EpCreateReq e = UCCL_CTL__EP_CREATE_REQ__INIT;
	UcclCtl__Request r = UCCL_CTL__REQUEST__INIT, *out;

	r.body_case = UCCL_CTL__REQUEST__BODY_MEM_REG;
	r.mem_reg = &m;
	m.kind = UCCL_CTL__MEM_KIND__MEM_MEMFD;
	m.len = 4096;
	assert_int_equal(frame_request_nfds(&r), 1);
	out = round_trip_request(&r);
	assert_int_equal(frame_request_nfds(out), 1);
	uccl_ctl__request__free_unpacked(out, NULL);

	m.kind = UCCL_CTL__MEM_KIND__MEM_VADDR;
	assert_int_equal(frame_request_nfds(&r), 0);

	r.body_case = UCCL_CTL__REQUEST__BODY_ATTACH;
	r.attach = &a;
	assert_int_equal(frame_request_nfds(&r), 0);
	/* ep_create's fds come back in the reply; the request carries none */
	r.body_case = UCCL_CTL__REQUEST__BODY_EP_CREATE;
	r.ep_create = &e;
	assert_int_equal(frame_request_nfds(&r), 0);
}

/* ---- ctlio -------------------------------------------------------------- */

/* Three frames queued at once: fds sent with frame N come out with frame N. */
static void test_fds_arrive_with_their_frame(void **state)
{
	int sv[2], a = sealed_memfd("first"), b = sealed_memfd("second"), c = sealed_memfd("third");
	int two[2] = { b, c };
	uint8_t *f1, *f2, *f3;
	size_t l1, l2, l3;
	struct ctlio_rx rx;
	UcclCtl__Request *r = NULL;
	int base;

	socket_pair(sv);
	base = count_open_fds();
	f1 = mem_reg_frame(1, 5, &l1);
	f2 = status_frame(2, &l2);
	f3 = mem_reg_frame(3, 6, &l3);
	assert_int_equal(ctlio_send(sv[0], f1, l1, &a, 1, 1000), 0);
	assert_int_equal(ctlio_send(sv[0], f2, l2, NULL, 0, 1000), 0);
	assert_int_equal(ctlio_send(sv[0], f3, l3, two, 2, 1000), 0);
	close(a);
	close(b);
	close(c);

	ctlio_rx_init(&rx, 65536);
	read_frame(&rx, sv[1]);
	r = decode_rx(&rx);
	assert_int_equal(r->seq, 1);
	assert_int_equal(rx.nfds, frame_request_nfds(r));
	expect_memfd(rx.fds[0], "first");
	uccl_ctl__request__free_unpacked(r, NULL);
	ctlio_rx_reset(&rx);

	read_frame(&rx, sv[1]);
	r = decode_rx(&rx);
	assert_int_equal(r->seq, 2);
	assert_int_equal(rx.nfds, 0);
	uccl_ctl__request__free_unpacked(r, NULL);
	ctlio_rx_reset(&rx);

	read_frame(&rx, sv[1]);
	r = decode_rx(&rx);
	assert_int_equal(r->seq, 3);
	assert_int_equal(rx.nfds, 2);
	assert_int_equal(rx.extra_fds, 0);
	expect_memfd(rx.fds[0], "second");
	expect_memfd(rx.fds[1], "third");
	uccl_ctl__request__free_unpacked(r, NULL);
	ctlio_rx_reset(&rx);

	/* nothing more: need more, not an error */
	assert_int_equal(ctlio_rx_read(&rx, sv[1]), 0);
	ctlio_rx_fini(&rx);
	/* every fd received was closed by reset */
	assert_int_equal(count_open_fds(), base - 3);
	free(f1);
	free(f2);
	free(f3);
	close(sv[0]);
	close(sv[1]);
}

/* A taken fd (slot set to -1) survives reset; the others are closed. */
static void test_reset_closes_fds_not_taken(void **state)
{
	int sv[2], fds[2] = { sealed_memfd("keep"), sealed_memfd("drop") };
	struct ctlio_rx rx;
	uint8_t *f;
	size_t l;
	int kept, dropped;

	socket_pair(sv);
	f = mem_reg_frame(1, 4, &l);
	assert_int_equal(ctlio_send(sv[0], f, l, fds, 2, 1000), 0);
	close(fds[0]);
	close(fds[1]);
	ctlio_rx_init(&rx, 65536);
	read_frame(&rx, sv[1]);
	assert_int_equal(rx.nfds, 2);
	kept = rx.fds[0];
	dropped = rx.fds[1];
	rx.fds[0] = -1;
	ctlio_rx_reset(&rx);
	assert_true(fd_is_open(kept));
	assert_false(fd_is_open(dropped));
	expect_memfd(kept, "keep");
	close(kept);
	ctlio_rx_fini(&rx);
	free(f);
	close(sv[0]);
	close(sv[1]);
}

/* More fds than CTLIO_MAX_FDS: the first ones are kept, the rest never stay
 * open in the receiver, and the surplus is counted; the kernel dropped them
 * past the control buffer, so how many is not known (fds_cut says so). */
static void test_extra_fds_are_closed_and_counted(void **state)
{
	enum { N = CTLIO_MAX_FDS + 3 };
	union {
		char b[CMSG_SPACE(sizeof(int) * N)];
		struct cmsghdr align;
	} cm;
	int sv[2], fds[N], base;
	struct ctlio_rx rx;
	struct iovec iov;
	struct msghdr mh = { 0 };
	struct cmsghdr *c;
	uint8_t *f;
	size_t l;

	socket_pair(sv);
	f = status_frame(9, &l);
	for (int i = 0; i < N; i++)
		fds[i] = sealed_memfd("x");
	iov.iov_base = f;
	iov.iov_len = l;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.b;
	mh.msg_controllen = sizeof(cm.b);
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * N);
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	assert_int_equal(sendmsg(sv[0], &mh, 0), (ssize_t)l);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	base = count_open_fds();

	ctlio_rx_init(&rx, 65536);
	read_frame(&rx, sv[1]);
	assert_int_equal(rx.nfds, CTLIO_MAX_FDS);
	assert_true(rx.extra_fds >= 1);
	assert_int_equal(rx.fds_cut, 1);
	assert_int_equal(count_open_fds(), base + CTLIO_MAX_FDS);
	ctlio_rx_fini(&rx);
	assert_int_equal(count_open_fds(), base);
	free(f);
	close(sv[0]);
	close(sv[1]);
}

static void test_eof_is_econnreset(void **state)
{
	struct ctlio_rx rx;
	uint8_t *f;
	size_t l;
	int sv[2];

	/* between frames */
	socket_pair(sv);
	close(sv[0]);
	ctlio_rx_init(&rx, 65536);
	assert_int_equal(ctlio_rx_read(&rx, sv[1]), -ECONNRESET);
	ctlio_rx_fini(&rx);
	close(sv[1]);

	/* in the middle of a payload */
	socket_pair(sv);
	f = status_frame(1, &l);
	assert_int_equal(write(sv[0], f, l - 1), (ssize_t)(l - 1));
	close(sv[0]);
	ctlio_rx_init(&rx, 65536);
	assert_int_equal(ctlio_rx_read(&rx, sv[1]), -ECONNRESET);
	ctlio_rx_fini(&rx);
	close(sv[1]);
	free(f);
}

/* A frame dribbled in a byte at a time is assembled; each read before the
 * last says "need more". */
static void test_partial_frames_across_reads(void **state)
{
	struct ctlio_rx rx;
	UcclCtl__Request *r = NULL;
	uint8_t *f1, *f2;
	size_t l1, l2;
	int sv[2], memfd = sealed_memfd("dribble");

	socket_pair(sv);
	f1 = mem_reg_frame(77, 7, &l1);
	f2 = status_frame(78, &l2);
	ctlio_rx_init(&rx, 65536);
	/* fds ride on the first byte */
	assert_int_equal(ctlio_send(sv[0], f1, 1, &memfd, 1, 1000), 0);
	close(memfd);
	for (size_t i = 1; i < l1; i++) {
		assert_int_equal(ctlio_rx_read(&rx, sv[1]), 0);
		assert_int_equal(write(sv[0], f1 + i, 1), 1);
	}
	/* the rest of frame 1 and the start of frame 2 in one write */
	assert_int_equal(write(sv[0], f2, 3), 3);
	read_frame(&rx, sv[1]);
	r = decode_rx(&rx);
	assert_int_equal(r->seq, 77);
	assert_int_equal(rx.nfds, 1);
	expect_memfd(rx.fds[0], "dribble");
	uccl_ctl__request__free_unpacked(r, NULL);
	ctlio_rx_reset(&rx);

	assert_int_equal(ctlio_rx_read(&rx, sv[1]), 0);
	assert_int_equal(write(sv[0], f2 + 3, l2 - 3), (ssize_t)(l2 - 3));
	read_frame(&rx, sv[1]);
	r = decode_rx(&rx);
	assert_int_equal(r->seq, 78);
	assert_int_equal(rx.nfds, 0);
	uccl_ctl__request__free_unpacked(r, NULL);
	ctlio_rx_fini(&rx);
	free(f1);
	free(f2);
	close(sv[0]);
	close(sv[1]);
}

static void test_bad_length_is_emsgsize(void **state)
{
	static const uint8_t zero[4] = { 0, 0, 0, 0 };
	static const uint8_t big[4] = { 0x01, 0x04, 0x00, 0x00 }; /* 1025 */
	struct ctlio_rx rx;
	int sv[2];

	socket_pair(sv);
	ctlio_rx_init(&rx, 1024);
	assert_int_equal(write(sv[0], zero, 4), 4);
	assert_int_equal(ctlio_rx_read(&rx, sv[1]), -EMSGSIZE);
	ctlio_rx_fini(&rx);
	ctlio_rx_init(&rx, 1024);
	assert_int_equal(write(sv[0], big, 4), 4);
	assert_int_equal(ctlio_rx_read(&rx, sv[1]), -EMSGSIZE);
	assert_null(rx.buf); /* nothing allocated for a refused length */
	ctlio_rx_fini(&rx);
	close(sv[0]);
	close(sv[1]);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_recv_frame_with_fds(void **state)
{
	int sv[2], memfd = sealed_memfd("blocking"), fds[CTLIO_MAX_FDS], nfds = -1;
	uint8_t *f, *payload = NULL;
	UcclCtl__Request *r = NULL;
	uint32_t plen = 0;
	size_t l;

	socket_pair(sv);
	f = mem_reg_frame(4, 8, &l);
	assert_int_equal(ctlio_send(sv[0], f, l, &memfd, 1, 1000), 0);
	close(memfd);
	assert_int_equal(ctlio_recv_frame(sv[1], 65536, 1000, &payload, &plen, fds, &nfds), 0);
	assert_int_equal(plen, l - FRAME_HDR_LEN);
	assert_int_equal(nfds, 1);
	expect_memfd(fds[0], "blocking");
	assert_int_equal(frame_unpack_request(payload, plen, &r), 0);
	assert_int_equal(r->seq, 4);
	uccl_ctl__request__free_unpacked(r, NULL);
	close(fds[0]);
	free(payload);
	free(f);
	close(sv[0]);
	close(sv[1]);
}

static void test_recv_frame_times_out(void **state)
{
	int sv[2], fds[CTLIO_MAX_FDS], nfds = 0, memfd, base;
	uint8_t *payload = NULL, *f;
	uint32_t plen = 0;
	int64_t t0;
	size_t l;

	socket_pair(sv);
	t0 = mono_ms();
	assert_int_equal(ctlio_recv_frame(sv[1], 65536, 50, &payload, &plen, fds, &nfds),
			 -ETIMEDOUT);
	assert_true(mono_ms() - t0 >= 45);
	assert_null(payload);

	/* half a frame with an fd, then silence: the fd is not leaked */
	memfd = sealed_memfd("half");
	f = mem_reg_frame(1, 4, &l);
	assert_int_equal(ctlio_send(sv[0], f, l - 2, &memfd, 1, 1000), 0);
	close(memfd);
	base = count_open_fds();
	assert_int_equal(ctlio_recv_frame(sv[1], 65536, 30, &payload, &plen, fds, &nfds),
			 -ETIMEDOUT);
	assert_int_equal(count_open_fds(), base);
	free(f);
	close(sv[0]);
	close(sv[1]);
}

/* A peer that never reads: a send on a full non-blocking socket gives up at
 * its deadline instead of blocking the daemon's loop. */
static void test_send_times_out_and_checks_nfds(void **state)
{
	static uint8_t chunk[65536], big[1 << 20];
	int sv[2], fds[CTLIO_MAX_FDS + 1] = { 0 };
	size_t sent = 1;
	int64_t t0;

	socket_pair(sv);
	assert_int_equal(ctlio_send(sv[0], chunk, 16, fds, CTLIO_MAX_FDS + 1, 10), -EINVAL);
	assert_int_equal(ctlio_send(sv[0], chunk, 16, fds, -1, 10), -EINVAL);
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	while (send(sv[0], chunk, sizeof(chunk), MSG_DONTWAIT) > 0)
		;
	t0 = mono_ms();
	assert_int_equal(ctlio_send_part(sv[0], chunk, sizeof(chunk), NULL, 0, 40, &sent), -ETIMEDOUT);
	assert_true(mono_ms() - t0 >= 35);
	assert_int_equal(sent, 0);             /* still at a frame boundary */
	/* room for part of a megabyte: the part is said */
	assert_true(recv(sv[1], chunk, sizeof(chunk), 0) > 0);
	for (int i = 0; i < 3; i++)
		(void)!recv(sv[1], chunk, sizeof(chunk), MSG_DONTWAIT);
	assert_int_equal(ctlio_send_part(sv[0], big, sizeof(big), NULL, 0, 20, &sent), -ETIMEDOUT);
	assert_true(sent > 0 && sent < sizeof(big));
	/* a closed peer is an error, not a signal */
	close(sv[1]);
	assert_int_equal(ctlio_send(sv[0], chunk, 16, NULL, 0, 10), -EPIPE);
	close(sv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_round_trip_every_kind),
		cmocka_unit_test(test_reply_round_trip),
		cmocka_unit_test(test_hdr_parse_limits),
		cmocka_unit_test(test_pack_refuses_over_hard_cap),
		cmocka_unit_test(test_truncated_payloads_are_refused),
		cmocka_unit_test(test_garbage_is_ebadmsg),
		cmocka_unit_test(test_request_without_body_is_eproto),
		cmocka_unit_test(test_request_nfds),
		cmocka_unit_test(test_fds_arrive_with_their_frame),
		cmocka_unit_test(test_reset_closes_fds_not_taken),
		cmocka_unit_test(test_extra_fds_are_closed_and_counted),
		cmocka_unit_test(test_eof_is_econnreset),
		cmocka_unit_test(test_partial_frames_across_reads),
		cmocka_unit_test(test_bad_length_is_emsgsize),
		cmocka_unit_test(test_recv_frame_with_fds),
		cmocka_unit_test(test_recv_frame_times_out),
		cmocka_unit_test(test_send_times_out_and_checks_nfds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
