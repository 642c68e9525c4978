/* SPDX-License-Identifier: MIT */
/*
 * peer_probe: a fake peer daemon for tests/integration/peers.sh. It connects
 * to a daemon's peer_listen and sends what a broken, hostile or foreign
 * daemon would (garbage, a wrong version, an unknown name, nothing at all,
 * too many connections, a data port inside another peer's), or plays a
 * correct peer for a moment (a lookup, a
 * connect, a connection closed, an answer never asked for, a connect of
 * the daemon's answered and closed at once), and prints
 * what the daemon answered, one line per fact, for the script to check.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proto/peerframe.h"

#define WAIT_MS 8000

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void ipv4_of(const char *host, struct sockaddr_in *sa)
{
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
		fprintf(stderr, "peer_probe: %s: not an IPv4 address\n", host);
		exit(2);
	}
}

/* A TCP connection to host:port, from address `from` if not NULL. */
static int dial_from(const char *host, const char *port, const char *from)
{
	struct sockaddr_in sa = { .sin_family = AF_INET }, src = { .sin_family = AF_INET };
	int fd;

	sa.sin_port = htons((uint16_t)atoi(port));
	ipv4_of(host, &sa);
	if (from)
		ipv4_of(from, &src);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || (from && bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0) ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("peer_probe: connect");
		exit(1);
	}
	return fd;
}

static int dial(const char *host, const char *port)
{
	return dial_from(host, port, NULL);
}

static void send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			perror("peer_probe: send");
			exit(1);
		}
		p += n;
		len -= (size_t)n;
	}
}

static void send_msg(int fd, const UcclPeer__PeerMsg *m)
{
	uint8_t *buf;
	size_t len;

	if (peerframe_pack(m, &buf, &len) < 0) {
		fprintf(stderr, "peer_probe: cannot pack\n");
		exit(2);
	}
	send_all(fd, buf, len);
	free(buf);
}

/* Read exactly len bytes by the deadline. 1: done; 0: EOF first; -1: timeout
 * or error. */
static int read_exact(int fd, void *buf, size_t len, int64_t deadline)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - now_ms();
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return -1;
		n = recv(fd, p, len, 0);
		if (n == 0)
			return 0;
		if (n < 0)
			return errno == ECONNRESET ? 0 : -1;
		p += n;
		len -= (size_t)n;
	}
	return 1;
}

/* Next message, or NULL at EOF ("eof" printed) or timeout ("timeout"). */
static UcclPeer__PeerMsg *recv_msg(int fd)
{
	int64_t deadline = now_ms() + WAIT_MS;
	uint8_t hdr[FRAME_HDR_LEN], *p;
	uint32_t len;
	UcclPeer__PeerMsg *m;
	int r;

	r = read_exact(fd, hdr, sizeof(hdr), deadline);
	if (r <= 0) {
		printf("%s\n", r == 0 ? "eof" : "timeout");
		return NULL;
	}
	if (peerframe_hdr_parse(hdr, &len) < 0) {
		printf("bad frame from the daemon\n");
		exit(1);
	}
	p = malloc(len);
	if (!p || read_exact(fd, p, len, deadline) != 1 || peerframe_unpack(p, len, &m) < 0) {
		printf("bad message from the daemon\n");
		exit(1);
	}
	free(p);
	return m;
}

/* Print the daemon's answer until it closes: "error CODE MESSAGE" for an
 * Error, then "eof". */
static int expect_close(int fd)
{
	UcclPeer__PeerMsg *m;

	while ((m = recv_msg(fd))) {
		if (m->body_case == UCCL_PEER__PEER_MSG__BODY_ERROR)
			printf("error %d %s\n", m->error->code, m->error->message);
		else
			printf("got %s\n", peerframe_msg_name(m));
		uccl_peer__peer_msg__free_unpacked(m, NULL);
	}
	return 0;
}

static void hello_of(UcclPeer__Hello *h, const char *name, uint32_t version)
{
	h->proto_version = version;
	h->host_name = (char *)name;
	h->data_address = (char *)"127.0.0.1";
	h->has_data_port = h->has_data_paths = h->has_mtu = h->has_token = h->has_timeout_ms = 1;
	h->has_wire_version = 1;
	h->wire_version = PEER_WIRE_VERSION;
	h->data_port = 50000;
	h->data_paths = 4;
	h->mtu = 1500;
	h->token = 0x0123456789abcdefULL;
	h->timeout_ms = 3000;
}

/* garbage KIND: http (a length over the limit), junk (a frame that does not
 * decode), empty (a frame whose message names nothing), early (a keepalive
 * before the hello), silent (nothing at all). */
static int mode_garbage(const char *host, const char *port, const char *kind)
{
	static const uint8_t junk[] = { 8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	/* field 99, unknown to this version: decodes, names no message */
	static const uint8_t empty[] = { 3, 0, 0, 0, 0x98, 0x06, 0x00 };
	int fd = dial(host, port);

	if (strcmp(kind, "http") == 0) {
		send_all(fd, "GET / HTTP/1.0\r\n\r\n", 18);
	} else if (strcmp(kind, "junk") == 0) {
		send_all(fd, junk, sizeof(junk));
	} else if (strcmp(kind, "empty") == 0) {
		send_all(fd, empty, sizeof(empty));
	} else if (strcmp(kind, "early") == 0) {
		UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
		UcclPeer__Keepalive k = UCCL_PEER__KEEPALIVE__INIT;

		k.seq = 1;
		m.body_case = UCCL_PEER__PEER_MSG__BODY_KEEPALIVE;
		m.keepalive = &k;
		send_msg(fd, &m);
	} else if (strcmp(kind, "silent") != 0) {
		fprintf(stderr, "peer_probe: unknown garbage kind %s\n", kind);
		return 2;
	}
	expect_close(fd);
	close(fd);
	return 0;
}

/* hello NAME VERSION [LOOKUP]: a hello as NAME speaking VERSION; prints
 * "hello HOST" or "error CODE MESSAGE". After a hello, answers nothing but
 * asks: one keepalive ("keepalive_ack") and, with LOOKUP, whether an
 * endpoint listens under it ("found EP" or "notfound"). */
static int mode_hello(const char *host, const char *port, const char *name, const char *version,
		      const char *lookup)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT, *r;
	UcclPeer__Hello h = UCCL_PEER__HELLO__INIT;
	int fd = dial(host, port);

	hello_of(&h, name, (uint32_t)atoi(version));
	m.body_case = UCCL_PEER__PEER_MSG__BODY_HELLO;
	m.hello = &h;
	send_msg(fd, &m);
	r = recv_msg(fd);
	if (!r)
		return 1;
	if (r->body_case == UCCL_PEER__PEER_MSG__BODY_ERROR) {
		printf("error %d %s\n", r->error->code, r->error->message);
		uccl_peer__peer_msg__free_unpacked(r, NULL);
		expect_close(fd);
		close(fd);
		return 0;
	}
	if (r->body_case != UCCL_PEER__PEER_MSG__BODY_HELLO) {
		printf("got %s\n", peerframe_msg_name(r));
		return 1;
	}
	printf("hello %s\n", r->hello->host_name);
	uccl_peer__peer_msg__free_unpacked(r, NULL);

	UcclPeer__PeerMsg k = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__Keepalive ka = UCCL_PEER__KEEPALIVE__INIT;
	ka.seq = 7;
	ka.sent_us = 1;
	k.body_case = UCCL_PEER__PEER_MSG__BODY_KEEPALIVE;
	k.keepalive = &ka;
	send_msg(fd, &k);
	if (lookup) {
		UcclPeer__PeerMsg q = UCCL_PEER__PEER_MSG__INIT;
		UcclPeer__LookupReq lq = UCCL_PEER__LOOKUP_REQ__INIT;

		lq.id = 1;
		lq.name = (char *)lookup;
		q.body_case = UCCL_PEER__PEER_MSG__BODY_LOOKUP_REQ;
		q.lookup_req = &lq;
		send_msg(fd, &q);
	}
	/* the daemon's own keepalives may come in between */
	for (int want = lookup ? 2 : 1; want > 0;) {
		r = recv_msg(fd);
		if (!r)
			return 1;
		if (r->body_case == UCCL_PEER__PEER_MSG__BODY_KEEPALIVE_ACK && r->keepalive_ack->seq == 7) {
			printf("keepalive_ack\n");
			want--;
		} else if (r->body_case == UCCL_PEER__PEER_MSG__BODY_LOOKUP_REP) {
			if (r->lookup_rep->found)
				printf("found %u\n", r->lookup_rep->ep_id);
			else
				printf("notfound\n");
			want--;
		} else if (r->body_case != UCCL_PEER__PEER_MSG__BODY_KEEPALIVE) {
			printf("got %s\n", peerframe_msg_name(r));
			want = 0;
		}
		uccl_peer__peer_msg__free_unpacked(r, NULL);
	}
	close(fd);
	return 0;
}

/* Send a hello as name and print the answer ("hello HOST"); false, with the
 * rest printed, if the daemon refused. */
static bool handshake(int fd, const char *name)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT, *r;
	UcclPeer__Hello h = UCCL_PEER__HELLO__INIT;
	bool ok;

	hello_of(&h, name, PEER_PROTO_VERSION);
	m.body_case = UCCL_PEER__PEER_MSG__BODY_HELLO;
	m.hello = &h;
	send_msg(fd, &m);
	r = recv_msg(fd);
	if (!r)
		return false;
	ok = r->body_case == UCCL_PEER__PEER_MSG__BODY_HELLO;
	if (ok)
		printf("hello %s\n", r->hello->host_name);
	else if (r->body_case == UCCL_PEER__PEER_MSG__BODY_ERROR)
		printf("error %d %s\n", r->error->code, r->error->message);
	else
		printf("got %s\n", peerframe_msg_name(r));
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	if (!ok)
		expect_close(fd);
	return ok;
}

/* connect NAME LISTEN: as peer NAME, ask to connect to the endpoint that
 * listens under LISTEN ("connect_rep STATUS [EP CONN]"), tell the daemon a
 * connection that never was is closed (one-way: no answer), then answer a
 * connect the daemon never asked for, which it must refuse ("error CODE
 * MESSAGE", "eof"). */
static int mode_connect(const char *host, const char *port, const char *name, const char *listen)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT, *r;
	UcclPeer__ConnectReq cq = UCCL_PEER__CONNECT_REQ__INIT;
	UcclPeer__ConnClose cc = UCCL_PEER__CONN_CLOSE__INIT;
	UcclPeer__ConnectRep cr = UCCL_PEER__CONNECT_REP__INIT;
	int fd = dial(host, port);

	if (!handshake(fd, name)) {
		close(fd);
		return 1;
	}
	cq.id = 1;
	cq.name = (char *)listen;
	cq.src_ep = 1;
	cq.src_conn = 2;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONNECT_REQ;
	m.connect_req = &cq;
	send_msg(fd, &m);
	while ((r = recv_msg(fd)) && r->body_case == UCCL_PEER__PEER_MSG__BODY_KEEPALIVE)
		uccl_peer__peer_msg__free_unpacked(r, NULL);
	if (!r)
		return 1;
	if (r->body_case != UCCL_PEER__PEER_MSG__BODY_CONNECT_REP || r->connect_rep->id != 1) {
		printf("got %s\n", peerframe_msg_name(r));
		return 1;
	}
	if (r->connect_rep->status == 0)
		printf("connect_rep 0 %u %u\n", r->connect_rep->ep_id, r->connect_rep->conn);
	else
		printf("connect_rep %d\n", r->connect_rep->status);
	uccl_peer__peer_msg__free_unpacked(r, NULL);

	cc.ep_id = UINT32_MAX;
	cc.conn = UINT32_MAX;
	cc.src_ep = 1;
	cc.src_conn = 3;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONN_CLOSE;
	m.conn_close = &cc;
	send_msg(fd, &m);

	cr.id = 7;
	cr.status = -ENOENT;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONNECT_REP;
	m.connect_rep = &cr;
	send_msg(fd, &m);
	expect_close(fd);
	close(fd);
	return 0;
}

/* flood N [FROM [HOLD_MS]]: N connections (from address FROM) that send
 * nothing; prints how many the daemon closed within HOLD_MS (default a
 * second): "closed K". */
static int mode_flood(const char *host, const char *port, const char *count, const char *from,
		      const char *hold)
{
	int n = atoi(count), closed = 0, hold_ms = hold ? atoi(hold) : 1000;
	int *fds = calloc((size_t)(n > 0 ? n : 1), sizeof(int));

	if (!fds || n <= 0 || hold_ms <= 0) {
		free(fds);
		return 2;
	}
	for (int i = 0; i < n; i++)
		fds[i] = dial_from(host, port, from);
	usleep((useconds_t)hold_ms * 1000);
	for (int i = 0; i < n; i++) {
		char b[512];
		ssize_t r;

		/* an Error may come before the end of stream */
		while ((r = recv(fds[i], b, sizeof(b), MSG_DONTWAIT)) > 0)
			;
		if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			closed++;
		close(fds[i]);
	}
	printf("closed %d\n", closed);
	free(fds);
	return 0;
}

/* Whether r is a keepalive of the daemon's; answered if it is. */
static bool answer_keepalive(int fd, const UcclPeer__PeerMsg *r)
{
	UcclPeer__PeerMsg a = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__KeepaliveAck ack = UCCL_PEER__KEEPALIVE_ACK__INIT;

	if (r->body_case != UCCL_PEER__PEER_MSG__BODY_KEEPALIVE)
		return false;
	ack.seq = r->keepalive->seq;
	ack.sent_us = r->keepalive->sent_us;
	a.body_case = UCCL_PEER__PEER_MSG__BODY_KEEPALIVE_ACK;
	a.keepalive_ack = &ack;
	send_msg(fd, &a);
	return true;
}

/* Stay a live peer for hold_ms: answer the daemon's keepalives; with tell,
 * print what else it sends ("got KIND", "got conn_close EP CONN"). -1 if
 * the daemon closed the connection. */
static int stay_up(int fd, int hold_ms, bool tell)
{
	int64_t end = now_ms() + hold_ms;

	while (now_ms() < end) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		UcclPeer__PeerMsg *r;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		r = recv_msg(fd);
		if (!r)
			return -1;
		if (!answer_keepalive(fd, r) && tell) {
			if (r->body_case == UCCL_PEER__PEER_MSG__BODY_CONN_CLOSE)
				printf("got conn_close %u %u\n", r->conn_close->ep_id,
				       r->conn_close->conn);
			else
				printf("got %s\n", peerframe_msg_name(r));
		}
		uccl_peer__peer_msg__free_unpacked(r, NULL);
	}
	return 0;
}

/* squat NAME DATA_PORT HOLD_MS [FROM [DATA_ADDR]]: a valid peer NAME,
 * connecting from FROM (default any), whose hello announces data
 * DATA_ADDR:DATA_PORT (DATA_ADDR default FROM, else 127.0.0.1; any port,
 * e.g. inside another peer's range); answers keepalives for HOLD_MS, then
 * closes. Prints "hello HOST", or "refused" and the daemon's Error. */
static int mode_squat(const char *host, const char *port, const char *name, const char *dport,
		      const char *hold, const char *from, const char *daddr)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT, *r;
	UcclPeer__Hello h = UCCL_PEER__HELLO__INIT;
	int fd = from ? dial_from(host, port, from) : dial(host, port);

	hello_of(&h, name, PEER_PROTO_VERSION);
	if (daddr || from)
		h.data_address = (char *)(daddr ? daddr : from);
	h.data_port = (uint32_t)atoi(dport);
	h.data_paths = 1;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_HELLO;
	m.hello = &h;
	send_msg(fd, &m);
	r = recv_msg(fd);
	if (!r || r->body_case != UCCL_PEER__PEER_MSG__BODY_HELLO) {
		printf("refused\n");
		if (r && r->body_case == UCCL_PEER__PEER_MSG__BODY_ERROR)
			printf("error %s\n", r->error->message);
		return 1;
	}
	printf("hello %s\n", r->hello->host_name);
	uccl_peer__peer_msg__free_unpacked(r, NULL);
	if (stay_up(fd, atoi(hold), false) < 0)
		return 1;
	close(fd);
	return 0;
}

/* closeearly NAME HOLD_MS: as peer NAME, wait for the daemon to ask for a
 * connection ("connect_req LISTEN EP WIRE"), then accept it and close the
 * accepted side at once: the ConnectRep and a ConnClose naming the
 * daemon's side go in one write, so that the daemon reads both before its
 * engine has finished the connect the answer starts ("closed EP WIRE").
 * Then answers keepalives (the peer stays up, its channel with it) for
 * HOLD_MS, printing anything else the daemon sends ("got KIND", "got
 * conn_close EP CONN"), and closes. Nothing answers on the data port the
 * hello announces: the daemon's side never hears from the peer's. */
static int mode_closeearly(const char *host, const char *port, const char *name, const char *hold)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT, *r;
	UcclPeer__ConnectRep cr = UCCL_PEER__CONNECT_REP__INIT;
	UcclPeer__ConnClose cc = UCCL_PEER__CONN_CLOSE__INIT;
	uint8_t *rep, *cls, *both;
	size_t rep_len, cls_len;
	int fd = dial(host, port);

	if (!handshake(fd, name)) {
		close(fd);
		return 1;
	}
	/* the daemon asks once a client of it connects to NAME/LISTEN */
	while ((r = recv_msg(fd)) && answer_keepalive(fd, r))
		uccl_peer__peer_msg__free_unpacked(r, NULL);
	if (!r)
		return 1;
	if (r->body_case != UCCL_PEER__PEER_MSG__BODY_CONNECT_REQ) {
		printf("got %s\n", peerframe_msg_name(r));
		return 1;
	}
	printf("connect_req %s %u %u\n", r->connect_req->name, r->connect_req->src_ep,
	       r->connect_req->src_conn);
	/* our side: endpoint 5 conn 6, made up (nothing will use it) */
	cr.id = r->connect_req->id;
	cr.status = 0;
	cr.has_ep_id = cr.has_conn = 1;
	cr.ep_id = 5;
	cr.conn = 6;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONNECT_REP;
	m.connect_rep = &cr;
	if (peerframe_pack(&m, &rep, &rep_len) < 0) {
		fprintf(stderr, "peer_probe: cannot pack\n");
		return 2;
	}
	cc.ep_id = r->connect_req->src_ep;
	cc.conn = r->connect_req->src_conn;
	cc.src_ep = cr.ep_id;
	cc.src_conn = cr.conn;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONN_CLOSE;
	m.conn_close = &cc;
	if (peerframe_pack(&m, &cls, &cls_len) < 0 || !(both = malloc(rep_len + cls_len))) {
		fprintf(stderr, "peer_probe: cannot pack\n");
		return 2;
	}
	memcpy(both, rep, rep_len);
	memcpy(both + rep_len, cls, cls_len);
	/* one write, one segment on loopback: the daemon's read takes both */
	send_all(fd, both, rep_len + cls_len);
	printf("closed %u %u\n", cc.ep_id, cc.conn);
	free(both);
	free(cls);
	free(rep);
	uccl_peer__peer_msg__free_unpacked(r, NULL);

	if (stay_up(fd, atoi(hold), true) < 0)
		return 1;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && strcmp(argv[1], "garbage") == 0)
		return mode_garbage(argv[2], argv[3], argv[4]);
	if ((argc == 6 || argc == 7) && strcmp(argv[1], "hello") == 0)
		return mode_hello(argv[2], argv[3], argv[4], argv[5], argc == 7 ? argv[6] : NULL);
	if (argc >= 5 && argc <= 7 && strcmp(argv[1], "flood") == 0)
		return mode_flood(argv[2], argv[3], argv[4], argc > 5 ? argv[5] : NULL,
				  argc > 6 ? argv[6] : NULL);
	if (argc >= 7 && argc <= 9 && strcmp(argv[1], "squat") == 0)
		return mode_squat(argv[2], argv[3], argv[4], argv[5], argv[6], argc > 7 ? argv[7] : NULL,
				  argc > 8 ? argv[8] : NULL);
	if (argc == 6 && strcmp(argv[1], "connect") == 0)
		return mode_connect(argv[2], argv[3], argv[4], argv[5]);
	if (argc == 6 && strcmp(argv[1], "closeearly") == 0)
		return mode_closeearly(argv[2], argv[3], argv[4], argv[5]);
	fprintf(stderr, "usage: peer_probe garbage HOST PORT http|junk|empty|early|silent\n"
			"       peer_probe hello HOST PORT NAME VERSION [LOOKUP]\n"
			"       peer_probe flood HOST PORT N [FROM [HOLD_MS]]\n"
			"       peer_probe squat HOST PORT NAME DATA_PORT HOLD_MS [FROM [DATA_ADDR]]\n"
			"       peer_probe connect HOST PORT NAME LISTEN\n"
			"       peer_probe closeearly HOST PORT NAME HOLD_MS\n");
	return 2;
}
