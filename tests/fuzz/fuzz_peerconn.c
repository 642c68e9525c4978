/* SPDX-License-Identifier: MIT */
/*
 * fuzz_peerconn: the peer protocol past decoding. fuzz_peer decodes and
 * checks messages; this feeds them to a running peer manager (daemon/peer.c,
 * peer_req.c) as a configured peer that said a proper hello: lookups,
 * connects (the daemon's side answers some at once, holds others and
 * answers them after the connection is gone), connection closes, answers
 * to requests never sent, keepalives, errors, a second hello. Each input is
 * a byte stream sent after the hello exchange ([u32 LE length][PeerMsg]
 * frames, as tests/fuzz/corpus/peer holds), in two writes; the event loop
 * runs until the manager closes the connection or a few milliseconds
 * pass. Then the fake peer goes away and the manager is freed: a crash,
 * a sanitizer report or a leak fails the run.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/conf.h"
#include "daemon/log.h"
#include "daemon/peer.h"
#include "proto/peerframe.h"

#define MAX_HELD 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct event_base *base;
static int port_b, port_a;
static struct peermgr *cur;
static struct peer_connect_req *held[MAX_HELD];
static unsigned n_held;

/* A port nothing listens on now; *fd holds it until the caller closes it,
 * so that a second call cannot return the same one. */
static int free_port(int *fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);

	*fd = socket(AF_INET, SOCK_STREAM, 0);
	if (*fd < 0 || bind(*fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(*fd, (struct sockaddr *)&sa, &len) < 0)
		abort();
	return ntohs(sa.sin_port);
}

static void pick_ports(void)
{
	int fa, fb;

	port_b = free_port(&fb);
	port_a = free_port(&fa);
	close(fa);
	close(fb);
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void run_ms(int ms)
{
	struct timeval tv = { 0, ms * 1000 };

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

/* "svc" listens as endpoint 7 on thread 0; "busy" fails; nothing else. */
static int resolve(void *arg, const char *name, uint32_t *ep_id, uint32_t *thread)
{
	(void)arg;
	*thread = 0;
	if (strcmp(name, "busy") == 0)
		return -EBUSY;
	if (strcmp(name, "svc") != 0)
		return -ENOENT;
	*ep_id = 7;
	return 0;
}

/* Answered at once by name ("svc" yes, "refused" no), else held for later. */
static void on_connect(void *arg, const char *peer, struct peer_connect_req *req, const char *name,
		       uint32_t src_ep, uint32_t src_conn)
{
	uint32_t st = 0, dt = 0;

	(void)arg;
	(void)peer;
	(void)src_ep;
	peer_connect_req_threads(req, &st, &dt);
	if (strcmp(name, "svc") == 0)
		peer_connect_answer(cur, req, 0, 7, src_conn % 64);
	else if (strcmp(name, "refused") == 0 || n_held == MAX_HELD)
		peer_connect_answer(cur, req, -ECONNREFUSED, 0, 0);
	else
		held[n_held++] = req;
}

static void on_conn_close(void *arg, const char *peer, uint32_t ep_id, uint32_t conn,
			  uint32_t src_ep, uint32_t src_conn)
{
	(void)arg;
	(void)peer;
	(void)ep_id;
	(void)conn;
	(void)src_ep;
	(void)src_conn;
}

static void setup(void)
{
	log_init();
	log_set_level(LOG_LVL_ERROR);
	base = event_base_new();
	if (!base)
		abort();
	pick_ports();
}

static int dial(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	sa.sin_port = htons((uint16_t)port_b);
	if (fd < 0)
		abort();
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS)
		abort();
	return fd;
}

/* Send all of buf, running the loop while the socket is full; false if
 * the manager closed the connection. */
static bool send_all(int fd, const uint8_t *buf, size_t len)
{
	uint64_t end = ms_now() + 200;

	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN)
			return false;
		if (ms_now() > end)
			return false;
		run_ms(1);
	}
	return true;
}

/* Read and drop what the manager sent; false once it closed. */
static bool drain(int fd)
{
	char buf[4096];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == 0)
			return false;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOTCONN;
	}
}

static void send_hello(int fd)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__Hello h = UCCL_PEER__HELLO__INIT;
	uint8_t *buf;
	size_t len;

	h.proto_version = PEER_PROTO_VERSION;
	h.host_name = "a";
	h.data_address = "127.0.0.1";
	h.has_data_port = h.has_data_paths = h.has_mtu = h.has_token = h.has_timeout_ms = 1;
	h.has_wire_version = 1;
	h.wire_version = PEER_WIRE_VERSION;
	h.data_paths = 1;
	h.mtu = 1500;
	h.token = 1;
	h.timeout_ms = 3000;
	h.has_data_crc = 1;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_HELLO;
	m.hello = &h;
	if (peerframe_pack(&m, &buf, &len) < 0)
		abort();
	if (!send_all(fd, buf, len))
		abort();
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[512], err[256];
	struct peer_handlers ph = { .connect = on_connect, .conn_close = on_conn_close };
	struct conf c;
	uint64_t end;
	bool open;
	int fd;

	if (!base)
		setup();
	snprintf(text, sizeof(text),
		 "peer_listen = 127.0.0.1:%d\npeers = a=127.0.0.1:%d, b=127.0.0.1:%d\n"
		 "host_name = b\ndata_port = 40100\ndata_paths = 4\nmtu = 9000\n"
		 "peer_timeout_ms = 1000\n", port_b, port_a, port_b);
	if (conf_parse("fuzz.conf", text, strlen(text), &c, err, sizeof(err)) < 0)
		abort();
	/* another process took the port meanwhile: not the input's fault */
	if (peermgr_start(base, &c, resolve, NULL, &cur) < 0) {
		pick_ports();
		return 0;
	}
	peermgr_set_handlers(cur, &ph);
	n_held = 0;

	/* a (sorts first) dials b: the hello exchange, then the input */
	fd = dial();
	send_hello(fd);
	open = send_all(fd, data, size / 2) && send_all(fd, data + size / 2, size - size / 2);
	end = ms_now() + 3;
	while (open && ms_now() < end) {
		run_ms(1);
		open = drain(fd);
	}
	/* held connects answered after the peer went: dropped, and freed */
	close(fd);
	run_ms(2);
	for (unsigned i = 0; i < n_held; i++)
		peer_connect_answer(cur, held[i], i % 2 ? 0 : -ENOENT, 7, i);
	n_held = 0;
	cur = peermgr_free(cur);
	run_ms(1);
	return 0;
}
