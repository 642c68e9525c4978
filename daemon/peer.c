/* SPDX-License-Identifier: MIT */
/*
 * peer: control connections to the daemons of other hosts (see peer.h and
 * docs/peer-protocol.md). One struct peer per configured peer, one struct
 * pconn per TCP connection. A connection is dialed (or accepted and then
 * identified by its hello), becomes the peer's connection when both hellos
 * have crossed, and ends through pconn_close() only, which logs why, tells
 * the peer, and frees the connection later from a timer, never inside a
 * callback that still uses it. What travels on an up connection besides
 * keepalives (lookups, connects) is daemon/peer_req.c's.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "daemon/log.h"
#include "daemon/peer.h"
#include "daemon/peer_int.h"
#include "engine/wire.h"
#include "proto/peerframe.h"

_Static_assert(PEER_WIRE_VERSION == WIRE_VERSION, "hello's wire_version must be the data plane's");

#define BACKOFF_MIN_MS     200u
#define BACKOFF_MAX_MS     5000u
#define STABLE_MS          1000u       /* up this long: the next dial waits the least again */
#define LINGER_MS          1000u        /* a closing connection gets this long to flush */
#define OUT_MAX            (1u << 20)   /* bytes queued to a peer that does not read */
#define MAX_LINGERING      16u          /* closing connections waiting for their Error to leave */
/* every connection at once: identified, unidentified, lingering, and those
 * closed in this loop iteration and freed in the next */
#define MAX_CONNS_HARD     (PEER_MAX_CONNS + 2 * PEER_MAX_UNIDENTIFIED + MAX_LINGERING + 64u)
#define RATELOG_MS         60000u
#define LISTEN_BACKLOG     16

static void pconn_close_ex(struct pconn *c, const char *reason, const char *tell, int send_code);
static void peer_schedule_retry(struct peer *p);

/* ---- small helpers -------------------------------------------------------- */

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t now_ms(void)
{
	return now_us() / 1000;
}

/* xorshift64*, for backoff jitter only (tokens come from getrandom). */
static uint32_t rnd32(struct peermgr *pm)
{
	pm->rng ^= pm->rng >> 12;
	pm->rng ^= pm->rng << 25;
	pm->rng ^= pm->rng >> 27;
	return (uint32_t)((pm->rng * UINT64_C(2685821657736338717)) >> 32);
}

/* A fresh non-zero token. -EAGAIN before the kernel's pool is ready. */
static int new_token(uint64_t *t)
{
	do {
		ssize_t n = getrandom(t, sizeof(*t), GRND_NONBLOCK);

		if (n < 0)
			return -errno;
		if (n != sizeof(*t))
			return -EAGAIN;
	} while (*t == 0);
	return 0;
}

static void sockaddr_of(const struct conf_addr *a, uint16_t port, struct sockaddr_storage *ss,
			socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		memcpy(&s6->sin6_addr, a->addr, 16);
		*len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		memcpy(&s4->sin_addr, a->addr, 4);
		*len = sizeof(*s4);
	}
}

/* The remote address of an accepted socket; ::ffff:a.b.c.d becomes IPv4. */
static void conf_addr_of(const struct sockaddr_storage *ss, struct conf_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		a->port = ntohs(s6->sin6_port);
		a->family = AF_INET6;
		memcpy(a->addr, &s6->sin6_addr, 16);
		conf_addr_unmap(a);
	} else if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		a->family = AF_INET;
		a->port = ntohs(s4->sin_port);
		memcpy(a->addr, &s4->sin_addr, 4);
	}
}

struct peer *find_peer(const struct peermgr *pm, const char *name)
{
	for (uint32_t i = 0; i < pm->n_peers; i++)
		if (strcmp(pm->peers[i]->name, name) == 0)
			return pm->peers[i];
	return NULL;
}

/* A peer at host a (with configured: one from the configuration, not
 * added at run time). */
static struct peer *find_peer_by_host(const struct peermgr *pm, const struct conf_addr *a,
				      bool configured)
{
	for (uint32_t i = 0; i < pm->n_peers; i++)
		if (conf_addr_same_host(&pm->peers[i]->addr, a) &&
		    (!configured || !pm->peers[i]->dynamic))
			return pm->peers[i];
	return NULL;
}

/* c no longer waits for a hello: its slot is free (peer_int.h n_unident) */
static void unident_clear(struct peermgr *pm, struct pconn *c)
{
	if (!c->unidentified)
		return;
	c->unidentified = false;
	pm->n_unident--;
	if (c->unident_other) {
		c->unident_other = false;
		pm->n_unident_other--;
	}
}

/* The peer that is the daemon listening at a (address and port): a
 * configured one, one we dial, or an unlisted one that dialed us and is up
 * (its hello gave its port). Dials given up for the other side's own
 * connection do not count. dialed_only: only dynamic peers we dial. */
static struct peer *peer_at(const struct peermgr *pm, const struct conf_addr *a, bool dialed_only)
{
	for (uint32_t i = 0; i < pm->n_peers; i++) {
		struct peer *p = pm->peers[i];
		bool accepted = p->dynamic && !p->dials;

		if (p->superseded || !conf_addr_same_host(&p->addr, a) ||
		    (dialed_only && (!p->dynamic || accepted)))
			continue;
		if (accepted ? p->state == PEER_UP && p->listen_port == a->port : p->addr.port == a->port)
			return p;
	}
	return NULL;
}

/* An unknown host, or one refused for too many connections, is logged once
 * per address (and kind) per minute at most. */
static bool ratelog_allow(struct peermgr *pm, enum ratelog_kind kind, const struct conf_addr *a,
			  uint32_t *suppressed)
{
	uint64_t now = now_ms();
	struct ratelog *slot = NULL, *oldest = &pm->ratelog[0];

	for (uint32_t i = 0; i < RATELOG_SLOTS; i++) {
		struct ratelog *r = &pm->ratelog[i];

		if (r->kind == kind && conf_addr_same_host(&r->a, a)) {
			slot = r;
			break;
		}
		if (r->ms < oldest->ms)
			oldest = r;
	}
	if (slot && now - slot->ms < RATELOG_MS) {
		slot->suppressed++;
		return false;
	}
	if (!slot) {
		slot = oldest;
		slot->suppressed = 0;
	}
	*suppressed = slot->suppressed;
	slot->kind = kind;
	slot->a = *a;
	slot->ms = now;
	slot->suppressed = 0;
	return true;
}

/* ---- connections: sending ----------------------------------------------------- */

/* pconn_send, and SHA-256 of the message's bytes into hash if not NULL
 * (a hello that the handshake's proofs bind, as it goes on the wire). */
static int pconn_send_ex(struct pconn *c, const UcclPeer__PeerMsg *m, uint8_t *hash)
{
	uint8_t *buf;
	size_t len;
	int r;

	if (!c->bev)
		return -ENOTCONN;
	r = peerframe_pack(m, &buf, &len);
	if (r < 0)
		return r;
	if (hash)
		sha256(buf + FRAME_HDR_LEN, len - FRAME_HDR_LEN, hash);
	if (c->mac) {
		/* the frame's length covers the MAC after the message */
		size_t plen = len - FRAME_HDR_LEN, flen = plen + PEERAUTH_MAC_LEN;
		uint8_t *b = flen <= PEER_MSG_MAX ? realloc(buf, len + PEERAUTH_MAC_LEN) : NULL;

		if (!b) {
			free(buf);
			return flen <= PEER_MSG_MAX ? -ENOMEM : -EMSGSIZE;
		}
		buf = b;
		peerauth_mac(c->ks, !c->inbound, c->tx_seq, buf + FRAME_HDR_LEN, plen, buf + len);
		for (int i = 0; i < 4; i++)
			buf[i] = (uint8_t)(flen >> (8 * i));
		len += PEERAUTH_MAC_LEN;
	}
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) + len > OUT_MAX) {
		free(buf);
		return -ENOBUFS;
	}
	r = bufferevent_write(c->bev, buf, len) < 0 ? -ENOMEM : 0;
	/* a number is used only by a frame that goes out: the peer counts
	 * the frames it gets (an evbuffer add is all or nothing) */
	if (r == 0 && c->mac)
		c->tx_seq++;
	free(buf);
	return r;
}

int pconn_send(struct pconn *c, const UcclPeer__PeerMsg *m)
{
	return pconn_send_ex(c, m, NULL);
}

/* Why m could not be sent (r), for the log. */
static void send_failed_why(char *why, size_t len, const UcclPeer__PeerMsg *m, int r)
{
	if (r == -ENOBUFS)
		snprintf(why, len, "peer does not read (over %u bytes queued)", OUT_MAX);
	else
		snprintf(why, len, "cannot send %s: %s", peerframe_msg_name(m), strerror(-r));
}

bool pconn_send_or_close(struct pconn *c, const UcclPeer__PeerMsg *m)
{
	int r = pconn_send(c, m);
	char why[96];

	if (r == 0)
		return true;
	send_failed_why(why, sizeof(why), m, r);
	pconn_close(c, why, 0);
	return false;
}

void pconn_send_or_close_soon(struct pconn *c, const UcclPeer__PeerMsg *m)
{
	struct timeval now = { 0, 0 };
	int r = pconn_send(c, m);

	if (r == 0 || c->phase == PC_CLOSING || c->close_soon[0])
		return;
	/* deadline_ev is idle while up; deadline_cb closes with this reason */
	send_failed_why(c->close_soon, sizeof(c->close_soon), m, r);
	evtimer_add(c->deadline_ev, &now);
}

static int send_hello(struct pconn *c)
{
	struct peermgr *pm = c->pm;
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__Hello h = UCCL_PEER__HELLO__INIT;
	char data[PEER_ADDR_TEXT_MAX + 2];
	int r;

	r = new_token(&c->local_token);
	if (r < 0)
		return r;
	conf_addr_fmt(&pm->data_address, false, data, sizeof(data));
	h.proto_version = PEER_PROTO_VERSION;
	h.host_name = pm->host_name;
	h.data_address = data;
	h.has_data_port = h.has_data_paths = h.has_mtu = h.has_token = h.has_timeout_ms = 1;
	h.data_port = pm->data_port;
	h.data_paths = pm->data_paths;
	h.mtu = pm->mtu;
	h.token = c->local_token;
	h.timeout_ms = pm->timeout_ms;
	h.daemon_version = (char *)PACKAGE_VERSION;
	h.has_wire_version = 1;
	h.wire_version = PEER_WIRE_VERSION;
	h.has_listen_port = 1;
	h.listen_port = pm->listen.port;
	/* the dialer brings its nonce in the hello; the accepting side brought
	 * its own in its Auth, before this hello */
	if (!c->inbound)
		c->key_gen = pm->key_gen;      /* a reload before the answer closes it */
	if (!c->inbound && pm->key.len) {
		r = peerauth_nonce(c->nonce);
		if (r < 0)
			return r;
		c->keyed = true;
		h.has_auth_nonce = 1;
		h.auth_nonce.len = PEERAUTH_NONCE_LEN;
		h.auth_nonce.data = c->nonce;
	}
	/* always once set, one thread too: its presence tells the peer we
	 * understand the thread fields of lookups and connects */
	if (pm->n_threads >= 1) {
		h.n_thread_ports = pm->n_threads;
		h.thread_ports = pm->thread_ports;
	}
	h.has_max_inflight_bytes = pm->max_inflight_bytes != 0;
	h.max_inflight_bytes = pm->max_inflight_bytes;
	h.has_data_crc = 1;
	h.data_crc = pm->data_crc;
	if (pm->lanes) {
		h.has_lanes = 1;
		h.lanes = pm->lanes;
	}
	m.body_case = UCCL_PEER__PEER_MSG__BODY_HELLO;
	m.hello = &h;
	/* a keyed dialer's proofs bind its hello as it goes out */
	return pconn_send_ex(c, &m, c->keyed && !c->inbound ? c->hello_hash : NULL);
}

/* ---- connections: life and death ------------------------------------------------ */

static void pconn_free(struct pconn *c)
{
	struct peermgr *pm = c->pm;

	if (c->prev)
		c->prev->next = c->next;
	else
		pm->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pm->n_conns--;
	if (c->phase == PC_CLOSING)
		pm->n_closing--;
	if (c->lingering)
		pm->n_lingering--;
	unident_clear(pm, c);
	peer_reqs_conn_gone(c);
	if (c->conn_ev)
		event_free(c->conn_ev);
	if (c->deadline_ev)
		event_free(c->deadline_ev);
	if (c->ka_ev)
		event_free(c->ka_ev);
	if (c->silence_ev)
		event_free(c->silence_ev);
	free(c->held);
	explicit_bzero(c->ks, sizeof(c->ks));
	if (c->bev)
		bufferevent_free(c->bev);   /* closes fd */
	else if (c->fd >= 0)
		close(c->fd);
	free(c);
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pconn *c = arg;
	char why[64];

	(void)fd;
	(void)what;
	if (c->phase == PC_CLOSING) {
		pconn_free(c);
		return;
	}
	if (c->close_soon[0]) {   /* see pconn_send_or_close_soon */
		pconn_close(c, c->close_soon, 0);
		return;
	}
	if (c->phase == PC_CONNECTING)
		snprintf(why, sizeof(why), "connect: no answer within %u ms", PEER_HELLO_DEADLINE_MS);
	else
		snprintf(why, sizeof(why), "no hello within %u ms", PEER_HELLO_DEADLINE_MS);
	pconn_close(c, why, c->phase == PC_HELLO ? -ETIMEDOUT : 0);
}

static void read_cb(struct bufferevent *bev, void *arg);
static void event_cb(struct bufferevent *bev, short what, void *arg);

static void peer_remove(struct peer *p, const char *why);
static void peer_expire(struct peer *p);
static void peer_supersede(struct peer *p);
static struct peer *peer_add_dynamic(struct peermgr *pm, const char *name, const struct conf_addr *a,
				     bool dials);

/* The peer lost its connection c (which was p->conn). */
static void peer_conn_lost(struct peer *p, struct pconn *c, const char *reason)
{
	struct peermgr *pm = p->pm;
	bool was_up = c->phase == PC_UP;
	bool stable = was_up && now_ms() - p->since_ms >= STABLE_MS;

	p->conn = NULL;
	p->tx_token = p->rx_token = 0;
	p->has_rtt = false;
	if (was_up) {
		p->state = PEER_DOWN;
		p->since_ms = now_ms();
		log_msg(pm->stopping ? LOG_LVL_INFO : LOG_LVL_WARN, "peer %s (%s): down: %s", p->name,
			p->addrtext, reason);
		if (pm->notify && !pm->stopping)
			pm->notify(pm->notify_arg, p->name, false, p->generation);
	} else if (strcmp(p->last_error, reason) != 0) {
		/* a failed attempt: said once, then quiet while it keeps failing alike */
		log_info("peer %s (%s): %s", p->name, p->addrtext, reason);
	} else {
		log_debug("peer %s (%s): %s", p->name, p->addrtext, reason);
	}
	snprintf(p->last_error, sizeof(p->last_error), "%s", reason);
	peer_reqs_fail(p, -ENOTCONN);
	/* only a connection that lasted: one closed right after its hello
	 * (a clash, a refusal, a restart that keeps failing) would otherwise
	 * be dialed again every 200 ms for ever */
	if (stable)
		p->backoff_ms = BACKOFF_MIN_MS;
	if (p->dynamic && !pm->stopping)
		peer_expire(p);        /* a client's connect dials it again if it wants */
	else
		peer_schedule_retry(p);
}

static void write_drained_cb(struct bufferevent *bev, void *arg)
{
	struct pconn *c = arg;

	(void)bev;
	/* the Error left: end our side; the linger timer or EOF frees it */
	shutdown(c->fd, SHUT_WR);
}

/* Start closing c: log reason (NULL: logged already) with whom, detach it
 * from its peer, optionally send an Error with send_code (< 0) and the text
 * tell, and free it once that is flushed (or after LINGER_MS). Safe inside
 * c's callbacks: the free happens later, from the deadline timer. */
static void pconn_close_ex(struct pconn *c, const char *reason, const char *tell, int send_code)
{
	struct peermgr *pm = c->pm;
	struct timeval tv = { 0, 0 };

	if (c->phase == PC_CLOSING)
		return;
	peer_reqs_conn_gone(c);
	if (c->peer) {
		struct peer *p = c->peer;

		c->peer = NULL;
		if (p->conn == c)
			peer_conn_lost(p, c, reason ? reason : tell ? tell : "closed");
	} else if (reason) {
		log_warn("peer connection from %s: closing: %s", c->ratext, reason);
	}
	unident_clear(pm, c);
	if (c->ka_ev)
		event_del(c->ka_ev);
	if (c->silence_ev)
		event_del(c->silence_ev);
	if (c->conn_ev)
		event_del(c->conn_ev);
	c->phase = PC_CLOSING;
	pm->n_closing++;
	/* an Error is worth a linger only while few wait: under a flood of
	 * bad connections the rest are closed at once, and accepting goes on */
	if (send_code < 0 && c->bev && !pm->stopping && pm->n_lingering < MAX_LINGERING) {
		UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
		UcclPeer__Error e = UCCL_PEER__ERROR__INIT;
		char msg[PEER_ERROR_MAX];

		snprintf(msg, sizeof(msg), "%s", tell ? tell : "closing");
		e.code = send_code;
		e.message = msg;
		m.body_case = UCCL_PEER__PEER_MSG__BODY_ERROR;
		m.error = &e;
		if (pconn_send(c, &m) == 0) {
			/* once it left, end our side; meanwhile keep reading (and
			 * dropping) until EOF, so that the close is a FIN the
			 * peer reads after our Error, not a reset */
			bufferevent_setcb(c->bev, read_cb, write_drained_cb, event_cb, c);
			tv = tv_ms(LINGER_MS);
			c->lingering = true;
			pm->n_lingering++;
		}
	}
	evtimer_add(c->deadline_ev, &tv);
}

void pconn_close(struct pconn *c, const char *reason, int send_code)
{
	pconn_close_ex(c, reason, reason, send_code);
}

/* ---- messages on an established connection --------------------------------------- */

static void ka_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pconn *c = arg;
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__Keepalive k = UCCL_PEER__KEEPALIVE__INIT;

	(void)fd;
	(void)what;
	if (c->phase != PC_UP)
		return;
	c->ka_seq++;
	c->ka_sent_us = now_us();
	k.seq = c->ka_seq;
	k.sent_us = c->ka_sent_us;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_KEEPALIVE;
	m.keepalive = &k;
	pconn_send_or_close(c, &m);
}

static void silence_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pconn *c = arg;
	char why[96];

	(void)fd;
	(void)what;
	snprintf(why, sizeof(why), "silent for %u ms (peer_timeout_ms)", c->pm->timeout_ms);
	pconn_close(c, why, -ETIMEDOUT);
}

static uint32_t ka_interval(const struct peermgr *pm, uint32_t theirs)
{
	uint32_t t = pm->timeout_ms < theirs ? pm->timeout_ms : theirs;
	uint32_t iv = t / 3 < PEER_KEEPALIVE_MS ? t / 3 : PEER_KEEPALIVE_MS;

	return iv ? iv : 1;
}

static void arm_silence(struct pconn *c)
{
	struct timeval tv = tv_ms(c->pm->timeout_ms);

	evtimer_add(c->silence_ev, &tv);
}

static void arm_keepalive(struct pconn *c, uint32_t theirs)
{
	struct timeval tv;

	c->ka_interval_ms = ka_interval(c->pm, theirs);
	tv = tv_ms(c->ka_interval_ms);
	event_del(c->ka_ev);
	event_add(c->ka_ev, &tv);
}

static void handle_up(struct pconn *c, const UcclPeer__PeerMsg *m)
{
	struct peer *p = c->peer;
	UcclPeer__PeerMsg r = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__KeepaliveAck ack = UCCL_PEER__KEEPALIVE_ACK__INIT;
	char why[PEER_ERROR_MAX + 32], text[PEER_ERROR_MAX];

	switch (m->body_case) {
	case UCCL_PEER__PEER_MSG__BODY_KEEPALIVE:
		ack.seq = m->keepalive->seq;
		ack.sent_us = m->keepalive->sent_us;
		r.body_case = UCCL_PEER__PEER_MSG__BODY_KEEPALIVE_ACK;
		r.keepalive_ack = &ack;
		pconn_send_or_close(c, &r);
		return;
	case UCCL_PEER__PEER_MSG__BODY_KEEPALIVE_ACK:
		if (m->keepalive_ack->seq > c->ka_seq || m->keepalive_ack->seq == 0) {
			pconn_close(c, "keepalive_ack: answers a keepalive never sent", -EPROTO);
			return;
		}
		if (m->keepalive_ack->seq == c->ka_seq) {
			uint64_t rtt = now_us() - c->ka_sent_us;

			p->has_rtt = true;
			p->rtt_us = rtt > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt;
		}
		return;
	case UCCL_PEER__PEER_MSG__BODY_ERROR:
		peerframe_sanitize(text, sizeof(text), m->error->message);
		snprintf(why, sizeof(why), "peer reports: %s (%s)", text, strerror(-m->error->code));
		pconn_close(c, why, 0);
		return;
	default:
		if (peer_reqs_handle(c, m))
			return;
		snprintf(why, sizeof(why), "unexpected %s on an established connection",
			 peerframe_msg_name(m));
		pconn_close(c, why, -EPROTO);
		return;
	}
}

/* ---- hellos ------------------------------------------------------------------------- */

/* A numeric data address from a hello (checked so by peerframe), with
 * ::ffff:a.b.c.d taken as the IPv4 address, as config and accepted
 * sockets' addresses are. False if it is neither family. */
static bool data_addr_of(const char *text, struct conf_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, text, a->addr) == 1)
		a->family = AF_INET;
	else if (inet_pton(AF_INET6, text, a->addr) == 1)
		a->family = AF_INET6;
	else
		return false;
	conf_addr_unmap(a);
	return true;
}

static void peer_up(struct peer *p, struct pconn *c, const UcclPeer__Hello *h)
{
	struct peermgr *pm = p->pm;
	struct conf_addr a;

	event_del(c->deadline_ev);
	c->phase = PC_UP;
	p->conn = c;
	p->state = PEER_UP;
	p->since_ms = now_ms();
	if (p->was_up)
		p->reconnects++;
	p->was_up = true;
	p->announced = true;
	snprintf(p->host, sizeof(p->host), "%s", h->host_name);
	/* kept in the form our own config parser gives (::ffff:a.b.c.d as
	 * a.b.c.d), which every later use of it parses again */
	if (data_addr_of(h->data_address, &a))
		conf_addr_fmt(&a, false, p->data_addr, sizeof(p->data_addr));
	else
		snprintf(p->data_addr, sizeof(p->data_addr), "%s", h->data_address);
	p->data_port = h->data_port;
	p->data_paths = h->data_paths;
	p->knows_threads = h->n_thread_ports > 0;
	p->authenticated = c->mac;     /* both proofs checked */
	p->n_threads = h->n_thread_ports ? (uint32_t)h->n_thread_ports : 1;
	for (uint32_t i = 0; i < p->n_threads; i++)
		p->thread_ports[i] = h->n_thread_ports ? h->thread_ports[i] : h->data_port;
	p->mtu = h->mtu;
	p->listen_port = h->has_listen_port ? (uint16_t)h->listen_port : 0;
	/* more than its threads allow counts as what they allow */
	p->lanes = h->has_lanes ? (h->lanes < p->n_threads ? h->lanes : p->n_threads - 1) : 0;
	p->max_inflight_bytes = !h->has_max_inflight_bytes ? 0
				: h->max_inflight_bytes < PEER_INFLIGHT_MIN ? PEER_INFLIGHT_MIN
				: h->max_inflight_bytes > PEER_INFLIGHT_MAX ? PEER_INFLIGHT_MAX
				: h->max_inflight_bytes;
	p->data_crc = h->has_data_crc && h->data_crc;
	p->their_timeout_ms = h->timeout_ms;
	p->tx_token = h->token;
	p->rx_token = c->local_token;
	p->generation++;
	p->has_rtt = false;
	p->last_error[0] = '\0';
	arm_keepalive(c, h->timeout_ms);
	arm_silence(c);
	log_info("peer %s (%s): up, %s%s (data %s port %u, %u paths, mtu %u)", p->name, p->addrtext,
		 c->inbound ? "it dialed" : "we dialed", p->authenticated ? ", authenticated" : "",
		 p->data_addr, p->data_port, p->data_paths, p->mtu);
	if (pm->notify)
		pm->notify(pm->notify_arg, p->name, true, p->generation);
}

/* An unknown host gets an Error and is closed; logged once per address per
 * minute. */
static void refuse_unknown(struct pconn *c, const char *why)
{
	uint32_t suppressed = 0;

	if (ratelog_allow(c->pm, RL_UNKNOWN_HOST, &c->ra, &suppressed)) {
		if (suppressed)
			log_warn("peer connection from %s: closing: %s (%u more from this address in "
				 "the last minute not logged)", c->ratext, why, suppressed);
		else
			log_warn("peer connection from %s: closing: %s", c->ratext, why);
	}
	pconn_close_ex(c, NULL, why, -EACCES);
}

/* Whether h announces its data plane on host src, where it talks from;
 * false, with why, if not. */
static bool data_at_source(const struct conf_addr *src, const UcclPeer__Hello *h, char *why,
			   size_t len)
{
	struct conf_addr a;
	char from[64];

	if (data_addr_of(h->data_address, &a) && conf_addr_same_host(&a, src))
		return true;
	conf_addr_fmt(src, false, from, sizeof(from));
	snprintf(why, len, "%s announces its data plane at %s, not at %s where it talks from (a "
		 "peer taken at run time without peer_key_file must be)", h->host_name,
		 h->data_address, from);
	return false;
}

/* A peer taken at run time and not authenticated is known by nothing but
 * the address it talks from: its data plane must be there too, or it could
 * announce another peer's data address and ports and take them over (the
 * first one up keeps them). False, with why, if it is not. */
static bool dynamic_data_ok(const struct peer *p, const struct pconn *c, const UcclPeer__Hello *h,
			    char *why, size_t len)
{
	return !p->dynamic || c->mac || data_at_source(&p->addr, h, why, len);
}

/* With data_crc set, a peer that does not say it has the option could
 * send its data packets without a crc, and the channel would drop them
 * all: refused with a reason instead. False, with why, if so. */
static bool crc_known(const struct peermgr *pm, const UcclPeer__Hello *h, char *why, size_t len)
{
	if (!pm->data_crc || h->has_data_crc)
		return true;
	snprintf(why, len, "%s does not announce data_crc (a daemon older than the option's "
		 "announcement), and %s takes data packets only with a crc32c (data_crc is set): "
		 "upgrade %s or unset data_crc on %s", h->host_name, pm->host_name, h->host_name,
		 pm->host_name);
	return false;
}

static void handle_inbound_hello(struct pconn *c, const UcclPeer__Hello *h)
{
	struct peermgr *pm = c->pm;
	struct peer *p = find_peer(pm, h->host_name);
	/* a name an unlisted daemon may go by here */
	bool takeable = conf_peer_name_valid(h->host_name) && strcmp(h->host_name, pm->host_name) != 0;
	char why[PEER_ERROR_MAX];
	int r;

	/* an unlisted daemon that we dial too (each was named the other's
	 * address at connect time): the dial of the one whose name sorts
	 * first stays, as for configured peers */
	if ((!p || (p->dynamic && !p->dials)) && h->has_listen_port && takeable) {
		struct conf_addr la = c->ra;
		struct peer *d;

		la.port = (uint16_t)h->listen_port;
		d = peer_at(pm, &la, true);
		/* a dial of ours that is up stays whatever the names say: the
		 * other side took it, and a hello must not tear it down */
		if (d && (d->state == PEER_UP || strcmp(pm->host_name, h->host_name) < 0)) {
			snprintf(why, sizeof(why), "%s %s %s itself (each named the other at connect "
				 "time)", pm->host_name, d->state == PEER_UP ? "is connected to" : "dials",
				 h->host_name);
			pconn_close(c, why, -EEXIST);
			return;
		}
		if (d)
			peer_supersede(d);     /* its slot is the one the new peer takes */
	}
	/* an unlisted daemon: a peer for as long as its connection lasts, if
	 * dynamic_peers allows one more. Checked before it is added: one
	 * refused after would keep its slot, with no connection to end it */
	if (!p && takeable && !c->mac && !data_at_source(&c->ra, h, why, sizeof(why))) {
		pconn_close(c, why, -EACCES);
		return;
	}
	/* a peer, or one it may become: refused before a dynamic slot is
	 * taken for it (strangers are refused below, as strangers) */
	if ((p || takeable) && !crc_known(pm, h, why, sizeof(why))) {
		pconn_close(c, why, -EPROTONOSUPPORT);
		return;
	}
	if (!p && takeable)
		p = peer_add_dynamic(pm, h->host_name, &c->ra, false);
	if (!p || !conf_addr_same_host(&p->addr, &c->ra)) {
		char a[64];

		conf_addr_fmt(&c->ra, false, a, sizeof(a));
		if (p)
			snprintf(why, sizeof(why), "hello as %s, which %s expects from %s, not from %s",
				 h->host_name, pm->host_name, p->addrtext, a);
		else if (pm->n_dynamic < pm->max_dynamic)
			snprintf(why, sizeof(why), "%s at %s cannot be a peer of %s (%s)", h->host_name, a,
				 pm->host_name, takeable ? "its peer table is full" :
				 "not a valid peer name, or its own");
		else
			snprintf(why, sizeof(why), "%s at %s is not a configured peer of %s%s",
				 h->host_name, a, pm->host_name,
				 pm->max_dynamic ? " (dynamic_peers all taken)" : "");
		refuse_unknown(c, why);
		return;
	}
	if (p->dials) {
		snprintf(why, sizeof(why), "%s dialed, but %s sorts first and dials %s", p->name,
			 pm->host_name, p->name);
		pconn_close(c, why, -EPROTO);
		return;
	}
	if (!dynamic_data_ok(p, c, h, why, sizeof(why))) {
		pconn_close(c, why, -EACCES);
		return;
	}
	unident_clear(pm, c);
	if (p->conn) {
		struct pconn *old = p->conn;

		/* it dials only when it has no connection: the old one is dead */
		pconn_close(old, "replaced by a new connection from the peer", -ECONNRESET);
	}
	c->peer = p;
	p->conn = c;
	event_del(p->retry_ev);
	r = send_hello(c);
	if (r < 0) {
		snprintf(why, sizeof(why), "cannot send hello: %s", strerror(-r));
		pconn_close(c, why, 0);
		return;
	}
	peer_up(p, c, h);
}

static void handle_outbound_hello(struct pconn *c, const UcclPeer__Hello *h)
{
	struct peer *p = c->peer;
	struct peermgr *pm = c->pm;
	char why[PEER_ERROR_MAX];

	if (!crc_known(pm, h, why, sizeof(why))) {
		pconn_close(c, why, -EPROTONOSUPPORT);
		return;
	}
	if (p->dynamic) {
		/* dialed by address: any name but ours, and not a daemon we
		 * are peered with already (it would see two of us) */
		struct peer *q = find_peer(pm, h->host_name);

		if (q && q->dynamic && q->state != PEER_UP)
			q = NULL;              /* one that is going: not in the way */
		for (uint32_t i = 0; !q && i < pm->n_peers; i++)
			if (pm->peers[i] != p && pm->peers[i]->state == PEER_UP &&
			    strcmp(pm->peers[i]->host, h->host_name) == 0)
				q = pm->peers[i];
		if (strcmp(h->host_name, pm->host_name) == 0) {
			snprintf(why, sizeof(why), "%s is this daemon", p->addrtext);
			pconn_close(c, why, -EEXIST);
			return;
		}
		if (q) {
			peer_supersede(p);     /* the connect uses q (peermgr_dynamic) */
			return;
		}
	} else if (strcmp(h->host_name, p->name) != 0) {
		snprintf(why, sizeof(why), "answers as host '%s', expected '%s'", h->host_name, p->name);
		pconn_close(c, why, -EACCES);
		return;
	}
	if (!dynamic_data_ok(p, c, h, why, sizeof(why))) {
		pconn_close(c, why, -EACCES);
		return;
	}
	peer_up(p, c, h);
}

/* ---- authentication (peer_key_file) --------------------------------------------- */

static bool send_auth(struct pconn *c, const uint8_t *nonce, const char *host_name,
		      const uint8_t proof[PEERAUTH_PROOF_LEN])
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__Auth a = UCCL_PEER__AUTH__INIT;

	if (nonce) {
		a.has_nonce = 1;
		a.nonce.len = PEERAUTH_NONCE_LEN;
		a.nonce.data = (uint8_t *)nonce;
	}
	a.host_name = (char *)host_name;
	a.proof.len = PEERAUTH_PROOF_LEN;
	a.proof.data = (uint8_t *)proof;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_AUTH;
	m.auth = &a;
	return pconn_send_or_close(c, &m);
}

static void auth_hs(const struct pconn *c, struct peerauth_hs *h)
{
	bool dialer = !c->inbound;

	h->dialer = c->dialer;
	h->acceptor = c->acceptor;
	h->nd = dialer ? c->nonce : c->their_nonce;
	h->na = dialer ? c->their_nonce : c->nonce;
	h->hello_hash = c->hello_hash;
}

/* The key changed since the handshake began: its proofs would be judged
 * with the other key. Closed; the dialer tries again. true: closed. */
static bool auth_key_changed(struct pconn *c)
{
	if (c->key_gen == c->pm->key_gen && c->pm->key.len)
		return false;
	pconn_close(c, c->pm->key.len ? "peer_key_file was reloaded during the handshake" :
		    "peer_key_file was reloaded to none during the handshake", -EAGAIN);
	return true;
}

/* Accepting side, the dialer's hello: with a key, nothing about who the
 * dialer says it is counts before it proves the key (a stranger must not
 * take a dynamic slot or replace a peer's connection), so the hello is
 * held and our nonce, name and proof go out. true: go on with the hello
 * now (neither side has a key). */
static bool auth_inbound_hello(struct pconn *c, const UcclPeer__Hello *h)
{
	struct peermgr *pm = c->pm;
	uint8_t proof[PEERAUTH_PROOF_LEN];
	struct peerauth_hs hs;
	char why[PEER_ERROR_MAX];
	size_t n;
	int r;

	if (!pm->key.len && !h->has_auth_nonce)
		return true;
	if (!pm->key.len || !h->has_auth_nonce) {
		if (pm->key.len)
			snprintf(why, sizeof(why), "%s does not authenticate, and %s requires it "
				 "(peer_key_file is set on %s, not on %s)", h->host_name, pm->host_name,
				 pm->host_name, h->host_name);
		else
			snprintf(why, sizeof(why), "%s authenticates peers (peer_key_file), and %s has "
				 "no key", h->host_name, pm->host_name);
		refuse_unknown(c, why);
		return false;
	}
	/* our own name: we would be proving the key to ourselves for someone */
	if (strcmp(h->host_name, pm->host_name) == 0) {
		snprintf(why, sizeof(why), "hello as %s, which is this daemon's name", h->host_name);
		refuse_unknown(c, why);
		return false;
	}
	n = uccl_peer__hello__get_packed_size(h);
	c->held = malloc(n ? n : 1);
	r = c->held ? peerauth_nonce(c->nonce) : -ENOMEM;
	if (r < 0) {
		snprintf(why, sizeof(why), "cannot authenticate: %s", strerror(-r));
		pconn_close(c, why, r);
		return false;
	}
	c->held_len = uccl_peer__hello__pack(h, c->held);
	memcpy(c->their_nonce, h->auth_nonce.data, PEERAUTH_NONCE_LEN);
	snprintf(c->dialer, sizeof(c->dialer), "%s", h->host_name);
	snprintf(c->acceptor, sizeof(c->acceptor), "%s", pm->host_name);
	c->keyed = true;
	c->key_gen = pm->key_gen;
	c->auth = PA_CHALLENGED;
	auth_hs(c, &hs);
	peerauth_proof(&pm->key, false, &hs, proof);
	send_auth(c, c->nonce, pm->host_name, proof);
	return false;
}

/* Both sides: the proofs are checked; later frames carry MACs. */
static void auth_start_macs(struct pconn *c)
{
	struct peerauth_hs hs;

	auth_hs(c, &hs);
	peerauth_session(&c->pm->key, &hs, c->ks);
	c->mac = true;
	c->tx_seq = c->rx_seq = 0;
}

/* Accepting side: the dialer's proof; right, and its held hello is looked at. */
static void auth_inbound_proof(struct pconn *c, const UcclPeer__Auth *a)
{
	struct peermgr *pm = c->pm;
	uint8_t want[PEERAUTH_PROOF_LEN];
	struct peerauth_hs hs;
	UcclPeer__Hello *h;
	char why[PEER_ERROR_MAX];

	if (c->auth != PA_CHALLENGED || a->has_nonce || a->host_name) {
		pconn_close(c, "unexpected auth", -EPROTO);
		return;
	}
	if (auth_key_changed(c))
		return;
	auth_hs(c, &hs);
	peerauth_proof(&pm->key, true, &hs, want);
	if (peerauth_cmp(want, a->proof.data, PEERAUTH_PROOF_LEN) != 0) {
		snprintf(why, sizeof(why), "authentication of %s failed: its proof does not match "
			 "%s's key (peer_key_file differs)", c->dialer, pm->host_name);
		refuse_unknown(c, why);
		return;
	}
	c->auth = PA_DONE;
	auth_start_macs(c);
	/* held re-encoded (what the proofs bind): a field protobuf-c took
	 * but cannot re-encode is refused here, as is running out of memory */
	h = uccl_peer__hello__unpack(NULL, c->held_len, c->held);
	free(c->held);
	c->held = NULL;
	if (!h) {
		pconn_close(c, "its hello does not decode once re-encoded (a field this version "
			    "cannot re-encode, or out of memory)", -EPROTO);
		return;
	}
	handle_inbound_hello(c, h);
	uccl_peer__hello__free_unpacked(h, NULL);
}

/* Dialing side: the accepting side's nonce, name and proof. */
static void auth_outbound(struct pconn *c, const UcclPeer__Auth *a)
{
	struct peermgr *pm = c->pm;
	struct peer *p = c->peer;
	uint8_t want[PEERAUTH_PROOF_LEN];
	struct peerauth_hs hs;
	char why[PEER_ERROR_MAX];

	if (!c->keyed || c->auth != PA_NONE || !a->has_nonce || !a->host_name) {
		pconn_close(c, "unexpected auth", -EPROTO);
		return;
	}
	/* the name its proof binds must be the one we dialed (by address: any
	 * but ours), and its hello must give the same */
	if (p->dynamic ? strcmp(a->host_name, pm->host_name) == 0 : strcmp(a->host_name, p->name) != 0) {
		snprintf(why, sizeof(why), "%s authenticates as %s, %s", p->addrtext, a->host_name,
			 p->dynamic ? "this daemon's name" : "not as the peer dialed");
		pconn_close(c, why, -EACCES);
		return;
	}
	if (auth_key_changed(c))
		return;
	memcpy(c->their_nonce, a->nonce.data, PEERAUTH_NONCE_LEN);
	snprintf(c->dialer, sizeof(c->dialer), "%s", pm->host_name);
	snprintf(c->acceptor, sizeof(c->acceptor), "%s", a->host_name);
	auth_hs(c, &hs);
	peerauth_proof(&pm->key, false, &hs, want);
	if (peerauth_cmp(want, a->proof.data, PEERAUTH_PROOF_LEN) != 0) {
		snprintf(why, sizeof(why), "authentication failed: the proof of %s does not match "
			 "%s's key (peer_key_file differs)", p->addrtext, pm->host_name);
		pconn_close(c, why, -EACCES);
		return;
	}
	peerauth_proof(&pm->key, true, &hs, want);
	if (send_auth(c, NULL, NULL, want)) {
		c->auth = PA_ANSWERED;
		auth_start_macs(c);
	}
}

/* Dialing side, its Auth sent: an Error without a MAC is the accepting
 * side refusing before it checked our proof (wrong key, its key reloaded,
 * its deadline), when it had no session key yet. Anyone on the path could
 * close the connection anyway, so it is read and logged as unauthenticated.
 * true: it was one, and the connection is closed. */
static bool auth_refused_unmacd(struct pconn *c, const uint8_t *p, size_t len)
{
	char why[PEER_ERROR_MAX + 64], text[PEER_ERROR_MAX];
	UcclPeer__PeerMsg *m;

	if (c->auth != PA_ANSWERED || peerframe_unpack(p, len, &m) < 0)
		return false;
	if (m->body_case != UCCL_PEER__PEER_MSG__BODY_ERROR ||
	    peerframe_check(m, why, sizeof(why)) < 0) {
		uccl_peer__peer_msg__free_unpacked(m, NULL);
		return false;
	}
	peerframe_sanitize(text, sizeof(text), m->error->message);
	snprintf(why, sizeof(why), "refused by the peer (unauthenticated): %s (%s)", text,
		 strerror(-m->error->code));
	uccl_peer__peer_msg__free_unpacked(m, NULL);
	pconn_close(c, why, 0);
	return true;
}

static void handle_hello_phase(struct pconn *c, const UcclPeer__PeerMsg *m)
{
	char why[PEER_ERROR_MAX + 32], text[PEER_ERROR_MAX];

	switch (m->body_case) {
	case UCCL_PEER__PEER_MSG__BODY_HELLO:
		if (c->inbound) {
			if (c->auth != PA_NONE) {
				pconn_close(c, "a second hello", -EPROTO);
				return;
			}
			if (auth_inbound_hello(c, m->hello))
				handle_inbound_hello(c, m->hello);
			return;
		}
		/* dialled under another key, or none: its hello would be
		 * judged by what no longer holds (a plain one let in after a
		 * key was loaded) */
		if (c->key_gen != c->pm->key_gen) {
			pconn_close(c, "peer_key_file was reloaded during the handshake", -EAGAIN);
			return;
		}
		if (c->keyed && c->auth != PA_ANSWERED) {
			snprintf(why, sizeof(why), "%s does not authenticate (no peer_key_file there, or "
				 "an older daemon), and %s requires it", c->peer->addrtext, c->pm->host_name);
			pconn_close(c, why, -EACCES);
			return;
		}
		if (c->keyed && strcmp(m->hello->host_name, c->acceptor) != 0) {
			snprintf(why, sizeof(why), "hello as %s after authenticating as %s",
				 m->hello->host_name, c->acceptor);
			pconn_close(c, why, -EACCES);
			return;
		}
		handle_outbound_hello(c, m->hello);
		return;
	case UCCL_PEER__PEER_MSG__BODY_AUTH:
		if (c->inbound)
			auth_inbound_proof(c, m->auth);
		else
			auth_outbound(c, m->auth);
		return;
	case UCCL_PEER__PEER_MSG__BODY_ERROR:
		peerframe_sanitize(text, sizeof(text), m->error->message);
		snprintf(why, sizeof(why), "refused by the peer: %s (%s)", text,
			 strerror(-m->error->code));
		pconn_close(c, why, 0);
		return;
	default:
		snprintf(why, sizeof(why), "expected hello, got %s", peerframe_msg_name(m));
		pconn_close(c, why, -EPROTO);
		return;
	}
}

/* ---- reading ---------------------------------------------------------------------------- */

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct pconn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	while (c->phase != PC_CLOSING) {
		UcclPeer__PeerMsg *m;
		uint8_t hdr[FRAME_HDR_LEN], *p;
		char why[PEER_ERROR_MAX];
		uint32_t len;
		int r;

		if (evbuffer_get_length(in) < FRAME_HDR_LEN)
			return;
		evbuffer_copyout(in, hdr, FRAME_HDR_LEN);
		if (peerframe_hdr_parse(hdr, &len) < 0) {
			snprintf(why, sizeof(why), "bad frame length (limit %u bytes)", PEER_MSG_MAX);
			pconn_close(c, why, -EMSGSIZE);
			break;
		}
		if (evbuffer_get_length(in) < FRAME_HDR_LEN + (size_t)len)
			return;
		p = evbuffer_pullup(in, FRAME_HDR_LEN + (ssize_t)len);
		if (p && c->mac) {
			uint8_t tag[PEERAUTH_MAC_LEN];
			uint32_t whole = len;
			bool bad = len <= PEERAUTH_MAC_LEN;

			if (!bad) {
				len -= PEERAUTH_MAC_LEN;
				peerauth_mac(c->ks, c->inbound, c->rx_seq++, p + FRAME_HDR_LEN, len, tag);
				bad = peerauth_cmp(tag, p + FRAME_HDR_LEN + len, PEERAUTH_MAC_LEN) != 0;
			}
			if (bad && !c->inbound && c->phase == PC_HELLO &&
			    auth_refused_unmacd(c, p + FRAME_HDR_LEN, whole))
				break;
			if (bad) {
				pconn_close(c, "a message failed authentication (altered, replayed or "
					    "not from the peer)", -EACCES);
				break;
			}
		}
		/* the accepting side's handshake binds the dialer's hello as it came */
		if (p && c->inbound && c->phase == PC_HELLO && c->auth == PA_NONE)
			sha256(p + FRAME_HDR_LEN, len, c->hello_hash);
		r = p ? peerframe_unpack(p + FRAME_HDR_LEN, len, &m) : -ENOMEM;
		evbuffer_drain(in, FRAME_HDR_LEN + (size_t)len + (c->mac ? PEERAUTH_MAC_LEN : 0));
		if (r < 0) {
			pconn_close(c, r == -EPROTO ? "message names no operation" :
				    r == -ENOMEM ? "out of memory" : "undecodable message", r == -ENOMEM ? 0 : -EBADMSG);
			break;
		}
		r = peerframe_check(m, why, sizeof(why));
		if (r < 0) {
			pconn_close(c, why, r);
			uccl_peer__peer_msg__free_unpacked(m, NULL);
			break;
		}
		if (c->phase == PC_UP) {
			arm_silence(c);
			handle_up(c, m);
		} else {
			handle_hello_phase(c, m);
		}
		uccl_peer__peer_msg__free_unpacked(m, NULL);
	}
	/* closing: drop whatever else arrives until EOF */
	evbuffer_drain(in, evbuffer_get_length(in));
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct pconn *c = arg;
	char why[96];

	(void)bev;
	if (c->phase == PC_CLOSING) {
		if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
			struct timeval tv = { 0, 0 };

			evtimer_add(c->deadline_ev, &tv);   /* free now */
		}
		return;
	}
	if (what & BEV_EVENT_EOF)
		snprintf(why, sizeof(why), "connection closed by the other side");
	else
		snprintf(why, sizeof(why), "connection error: %s",
			 strerror(EVUTIL_SOCKET_ERROR() ? EVUTIL_SOCKET_ERROR() : EIO));
	pconn_close(c, why, 0);
}

/* A connection made or accepted: from now on it reads and writes frames. */
static int pconn_start_io(struct pconn *c)
{
	c->bev = bufferevent_socket_new(c->pm->base, c->fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev)
		return -ENOMEM;
	bufferevent_setcb(c->bev, read_cb, NULL, event_cb, c);
	/* bounded input: at most one largest frame waits beyond what was parsed */
	bufferevent_setwatermark(c->bev, EV_READ, 0, 2 * (FRAME_HDR_LEN + PEER_MSG_MAX));
	if (bufferevent_enable(c->bev, EV_READ | EV_WRITE) < 0)
		return -ENOMEM;
	c->phase = PC_HELLO;
	return 0;
}

static struct pconn *pconn_new(struct peermgr *pm, int fd)
{
	struct pconn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->pm = pm;
	c->fd = fd;
	c->deadline_ev = evtimer_new(pm->base, deadline_cb, c);
	c->ka_ev = event_new(pm->base, -1, EV_PERSIST, ka_cb, c);
	c->silence_ev = evtimer_new(pm->base, silence_cb, c);
	if (!c->deadline_ev || !c->ka_ev || !c->silence_ev) {
		if (c->deadline_ev)
			event_free(c->deadline_ev);
		if (c->ka_ev)
			event_free(c->ka_ev);
		if (c->silence_ev)
			event_free(c->silence_ev);
		free(c);
		return NULL;
	}
	c->next = pm->conns;
	if (pm->conns)
		pm->conns->prev = c;
	pm->conns = c;
	pm->n_conns++;
	return c;
}

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- dialing ------------------------------------------------------------------------------ */

static void connected_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pconn *c = arg;
	int err = 0, r;
	socklen_t len = sizeof(err);
	char why[96];

	(void)what;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err) {
		snprintf(why, sizeof(why), "connect: %s", strerror(err));
		pconn_close(c, why, 0);
		return;
	}
	set_nodelay(fd);
	event_free(c->conn_ev);
	c->conn_ev = NULL;
	r = pconn_start_io(c);
	if (r == 0)
		r = send_hello(c);
	if (r < 0) {
		snprintf(why, sizeof(why), "cannot send hello: %s", strerror(-r));
		pconn_close(c, why, 0);
	}
}

static void peer_dial(struct peer *p)
{
	struct peermgr *pm = p->pm;
	struct pconn *c;
	char why[128];
	int fd, r;

	if (p->conn || pm->stopping)
		return;
	fd = socket(p->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(why, sizeof(why), "socket: %s", strerror(errno));
		goto out_fail;
	}
	/* leave from our peer_listen address: the peer recognises us by it */
	if (!conf_addr_is_any(&pm->listen) && pm->listen.family == p->sa.ss_family) {
		struct sockaddr_storage ss;
		socklen_t sl;

		sockaddr_of(&pm->listen, 0, &ss, &sl);
		if (bind(fd, (struct sockaddr *)&ss, sl) < 0) {
			snprintf(why, sizeof(why), "bind to the peer_listen address: %s", strerror(errno));
			close(fd);
			goto out_fail;
		}
	}
	r = connect(fd, (struct sockaddr *)&p->sa, p->salen);
	if (r < 0 && errno != EINPROGRESS) {
		snprintf(why, sizeof(why), "connect: %s", strerror(errno));
		close(fd);
		goto out_fail;
	}
	c = pconn_new(pm, fd);
	if (!c) {
		close(fd);
		snprintf(why, sizeof(why), "out of memory");
		goto out_fail;
	}
	c->peer = p;
	p->conn = c;
	c->ra = p->addr;
	snprintf(c->ratext, sizeof(c->ratext), "%s", p->addrtext);
	c->phase = PC_CONNECTING;
	c->conn_ev = event_new(pm->base, fd, EV_WRITE, connected_cb, c);
	struct timeval tv = tv_ms(PEER_HELLO_DEADLINE_MS);
	if (!c->conn_ev || event_add(c->conn_ev, NULL) < 0 || evtimer_add(c->deadline_ev, &tv) < 0) {
		pconn_close(c, "out of memory", 0);
		return;
	}
	log_debug("peer %s (%s): dialing", p->name, p->addrtext);
	return;

out_fail:
	/* same bookkeeping as a connection that failed */
	if (strcmp(p->last_error, why) != 0)
		log_info("peer %s (%s): %s", p->name, p->addrtext, why);
	snprintf(p->last_error, sizeof(p->last_error), "%s", why);
	if (p->dynamic)
		peer_expire(p);
	else
		peer_schedule_retry(p);
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct peer *p = arg;

	(void)fd;
	(void)what;
	if (p->expire) {
		p->expire = false;
		if (!p->conn && p->state != PEER_UP) {
			log_info("peer %s (%s): removed (added at run time; its connection is gone)",
				 p->name, p->addrtext);
			peer_remove(p, "its connection is gone");
		}
		return;
	}
	peer_dial(p);
}

static void peer_schedule_retry(struct peer *p)
{
	struct peermgr *pm = p->pm;
	uint32_t d;
	struct timeval tv;

	if (!p->dials || pm->stopping)
		return;
	/* 75%..125% of the backoff, so that restarted hosts do not dial in step */
	d = p->backoff_ms * 3 / 4 + rnd32(pm) % (p->backoff_ms / 2 + 1);
	tv = tv_ms(d);
	evtimer_add(p->retry_ev, &tv);
	p->backoff_ms = p->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : p->backoff_ms * 2;
}

/* ---- accepting ------------------------------------------------------------------------------ */

/* Of the connections waiting for a hello in the class other says, the
 * oldest from the host that holds the most: a host reconnecting to hold
 * slots closes its own first, and a daemon that arrives later still gets
 * in. Those that sent nothing go before those in the middle of a keyed
 * handshake (a real daemon there is two round trips from done). NULL if
 * none waits. */
static struct pconn *unident_victim(const struct peermgr *pm, bool other)
{
	for (int pass = 0; pass < 2; pass++) {
		struct pconn *v = NULL;
		uint32_t most = 0;

		/* pm->conns is newest first: ">=" keeps the oldest of a count */
		for (struct pconn *c = pm->conns; c; c = c->next) {
			uint32_t n = 0;

			if (!c->unidentified || c->unident_other != other ||
			    (pass == 0 && c->auth != PA_NONE))
				continue;
			for (const struct pconn *d = pm->conns; d; d = d->next)
				n += d->unidentified && d->unident_other == other &&
				     (pass == 1 || d->auth == PA_NONE) &&
				     conf_addr_same_host(&d->ra, &c->ra);
			if (n >= most) {
				most = n;
				v = c;
			}
		}
		if (v)
			return v;
	}
	return NULL;
}

static void accept_one(struct peermgr *pm, int fd, const struct sockaddr_storage *ss)
{
	struct conf_addr ra;
	struct pconn *c, *victim = NULL;
	char a[64];
	bool known, other;
	uint32_t suppressed = 0, waiting;
	struct timeval tv = tv_ms(PEER_HELLO_DEADLINE_MS);

	conf_addr_of(ss, &ra);
	conf_addr_fmt(&ra, true, a, sizeof(a));
	/* an unlisted host may say hello while dynamic_peers has room; such
	 * hosts wait in slots of their own, so that strangers holding
	 * connections open cannot keep a configured peer from coming back.
	 * A host that became a peer at run time is still no configured
	 * peer's: it may come back with dynamic_peers full, but waits among
	 * the strangers (one hello must not buy a stranger the peers'
	 * slots). */
	other = find_peer_by_host(pm, &ra, true) == NULL;
	known = !other || pm->n_dynamic < pm->max_dynamic || find_peer_by_host(pm, &ra, false);
	waiting = other ? pm->n_unident_other : pm->n_unident - pm->n_unident_other;
	if (known && waiting >= PEER_MAX_UNIDENTIFIED && pm->n_conns < MAX_CONNS_HARD &&
	    (victim = unident_victim(pm, other))) {
		/* room for the newcomer: a daemon says hello in its first round
		 * trip, so connections that hold a slot without finishing one
		 * cannot keep every peer out for as long as they reconnect */
		if (ratelog_allow(pm, RL_TOO_MANY, &ra, &suppressed))
			log_warn("peer connection from %s: %u connections from %s wait for a hello "
				 "already (limit %u): closing the oldest from the host with the most "
				 "(%s)%s", a, waiting, other ? "hosts that are no peer's" : "peers' hosts",
				 PEER_MAX_UNIDENTIFIED, victim->ratext,
				 suppressed ? "; more from this address were not logged" : "");
		pconn_close_ex(victim, NULL, "no hello in time, and its slot was wanted", -ETIMEDOUT);
	}
	if (pm->n_conns >= MAX_CONNS_HARD || (known && waiting >= PEER_MAX_UNIDENTIFIED && !victim)) {
		if (ratelog_allow(pm, RL_TOO_MANY, &ra, &suppressed))
			log_warn("peer connection from %s: refused: %u connections from %s wait for a "
				 "hello already (limit %u)%s", a, waiting,
				 other ? "hosts that are no peer's" : "peers' hosts", PEER_MAX_UNIDENTIFIED,
				 suppressed ? "; more refusals from this address were not logged" : "");
		close(fd);
		return;
	}
	c = pconn_new(pm, fd);
	if (!c) {
		log_warn("peer connection from %s: refused: out of memory", a);
		close(fd);
		return;
	}
	c->inbound = true;
	c->ra = ra;
	snprintf(c->ratext, sizeof(c->ratext), "%s", a);
	set_nodelay(fd);
	if (pconn_start_io(c) < 0 || evtimer_add(c->deadline_ev, &tv) < 0) {
		pconn_close(c, "out of memory", 0);
		return;
	}
	/* a host that is no peer's address is refused before its hello, and
	 * holds none of the slots of connections waiting for one */
	if (!known) {
		char why[192], h[64];

		conf_addr_fmt(&ra, false, h, sizeof(h));
		snprintf(why, sizeof(why), "%s is not the address of a configured peer of %s%s", h,
			 pm->host_name, pm->max_dynamic ? " (dynamic_peers all taken)" : "");
		refuse_unknown(c, why);
		return;
	}
	c->unidentified = true;
	pm->n_unident++;
	c->unident_other = other;
	pm->n_unident_other += other;
	log_debug("peer connection from %s: accepted", a);
}

static void accepted(void *arg, int fd, const struct sockaddr_storage *ss)
{
	accept_one(arg, fd, ss);
}

static int open_listener(struct peermgr *pm)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int one = 1, v6only, fd;
	char a[64];

	conf_addr_fmt(&pm->listen, true, a, sizeof(a));
	sockaddr_of(&pm->listen, pm->listen.port, &ss, &sl);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out_err;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6) {
		/* "[::]" takes IPv4 peers too */
		v6only = !conf_addr_is_any(&pm->listen);
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
	}
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, LISTEN_BACKLOG) < 0)
		goto out_err;
	pm->listen_fd = fd;
	if (listener_open(&pm->listener, pm->base, fd, "peer_listen", 1000, accepted, pm) < 0) {
		log_err("peer_listen %s: out of memory", a);
		return -ENOMEM;
	}
	return 0;

out_err:;
	int r = -errno;

	log_err("peer_listen %s: %s", a, strerror(errno));
	if (fd >= 0)
		close(fd);
	return r;
}

/* ---- peers: adding and removing ------------------------------------------------------------ */

/* dials: 1 or 0, or -1 to decide by the names (the one that sorts first). */
static struct peer *peer_new(struct peermgr *pm, const struct conf_peer *cp, int dials)
{
	struct peer *p;

	if (pm->n_peers >= PEERMGR_MAX)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->retry_ev = evtimer_new(pm->base, retry_cb, p);
	if (!p->retry_ev) {
		free(p);
		return NULL;
	}
	p->pm = pm;
	snprintf(p->name, sizeof(p->name), "%s", cp->name);
	p->addr = cp->addr;
	sockaddr_of(&cp->addr, cp->addr.port, &p->sa, &p->salen);
	conf_addr_fmt(&cp->addr, true, p->addrtext, sizeof(p->addrtext));
	p->dials = dials < 0 ? strcmp(pm->host_name, p->name) < 0 : dials > 0;
	p->state = PEER_CONNECTING;
	p->since_ms = now_ms();
	p->backoff_ms = BACKOFF_MIN_MS;
	p->keep = true;
	/* a peer made again under a name (reload, dynamic_peers) must not
	 * match what was bound to an earlier one's channels (they carry its
	 * generation): each starts above every earlier one's */
	p->generation = (uint64_t)pm->n_made++ << 32;
	pm->peers[pm->n_peers++] = p;
	if (p->dials) {
		struct timeval tv = { 0, 0 };

		evtimer_add(p->retry_ev, &tv);   /* dial from the loop */
	}
	return p;
}

static int peer_add(struct peermgr *pm, const struct conf_peer *cp)
{
	return peer_new(pm, cp, -1) ? 0 : -ENOMEM;
}

/* A dynamic peer named name at a (dialed by us or not), within
 * dynamic_peers; NULL past it or without memory. */
static struct peer *peer_add_dynamic(struct peermgr *pm, const char *name, const struct conf_addr *a,
				     bool dials)
{
	struct conf_peer cp = { .addr = *a };
	struct peer *p;

	if (pm->n_dynamic >= pm->max_dynamic)
		return NULL;
	snprintf(cp.name, sizeof(cp.name), "%s", name);
	p = peer_new(pm, &cp, dials);
	if (!p)
		return NULL;
	p->dynamic = true;
	pm->n_dynamic++;
	log_info("peer %s (%s): added at run time (%s; %u of dynamic_peers = %u)", p->name, p->addrtext,
		 dials ? "a client connects to it" : "it dialed us", pm->n_dynamic, pm->max_dynamic);
	return p;
}

/* A dial of ours that gives way to the other daemon's connection to us:
 * never dialed again, and no longer counted against dynamic_peers; it
 * goes once its connection is closed. */
static void peer_supersede(struct peer *p)
{
	if (p->superseded)
		return;
	p->superseded = true;
	p->pm->n_dynamic--;
	if (p->conn)
		pconn_close(p->conn, "the peer's own connection is used instead", -EEXIST);
	else
		peer_expire(p);
}

/* A dynamic peer whose connection is gone (or could not be made) goes
 * after peer_timeout_ms, unless a connection took its place by then; a
 * client's connect that wants it meanwhile dials it again
 * (peermgr_dynamic), and its last error stays to be told. */
static void peer_expire(struct peer *p)
{
	struct timeval tv = tv_ms(p->pm->timeout_ms);

	p->expire = true;
	if (!p->first_fail_ms)
		p->first_fail_ms = now_ms();
	evtimer_add(p->retry_ev, &tv);
}

static void peer_remove(struct peer *p, const char *why)
{
	struct peermgr *pm = p->pm;
	uint32_t i;

	/* a callback that retries must be refused at once, or failing the
	 * requests below would never finish */
	p->removing = true;
	/* removed by a reload (or gone for good, if dynamic), the peer is
	 * down to whoever asked it: a connect waits for it to come back, as
	 * for a peer that went down. Only a stopping daemon cancels. */
	peer_reqs_fail(p, pm->stopping ? -ECANCELED : -ENOTCONN);
	if (p->conn)
		pconn_close(p->conn, why, pm->stopping ? 0 : -ECONNRESET);
	event_free(p->retry_ev);
	for (i = 0; i < pm->n_peers && pm->peers[i] != p; i++)
		;
	memmove(&pm->peers[i], &pm->peers[i + 1], sizeof(pm->peers[0]) * (pm->n_peers - i - 1));
	pm->n_peers--;
	if (p->dynamic && !p->superseded)
		pm->n_dynamic--;
	free(p);
}

int peer_restart(struct peermgr *pm, const char *name, const char *why)
{
	struct peer *p = find_peer(pm, name);

	if (!p || p->removing)
		return -ESRCH;
	if (p->state != PEER_UP || !p->conn)
		return -ENOTCONN;
	pconn_close(p->conn, why, -ECONNRESET);
	return 0;
}

static bool is_self(const struct peermgr *pm, const struct conf_peer *cp)
{
	return strcmp(cp->name, pm->host_name) == 0;
}

/* ---- the manager ------------------------------------------------------------------------- */

int peermgr_start(struct event_base *base, const struct conf *c, peer_resolve_fn resolve,
		  void *resolve_arg, struct peermgr **out)
{
	struct peermgr *pm;
	char hn[256];
	int r;

	if (!c->peer_listen.family)
		return -EINVAL;
	pm = calloc(1, sizeof(*pm));
	if (!pm)
		return -ENOMEM;
	pm->base = base;
	pm->listen_fd = -1;
	pm->resolve = resolve;
	pm->resolve_arg = resolve_arg;
	pm->listen = c->peer_listen;
	pm->data_address = c->data_address.family ? c->data_address : c->peer_listen;
	pm->data_port = c->data_port;
	pm->data_paths = c->data_paths;
	pm->mtu = c->mtu;
	pm->max_inflight_bytes = c->max_inflight_bytes;
	pm->data_crc = c->data_crc;
	pm->timeout_ms = c->peer_timeout_ms;
	pm->max_dynamic = c->dynamic_peers;
	if (conf_host_name(c, hn, sizeof(hn)) < 0) {
		char shown[80];

		peerframe_sanitize(shown, sizeof(shown), hn);
		log_err("host name '%s' cannot name this daemon to its peers (1..%d of "
			"A-Z a-z 0-9 . _ -, whole or up to its first dot): set host_name in uccl.conf",
			shown, CONF_PEER_NAME_MAX);
		free(pm);
		return -EINVAL;
	}
	snprintf(pm->host_name, sizeof(pm->host_name), "%.*s", CONF_PEER_NAME_MAX, hn);   /* valid: fits */
	if (conf_addr_is_any(&pm->data_address)) {
		log_err("data_address: a wildcard address cannot be announced to peers");
		free(pm);
		return -EINVAL;
	}
	if (getrandom(&pm->rng, sizeof(pm->rng), GRND_NONBLOCK) != sizeof(pm->rng) || !pm->rng)
		pm->rng = now_us() | 1;
	if (c->peer_key_file[0]) {
		char why[CONF_PATH_MAX + 128];

		r = peerauth_key_load(c->peer_key_file, &pm->key, why, sizeof(why));
		if (r < 0) {
			log_err("%s", why);
			free(pm);
			return r;
		}
		snprintf(pm->key_file, sizeof(pm->key_file), "%s", c->peer_key_file);
	}
	r = open_listener(pm);
	if (r < 0)
		goto out_free;
	for (uint32_t i = 0; i < c->n_peers; i++) {
		if (is_self(pm, &c->peers[i])) {
			log_debug("peers: %s is this daemon; skipped", c->peers[i].name);
			continue;
		}
		r = peer_add(pm, &c->peers[i]);
		if (r < 0) {
			log_err("peers: out of memory");
			goto out_free;
		}
	}
	{
		char a[64];

		conf_addr_fmt(&pm->listen, true, a, sizeof(a));
		log_info("peering as %s on %s: %u peer(s), peer protocol %u, %s", pm->host_name, a,
			 pm->n_peers, PEER_PROTO_VERSION,
			 pm->key.len ? "peers authenticated (peer_key_file)" : "peers not authenticated");
	}
	*out = pm;
	return 0;

out_free:
	peermgr_free(pm);
	return r;
}

struct peermgr *peermgr_free(struct peermgr *pm)
{
	if (!pm)
		return NULL;
	pm->stopping = true;
	while (pm->n_peers)
		peer_remove(pm->peers[pm->n_peers - 1], "this daemon is stopping");
	while (pm->conns)
		pconn_free(pm->conns);
	peer_reqs_free(pm);
	listener_close(&pm->listener);
	if (pm->listen_fd >= 0)
		close(pm->listen_fd);
	peerauth_key_wipe(&pm->key);
	free(pm);
	return NULL;
}

/* The key read again (its file may have changed under the same name); it
 * counts for connections made from now on. */
static void peermgr_reload_key(struct peermgr *pm, const char *path, const struct peerauth_key *k)
{
	if (!k || !k->len) {
		if (pm->key.len) {
			log_info("peer_key_file = none: peers are no longer authenticated");
			pm->key_gen++;
		}
		peerauth_key_wipe(&pm->key);
		pm->key_file[0] = '\0';
		return;
	}
	if (!pm->key.len || k->len != pm->key.len || memcmp(k->b, pm->key.b, k->len) != 0) {
		log_info("peer_key_file %s: %s key for new peer connections", path,
			 pm->key.len ? "a new" : "peers authenticated from now on with its");
		pm->key_gen++;
	}
	pm->key = *k;
	snprintf(pm->key_file, sizeof(pm->key_file), "%s", path);
}

void peermgr_reload(struct peermgr *pm, const struct conf *c, const struct peerauth_key *key)
{
	if (pm->timeout_ms != c->peer_timeout_ms) {
		pm->timeout_ms = c->peer_timeout_ms;
		for (uint32_t i = 0; i < pm->n_peers; i++) {
			struct pconn *pc = pm->peers[i]->conn;

			if (pc && pc->phase == PC_UP) {
				arm_keepalive(pc, pm->peers[i]->their_timeout_ms);
				arm_silence(pc);
			}
		}
	}
	peermgr_reload_key(pm, c->peer_key_file, c->peer_key_file[0] ? key : NULL);
	/* a lower limit lets the dynamic peers there are stay until they go */
	pm->max_dynamic = c->dynamic_peers;
	/* removals first, so that the table never holds more than the limit */
	for (uint32_t i = 0; i < pm->n_peers; i++) {
		struct peer *p = pm->peers[i];

		/* a dynamic peer stays, unless the list now names it: then it
		 * goes and comes back as configured (address, who dials) */
		p->keep = p->dynamic;
		for (uint32_t k = 0; p->dynamic && k < c->n_peers; k++)
			if (strcmp(c->peers[k].name, p->name) == 0)
				p->keep = false;
	}
	for (uint32_t i = 0; i < c->n_peers; i++) {
		struct peer *p = is_self(pm, &c->peers[i]) ? NULL : find_peer(pm, c->peers[i].name);

		if (p && conf_addr_same_host(&p->addr, &c->peers[i].addr) &&
		    p->addr.port == c->peers[i].addr.port)
			p->keep = true;
	}
	for (uint32_t i = pm->n_peers; i-- > 0;) {
		struct peer *p = pm->peers[i];
		bool moved = false;

		if (p->keep)
			continue;
		for (uint32_t k = 0; k < c->n_peers; k++)
			moved |= strcmp(c->peers[k].name, p->name) == 0;
		if (moved) {
			log_info("peer %s (%s): address changed; reconnecting", p->name, p->addrtext);
			peer_remove(p, "its address changed in the configuration");
		} else {
			log_info("peer %s (%s): removed from the configuration", p->name, p->addrtext);
			peer_remove(p, "removed from the configuration");
		}
	}
	for (uint32_t i = 0; i < c->n_peers; i++) {
		const struct conf_peer *cp = &c->peers[i];
		char a[64];

		if (is_self(pm, cp) || find_peer(pm, cp->name))
			continue;
		conf_addr_fmt(&cp->addr, true, a, sizeof(a));
		if (peer_add(pm, cp) < 0)
			log_err("peer %s (%s): out of memory; not added", cp->name, a);
		else
			log_info("peer %s (%s): added", cp->name, a);
	}
}

/* A peer added at run time that was never up, whose first dial failed at
 * least NEVER_REACHED_MS ago and that only waits out peer_timeout_ms (to
 * tell a connect why): its place may go to another address. Else one
 * local client connecting again and again to dead addresses (each connect
 * dials again and restarts the wait) held every dynamic_peers place, and
 * every other client's connect by address failed. The second leaves a
 * connect waiting for it time to read why, and two such connects evicting
 * each other take at most one turn a second. NULL if there is none. */
#define NEVER_REACHED_MS 1000u

static struct peer *never_reached(const struct peermgr *pm)
{
	uint64_t now = now_ms();

	for (uint32_t i = 0; i < pm->n_peers; i++) {
		struct peer *p = pm->peers[i];

		if (p->dynamic && !p->superseded && !p->was_up && p->expire && !p->conn &&
		    p->state != PEER_UP && !p->removing && now - p->first_fail_ms >= NEVER_REACHED_MS)
			return p;
	}
	return NULL;
}

int peermgr_dynamic(struct peermgr *pm, const char *text, char *name, size_t len)
{
	struct conf_addr a;
	char canon[64];
	struct peer *p;

	if (conf_scan_addr_port(text, &a) < 0)
		return -EINVAL;
	if ((p = peer_at(pm, &a, false)))
		goto found;
	if (conf_addr_same_host(&pm->listen, &a) && pm->listen.port == a.port)
		return -EEXIST;
	conf_addr_fmt(&a, true, canon, sizeof(canon));
	if (strlen(canon) > CONF_PEER_NAME_MAX)
		return -ENAMETOOLONG;
	if ((p = find_peer(pm, canon)))
		goto found;
	if (pm->max_dynamic == 0)
		return -EPERM;
	if (pm->n_dynamic >= pm->max_dynamic || pm->n_peers >= PEERMGR_MAX) {
		struct peer *v = never_reached(pm);

		if (!v)
			return -EUSERS;
		log_info("peer %s (%s): removed (added at run time and never reached; %s takes its "
			 "place)", v->name, v->addrtext, canon);
		peer_remove(v, "never reached, and its place was wanted");
	}
	p = peer_add_dynamic(pm, canon, &a, true);
	if (!p)
		return -ENOMEM;
found:
	if (p->dynamic && p->dials && !p->superseded && !p->conn && p->state != PEER_UP &&
	    !pm->stopping) {
		p->expire = false;
		event_del(p->retry_ev);
		peer_dial(p);          /* failing, it expires again */
	}
	if (name)
		snprintf(name, len, "%s", p->name);
	return 0;
}

void peermgr_last_error(const struct peermgr *pm, const char *name, char *buf, size_t len)
{
	const struct peer *p = find_peer(pm, name);

	snprintf(buf, len, "%s", p ? p->last_error : "");
}

const char *peermgr_host_name(const struct peermgr *pm)
{
	return pm->host_name;
}

bool peermgr_has_key(const struct peermgr *pm)
{
	return pm->key.len != 0;
}

void peermgr_listen_text(const struct peermgr *pm, char *buf, size_t len)
{
	conf_addr_fmt(&pm->listen, true, buf, len);
}

size_t peermgr_count(const struct peermgr *pm)
{
	return pm->n_peers;
}

size_t peermgr_status(const struct peermgr *pm, struct peer_status *out, size_t max)
{
	uint64_t now = now_ms();
	size_t n = 0;

	for (uint32_t i = 0; i < pm->n_peers && n < max; i++, n++) {
		const struct peer *p = pm->peers[i];
		struct peer_status *s = &out[n];

		memset(s, 0, sizeof(*s));
		snprintf(s->name, sizeof(s->name), "%s", p->name);
		snprintf(s->address, sizeof(s->address), "%s", p->addrtext);
		s->state = p->state;
		s->since_ms = now - p->since_ms;
		s->dials = p->dials;
		s->has_rtt = p->has_rtt;
		s->rtt_us = p->rtt_us;
		s->tx_token_set = p->tx_token != 0;
		s->rx_token_set = p->rx_token != 0;
		s->announced = p->announced;
		snprintf(s->host_name, sizeof(s->host_name), "%s", p->host);
		snprintf(s->data_address, sizeof(s->data_address), "%s", p->data_addr);
		s->data_port = p->data_port;
		s->data_paths = p->data_paths;
		s->mtu = p->mtu;
		s->max_inflight_bytes = p->max_inflight_bytes;
		s->reconnects = p->reconnects;
		s->dynamic = p->dynamic;
		s->authenticated = p->state == PEER_UP && p->authenticated;
		snprintf(s->last_error, sizeof(s->last_error), "%s", p->last_error);
	}
	return n;
}

void peermgr_set_lanes(struct peermgr *pm, uint32_t lanes)
{
	pm->lanes = lanes;
}

void peermgr_set_thread_ports(struct peermgr *pm, const uint32_t *ports, uint32_t n)
{
	pm->n_threads = n;
	for (uint32_t i = 0; i < n && i < 16; i++)
		pm->thread_ports[i] = ports[i];
}

int peer_get(const struct peermgr *pm, const char *name, struct peer_info *out)
{
	const struct peer *p = find_peer(pm, name);
	struct conf_addr a;

	if (!p)
		return -ENOENT;
	if (p->state != PEER_UP)
		return -ENOTCONN;
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", p->name);
	if (!data_addr_of(p->data_addr, &a))
		return -EPROTO;   /* cannot happen: checked in its hello */
	sockaddr_of(&a, (uint16_t)p->data_port, &out->data_addr, &out->data_addrlen);
	out->data_paths = p->data_paths;
	out->knows_threads = p->knows_threads;
	out->n_threads = p->n_threads ? p->n_threads : 1;
	for (uint32_t i = 0; i < out->n_threads; i++)
		out->thread_port[i] = p->n_threads ? p->thread_ports[i] : p->data_port;
	out->lanes = p->lanes;
	out->max_inflight_bytes = p->max_inflight_bytes;
	out->data_crc = p->data_crc;
	out->mtu = p->mtu;
	out->tx_token = p->tx_token;
	out->rx_token = p->rx_token;
	out->generation = p->generation;
	return 0;
}

void peermgr_set_notify(struct peermgr *pm, peer_event_fn fn, void *arg)
{
	pm->notify = fn;
	pm->notify_arg = arg;
}
