/* SPDX-License-Identifier: MIT */
/*
 * nic/udp: the UDP backend on loopback. Parameters are validated; two nics
 * exchange packets both ways with content, lengths and peer ids intact; GSO
 * batches and GRO super-datagrams come apart into the sender's packets, with
 * the same data when both are off; oversized datagrams are dropped and
 * counted; senders outside the peer table are reported as unknown; every path
 * sends from its own port and all of a peer's ports map to its one id; a full
 * send buffer gives a short count instead of blocking; GSO refused by the
 * kernel falls back to plain datagrams. Only 127.0.0.1 and ::1 are used.
 * All of it runs twice: receiving with recvmmsg on every call, and with the
 * receive hint (engine/nic/rxhint.h) where the kernel allows it, which also
 * has tests of its own: empty receives are skipped, and a count left ahead
 * by datagrams the kernel dropped is settled without losing later ones.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/nic/nic.h"
#include "engine/nic/rxhint.h"

#ifndef SOL_UDP
#define SOL_UDP 17
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define MS 1000000ull
static const struct nic_ops *ops = &nic_udp_ops;
static bool use_hint;                  /* params() asks for the receive hint */

/* ---- helpers -------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct nic_params params(const char *addr)
{
	return (struct nic_params){
		.bind_addr = addr, .base_port = 0, .npaths = 1, .mtu = 1500,
		.rcvbuf = 4u << 20, .sndbuf = 4u << 20, .gso = true, .gro = true,
		.rx_batch = 64, .rx_hint = use_hint,
	};
}

static struct nic *open_nic(const struct nic_params *p)
{
	struct nic *n = NULL;

	assert_int_equal(ops->open(p, &n), 0);
	assert_non_null(n);
	return n;
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

static uint16_t nic_port(struct nic *n)
{
	struct sockaddr_storage ss;
	socklen_t len = 0;

	assert_int_equal(ops->local_addr(n, &ss, &len), 0);
	assert_true(len > 0);
	return port_of(&ss);
}

/* Registers `who`'s receive address in `n`; returns the id. */
static uint32_t add_nic_peer(struct nic *n, struct nic *who)
{
	struct sockaddr_storage ss;
	socklen_t len;
	uint32_t id = 12345;

	assert_int_equal(ops->local_addr(who, &ss, &len), 0);
	assert_int_equal(ops->add_peer(n, (struct sockaddr *)&ss, len, 0, &id), 0);
	return id;
}

static int nic_fd(struct nic *n)
{
	int fd = -1;

	assert_int_equal(ops->wait_fds(n, &fd, 1), 1);
	assert_true(fd >= 0);
	return fd;
}

static struct nic_stats stats(struct nic *n)
{
	struct nic_stats s;

	ops->get_stats(n, &s);
	return s;
}

/* Payload: seq (4 bytes), length (2 bytes), then bytes derived from both, so
 * a packet cut, merged or mixed with another fails the check. */
static void fill(uint8_t *b, uint32_t len, uint32_t seq)
{
	assert_true(len >= 6);
	memcpy(b, &seq, 4);
	b[4] = (uint8_t)len;
	b[5] = (uint8_t)(len >> 8);
	for (uint32_t i = 6; i < len; i++)
		b[i] = (uint8_t)(seq * 131u + i * 7u + (len >> 3));
}

static bool intact(const uint8_t *b, uint32_t len, uint32_t *seq)
{
	uint32_t s;

	if (len < 6 || (uint32_t)(b[4] | b[5] << 8) != len)
		return false;
	memcpy(&s, b, 4);
	for (uint32_t i = 6; i < len; i++)
		if (b[i] != (uint8_t)(s * 131u + i * 7u + (len >> 3)))
			return false;
	*seq = s;
	return true;
}

/* Packets received by drain(): copied out, since rx memory is reused. */
struct got {
	uint32_t seq, len, peer;
	uint8_t tos;
	bool ok;
};

/* Receives until `want` packets arrived or `ms` passed; waits on the nic's
 * fd between empty polls. Returns how many arrived (capped by cap). */
static size_t drain(struct nic *n, struct got *g, size_t cap, size_t want, unsigned ms)
{
	uint64_t end = now_ns() + ms * MS;
	struct nic_pkt pk[64];
	size_t have = 0;

	while (have < want) {
		int r = ops->rx(n, pk, 64);

		assert_true(r >= 0);
		for (int i = 0; i < r; i++) {
			if (have < cap) {
				g[have].len = pk[i].len;
				g[have].peer = pk[i].peer;
				g[have].tos = pk[i].tos;
				g[have].ok = intact(pk[i].buf, pk[i].len, &g[have].seq);
			}
			have++;
		}
		if (r == 0) {
			uint64_t t = now_ns();
			struct pollfd pf = { .fd = nic_fd(n), .events = POLLIN };

			if (t >= end)
				break;
			(void)poll(&pf, 1, (int)((end - t) / MS) + 1);
		}
	}
	return have;
}

/* Sends all of pkts, draining `rx` while the sender reports a full buffer
 * or whenever `drain_every` packets went out (so loopback never drops). */
static void send_all(struct nic *tx, const struct nic_pkt *pkts, int count, int chunk,
		     struct nic *rx, struct got *g, size_t cap, size_t *have, unsigned ms)
{
	uint64_t end = now_ns() + ms * MS;
	int done = 0;

	while (done < count) {
		int c = count - done < chunk ? count - done : chunk;
		int r = ops->tx(tx, pkts + done, c);

		assert_true(r >= 0 && r <= c);
		done += r;
		for (;;) {              /* take what is queued without waiting */
			struct nic_pkt pk[64];
			int k = ops->rx(rx, pk, 64);

			assert_true(k >= 0);
			if (k == 0)
				break;
			for (int i = 0; i < k; i++, (*have)++) {
				assert_true(*have < cap);
				g[*have].len = pk[i].len;
				g[*have].peer = pk[i].peer;
				g[*have].tos = pk[i].tos;
				g[*have].ok = intact(pk[i].buf, pk[i].len, &g[*have].seq);
			}
		}
		assert_true(now_ns() < end);
	}
}

/* Does this kernel hand a UDP_GRO socket a GSO burst sent over loopback as
 * one super-datagram? Asked with plain sockets, independently of the nic. */
static bool kernel_gro_on_loopback(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	int d = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int one = 1;
	int seg = 100;                          /* the socket option takes an int */
	static uint8_t buf[1000];
	union { char c[CMSG_SPACE(sizeof(int))]; struct cmsghdr h; } cb;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	bool seen = false;

	assert_true(s >= 0 && d >= 0);
	assert_int_equal(bind(d, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(d, (struct sockaddr *)&a, &al), 0);
	if (setsockopt(d, SOL_UDP, UDP_GRO, &one, sizeof(one)) < 0 ||
	    setsockopt(s, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg)) < 0)
		goto out;
	if (sendto(s, buf, 500, 0, (struct sockaddr *)&a, sizeof(a)) != 500)
		goto out;
	m.msg_control = cb.c;
	m.msg_controllen = sizeof(cb.c);
	if (poll(&(struct pollfd){ .fd = d, .events = POLLIN }, 1, 1000) != 1 ||
	    recvmsg(d, &m, 0) <= 0)
		goto out;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO)
			seen = true;
out:
	close(s);
	close(d);
	return seen;
}

/* ---- parameters ----------------------------------------------------------- */

static void expect_open_fails(struct nic_params p, int err)
{
	struct nic *n = (struct nic *)&p;      /* must stay untouched */

	assert_int_equal(ops->open(&p, &n), err);
	assert_ptr_equal(n, (struct nic *)&p);
}

static void test_open_rejects_bad_parameters(void **state)
{
	struct nic_params p = params("127.0.0.1");
	struct nic *n;

	p.npaths = 0;          expect_open_fails(p, -EINVAL);
	p.npaths = 257;        expect_open_fails(p, -EINVAL);
	p = params("127.0.0.1");
	p.mtu = 575;           expect_open_fails(p, -EINVAL);
	p.mtu = 9001;          expect_open_fails(p, -EINVAL);
	p = params("127.0.0.1");
	p.rx_batch = 0;        expect_open_fails(p, -EINVAL);
	p.rx_batch = 1025;     expect_open_fails(p, -EINVAL);
	p = params("127.0.0.1");
	p.base_port = 65535;
	p.npaths = 2;          expect_open_fails(p, -EINVAL);   /* path 1 would be port 65536 */
	expect_open_fails(params(NULL), -EINVAL);
	expect_open_fails(params("localhost"), -EINVAL);        /* numeric only */
	expect_open_fails(params("127.0.0"), -EINVAL);
	expect_open_fails(params("::1%lo"), -EINVAL);
	assert_int_equal(ops->open(NULL, &n), -EINVAL);

	/* the limits themselves are fine */
	p = params("127.0.0.1");
	p.npaths = 256;
	p.mtu = 576;
	p.rx_batch = 1024;
	n = open_nic(&p);
	ops->close(n);
	p.npaths = 1;
	p.mtu = 9000;
	p.rx_batch = 1;
	n = open_nic(&p);
	assert_string_equal(ops->name, "udp");
	ops->close(n);
	ops->close(NULL);
}

/* Path i owns base_port + i, also when the kernel picked the base. */
static void test_paths_bind_consecutive_ports(void **state)
{
	struct nic_params p = params("127.0.0.1");
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct nic *n;
	uint16_t base;

	p.npaths = 4;
	n = open_nic(&p);
	base = nic_port(n);
	assert_true(base != 0);
	for (int i = 0; i < 4; i++) {
		int s = socket(AF_INET, SOCK_DGRAM, 0);

		a.sin_port = htons((uint16_t)(base + i));
		assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), -1);
		assert_int_equal(errno, EADDRINUSE);
		close(s);
	}
	ops->close(n);

	/* an explicit base (the one just freed) is used as given */
	p.base_port = base;
	n = open_nic(&p);
	assert_int_equal(nic_port(n), base);
	ops->close(n);
}

/* ---- exchange ------------------------------------------------------------- */

static void test_two_nics_exchange_both_ways(void **state)
{
	struct nic_params p = params("127.0.0.1");
	struct nic *a = open_nic(&p), *b = open_nic(&p);
	struct sockaddr_in discard = { .sin_family = AF_INET, .sin_port = htons(9),
				       .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint32_t dummy, a_b, b_a;
	static uint8_t bufs[2][50][1500];
	struct nic_pkt pk[50];
	struct got g[64];
	struct pollfd pf;

	/* a dummy first, so the ids differ and a mix-up shows */
	assert_int_equal(ops->add_peer(a, (struct sockaddr *)&discard, sizeof(discard), 0, &dummy),
			 0);
	a_b = add_nic_peer(a, b);
	b_a = add_nic_peer(b, a);
	assert_int_equal(dummy, 0);
	assert_int_equal(a_b, 1);
	assert_int_equal(b_a, 0);

	for (int dir = 0; dir < 2; dir++) {
		struct nic *tx = dir ? b : a, *rx = dir ? a : b;
		uint64_t bytes = 0;

		for (uint32_t i = 0; i < 50; i++) {
			uint32_t len = 6 + (i * 257u + dir * 100u) % 1495u;

			fill(bufs[dir][i], len, i + 1000u * dir);
			pk[i] = (struct nic_pkt){ .buf = bufs[dir][i], .len = len,
						  .peer = dir ? b_a : a_b };
			bytes += len;
		}
		assert_int_equal(ops->tx(tx, pk, 50), 50);
		pf = (struct pollfd){ .fd = nic_fd(rx), .events = POLLIN };
		assert_int_equal(poll(&pf, 1, 1000), 1);          /* wait_fds says so */
		assert_int_equal(drain(rx, g, 64, 50, 2000), 50);
		for (uint32_t i = 0; i < 50; i++) {
			assert_true(g[i].ok);
			assert_int_equal(g[i].seq, i + 1000u * dir);
			assert_int_equal(g[i].len, pk[i].len);
			assert_int_equal(g[i].peer, dir ? a_b : b_a);
			assert_int_equal(g[i].tos, 0);
		}
		assert_int_equal(drain(rx, g, 64, 1, 20), 0);       /* nothing extra */
		assert_int_equal(stats(tx).tx_pkts, 50);
		assert_int_equal(stats(tx).tx_bytes, bytes);
		assert_int_equal(stats(rx).rx_pkts, 50);
		assert_int_equal(stats(rx).rx_bytes, bytes);
		assert_int_equal(stats(rx).rx_unknown_peer, 0);
	}
	ops->close(a);
	ops->close(b);
}

/* A sender not in the table still comes through, as unknown, with its TOS. */
static void test_unknown_sender_is_reported_with_its_tos(void **state)
{
	struct nic_params p = params("127.0.0.1");
	struct nic *b = open_nic(&p);
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(nic_port(b)),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	int tos = 0x22;                          /* DSCP 8, ECT(0) */
	uint8_t buf[300];
	struct got g[2];

	assert_int_equal(setsockopt(s, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)), 0);
	fill(buf, sizeof(buf), 77);
	assert_int_equal(sendto(s, buf, sizeof(buf), 0, (struct sockaddr *)&to, sizeof(to)),
			 (ssize_t)sizeof(buf));
	assert_int_equal(drain(b, g, 2, 1, 2000), 1);
	assert_true(g[0].ok);
	assert_int_equal(g[0].seq, 77);
	assert_int_equal(g[0].peer, NIC_PEER_UNKNOWN);
	assert_int_equal(g[0].tos, 0x22);
	assert_int_equal(stats(b).rx_unknown_peer, 1);
	close(s);
	ops->close(b);
}

/* 10000 packets of 1400 B in runs of 20 (one GSO send each): all arrive,
 * once each, intact; the sender batched and, where the kernel coalesces on
 * loopback, the receiver split super-datagrams. */
static void bulk(bool offload, bool gather)
{
	enum { N = 10000, LEN = 1400, HDR = 64 };
	struct nic_params p = params("127.0.0.1");
	struct nic *a, *b;
	uint8_t *mem = malloc((size_t)N * LEN);
	struct nic_pkt *pk = calloc(N, sizeof(*pk));
	struct got *g = calloc(N + 64, sizeof(*g));
	bool *seen = calloc(N, sizeof(*seen));
	size_t have = 0;
	uint32_t peer;
	struct nic_stats ts, rs;

	assert_non_null(mem);
	assert_non_null(pk);
	assert_non_null(g);
	assert_non_null(seen);
	p.gso = p.gro = offload;
	a = open_nic(&p);
	b = open_nic(&p);
	peer = add_nic_peer(a, b);
	(void)add_nic_peer(b, a);
	for (uint32_t i = 0; i < N; i++) {
		uint8_t *at = mem + (size_t)i * LEN;

		fill(at, LEN, i);
		pk[i] = (struct nic_pkt){ .buf = at, .len = LEN, .peer = peer };
		/* gather: two of three packets as a header in a buffer of its
		 * own and the payload where it lies (mixed with whole ones, so
		 * GSO groups hold both kinds) */
		if (gather && i % 3) {
			pk[i].buf = malloc(HDR);
			assert_non_null(pk[i].buf);
			memcpy(pk[i].buf, at, HDR);
			memset(at, 0xee, HDR);      /* only the header copy is right */
			pk[i].payload = at + HDR;
			pk[i].hdr_len = HDR;
		}
	}
	send_all(a, pk, N, 20, b, g, N + 64, &have, 3000);
	have += drain(b, g + have, N + 64 - have, N - have, 3000);
	assert_int_equal(have, N);
	for (size_t i = 0; i < have; i++) {
		assert_true(g[i].ok);
		assert_int_equal(g[i].len, LEN);
		assert_false(seen[g[i].seq]);
		seen[g[i].seq] = true;
	}

	ts = stats(a);
	rs = stats(b);
	assert_int_equal(ts.tx_pkts, N);
	assert_int_equal(rs.rx_pkts, N);
	assert_int_equal(rs.rx_truncated, 0);
	if (offload) {
		assert_true(ts.tx_gso_calls > 0);
		assert_true(ts.tx_calls < N / 10);
		if (kernel_gro_on_loopback())
			assert_true(rs.rx_gro_segs > 0);
		else
			print_message("note: this kernel does not coalesce UDP GRO on loopback; "
				      "rx_gro_segs not checked\n");
	} else {
		assert_int_equal(ts.tx_gso_calls, 0);
		assert_int_equal(rs.rx_gro_segs, 0);
	}
	ops->close(a);
	ops->close(b);
	for (uint32_t i = 0; i < N; i++)
		if (pk[i].payload)
			free(pk[i].buf);
	free(seen);
	free(g);
	free(pk);
	free(mem);
}

static void test_gso_bulk_arrives_complete_and_intact(void **state)
{
	bulk(true, false);
}

static void test_without_gso_the_same_data_arrives(void **state)
{
	bulk(false, false);
}

/* Header and payload from two places come out as one packet, with GSO
 * groups (two iovecs a packet) and without. */
static void test_gathered_packets_arrive_whole(void **state)
{
	bulk(true, true);
	bulk(false, true);
}

/* Runs broken by size, path, a shorter tail, the 64-segment and 65000-byte
 * limits, an empty packet: every packet comes out with its own length. */
static void test_mixed_sizes_and_paths(void **state)
{
	enum { N = 400 };
	struct nic_params p = params("127.0.0.1");
	static uint8_t mem[N][9000];
	struct nic_pkt pk[N];
	static struct got g[N + 8];
	bool seen[N] = { 0 };
	uint32_t peer, back, n = 0, empty_sent = 0, empty_got = 0;
	size_t have = 0;
	struct nic *a, *b;

	p.mtu = 9000;
	p.npaths = 4;
	a = open_nic(&p);
	b = open_nic(&p);
	peer = add_nic_peer(a, b);
	back = add_nic_peer(b, a);

	while (n < N) {
		uint32_t run = 1 + (n * 7u) % 90u;            /* up to 90: past 64 segments */
		uint32_t len = 6 + (n * 1237u) % 8994u;       /* up to mtu: past 65000 bytes */
		uint16_t path = (uint16_t)(n % 5);            /* 4 is path 0 again */

		for (uint32_t k = 0; k < run && n < N; k++, n++) {
			uint32_t l = k == run - 1 && len > 100 ? len - 50 : len;   /* shorter tail */

			if (n == 123) {                        /* an empty datagram */
				pk[n] = (struct nic_pkt){ .buf = NULL, .len = 0, .peer = peer,
							  .path = path };
				empty_sent++;
				continue;
			}
			fill(mem[n], l, n);
			pk[n] = (struct nic_pkt){ .buf = mem[n], .len = l, .peer = peer,
						  .path = path };
		}
	}
	/* in small slices so the receive buffer never overflows */
	send_all(a, pk, N, 16, b, g, N + 8, &have, 3000);
	have += drain(b, g + have, N + 8 - have, N - have, 3000);
	assert_int_equal(have, N);
	for (size_t i = 0; i < have; i++) {
		assert_int_equal(g[i].peer, back);    /* every path maps to one peer */
		if (g[i].len == 0) {
			empty_got++;
			continue;
		}
		assert_true(g[i].ok);
		assert_true(g[i].seq < N);
		assert_false(seen[g[i].seq]);
		seen[g[i].seq] = true;
		assert_int_equal(g[i].len, pk[g[i].seq].len);
	}
	assert_int_equal(empty_got, empty_sent);
	assert_true(stats(a).tx_gso_calls > 0);
	ops->close(a);
	ops->close(b);
}

/* Leftover GRO segments wait for the next rx call when max is small, and
 * a peer removed meanwhile is not named by them any more. */
static void test_small_rx_calls_get_every_segment_in_order(void **state)
{
	struct nic_params p = params("127.0.0.1");
	struct nic *a = open_nic(&p), *b = open_nic(&p);
	static uint8_t mem[40][1000];
	struct nic_pkt pk[40], out[7];
	uint32_t peer = add_nic_peer(a, b), back = add_nic_peer(b, a), next = 0;
	uint64_t end = now_ns() + 2000 * MS;

	for (uint32_t i = 0; i < 40; i++) {
		fill(mem[i], i == 39 ? 600 : 1000, i);
		pk[i] = (struct nic_pkt){ .buf = mem[i], .len = i == 39 ? 600 : 1000, .peer = peer };
	}
	assert_int_equal(ops->tx(a, pk, 40), 40);
	assert_int_equal(stats(a).tx_calls, 1);
	while (next < 40 && now_ns() < end) {
		int r = ops->rx(b, out, 7);

		assert_true(r >= 0 && r <= 7);
		for (int i = 0; i < r; i++, next++) {
			uint32_t seq = 0;

			assert_true(intact(out[i].buf, out[i].len, &seq));
			assert_int_equal(seq, next);
			assert_int_equal(out[i].len, next == 39 ? 600 : 1000);
			assert_int_equal(out[i].peer, next < 14 ? back : NIC_PEER_UNKNOWN);
		}
		if (next == 14)
			assert_int_equal(ops->remove_peer(b, back), 0);
	}
	assert_int_equal(next, 40);
	if (kernel_gro_on_loopback())
		assert_int_equal(stats(b).rx_gro_segs, 40);   /* all from one super-datagram */
	ops->close(a);
	ops->close(b);
}

/* A receive offers every message its whole name and control space again,
 * however little the one before used there. A datagram from a plain socket
 * leaves only its TOS in the control data; a GRO datagram landing in that
 * slot later needs room for its segment size and its TOS (ECT(0) here), and
 * a control length left short by the earlier receive loses the TOS, which
 * ECN reads. Round 2 puts the GRO datagram in slot 1, so resetting only
 * the first slot would not do. */
static void test_a_gro_datagram_in_a_slot_used_before_keeps_its_tos(void **state)
{
	struct nic_params pa = params("127.0.0.1"), pb = params("127.0.0.1");
	struct nic *a, *b;
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	static uint8_t mem[9][1000];
	struct nic_pkt pk[4];
	struct got g[16];
	uint32_t peer;

	(void)state;
	pa.ecn = true;
	a = open_nic(&pa);
	b = open_nic(&pb);
	peer = add_nic_peer(a, b);
	to.sin_port = htons(nic_port(b));
	assert_true(s >= 0);
	for (uint32_t i = 0; i < 9; i++)
		fill(mem[i], 1000, i);
	/* round 1: four plain datagrams, taken by one receive into slots 0-3 */
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(sendto(s, mem[i], 1000, 0, (struct sockaddr *)&to, sizeof(to)), 1000);
	assert_int_equal(drain(b, g, 16, 4, 2000), 4);
	/* round 2: a plain datagram (slot 0), then a GSO run of four (slot 1) */
	assert_int_equal(sendto(s, mem[4], 1000, 0, (struct sockaddr *)&to, sizeof(to)), 1000);
	for (uint32_t i = 0; i < 4; i++)
		pk[i] = (struct nic_pkt){ .buf = mem[5 + i], .len = 1000, .peer = peer };
	assert_int_equal(ops->tx(a, pk, 4), 4);
	assert_int_equal(drain(b, g + 4, 12, 5, 2000), 5);
	for (uint32_t i = 0; i < 9; i++) {
		assert_true(g[i].ok);
		assert_int_equal(g[i].seq, i);
		assert_int_equal(g[i].len, 1000);
		assert_int_equal(g[i].tos, i < 5 ? 0 : 0x02);
	}
	assert_int_equal(stats(b).rx_truncated, 0);
	if (kernel_gro_on_loopback())
		assert_int_equal(stats(b).rx_gro_segs, 4);
	else
		print_message("note: this kernel does not coalesce UDP GRO on loopback; "
			      "the slot reuse is not exercised\n");
	close(s);
	ops->close(a);
	ops->close(b);
}

/* ---- limits and errors ---------------------------------------------------- */

static void over_mtu(bool gro)
{
	struct nic_params pa = params("127.0.0.1"), pb = params("127.0.0.1");
	static uint8_t mem[4][1200];
	struct nic_pkt pk[4];
	struct got g[4];
	struct nic *a, *b;
	uint32_t peer;

	pb.mtu = 1000;
	pb.gro = gro;
	a = open_nic(&pa);
	b = open_nic(&pb);
	peer = add_nic_peer(a, b);
	for (uint32_t i = 0; i < 4; i++) {
		fill(mem[i], i < 3 ? 1200 : 900, i);
		pk[i] = (struct nic_pkt){ .buf = mem[i], .len = i < 3 ? 1200 : 900, .peer = peer };
	}
	assert_int_equal(ops->tx(a, pk, 1), 1);           /* one datagram over b's mtu */
	assert_int_equal(ops->tx(a, pk + 1, 2), 2);       /* a GSO pair of them */
	assert_int_equal(ops->tx(a, pk + 3, 1), 1);       /* and one that fits */
	assert_int_equal(drain(b, g, 4, 1, 2000), 1);
	assert_true(g[0].ok);
	assert_int_equal(g[0].seq, 3);
	assert_int_equal(drain(b, g, 4, 1, 20), 0);
	assert_int_equal(stats(b).rx_truncated, 3);
	assert_int_equal(stats(b).rx_pkts, 1);
	ops->close(a);
	ops->close(b);
}

static void test_datagram_over_mtu_is_dropped_and_counted(void **state)
{
	over_mtu(true);
	over_mtu(false);
}

static void test_tx_refuses_bad_packets(void **state)
{
	struct nic_params p = params("127.0.0.1");
	struct nic *a = open_nic(&p), *b = open_nic(&p);
	uint8_t buf[1600];
	uint32_t peer = add_nic_peer(a, b);
	struct nic_pkt ok = { .buf = buf, .len = 100, .peer = peer };
	struct nic_pkt pk[3] = { ok, ok, ok };
	struct got g[4];

	fill(buf, 100, 5);
	pk[0].peer = peer + 1;
	assert_int_equal(ops->tx(a, pk, 1), -ENOENT);      /* no such peer */
	pk[0] = ok;
	pk[0].len = 1501;
	assert_int_equal(ops->tx(a, pk, 1), -EMSGSIZE);    /* over the mtu */
	pk[0] = ok;
	pk[0].payload = buf;
	pk[0].hdr_len = 101;
	assert_int_equal(ops->tx(a, pk, 1), -EINVAL);      /* header past the packet */
	pk[0] = ok;
	pk[2].peer = NIC_PEER_UNKNOWN;
	assert_int_equal(ops->tx(a, pk, 3), 2);            /* the good ones before it go */
	assert_int_equal(ops->tx(a, pk, 0), 0);
	assert_int_equal(drain(b, g, 4, 2, 2000), 2);
	assert_int_equal(drain(b, g, 4, 1, 20), 0);
	ops->close(a);
	ops->close(b);
}

static void test_peer_table_add_remove(void **state)
{
	struct nic_params p = params("127.0.0.1");
	struct nic *a = open_nic(&p), *b = open_nic(&p);
	struct sockaddr_in x = { .sin_family = AF_INET, .sin_port = htons(9),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons(9),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	uint8_t buf[100];
	struct nic_pkt pk = { .buf = buf, .len = 100 };
	struct got g[2];
	uint32_t id, a_b, b_a;

	assert_int_equal(ops->add_peer(a, (struct sockaddr *)&x, sizeof(x), 0, &id), 0);
	assert_int_equal(ops->add_peer(a, (struct sockaddr *)&x, sizeof(x), 0, &id), -EEXIST);
	assert_int_equal(ops->add_peer(a, (struct sockaddr *)&v6, sizeof(v6), 0, &id),
			 -EAFNOSUPPORT);                   /* an IPv4 nic cannot reach it */
	x.sin_port = 0;
	assert_int_equal(ops->add_peer(a, (struct sockaddr *)&x, sizeof(x), 0, &id), -EINVAL);
	assert_int_equal(ops->add_peer(a, (struct sockaddr *)&x, 4, 0, &id), -EINVAL);
	assert_int_equal(ops->remove_peer(a, 0), 0);
	assert_int_equal(ops->remove_peer(a, 0), -ENOENT);
	assert_int_equal(ops->remove_peer(a, 4000), -ENOENT);

	a_b = add_nic_peer(a, b);
	assert_int_equal(a_b, 0);                          /* the freed id is reused */
	b_a = add_nic_peer(b, a);
	fill(buf, 100, 1);
	pk.peer = a_b;
	assert_int_equal(ops->tx(a, &pk, 1), 1);
	assert_int_equal(drain(b, g, 2, 1, 2000), 1);
	assert_int_equal(g[0].peer, b_a);

	assert_int_equal(ops->remove_peer(b, b_a), 0);     /* now a is a stranger to b */
	assert_int_equal(ops->tx(a, &pk, 1), 1);
	assert_int_equal(drain(b, g, 2, 1, 2000), 1);
	assert_int_equal(g[0].peer, NIC_PEER_UNKNOWN);
	assert_int_equal(ops->remove_peer(a, a_b), 0);
	assert_int_equal(ops->tx(a, &pk, 1), -ENOENT);
	ops->close(a);
	ops->close(b);
}

/* Path i leaves from base + i (seen by a plain socket), and a receiver with
 * several peers on one address tells their path ranges apart; where ranges
 * overlap, the peer with the nearer (larger) base owns the port. */
static void test_paths_send_from_distinct_ports_of_one_peer(void **state)
{
	struct nic_params p = params("127.0.0.1");
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct nic *a, *b, *c;
	uint8_t buf[200];
	uint32_t to_s, a_b, c_b, b_a, b_c, decoy;
	uint16_t base;
	struct got g[16];

	p.npaths = 4;
	a = open_nic(&p);
	b = open_nic(&p);
	c = open_nic(&p);
	base = nic_port(a);
	/* keep the decoy ranges below (base-2, base-1 and c's twins) clear of
	 * the other nic's ports */
	for (int tries = 0; tries < 16 && abs((int)nic_port(c) - (int)base) < 8; tries++) {
		ops->close(c);
		c = open_nic(&p);
	}
	assert_true(abs((int)nic_port(c) - (int)base) >= 8 && base > 2 && nic_port(c) > 2);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&sa, &sl), 0);
	assert_int_equal(ops->add_peer(a, (struct sockaddr *)&sa, sl, 0, &to_s), 0);
	fill(buf, sizeof(buf), 9);
	for (uint16_t path = 0; path < 6; path++) {
		struct nic_pkt pk = { .buf = buf, .len = sizeof(buf), .peer = to_s, .path = path };
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		struct pollfd pf = { .fd = s, .events = POLLIN };

		assert_int_equal(ops->tx(a, &pk, 1), 1);
		assert_int_equal(poll(&pf, 1, 2000), 1);
		assert_int_equal(recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl),
				 (ssize_t)sizeof(buf));
		assert_int_equal(ntohs(from.sin_port), base + path % 4);
	}

	a_b = add_nic_peer(a, b);
	c_b = add_nic_peer(c, b);
	/* decoys whose ranges cover paths 0 and 1 of a and c, one added before
	 * and one after the real peer, so neither table order hides a mix-up */
	sa.sin_port = htons((uint16_t)(base - 2));
	assert_int_equal(ops->add_peer(b, (struct sockaddr *)&sa, sl, 0, &decoy), 0);
	b_a = add_nic_peer(b, a);
	b_c = add_nic_peer(b, c);
	sa.sin_port = htons((uint16_t)(nic_port(c) - 2));
	assert_int_equal(ops->add_peer(b, (struct sockaddr *)&sa, sl, 0, &decoy), 0);
	assert_int_not_equal(b_a, b_c);
	for (uint16_t path = 0; path < 4; path++) {
		struct nic_pkt pa = { .buf = buf, .len = sizeof(buf), .peer = a_b, .path = path };
		struct nic_pkt pc = { .buf = buf, .len = sizeof(buf), .peer = c_b, .path = path };

		assert_int_equal(ops->tx(a, &pa, 1), 1);
		assert_int_equal(ops->tx(c, &pc, 1), 1);
	}
	assert_int_equal(drain(b, g, 16, 8, 2000), 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(g[i].peer, i % 2 ? b_c : b_a);
	assert_int_equal(stats(b).rx_unknown_peer, 0);
	close(s);
	ops->close(a);
	ops->close(b);
	ops->close(c);
}

/* One datagram from plain socket s (2 s at most): its length, and the
 * port it came from in *port. */
static ssize_t recv_dgram(int s, uint8_t *buf, size_t cap, uint16_t *port)
{
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	struct pollfd pf = { .fd = s, .events = POLLIN };
	ssize_t r;

	assert_int_equal(poll(&pf, 1, 2000), 1);
	r = recvfrom(s, buf, cap, 0, (struct sockaddr *)&from, &fl);
	assert_true(r >= 0);
	*port = ntohs(from.sin_port);
	return r;
}

/* A plain UDP socket on 127.0.0.1 added to n as a peer (*id): its fd. */
static int plain_peer(struct nic *n, uint32_t *id)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&sa, &sl), 0);
	assert_int_equal(ops->add_peer(n, (struct sockaddr *)&sa, sl, 0, id), 0);
	return s;
}

/* Packets that allow it (pack_max) leave back to back in one datagram, on
 * the socket of the first one bound to a path: an ACK and the put and
 * signal behind it are one datagram, not two. The receiver sees their
 * bytes unchanged, in order. */
static void test_packets_that_allow_it_share_a_datagram(void **state)
{
	struct nic_params p = params("127.0.0.1");
	static uint8_t ack[48], put[160], sig[96], got[2000], want[2000];
	struct nic *a;
	uint32_t to_s;
	uint16_t base, port;
	struct nic_stats st;
	int s;

	(void)state;
	p.npaths = 4;
	p.pack = true;
	a = open_nic(&p);
	base = nic_port(a);
	s = plain_peer(a, &to_s);
	fill(ack, sizeof(ack), 1);
	fill(put, sizeof(put), 2);
	fill(sig, sizeof(sig), 3);
	memcpy(want, ack, sizeof(ack));
	memcpy(want + sizeof(ack), put, sizeof(put));
	memcpy(want + sizeof(ack) + sizeof(put), sig, sizeof(sig));

	{
		/* the put's payload gathered from elsewhere, as DATA goes */
		struct nic_pkt pk[3] = {
			{ .buf = ack, .len = sizeof(ack), .peer = to_s, .path = 0, .any_path = true,
			  .pack_max = 1400 },
			{ .buf = put, .len = sizeof(put), .peer = to_s, .path = 3, .pack_max = 1400,
			  .payload = put + 96, .hdr_len = 96 },
			{ .buf = sig, .len = sizeof(sig), .peer = to_s, .path = 3, .pack_max = 1400 },
		};

		assert_int_equal(ops->tx(a, pk, 3), 3);
	}
	assert_int_equal(recv_dgram(s, got, sizeof(got), &port), 48 + 160 + 96);
	assert_memory_equal(got, want, 48 + 160 + 96);
	assert_int_equal(port, base + 3);
	st = stats(a);
	assert_int_equal(st.tx_pkts, 3);
	assert_int_equal(st.tx_dgrams, 1);
	assert_int_equal(st.tx_calls, 1);
	assert_int_equal(st.tx_gso_calls, 0);

	/* without nic_params.pack the same call is three datagrams */
	ops->close(a);
	close(s);
	p.pack = false;
	a = open_nic(&p);
	s = plain_peer(a, &to_s);
	{
		struct nic_pkt pk[3] = {
			{ .buf = ack, .len = sizeof(ack), .peer = to_s, .any_path = true, .pack_max = 1400 },
			{ .buf = put, .len = sizeof(put), .peer = to_s, .path = 1, .pack_max = 1400 },
			{ .buf = sig, .len = sizeof(sig), .peer = to_s, .path = 1, .pack_max = 1400 },
		};

		assert_int_equal(ops->tx(a, pk, 3), 3);
	}
	assert_int_equal(recv_dgram(s, got, sizeof(got), &port), 48);
	assert_int_equal(recv_dgram(s, got, sizeof(got), &port), 160);
	assert_int_equal(recv_dgram(s, got, sizeof(got), &port), 96);
	assert_int_equal(stats(a).tx_dgrams, 3);
	close(s);
	ops->close(a);
}

/* What may not share: a packet past the smaller pack_max (or the mtu), one
 * with pack_max 0, one bound to another path, one to another peer. Runs of
 * equal packed datagrams still go as one GSO send. */
static void test_packing_stops_at_its_limits(void **state)
{
	struct nic_params p = params("127.0.0.1");
	static uint8_t mem[12][600], got[4000];
	struct nic_pkt pk[12];
	struct nic *a;
	uint32_t to_s, to_t;
	uint16_t base, port;
	/* datagram lengths s receives: 0+1, 2+3, then 4 to 9 one by one */
	static const ssize_t want_s[] = { 1200, 1200, 600, 600, 600, 600, 600, 600 };
	uint32_t next = 0;
	int s, t;

	(void)state;
	p.npaths = 2;
	p.pack = true;
	a = open_nic(&p);
	base = nic_port(a);
	s = plain_peer(a, &to_s);
	t = plain_peer(a, &to_t);
	for (uint32_t i = 0; i < 12; i++) {
		fill(mem[i], 600, i);
		pk[i] = (struct nic_pkt){ .buf = mem[i], .len = 600, .peer = to_s, .pack_max = 1500 };
	}
	/* 0-4: two a datagram under 1500 (1200, 1200, 600): one GSO send */
	pk[5].pack_max = 1000;          /* 5, 6: 1200 is over 5's limit */
	pk[7].pack_max = 0;             /* 7: alone; 8 may not join it either */
	pk[9].path = 1;                 /* 8 | 9: another path's socket */
	pk[10].peer = to_t;             /* 10, 11: t's, together */
	pk[11].peer = to_t;
	assert_int_equal(ops->tx(a, pk, 12), 12);
	for (size_t i = 0; i < sizeof(want_s) / sizeof(want_s[0]); i++) {
		ssize_t r = recv_dgram(s, got, sizeof(got), &port);
		uint32_t seq = 0;

		assert_int_equal(r, want_s[i]);
		for (ssize_t off = 0; off < r; off += 600, next++) {
			assert_true(intact(got + off, 600, &seq));
			assert_int_equal(seq, next);
		}
		assert_int_equal(port, base + (next - 1 == 9 ? 1 : 0));
	}
	assert_int_equal(next, 10);
	assert_int_equal(recv_dgram(t, got, sizeof(got), &port), 1200);
	assert_int_equal(stats(a).tx_pkts, 12);
	assert_int_equal(stats(a).tx_dgrams, 9);
	/* 1200, 1200, 600 and then 5 to 8 (600 each) */
	assert_int_equal(stats(a).tx_gso_calls, 2);
	close(s);
	close(t);
	ops->close(a);
}

/* Every member's pack_max bounds its datagram, not only the first's and
 * the joining one's; so does the mtu, whatever pack_max says. */
static void test_pack_limits_of_every_member_and_the_mtu(void **state)
{
	struct nic_params p = params("127.0.0.1");
	static uint8_t mem[3][1000], got[4000];
	static const uint32_t lim[3] = { 1500, 700, 1500 };
	struct nic_pkt pk[3];
	struct nic *a;
	uint32_t to_s;
	uint16_t port;
	int s;

	(void)state;
	p.pack = true;
	a = open_nic(&p);
	s = plain_peer(a, &to_s);
	for (uint32_t i = 0; i < 3; i++) {
		fill(mem[i], 300, i);
		pk[i] = (struct nic_pkt){ .buf = mem[i], .len = 300, .peer = to_s, .pack_max = lim[i] };
	}
	assert_int_equal(ops->tx(a, pk, 3), 3);
	assert_int_equal(recv_dgram(s, got, sizeof(got), &port), 600);   /* 0 and 1: 700 */
	assert_int_equal(recv_dgram(s, got, sizeof(got), &port), 300);
	for (uint32_t i = 0; i < 3; i++) {
		fill(mem[i], 1000, i);
		pk[i] = (struct nic_pkt){ .buf = mem[i], .len = 1000, .peer = to_s, .pack_max = 9000 };
	}
	assert_int_equal(ops->tx(a, pk, 3), 3);
	for (int i = 0; i < 3; i++)                                         /* mtu 1500 */
		assert_int_equal(recv_dgram(s, got, sizeof(got), &port), 1000);
	close(s);
	ops->close(a);
}

/* Thousands of tiny gathered packets (two iovecs each) packed at mtu
 * 9000, with and without GSO: no send takes more iovecs than a sendmmsg
 * batch has, and every packet arrives once, in order. */
static void many_tiny(bool gso)
{
	struct nic_params p = params("127.0.0.1");
	enum { N = 2000, L = 40 };
	static uint8_t mem[N][L], got[10000];
	static struct nic_pkt pk[N];
	struct nic *a;
	uint32_t to_s, next = 0;
	uint16_t port;
	int s, big = 8 << 20, sent = 0;

	p.pack = true;
	p.gso = gso;
	p.mtu = 9000;
	a = open_nic(&p);
	s = plain_peer(a, &to_s);
	assert_int_equal(setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big)), 0);
	for (uint32_t i = 0; i < N; i++) {
		fill(mem[i], L, i);
		pk[i] = (struct nic_pkt){ .buf = mem[i], .len = L, .peer = to_s, .pack_max = 9000,
					  .payload = mem[i] + 6, .hdr_len = 6 };
	}
	while (sent < N) {
		int r = ops->tx(a, pk + sent, N - sent);

		assert_true(r > 0);
		sent += r;
	}
	while (next < N) {
		ssize_t r = recv_dgram(s, got, sizeof(got), &port);
		uint32_t seq = 0;

		assert_true(r > 0 && r <= 9000 && r % L == 0);
		for (ssize_t off = 0; off < r; off += L, next++) {
			assert_true(intact(got + off, L, &seq));
			assert_int_equal(seq, next);
		}
	}
	assert_int_equal(stats(a).tx_pkts, N);
	assert_true(stats(a).tx_dgrams <= N / (9000 / L) + 1 + stats(a).tx_calls);
	close(s);
	ops->close(a);
}

static void test_many_tiny_packets_pack_within_the_iovec_limit(void **state)
{
	(void)state;
	many_tiny(true);
	many_tiny(false);
}

/* An ACK behind another peer's packet in the call still shares a datagram
 * with its own peer's reply right after it (one more system call, one
 * datagram less). */
static void test_an_ack_behind_another_peer_packs_with_its_own(void **state)
{
	struct nic_params p = params("127.0.0.1");
	static uint8_t x[200], ack[48], put[160], got[2000];
	struct nic *a;
	uint32_t to_s, to_t;
	uint16_t base, port;
	int s, t;

	(void)state;
	p.pack = true;
	p.npaths = 2;
	a = open_nic(&p);
	base = nic_port(a);
	s = plain_peer(a, &to_s);
	t = plain_peer(a, &to_t);
	{
		struct nic_pkt pk[3] = {
			{ .buf = x, .len = sizeof(x), .peer = to_t, .path = 1, .pack_max = 1400 },
			{ .buf = ack, .len = sizeof(ack), .peer = to_s, .path = 1, .any_path = true,
			  .pack_max = 1400 },
			{ .buf = put, .len = sizeof(put), .peer = to_s, .path = 0, .pack_max = 1400 },
		};

		assert_int_equal(ops->tx(a, pk, 3), 3);
	}
	assert_int_equal(recv_dgram(s, got, sizeof(got), &port), sizeof(ack) + sizeof(put));
	assert_int_equal(port, base);
	assert_int_equal(recv_dgram(t, got, sizeof(got), &port), sizeof(x));
	assert_int_equal(stats(a).tx_dgrams, 2);
	close(s);
	close(t);
	ops->close(a);
}

/* A peer with fewer paths than ours knows us by our first few sockets
 * only (add_peer's paths): a packet to it that may take any path (an ACK)
 * does not borrow another peer's socket beyond them, neither behind that
 * peer's DATA nor ahead of it, and its own path wraps into them; a peer
 * added with 0 takes any. */
static void test_any_path_stays_on_sockets_its_peer_knows(void **state)
{
	struct nic_params p = params("127.0.0.1");
	static uint8_t data[200], ack[48], got[2000];
	uint32_t few, all;
	struct nic *a;
	uint16_t base, port;
	int s, t;

	(void)state;
	p.npaths = 8;
	a = open_nic(&p);
	base = nic_port(a);
	s = plain_peer(a, &all);                     /* knows all 8 */
	t = socket(AF_INET, SOCK_DGRAM, 0);
	{
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t sl = sizeof(sa);

		assert_true(t >= 0);
		assert_int_equal(bind(t, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(getsockname(t, (struct sockaddr *)&sa, &sl), 0);
		assert_int_equal(ops->add_peer(a, (struct sockaddr *)&sa, sl, 4, &few), 0);
	}
	for (int order = 0; order < 2; order++) {
		struct nic_pkt d = { .buf = data, .len = sizeof(data), .peer = all, .path = 6 };
		struct nic_pkt k = { .buf = ack, .len = sizeof(ack), .peer = few, .path = 1,
				     .any_path = true };
		struct nic_pkt pk[2] = { order ? k : d, order ? d : k };

		assert_int_equal(ops->tx(a, pk, 2), 2);
		assert_int_equal(recv_dgram(s, got, sizeof(got), &port), sizeof(data));
		assert_int_equal(port, base + 6);
		assert_int_equal(recv_dgram(t, got, sizeof(got), &port), sizeof(ack));
		assert_int_equal(port, base + 1);
	}
	/* alone, on a path beyond the four: wrapped into them */
	{
		struct nic_pkt k = { .buf = ack, .len = sizeof(ack), .peer = few, .path = 6,
				     .any_path = true };

		assert_int_equal(ops->tx(a, &k, 1), 1);
		assert_int_equal(recv_dgram(t, got, sizeof(got), &port), sizeof(ack));
		assert_int_equal(port, base + 2);
	}
	/* the peer that knows all 8 still borrows the DATA's socket */
	{
		struct nic_pkt pk[2] = {
			{ .buf = data, .len = sizeof(data), .peer = few, .path = 3 },
			{ .buf = ack, .len = sizeof(ack), .peer = all, .path = 5, .any_path = true },
		};

		assert_int_equal(ops->tx(a, pk, 2), 2);
		assert_int_equal(recv_dgram(t, got, sizeof(got), &port), sizeof(data));
		assert_int_equal(port, base + 3);
		assert_int_equal(recv_dgram(s, got, sizeof(got), &port), sizeof(ack));
		assert_int_equal(port, base + 3);
	}
	close(s);
	close(t);
	ops->close(a);
}

/* A packet that may take any path (an ACK) leaves on the socket of the
 * packet next to it, in the same sendmmsg: ahead of DATA it takes the
 * DATA's path, behind DATA it joins the DATA's batch. Without the flag each
 * path is a system call of its own. DATA keeps its path either way, and a
 * leader on a borrowed socket never heads a GSO group of its own path. */
static void test_any_path_packets_ride_with_their_neighbours(void **state)
{
	struct nic_params p = params("127.0.0.1");
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct nic *a;
	uint8_t ack[64], data[200];
	uint32_t to_s;
	uint16_t base;

	(void)state;
	p.npaths = 8;
	a = open_nic(&p);
	base = nic_port(a);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&sa, &sl), 0);
	assert_int_equal(ops->add_peer(a, (struct sockaddr *)&sa, sl, 0, &to_s), 0);
	fill(ack, sizeof(ack), 1);
	fill(data, sizeof(data), 2);
	for (int any = 0; any < 2; any++) {
		/* ACK (path 5), DATA, DATA (path 2), ACK (path 6); the second
		 * DATA is no longer than the ACK's neighbour, so GSO could
		 * group them if the leader were allowed to */
		struct nic_pkt pk[4] = {
			{ .buf = ack, .len = sizeof(ack), .peer = to_s, .path = 5, .any_path = any },
			{ .buf = data, .len = sizeof(data), .peer = to_s, .path = 2 },
			{ .buf = data, .len = sizeof(data), .peer = to_s, .path = 2 },
			{ .buf = ack, .len = sizeof(ack), .peer = to_s, .path = 6, .any_path = any },
		};
		uint64_t calls = stats(a).tx_calls;
		uint16_t want[4] = { (uint16_t)(base + (any ? 2 : 5)), (uint16_t)(base + 2),
				     (uint16_t)(base + 2), (uint16_t)(base + (any ? 2 : 6)) };

		assert_int_equal(ops->tx(a, pk, 4), 4);
		assert_int_equal(stats(a).tx_calls - calls, any ? 1 : 3);
		for (int i = 0; i < 4; i++) {
			uint8_t buf[256];
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			struct pollfd pf = { .fd = s, .events = POLLIN };
			uint32_t seq = 0;
			ssize_t r;

			assert_int_equal(poll(&pf, 1, 2000), 1);
			r = recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
			assert_int_equal(r, (ssize_t)pk[i].len);
			assert_true(intact(buf, (uint32_t)r, &seq));
			assert_int_equal(seq, i == 0 || i == 3 ? 1 : 2);
			assert_int_equal(ntohs(from.sin_port), want[i]);
		}
	}
	{
		/* an ACK that borrowed path 2's socket in mid-batch, then DATA
		 * of the ACK's own path and size: that DATA must not join the
		 * ACK's GSO group, which goes out on path 2's socket */
		struct nic_pkt pk[3] = {
			{ .buf = data, .len = 100, .peer = to_s, .path = 2 },
			{ .buf = data, .len = 150, .peer = to_s, .path = 5, .any_path = true },
			{ .buf = data, .len = 150, .peer = to_s, .path = 5 },
		};
		uint16_t want[3] = { (uint16_t)(base + 2), (uint16_t)(base + 2),
				     (uint16_t)(base + 5) };

		assert_int_equal(ops->tx(a, pk, 3), 3);
		for (int i = 0; i < 3; i++) {
			uint8_t buf[256];
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			struct pollfd pf = { .fd = s, .events = POLLIN };

			assert_int_equal(poll(&pf, 1, 2000), 1);
			assert_int_equal(recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl),
					 (ssize_t)pk[i].len);
			assert_int_equal(ntohs(from.sin_port), want[i]);
		}
	}
	close(s);
	ops->close(a);
}

/* Flooding without reading never blocks the sender; the receiver's kernel
 * drops what does not fit (on loopback the send buffer empties at once, so
 * tx may well accept everything), and what does arrive is intact and in
 * order; afterwards the pair carries on. */
static void test_flood_never_blocks_and_nothing_arrives_corrupt(void **state)
{
	enum { B = 64, LEN = 1400 };
	struct nic_params p = params("127.0.0.1");
	static uint8_t mem[B][LEN];
	static struct got g[4096];
	struct nic_pkt pk[B];
	struct nic *a, *b;
	uint32_t peer, seq = 0, last = 0;
	uint64_t end, worst = 0;
	size_t have;
	bool short_count = false;
	struct nic_stats st;

	p.rcvbuf = 64 * 1024;
	p.sndbuf = 64 * 1024;
	a = open_nic(&p);
	b = open_nic(&p);
	peer = add_nic_peer(a, b);
	end = now_ns() + 300 * MS;
	while (now_ns() < end && !short_count) {
		uint64_t t0;
		int r;

		for (int i = 0; i < B; i++) {
			fill(mem[i], LEN, seq + (uint32_t)i);
			pk[i] = (struct nic_pkt){ .buf = mem[i], .len = LEN, .peer = peer };
		}
		t0 = now_ns();
		r = ops->tx(a, pk, B);
		if (now_ns() - t0 > worst)
			worst = now_ns() - t0;
		assert_true(r >= 0 && r <= B);
		seq += (uint32_t)r;
		short_count = r < B;
	}
	assert_true(worst < 200 * MS);
	assert_true(seq > 0);

	have = drain(b, g, 4096, 4096, 100);
	assert_true(have > 0 && have <= seq);
	for (size_t i = 0; i < have; i++) {
		assert_true(g[i].ok);
		assert_int_equal(g[i].len, LEN);
		assert_true(i == 0 || g[i].seq > last);
		last = g[i].seq;
	}

	for (int i = 0; i < 20; i++) {
		fill(mem[i], LEN, 1000000u + (uint32_t)i);
		pk[i] = (struct nic_pkt){ .buf = mem[i], .len = LEN, .peer = peer };
	}
	assert_int_equal(ops->tx(a, pk, 20), 20);
	assert_int_equal(drain(b, g, 4096, 20, 2000), 20);
	for (int i = 0; i < 20; i++) {
		assert_true(g[i].ok);
		assert_int_equal(g[i].seq, 1000000u + (uint32_t)i);
	}
	/* the small buffer was granted, and what it could not hold is counted
	 * (loopback may also drop before the socket, which it cannot see) */
	ops->get_stats(b, &st);
	assert_true(st.rcvbuf_bytes > 0 && st.rcvbuf_bytes <= 64 * 1024);
	assert_true(st.rx_overflow <= seq - have);
	if (have < seq)
		assert_true(st.rx_overflow > 0);
	ops->close(a);
	ops->close(b);
}

/* ---- IPv6 ----------------------------------------------------------------- */

static bool open_v6(struct nic_params *p, struct nic **n)
{
	int r = ops->open(p, n);

	if (r == -EADDRNOTAVAIL || r == -EAFNOSUPPORT)
		return false;
	assert_int_equal(r, 0);
	return true;
}

static void test_ipv6_loopback_exchange(void **state)
{
	struct nic_params p = params("::1");
	static uint8_t mem[30][1200];
	struct nic_pkt pk[30];
	struct got g[32];
	struct nic *a, *b;
	uint32_t a_b, b_a;

	if (!open_v6(&p, &a)) {
		print_message("no ::1 here; skipped\n");
		skip();
	}
	b = open_nic(&p);
	a_b = add_nic_peer(a, b);
	b_a = add_nic_peer(b, a);
	for (int dir = 0; dir < 2; dir++) {
		for (uint32_t i = 0; i < 30; i++) {
			uint32_t len = i == 29 ? 700 : 1200;     /* one GSO run, short tail */

			fill(mem[i], len, i + 100u * dir);
			pk[i] = (struct nic_pkt){ .buf = mem[i], .len = len,
						  .peer = dir ? b_a : a_b };
		}
		assert_int_equal(ops->tx(dir ? b : a, pk, 30), 30);
		assert_int_equal(drain(dir ? a : b, g, 32, 30, 2000), 30);
		for (uint32_t i = 0; i < 30; i++) {
			assert_true(g[i].ok);
			assert_int_equal(g[i].seq, i + 100u * dir);
			assert_int_equal(g[i].len, pk[i].len);
			assert_int_equal(g[i].peer, dir ? a_b : b_a);
		}
	}
	assert_true(stats(a).tx_gso_calls > 0);
	ops->close(a);
	ops->close(b);
}

/* A nic on "::" reaches IPv4 peers through v4-mapped addresses, and those
 * packets take their TOS from IP_TOS, not from the IPv6 traffic class: with
 * only IPV6_TCLASS set they went without ECT(0), and marking switches
 * dropped them instead of marking. Also: the socket is dual-stack whatever
 * net.ipv6.bindv6only says. */
static void test_an_ipv4_peer_of_a_dual_stack_nic_gets_ect(void **state)
{
	struct nic_params pa = params("::"), pb = params("127.0.0.1");
	static uint8_t mem[4][1000];
	struct nic_pkt pk[4];
	struct got g[8];
	struct nic *a, *b;
	uint32_t peer;
	int v6only = 1;
	socklen_t l = sizeof(v6only);

	pa.ecn = true;
	if (!open_v6(&pa, &a)) {
		print_message("no IPv6 here; skipped\n");
		skip();
	}
	assert_int_equal(getsockopt(nic_fd(a), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &l), 0);
	assert_int_equal(v6only, 0);
	b = open_nic(&pb);
	peer = add_nic_peer(a, b);
	for (uint32_t i = 0; i < 4; i++) {
		fill(mem[i], 1000, i);
		pk[i] = (struct nic_pkt){ .buf = mem[i], .len = 1000, .peer = peer };
	}
	assert_int_equal(ops->tx(a, pk, 4), 4);
	assert_int_equal(drain(b, g, 8, 4, 2000), 4);
	for (uint32_t i = 0; i < 4; i++) {
		assert_true(g[i].ok);
		assert_int_equal(g[i].seq, i);
		assert_int_equal(g[i].tos, 0x02);
	}
	ops->close(a);
	ops->close(b);
}

/* When the kernel refuses a GSO send (here: segments over the socket's
 * IPv6 MTU), the nic turns GSO off and sends the same packets plainly. */
static void test_refused_gso_falls_back_to_plain_datagrams(void **state)
{
	struct nic_params p = params("::1");
	static uint8_t mem[20][1400];
	struct nic_pkt pk[20];
	struct got g[24];
	struct nic *a, *b;
	uint32_t peer;
	int mtu = 1280;

	if (!open_v6(&p, &a)) {
		print_message("no ::1 here; skipped\n");
		skip();
	}
	b = open_nic(&p);
	peer = add_nic_peer(a, b);
	assert_int_equal(setsockopt(nic_fd(a), IPPROTO_IPV6, IPV6_MTU, &mtu, sizeof(mtu)), 0);
	for (uint32_t i = 0; i < 20; i++) {
		fill(mem[i], 1400, i);
		pk[i] = (struct nic_pkt){ .buf = mem[i], .len = 1400, .peer = peer };
	}
	assert_int_equal(stats(a).tx_gso_refused, 0);
	assert_int_equal(ops->tx(a, pk, 20), 20);
	assert_int_equal(stats(a).tx_gso_calls, 0);
	assert_int_equal(stats(a).tx_gso_refused, 1);     /* said, for ucclctl */
	assert_int_equal(stats(a).tx_errors, 0);
	assert_int_equal(drain(b, g, 24, 20, 2000), 20);
	for (uint32_t i = 0; i < 20; i++) {
		assert_true(g[i].ok);
		assert_int_equal(g[i].seq, i);
		assert_int_equal(g[i].len, 1400);
	}
	assert_int_equal(ops->tx(a, pk, 20), 20);          /* and it stays off */
	assert_int_equal(stats(a).tx_gso_calls, 0);
	assert_int_equal(drain(b, g, 24, 20, 2000), 20);
	ops->close(a);
	ops->close(b);
}

/* One GSO send holds at most 64 segments and 65000 bytes: the kernel
 * refuses more, and a refusal turns GSO off for good (the fallback above),
 * which would go unseen but for the count of GSO sends. So a run of 200
 * equal packets goes as exactly 4 GSO sends (64, 64, 64, 8), 60 of 1400
 * bytes as exactly 2 (46, 14), and GSO is still on for the next batch. */
static void test_gso_sends_stay_within_the_kernels_limits(void **state)
{
	struct nic_params p = params("127.0.0.1");
	static uint8_t mem[200][1400];
	static struct nic_pkt pk[200];
	static struct got g[208];
	static const struct { uint32_t n, len; uint64_t gso; } run[] = {
		{ 200, 100, 4 }, { 60, 1400, 2 }, { 200, 100, 4 },
	};
	struct nic *a, *b;
	uint64_t gso = 0;
	uint32_t peer;

	(void)state;
	a = open_nic(&p);
	b = open_nic(&p);
	peer = add_nic_peer(a, b);
	for (size_t r = 0; r < sizeof(run) / sizeof(run[0]); r++) {
		for (uint32_t i = 0; i < run[r].n; i++) {
			fill(mem[i], run[r].len, i);
			pk[i] = (struct nic_pkt){ .buf = mem[i], .len = run[r].len, .peer = peer };
		}
		assert_int_equal(ops->tx(a, pk, (int)run[r].n), (int)run[r].n);
		gso += run[r].gso;
		assert_int_equal(stats(a).tx_gso_calls, gso);
		assert_int_equal(stats(a).tx_gso_refused, 0);
		assert_int_equal(stats(a).tx_errors, 0);
		assert_int_equal(drain(b, g, 208, run[r].n, 2000), run[r].n);
		for (uint32_t i = 0; i < run[r].n; i++) {
			assert_true(g[i].ok);
			assert_int_equal(g[i].len, run[r].len);
		}
	}
	ops->close(a);
	ops->close(b);
}

/* A full send buffer gives a short count (not an error, not a wait), and
 * the packets before it still go. Loopback frees send buffers at once, so
 * the buffer is made too small on purpose: with the socket's IPv6 MTU at
 * 1280, a 9000-byte datagram is built as fragments that are all charged to
 * a minimal send buffer before any leaves, and the kernel says ENOBUFS. */
static void test_full_send_buffer_gives_short_count(void **state)
{
	struct nic_params p = params("::1");
	static uint8_t mem[4][9000];
	static const uint32_t len[4] = { 1000, 1000, 9000, 1000 };
	struct nic_pkt pk[4];
	struct got g[4];
	struct nic *a, *b;
	uint32_t peer;
	int fd, small = 1, big = 1 << 20, mtu = 1280;
	uint64_t t0;

	p.gso = false;
	p.mtu = 9000;
	if (!open_v6(&p, &a)) {
		print_message("no ::1 here; skipped\n");
		skip();
	}
	b = open_nic(&p);
	peer = add_nic_peer(a, b);
	fd = nic_fd(a);                          /* path 0 sends from the receive socket */
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	assert_int_equal(setsockopt(fd, IPPROTO_IPV6, IPV6_MTU, &mtu, sizeof(mtu)), 0);
	for (uint32_t i = 0; i < 4; i++) {
		fill(mem[i], len[i], i);
		pk[i] = (struct nic_pkt){ .buf = mem[i], .len = len[i], .peer = peer };
	}

	t0 = now_ns();
	assert_int_equal(ops->tx(a, pk, 4), 2);
	assert_int_equal(ops->tx(a, pk + 2, 2), 0);       /* still full: 0, not -ENOBUFS */
	assert_true(now_ns() - t0 < 200 * MS);
	assert_int_equal(stats(a).tx_eagain, 2);
	assert_int_equal(stats(a).tx_errors, 0);
	assert_int_equal(stats(a).tx_pkts, 2);

	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)), 0);
	assert_int_equal(ops->tx(a, pk + 2, 2), 2);       /* room again: the rest goes */
	assert_int_equal(drain(b, g, 4, 4, 2000), 4);
	for (uint32_t i = 0; i < 4; i++) {
		assert_true(g[i].ok);
		assert_int_equal(g[i].seq, i);
		assert_int_equal(g[i].len, len[i]);
	}
	ops->close(a);
	ops->close(b);
}

/* ---- the receive hint ------------------------------------------------------ */

static void send_seq(struct nic *a, uint32_t peer, uint32_t from, int count)
{
	static uint8_t mem[64][200];
	struct nic_pkt pk[64];

	assert_true(count <= 64);
	for (int i = 0; i < count; i++) {
		fill(mem[i], 200, from + (uint32_t)i);
		pk[i] = (struct nic_pkt){ .buf = mem[i], .len = 200, .peer = peer };
	}
	assert_int_equal(ops->tx(a, pk, count), count);
}

/* Empty receives cost no system call; what arrives is taken all the same. */
static void test_hint_skips_empty_receives(void **state)
{
	struct nic_params p = params("127.0.0.1");
	static struct got g[16];
	struct nic_pkt pk[64];
	struct nic *a, *b;
	struct nic_stats st;
	uint32_t peer;

	(void)state;
	a = open_nic(&p);
	b = open_nic(&p);
	st = stats(b);
	assert_int_equal(st.rx_hint, 1);
	assert_int_equal(st.rx_hint_error, 0);
	peer = add_nic_peer(a, b);
	for (int i = 0; i < 100; i++)
		assert_int_equal(ops->rx(b, pk, 64), 0);
	st = stats(b);
	assert_int_equal(st.rx_calls, 0);
	assert_int_equal(st.rx_skipped, 100);

	send_seq(a, peer, 1, 5);
	assert_int_equal(drain(b, g, 16, 5, 2000), 5);
	for (int i = 0; i < 5; i++) {
		assert_true(g[i].ok);
		assert_int_equal(g[i].seq, 1u + (uint32_t)i);
	}
	st = stats(b);
	assert_true(st.rx_calls >= 1);
	for (int i = 0; i < 100; i++)
		assert_int_equal(ops->rx(b, pk, 64), 0);
	/* one more at most: the one that found the socket drained */
	assert_true(stats(b).rx_calls <= st.rx_calls + 1);
	assert_int_equal(stats(b).rx_hint_written_off, 0);
	ops->close(a);
	ops->close(b);
}

/* Datagrams counted by the filter and then dropped by a full receive buffer
 * leave the count ahead for good: receives go on until the difference is
 * written off, then stop, and the next datagram is still taken. */
static void test_hint_writes_off_what_a_full_buffer_dropped(void **state)
{
	struct nic_params p = params("127.0.0.1");
	static struct got g[4096];
	struct nic_pkt pk[64];
	struct nic *a, *b;
	struct nic_stats st;
	uint32_t peer, sent = 0;
	size_t have;

	(void)state;
	p.gro = false;
	p.rcvbuf = 1;                  /* the kernel's minimum: a few datagrams */
	a = open_nic(&p);
	b = open_nic(&p);
	peer = add_nic_peer(a, b);
	for (int i = 0; i < 8; i++, sent += 64)
		send_seq(a, peer, sent, 64);
	have = drain(b, g, 4096, sent, 200);
	assert_true(have > 0 && have < sent);
	/* every call now receives (the count is ahead) until the write-off */
	for (uint32_t i = 0; i < 2 * RXHINT_STUCK_CALLS; i++)
		assert_int_equal(ops->rx(b, pk, 64), 0);
	st = stats(b);
	assert_true(st.rx_hint_written_off > 0);
	assert_true(st.rx_hint_written_off <= sent - have);
	for (int i = 0; i < 100; i++)
		assert_int_equal(ops->rx(b, pk, 64), 0);
	assert_int_equal(stats(b).rx_calls, st.rx_calls);

	send_seq(a, peer, 100000, 1);
	assert_int_equal(drain(b, g, 4096, 1, 2000), 1);
	assert_true(g[0].ok);
	assert_int_equal(g[0].seq, 100000);
	/* the kernel's own drop count came with it: they were drops */
	assert_true(stats(b).rx_overflow > 0);
	ops->close(a);
	ops->close(b);
}

/* Asked for where the kernel refuses it, the hint is off and says why;
 * not asked for, it is off and silent. */
static void test_hint_off_unless_asked(void **state)
{
	struct nic_params p = params("127.0.0.1");
	struct nic *n;

	(void)state;
	p.rx_hint = false;
	n = open_nic(&p);
	assert_int_equal(stats(n).rx_hint, 0);
	assert_int_equal(stats(n).rx_hint_error, 0);
	ops->close(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_rejects_bad_parameters),
		cmocka_unit_test(test_paths_bind_consecutive_ports),
		cmocka_unit_test(test_two_nics_exchange_both_ways),
		cmocka_unit_test(test_unknown_sender_is_reported_with_its_tos),
		cmocka_unit_test(test_gso_bulk_arrives_complete_and_intact),
		cmocka_unit_test(test_without_gso_the_same_data_arrives),
		cmocka_unit_test(test_gathered_packets_arrive_whole),
		cmocka_unit_test(test_mixed_sizes_and_paths),
		cmocka_unit_test(test_small_rx_calls_get_every_segment_in_order),
		cmocka_unit_test(test_a_gro_datagram_in_a_slot_used_before_keeps_its_tos),
		cmocka_unit_test(test_an_ipv4_peer_of_a_dual_stack_nic_gets_ect),
		cmocka_unit_test(test_datagram_over_mtu_is_dropped_and_counted),
		cmocka_unit_test(test_tx_refuses_bad_packets),
		cmocka_unit_test(test_peer_table_add_remove),
		cmocka_unit_test(test_paths_send_from_distinct_ports_of_one_peer),
		cmocka_unit_test(test_any_path_packets_ride_with_their_neighbours),
		cmocka_unit_test(test_any_path_stays_on_sockets_its_peer_knows),
		cmocka_unit_test(test_packets_that_allow_it_share_a_datagram),
		cmocka_unit_test(test_packing_stops_at_its_limits),
		cmocka_unit_test(test_pack_limits_of_every_member_and_the_mtu),
		cmocka_unit_test(test_many_tiny_packets_pack_within_the_iovec_limit),
		cmocka_unit_test(test_an_ack_behind_another_peer_packs_with_its_own),
		cmocka_unit_test(test_flood_never_blocks_and_nothing_arrives_corrupt),
		cmocka_unit_test(test_ipv6_loopback_exchange),
		cmocka_unit_test(test_refused_gso_falls_back_to_plain_datagrams),
		cmocka_unit_test(test_gso_sends_stay_within_the_kernels_limits),
		cmocka_unit_test(test_full_send_buffer_gives_short_count),
		cmocka_unit_test(test_hint_off_unless_asked),
	};
	const struct CMUnitTest hinted[] = {
		cmocka_unit_test(test_hint_skips_empty_receives),
		cmocka_unit_test(test_hint_writes_off_what_a_full_buffer_dropped),
	};
	struct nic_params p;
	struct nic *n = NULL;
	int fails, err;

	use_hint = false;
	fails = cmocka_run_group_tests_name("recvmmsg every call", tests, NULL, NULL);
	/* the hint needs CAP_BPF and Linux 5.5; without them, what the
	 * first group ran is all there is, and the test is a skip */
	use_hint = true;
	p = params("127.0.0.1");
	if (ops->open(&p, &n) < 0)
		return 1;
	err = stats(n).rx_hint ? 0 : stats(n).rx_hint_error;
	ops->close(n);
	if (err) {
		/* a skip, not a pass: half of what this test is for did not run */
		printf("receive hint not available (%s): its runs skipped\n", strerror(err));
		return fails ? fails : 77;
	}
	fails += cmocka_run_group_tests_name("receive hint", tests, NULL, NULL);
	fails += cmocka_run_group_tests_name("receive hint only", hinted, NULL, NULL);
	return fails;
}
