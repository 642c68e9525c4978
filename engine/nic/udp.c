/* SPDX-License-Identifier: MIT */
/*
 * nic/udp: the NIC backend that carries packets as UDP datagrams on any
 * Linux NIC. Path i is a socket bound to base_port + i; socket 0 also
 * receives. Sends are batched with sendmmsg and, when allowed, runs of
 * equal-sized datagrams to one peer on one path go out as one UDP_SEGMENT (GSO)
 * super-datagram; neighbours that allow it (pack_max) share one datagram
 * back to back, so that an ACK and a short reply cost one skb, not two; a
 * packet that may take any path (an ACK) goes on the socket of its
 * neighbour in the batch, so it needs no sendmmsg of its own;
 * receives use recvmmsg and split UDP_GRO super-datagrams back into the
 * sender's datagrams (the engine cuts those into packets), and with the
 * receive hint (rxhint.h) skip the recvmmsg that would find the socket
 * empty. Never blocks, never logs.
 *
 * Peer identification: a datagram from address A, port p belongs to the peer
 * added with address A and base port b where b <= p < b + npaths (npaths of
 * this nic), so packets from any of a peer's first npaths path sockets map
 * to the one id; if ranges of two peers on one address overlap, the larger
 * b wins. A peer with fewer paths than ours knows only our first few
 * sockets (add_peer's paths): nothing to it leaves on another, not even a
 * packet that may take any path. To keep that true with
 * base_port 0, the path sockets take the ports right after the one the kernel
 * picked for socket 0 (retrying with a fresh pick when one is taken).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

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

#define NIC_MAX_PATHS     256u
#define NIC_MIN_MTU       576u
#define NIC_MAX_MTU       9000u
#define NIC_MAX_RX_BATCH  1024u

#define GRO_BUF_SIZE      65536u     /* a GRO super-datagram fits in 64 KiB */
#define GSO_MAX_SEGS      64u
#define GSO_MAX_BYTES     65000u     /* under 64 KiB minus IP and UDP headers */
#define TX_MSGS           128u       /* msghdrs per sendmmsg */
#define TX_IOVS           1024u      /* iovecs per sendmmsg batch (UIO_MAXIOV) */
#define BIND_TRIES        64         /* fresh port picks for a contiguous range */

#define PEER_BUCKETS      1024u      /* power of two */
#define PEER_NIL          UINT32_MAX

/* Addresses are compared as 16 bytes (IPv4 as v4-mapped IPv6) plus the scope
 * of a link-local IPv6 address, so an IPv4 sender seen on a dual-stack
 * socket matches the same peer as one added with AF_INET. */
struct addr_key {
	uint8_t a[16];
	uint32_t scope;
};

struct nic_peer {
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} dst;                           /* where to send, in the nic's family */
	socklen_t dst_len;
	struct addr_key key;
	uint16_t base;                   /* receive port, host order */
	uint32_t paths;                  /* our sockets it knows us by: 0..paths-1 */
	uint32_t next;                   /* hash chain */
	bool used;
};

union tx_cmsg {
	char buf[CMSG_SPACE(sizeof(uint16_t))];
	struct cmsghdr align;
};

union rx_cmsg {
	char buf[128];                   /* UDP_GRO int, IP_TOS/IPV6_TCLASS, SO_RXQ_OVFL; with room */
	struct cmsghdr align;
};

/* One received datagram after parsing: how to hand it out. */
struct rx_slot {
	uint32_t len;
	uint32_t seg;                    /* GRO segment size, 0 if a single datagram */
	uint32_t peer;
	uint8_t tos;
	bool drop;
};

struct nic {
	int family;
	uint32_t npaths, mtu, rx_batch;
	bool gso, gro;
	bool pack;                       /* nic_params.pack */
	int *fds;                        /* npaths; fds[0] also receives */

	struct nic_peer *peers;
	uint32_t peer_cap;
	uint32_t buckets[PEER_BUCKETS];

	struct mmsghdr tx_msgs[TX_MSGS];
	struct iovec tx_iov[TX_IOVS];
	union tx_cmsg tx_cmsg[TX_MSGS];
	uint32_t tx_first[TX_MSGS];      /* index of the msg's first packet in the tx call */
	uint32_t tx_npkts[TX_MSGS];
	uint32_t tx_ndgrams[TX_MSGS];    /* datagrams the msg carries (GSO segments) */
	uint64_t tx_nbytes[TX_MSGS];

	uint8_t *rx_buf;
	size_t rx_buf_size;              /* per slot */
	struct mmsghdr *rx_msgs;
	struct iovec *rx_iov;
	struct sockaddr_storage *rx_addr;
	union rx_cmsg *rx_cmsg;
	struct rx_slot *rx_slot;
	uint32_t rx_nmsgs, rx_cur, rx_off;   /* datagrams not yet fully handed out */
	uint32_t rx_dirty;               /* rx_msgs the kernel may have written since their reset */
	struct rxhint *hint;             /* NULL: every receive is a recvmmsg */
	struct rxhint_acct hint_acct;

	struct nic_stats st;
	uint32_t rx_drops_seen;          /* the last SO_RXQ_OVFL count */
};

/* ---- addresses and the peer table ---------------------------------------- */

static int addr_key_of(const struct sockaddr *sa, socklen_t len, struct addr_key *k, uint16_t *port)
{
	memset(k, 0, sizeof(*k));
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		k->a[10] = 0xff;
		k->a[11] = 0xff;
		memcpy(&k->a[12], &in->sin_addr, 4);
		*port = ntohs(in->sin_port);
		return 0;
	}
	if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		memcpy(k->a, &in6->sin6_addr, 16);
		/* only link-local addresses are ambiguous without their interface */
		if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr))
			k->scope = in6->sin6_scope_id;
		*port = ntohs(in6->sin6_port);
		return 0;
	}
	if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)
		return -EINVAL;
	return -EAFNOSUPPORT;
}

static bool key_is_v4(const struct addr_key *k)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(k->a, prefix, sizeof(prefix)) == 0;
}

static uint32_t key_hash(const struct addr_key *k)
{
	uint32_t h = 2166136261u;        /* FNV-1a */

	for (size_t i = 0; i < sizeof(k->a); i++)
		h = (h ^ k->a[i]) * 16777619u;
	for (int i = 0; i < 4; i++)
		h = (h ^ ((k->scope >> (8 * i)) & 0xff)) * 16777619u;
	return h & (PEER_BUCKETS - 1);
}

static bool key_eq(const struct addr_key *x, const struct addr_key *y)
{
	return memcmp(x->a, y->a, sizeof(x->a)) == 0 && x->scope == y->scope;
}

static uint32_t peer_lookup(const struct nic *n, const struct sockaddr *sa, socklen_t len)
{
	struct addr_key k;
	uint16_t port;
	uint32_t best = NIC_PEER_UNKNOWN;

	if (addr_key_of(sa, len, &k, &port) < 0)
		return NIC_PEER_UNKNOWN;
	for (uint32_t i = n->buckets[key_hash(&k)]; i != PEER_NIL; i = n->peers[i].next) {
		const struct nic_peer *pe = &n->peers[i];

		if (!key_eq(&pe->key, &k) || port < pe->base ||
		    (uint32_t)(port - pe->base) >= n->npaths)
			continue;
		if (best == NIC_PEER_UNKNOWN || pe->base > n->peers[best].base)
			best = i;
	}
	return best;
}

static int udp_add_peer(struct nic *n, const struct sockaddr *addr, socklen_t len, uint32_t paths,
			uint32_t *peer)
{
	struct addr_key k;
	uint16_t port;
	uint32_t id, h;
	struct nic_peer *pe;
	int r;

	if (!n || !addr || !peer)
		return -EINVAL;
	r = addr_key_of(addr, len, &k, &port);
	if (r < 0)
		return r;
	if (port == 0)
		return -EINVAL;
	if (n->family == AF_INET && !key_is_v4(&k))
		return -EAFNOSUPPORT;
	h = key_hash(&k);
	for (uint32_t i = n->buckets[h]; i != PEER_NIL; i = n->peers[i].next)
		if (key_eq(&n->peers[i].key, &k) && n->peers[i].base == port)
			return -EEXIST;

	for (id = 0; id < n->peer_cap && n->peers[id].used; id++)
		;
	if (id == n->peer_cap) {
		uint32_t cap = n->peer_cap ? n->peer_cap * 2 : 16;
		struct nic_peer *np;

		if (n->peer_cap >= NIC_MAX_PEERS)
			return -ENOSPC;
		if (cap > NIC_MAX_PEERS)
			cap = NIC_MAX_PEERS;
		np = realloc(n->peers, cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		memset(np + n->peer_cap, 0, (cap - n->peer_cap) * sizeof(*np));
		n->peers = np;
		n->peer_cap = cap;
	}

	pe = &n->peers[id];
	memset(pe, 0, sizeof(*pe));
	pe->key = k;
	pe->base = port;
	pe->paths = paths && paths < n->npaths ? paths : n->npaths;
	if (n->family == AF_INET) {
		pe->dst.in.sin_family = AF_INET;
		pe->dst.in.sin_port = htons(port);
		memcpy(&pe->dst.in.sin_addr, &k.a[12], 4);
		pe->dst_len = sizeof(pe->dst.in);
	} else {
		/* an IPv4 peer is reached through its v4-mapped address
		 * (needs a dual-stack socket, i.e. bind_addr "::") */
		pe->dst.in6.sin6_family = AF_INET6;
		pe->dst.in6.sin6_port = htons(port);
		memcpy(&pe->dst.in6.sin6_addr, k.a, 16);
		pe->dst.in6.sin6_scope_id = k.scope;
		pe->dst_len = sizeof(pe->dst.in6);
	}
	pe->used = true;
	pe->next = n->buckets[h];
	n->buckets[h] = id;
	*peer = id;
	return 0;
}

static int udp_remove_peer(struct nic *n, uint32_t peer)
{
	uint32_t *link;

	if (!n || peer >= n->peer_cap || !n->peers[peer].used)
		return -ENOENT;
	for (link = &n->buckets[key_hash(&n->peers[peer].key)]; *link != peer;
	     link = &n->peers[*link].next)
		;
	*link = n->peers[peer].next;
	memset(&n->peers[peer], 0, sizeof(n->peers[peer]));
	/* segments still waiting in rx must not carry an id that may be reused */
	for (uint32_t i = n->rx_cur; i < n->rx_nmsgs; i++)
		if (n->rx_slot[i].peer == peer)
			n->rx_slot[i].peer = NIC_PEER_UNKNOWN;
	return 0;
}

/* ---- open / close -------------------------------------------------------- */

static void close_fds(int *fds, uint32_t count)
{
	for (uint32_t i = 0; i < count; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

static int bind_port(int fd, int family, const void *addr, uint16_t port)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} u;
	socklen_t len;

	memset(&u, 0, sizeof(u));
	if (family == AF_INET) {
		u.in.sin_family = AF_INET;
		u.in.sin_port = htons(port);
		memcpy(&u.in.sin_addr, addr, 4);
		len = sizeof(u.in);
	} else {
		u.in6.sin6_family = AF_INET6;
		u.in6.sin6_port = htons(port);
		memcpy(&u.in6.sin6_addr, addr, 16);
		len = sizeof(u.in6);
	}
	return bind(fd, &u.sa, len) < 0 ? -errno : 0;
}

static int bound_port(int fd, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	if (ss.ss_family == AF_INET)
		*port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	else
		*port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

/* Sockets for paths 0..npaths-1 on consecutive ports from base (or from
 * whatever the kernel picks for socket 0 when base is 0). With hint, the
 * receive socket's counting filter goes on before it is bound, so that no
 * datagram is queued uncounted; a filter the kernel refuses leaves the hint
 * off (n->st.rx_hint_error), not the socket. */
static int open_sockets(struct nic *n, const void *addr, uint16_t base, bool hint)
{
	int r = -EADDRINUSE;

	for (int attempt = 0; attempt < (base ? 1 : BIND_TRIES); attempt++) {
		uint16_t port0 = base;
		uint32_t i;

		for (i = 0; i < n->npaths; i++) {
			n->fds[i] = socket(n->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (n->fds[i] < 0) {
				r = -errno;
				goto out_close;
			}
			/* "::" takes IPv4 peers too (as v4-mapped), whatever
			 * net.ipv6.bindv6only says: with it set, their sends
			 * failed with ENETUNREACH */
			if (n->family == AF_INET6) {
				int no = 0;

				(void)setsockopt(n->fds[i], IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof(no));
			}
			if (i == 0 && hint) {
				int e;

				rxhint_free(n->hint);    /* a retry's new socket gets a new one */
				n->hint = NULL;
				e = rxhint_attach(n->fds[0], &n->hint);
				n->st.rx_hint = e == 0;
				n->st.rx_hint_error = e < 0 ? -e : 0;
			}
			if (i > 0 && (uint32_t)port0 + i > 65535u) {
				r = -EADDRINUSE;
				break;
			}
			r = bind_port(n->fds[i], n->family, addr, i == 0 ? base : (uint16_t)(port0 + i));
			if (r < 0)
				break;
			if (i == 0 && base == 0) {
				r = bound_port(n->fds[0], &port0);
				if (r < 0)
					goto out_close;
			}
		}
		if (i == n->npaths)
			return 0;
		close_fds(n->fds, n->npaths);
		if (r != -EADDRINUSE)
			return r;
	}
	return r;

out_close:
	close_fds(n->fds, n->npaths);
	return r;
}

/* The *FORCE variants pass rmem_max/wmem_max when privileged; otherwise the
 * plain option applies the usual clamp. */
static void set_buf(int fd, int force_opt, int opt, uint32_t bytes)
{
	int v = bytes > INT_MAX ? INT_MAX : (int)bytes;

	if (bytes == 0)
		return;
	if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) == 0)
		return;
	(void)setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

/* What SO_RCVBUF came to: the kernel reports twice the usable size (its
 * bookkeeping overhead); 0 if it cannot be read. */
static uint64_t got_buf(int fd)
{
	int v = 0;
	socklen_t l = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &l) < 0 || v < 0)
		return 0;
	return (uint64_t)v / 2;
}

static void setup_sockets(struct nic *n, const struct nic_params *p)
{
	int one = 1, tiny = 1;
	int rx = n->fds[0];

	for (uint32_t i = 0; i < n->npaths; i++)
		set_buf(n->fds[i], SO_SNDBUFFORCE, SO_SNDBUF, p->sndbuf);
	/* nothing reads paths 1.., so whatever strays there may only take the minimum */
	for (uint32_t i = 1; i < n->npaths; i++)
		(void)setsockopt(n->fds[i], SOL_SOCKET, SO_RCVBUF, &tiny, sizeof(tiny));
	set_buf(rx, SO_RCVBUFFORCE, SO_RCVBUF, p->rcvbuf);
	n->st.rcvbuf_bytes = got_buf(rx);
	/* the kernel's count of what it dropped here comes with each datagram */
	(void)setsockopt(rx, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));

	/* ECT(0) on what we send, so that marking switches mark rather than
	 * drop; best effort, like reading the TOS back */
	if (p->ecn) {
		int ect = 0x02;

		/* an AF_INET6 socket's IPv4 (v4-mapped) packets take IP_TOS */
		for (uint32_t i = 0; i < n->npaths; i++) {
			if (n->family == AF_INET6)
				(void)setsockopt(n->fds[i], IPPROTO_IPV6, IPV6_TCLASS, &ect, sizeof(ect));
			(void)setsockopt(n->fds[i], IPPROTO_IP, IP_TOS, &ect, sizeof(ect));
		}
	}
	/* TOS (for ECN) is best effort: without it rx reports 0 */
	(void)setsockopt(rx, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
	if (n->family == AF_INET6)
		(void)setsockopt(rx, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one));

	if (n->gro && setsockopt(rx, SOL_UDP, UDP_GRO, &one, sizeof(one)) < 0)
		n->gro = false;
}

static int alloc_rx(struct nic *n)
{
	uint32_t b = n->rx_batch;

	n->rx_buf_size = n->gro ? GRO_BUF_SIZE : n->mtu;
	n->rx_buf = malloc(n->rx_buf_size * b);
	n->rx_msgs = calloc(b, sizeof(*n->rx_msgs));
	n->rx_iov = calloc(b, sizeof(*n->rx_iov));
	n->rx_addr = calloc(b, sizeof(*n->rx_addr));
	n->rx_cmsg = calloc(b, sizeof(*n->rx_cmsg));
	n->rx_slot = calloc(b, sizeof(*n->rx_slot));
	if (!n->rx_buf || !n->rx_msgs || !n->rx_iov || !n->rx_addr || !n->rx_cmsg || !n->rx_slot)
		return -ENOMEM;
	for (uint32_t i = 0; i < b; i++) {
		n->rx_iov[i].iov_base = n->rx_buf + (size_t)i * n->rx_buf_size;
		n->rx_iov[i].iov_len = n->rx_buf_size;
		n->rx_msgs[i].msg_hdr.msg_iov = &n->rx_iov[i];
		n->rx_msgs[i].msg_hdr.msg_iovlen = 1;
		n->rx_msgs[i].msg_hdr.msg_name = &n->rx_addr[i];
		n->rx_msgs[i].msg_hdr.msg_control = n->rx_cmsg[i].buf;
	}
	n->rx_dirty = b;                 /* receive() sets the lengths */
	return 0;
}

static void free_rx(struct nic *n)
{
	free(n->rx_buf);
	free(n->rx_msgs);
	free(n->rx_iov);
	free(n->rx_addr);
	free(n->rx_cmsg);
	free(n->rx_slot);
}

static void udp_close(struct nic *n)
{
	if (!n)
		return;
	close_fds(n->fds, n->npaths);
	free(n->fds);
	free_rx(n);
	rxhint_free(n->hint);
	free(n->peers);
	free(n);
}

static int udp_open(const struct nic_params *p, struct nic **out)
{
	uint8_t addr[16];
	struct nic *n;
	int family, r;

	if (!p || !out || !p->bind_addr)
		return -EINVAL;
	if (p->npaths < 1 || p->npaths > NIC_MAX_PATHS || p->mtu < NIC_MIN_MTU ||
	    p->mtu > NIC_MAX_MTU || p->rx_batch < 1 || p->rx_batch > NIC_MAX_RX_BATCH)
		return -EINVAL;
	if (p->base_port && (uint32_t)p->base_port + p->npaths - 1 > 65535u)
		return -EINVAL;
	if (inet_pton(AF_INET, p->bind_addr, addr) == 1)
		family = AF_INET;
	else if (inet_pton(AF_INET6, p->bind_addr, addr) == 1)
		family = AF_INET6;
	else
		return -EINVAL;

	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->family = family;
	n->npaths = p->npaths;
	n->mtu = p->mtu;
	n->rx_batch = p->rx_batch;
	n->gso = p->gso;
	n->gro = p->gro;
	n->pack = p->pack;
	for (uint32_t i = 0; i < PEER_BUCKETS; i++)
		n->buckets[i] = PEER_NIL;
	n->fds = malloc(n->npaths * sizeof(*n->fds));
	if (!n->fds) {
		r = -ENOMEM;
		goto out_free;
	}
	for (uint32_t i = 0; i < n->npaths; i++)
		n->fds[i] = -1;

	/* the hint is best effort: without it receives are system calls */
	r = open_sockets(n, addr, p->base_port, p->rx_hint);
	if (r < 0)
		goto out_fds;
	setup_sockets(n, p);
	r = alloc_rx(n);
	if (r < 0)
		goto out_rx;
	*out = n;
	return 0;

out_rx:
	free_rx(n);
	close_fds(n->fds, n->npaths);
out_fds:
	rxhint_free(n->hint);
	free(n->fds);
out_free:
	free(n);
	return r;
}

static int udp_local_addr(struct nic *n, struct sockaddr_storage *ss, socklen_t *len)
{
	socklen_t l = sizeof(*ss);

	if (!n || !ss || !len)
		return -EINVAL;
	if (getsockname(n->fds[0], (struct sockaddr *)ss, &l) < 0)
		return -errno;
	*len = l;
	return 0;
}

/* ---- tx ------------------------------------------------------------------ */

static int pkt_check(const struct nic *n, const struct nic_pkt *p)
{
	if (p->peer >= n->peer_cap || !n->peers[p->peer].used)
		return -ENOENT;
	if (p->len > n->mtu)
		return -EMSGSIZE;
	if (!p->buf && p->len)
		return -EINVAL;
	if (p->payload && p->hdr_len > p->len)
		return -EINVAL;
	return 0;
}

/* iovecs a packet takes: its header and, gathered, its payload */
static uint32_t pkt_iovs(const struct nic_pkt *p)
{
	return p->payload ? 2 : 1;
}

/* Whether packet q may leave on socket sock (an index into fds): its own
 * path's socket, or, if it may take any path, any its peer knows us by. */
static bool sock_serves(const struct nic *n, const struct nic_pkt *q, uint32_t sock)
{
	if (q->any_path)
		return q->peer < n->peer_cap && sock < n->peers[q->peer].paths;
	return q->path % n->npaths == sock;
}

/* Whether q may follow, in one send on sock, a packet to peer: zero-length
 * packets never join (they would vanish inside a datagram), and packets
 * that fail pkt_check never join. */
static bool may_join(const struct nic *n, const struct nic_pkt *q, uint32_t peer, uint32_t sock)
{
	return q->peer == peer && q->len > 0 && sock_serves(n, q, sock) && pkt_check(n, q) == 0;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* How long a datagram that starts with p may grow: the smaller of its
 * pack_max and the mtu; 0 if it may not share (or packing is off). */
static uint32_t pack_limit(const struct nic *n, const struct nic_pkt *p)
{
	return n->pack && p->len ? min_u32(p->pack_max, n->mtu) : 0;
}

/* Whether q fits behind total bytes of a datagram that may grow to max:
 * the one size rule of packing, for dgram_len and pkt_sock. */
static bool pack_fits(uint32_t total, uint32_t max, const struct nic_pkt *q)
{
	return total + q->len <= min_u32(max, q->pack_max);
}

/* One datagram from pkts[i] on socket sock: how many packets it carries
 * back to back (more than one only where each allows it, pack_max, and
 * the total fits every member's pack_max and the mtu), within iov_left
 * iovecs; its bytes and iovecs in *bytes and *iovs. */
static uint32_t dgram_len(const struct nic *n, const struct nic_pkt *pkts, int i, int count,
			  uint32_t sock, uint32_t iov_left, uint32_t *bytes, uint32_t *iovs)
{
	const struct nic_pkt *f = &pkts[i];
	uint32_t k = 1, total = f->len, v = pkt_iovs(f), max = pack_limit(n, f);

	while (i + (int)k < count) {
		const struct nic_pkt *q = &pkts[i + k];

		if (!pack_fits(total, max, q) || v + pkt_iovs(q) > iov_left ||
		    !may_join(n, q, f->peer, sock))
			break;
		max = min_u32(max, q->pack_max);
		total += q->len;
		v += pkt_iovs(q);
		k++;
	}
	*bytes = total;
	*iovs = v;
	return k;
}

/* One send from pkts[i] on socket sock: how many packets it takes, in
 * *ndgrams datagrams of *seg bytes (the last may be shorter). With GSO,
 * datagrams to the same peer that sock serves join while they are as long
 * as the first; a shorter one ends the run. */
static uint32_t group_len(const struct nic *n, const struct nic_pkt *pkts, int i, int count,
			  uint32_t sock, uint32_t iov_left, uint32_t *seg, uint32_t *ndgrams)
{
	uint32_t first, iovs, k = dgram_len(n, pkts, i, count, sock, iov_left, &first, &iovs);
	uint32_t total = first, nd = 1;

	while (n->gso && first > 0 && nd < GSO_MAX_SEGS && i + (int)k < count) {
		const struct nic_pkt *q = &pkts[i + k];
		uint32_t qk, qb, qv;

		if (iovs + pkt_iovs(q) > iov_left || !may_join(n, q, pkts[i].peer, sock))
			break;
		qk = dgram_len(n, pkts, i + (int)k, count, sock, iov_left - iovs, &qb, &qv);
		if (qb > first || total + qb > GSO_MAX_BYTES)
			break;
		total += qb;
		iovs += qv;
		k += qk;
		nd++;
		if (qb < first)
			break;
	}
	*seg = first;
	*ndgrams = nd;
	return k;
}

/* Message m from packets [i, i + k) in nd datagrams of seg bytes, its
 * iovecs from iov0 on; the number of iovecs it took. */
static uint32_t add_msg(struct nic *n, uint32_t m, uint32_t iov0, const struct nic_pkt *pkts,
			int i, uint32_t k, uint32_t seg, uint32_t nd)
{
	struct msghdr *h = &n->tx_msgs[m].msg_hdr;
	const struct nic_peer *pe = &n->peers[pkts[i].peer];
	uint64_t bytes = 0;
	uint32_t v = iov0;

	for (uint32_t j = 0; j < k; j++) {
		const struct nic_pkt *p = &pkts[i + j];

		if (p->payload) {
			/* header from our buffer, payload where it lies: the
			 * kernel's copy is the only one */
			n->tx_iov[v].iov_base = p->buf;
			n->tx_iov[v++].iov_len = p->hdr_len;
			n->tx_iov[v].iov_base = (void *)p->payload;
			n->tx_iov[v++].iov_len = p->len - p->hdr_len;
		} else {
			n->tx_iov[v].iov_base = p->buf;
			n->tx_iov[v++].iov_len = p->len;
		}
		bytes += p->len;
	}
	memset(h, 0, sizeof(*h));
	h->msg_name = (void *)&pe->dst;
	h->msg_namelen = pe->dst_len;
	h->msg_iov = &n->tx_iov[iov0];
	h->msg_iovlen = v - iov0;
	if (nd > 1) {
		struct cmsghdr *c;
		uint16_t seg16 = (uint16_t)seg;

		h->msg_control = n->tx_cmsg[m].buf;
		h->msg_controllen = sizeof(n->tx_cmsg[m].buf);
		c = CMSG_FIRSTHDR(h);
		c->cmsg_level = SOL_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(seg16));
		memcpy(CMSG_DATA(c), &seg16, sizeof(seg16));
	}
	n->tx_first[m] = (uint32_t)i;
	n->tx_npkts[m] = k;
	n->tx_ndgrams[m] = nd;
	n->tx_nbytes[m] = bytes;
	return v - iov0;
}

enum batch_result { BATCH_SENT, BATCH_FULL, BATCH_NO_GSO, BATCH_ERROR };

/* Hands msgs [0, nmsgs) to the kernel. On anything but BATCH_SENT, *failed
 * is the first message not sent and *err its errno (negative). */
static enum batch_result send_batch(struct nic *n, int fd, uint32_t nmsgs, int *sent,
				    uint32_t *failed, int *err)
{
	uint32_t j = 0;

	while (j < nmsgs) {
		int r = sendmmsg(fd, &n->tx_msgs[j], nmsgs - j, MSG_DONTWAIT);

		n->st.tx_calls++;
		if (r > 0) {
			for (uint32_t m = j; m < j + (uint32_t)r; m++) {
				*sent += (int)n->tx_npkts[m];
				n->st.tx_pkts += n->tx_npkts[m];
				n->st.tx_dgrams += n->tx_ndgrams[m];
				n->st.tx_bytes += n->tx_nbytes[m];
				if (n->tx_ndgrams[m] > 1)   /* super-datagrams, not syscalls */
					n->st.tx_gso_calls++;
			}
			j += (uint32_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		*failed = j;
		*err = r < 0 ? -errno : -EIO;
		if (*err == -EAGAIN || *err == -EWOULDBLOCK || *err == -ENOBUFS) {
			n->st.tx_eagain++;
			return BATCH_FULL;
		}
		/* GSO refused (no checksum offload, segment over the path
		 * MTU, too large): off for this nic; the group goes plainly.
		 * A packed datagram is no longer than the longest single
		 * packet may be (pack_max is the channel's mtu), so packing
		 * stays on: whatever refuses it refuses that packet too. */
		if (n->tx_ndgrams[j] > 1 &&
		    (*err == -EMSGSIZE || *err == -EIO || *err == -EINVAL)) {
			n->gso = false;
			n->st.tx_gso_refused = 1;
			return BATCH_NO_GSO;
		}
		n->st.tx_errors++;
		return BATCH_ERROR;
	}
	return BATCH_SENT;
}

/* The socket (an index into fds) packet i goes out on: its path's. One
 * that may take any path joins the batch being built on sock (>= 0), or
 * else takes the socket of the next packet that may not, so that an ACK
 * does not cost a system call of its own; but one that can share a
 * datagram with the packet right after it goes where that one goes (a
 * datagram saved is worth the system call: an ACK behind another
 * channel's packets still rides with its own reply). Either only on a
 * socket its peer knows us by. */
static int pkt_sock(const struct nic *n, const struct nic_pkt *pkts, int i, int count, int sock)
{
	const struct nic_pkt *p = &pkts[i];

	if (p->any_path) {
		const struct nic_pkt *q = &pkts[i + 1];
		bool packs = i + 1 < count && q->peer == p->peer && q->len > 0 &&
			     pack_fits(p->len, pack_limit(n, p), q);

		if (sock >= 0 && !packs && sock_serves(n, p, (uint32_t)sock))
			return sock;
		for (int j = i + 1; j < count && j < i + (int)TX_MSGS; j++) {
			if (pkts[j].any_path)
				continue;
			if (sock_serves(n, p, pkts[j].path % n->npaths))
				return (int)(pkts[j].path % n->npaths);
			break;
		}
		return (int)(p->path % n->peers[p->peer].paths);   /* pkt_check: a peer */
	}
	return (int)(p->path % n->npaths);
}

static int udp_tx(struct nic *n, const struct nic_pkt *pkts, int count)
{
	int sent = 0, i = 0, stop = 0;

	if (!n || count < 0 || (count > 0 && !pkts))
		return -EINVAL;
	while (i < count && !stop) {
		uint32_t nmsgs = 0, niov = 0, failed = 0;
		int sock = -1, err = 0;

		while (i < count && nmsgs < TX_MSGS && niov + pkt_iovs(&pkts[i]) <= TX_IOVS) {
			const struct nic_pkt *p = &pkts[i];
			uint32_t k, seg, nd;
			int r = pkt_check(n, p), ps;

			if (r < 0) {
				stop = r;
				break;
			}
			ps = pkt_sock(n, pkts, i, count, nmsgs ? sock : -1);
			if (nmsgs && ps != sock)
				break;
			sock = ps;
			k = group_len(n, pkts, i, count, (uint32_t)sock, TX_IOVS - niov, &seg, &nd);
			niov += add_msg(n, nmsgs, niov, pkts, i, k, seg, nd);
			nmsgs++;
			i += (int)k;
		}
		if (nmsgs == 0)
			break;
		switch (send_batch(n, n->fds[sock], nmsgs, &sent, &failed, &err)) {
		case BATCH_SENT:
			break;
		case BATCH_FULL:
			return sent;
		case BATCH_NO_GSO:
			i = (int)n->tx_first[failed];
			stop = 0;            /* a bad packet further on is met again */
			break;
		case BATCH_ERROR:
			return sent ? sent : err;
		}
	}
	return sent ? sent : stop;
}

/* ---- rx ------------------------------------------------------------------ */

static void parse_cmsgs(struct nic *n, struct msghdr *h, struct rx_slot *s)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
		uint32_t drops;
		int v;

		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO &&
		    c->cmsg_len >= CMSG_LEN(sizeof(int))) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			s->seg = v > 0 ? (uint32_t)v : 0;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS &&
			   c->cmsg_len >= CMSG_LEN(1)) {
			s->tos = *(const uint8_t *)CMSG_DATA(c);
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS &&
			   c->cmsg_len >= CMSG_LEN(sizeof(int))) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			s->tos = (uint8_t)v;
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL &&
			   c->cmsg_len >= CMSG_LEN(sizeof(drops))) {
			/* the socket's drops since it opened, a 32-bit count
			 * that may wrap; a datagram queued before a later one
			 * may carry an older count */
			memcpy(&drops, CMSG_DATA(c), sizeof(drops));
			if ((int32_t)(drops - n->rx_drops_seen) > 0) {
				n->st.rx_overflow += drops - n->rx_drops_seen;
				n->rx_drops_seen = drops;
			}
		}
	}
}

static int receive(struct nic *n, uint32_t want)
{
	int r;

	if (n->hint && !rxhint_due(&n->hint_acct, rxhint_count(n->hint)))
		return 0;              /* nothing was queued: no system call */
	/* only the headers the last call filled need their lengths back: an
	 * engine that polls an empty socket would otherwise redo all of them
	 * on every pass */
	for (uint32_t i = 0; i < n->rx_dirty; i++) {
		struct msghdr *h = &n->rx_msgs[i].msg_hdr;

		h->msg_namelen = sizeof(n->rx_addr[i]);
		h->msg_controllen = sizeof(n->rx_cmsg[i].buf);
		h->msg_flags = 0;
	}
	do {
		r = recvmmsg(n->fds[0], n->rx_msgs, want, MSG_DONTWAIT, NULL);
		n->st.rx_calls++;
	} while (r < 0 && errno == EINTR);
	/* the kernel writes the headers of what it received; the one after,
	 * where it stopped, counts too in case it wrote that one as well */
	n->rx_dirty = r > 0 ? (uint32_t)r + 1 : 1;
	if (n->rx_dirty > want)
		n->rx_dirty = want;
	if (n->hint)
		rxhint_took(&n->hint_acct, r > 0 ? (uint32_t)r : 0, r < (int)want);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;

	for (int i = 0; i < r; i++) {
		struct msghdr *h = &n->rx_msgs[i].msg_hdr;
		struct rx_slot *s = &n->rx_slot[i];

		memset(s, 0, sizeof(*s));
		s->len = n->rx_msgs[i].msg_len;
		parse_cmsgs(n, h, s);
		if (s->seg >= s->len)
			s->seg = 0;          /* one segment: an ordinary datagram */
		if ((h->msg_flags & MSG_TRUNC) || (s->seg ? s->seg : s->len) > n->mtu) {
			s->drop = true;
			n->st.rx_truncated += s->seg ? (s->len + s->seg - 1) / s->seg : 1;
			continue;
		}
		s->peer = peer_lookup(n, h->msg_name, h->msg_namelen);
	}
	n->rx_nmsgs = (uint32_t)r;
	n->rx_cur = 0;
	n->rx_off = 0;
	return r;
}

/* Hands out what is left of the last recvmmsg, segment by segment. */
static int emit(struct nic *n, struct nic_pkt *pkts, int max)
{
	int got = 0;

	while (got < max && n->rx_cur < n->rx_nmsgs) {
		const struct rx_slot *s = &n->rx_slot[n->rx_cur];
		uint8_t *base = n->rx_buf + (size_t)n->rx_cur * n->rx_buf_size;
		uint32_t len;

		if (s->drop) {
			n->rx_cur++;
			continue;
		}
		len = s->len - n->rx_off;
		if (s->seg && len > s->seg)
			len = s->seg;
		pkts[got++] = (struct nic_pkt){
			.buf = base + n->rx_off,
			.len = len,
			.path = 0,
			.peer = s->peer,
			.tos = s->tos,
		};
		n->st.rx_pkts++;
		n->st.rx_bytes += len;
		if (s->seg)
			n->st.rx_gro_segs++;
		if (s->peer == NIC_PEER_UNKNOWN)
			n->st.rx_unknown_peer++;
		n->rx_off += len;
		if (n->rx_off >= s->len) {   /* also moves past an empty datagram */
			n->rx_cur++;
			n->rx_off = 0;
		}
	}
	return got;
}

static int udp_rx(struct nic *n, struct nic_pkt *pkts, int max)
{
	int got, r;

	if (!n || max < 0 || (max > 0 && !pkts))
		return -EINVAL;
	/* leftovers first; a new recvmmsg would overwrite the buffers they
	 * point into, so it waits for the next call */
	got = emit(n, pkts, max);
	if (got > 0 || max == 0)
		return got;
	r = receive(n, (uint32_t)max < n->rx_batch ? (uint32_t)max : n->rx_batch);
	if (r <= 0)
		return r;
	return emit(n, pkts, max);
}

/* ---- the rest ------------------------------------------------------------ */

static int udp_wait_fds(struct nic *n, int *fds, int max)
{
	if (!n || !fds || max < 1)
		return -EINVAL;
	fds[0] = n->fds[0];
	return 1;
}

static void udp_get_stats(struct nic *n, struct nic_stats *out)
{
	if (!out)
		return;
	if (!n) {
		memset(out, 0, sizeof(*out));
		return;
	}
	*out = n->st;
	out->rx_skipped = n->hint_acct.skipped;
	out->rx_hint_written_off = n->hint_acct.written_off;
}

const struct nic_ops nic_udp_ops = {
	.name        = "udp",
	.open        = udp_open,
	.close       = udp_close,
	.local_addr  = udp_local_addr,
	.add_peer    = udp_add_peer,
	.remove_peer = udp_remove_peer,
	.tx          = udp_tx,
	.rx          = udp_rx,
	.wait_fds    = udp_wait_fds,
	.get_stats   = udp_get_stats,
};
