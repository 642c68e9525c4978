/* SPDX-License-Identifier: MIT */
/*
 * rconn: connections to endpoints on other hosts, main-thread side. The
 * engine does the transport; this keeps the engine's channels in step with
 * the peer daemons (daemon/peer.c) and runs the connect handshake:
 *
 *   A (connect "hostB/name")              B (listens as "name")
 *   RCONN_ADD our side (receives at once)
 *   ConnectReq(name, our ep, our wire) --> RCONN_ADD + RCONN_CONNECT its side,
 *                                          queue it for accept
 *   RCONN_CONNECT our side           <--- ConnectRep(its ep, its wire)
 *   reply to the client
 *
 * Our side exists in the engine before the peer's does, so data the
 * accepting application sends at once is never refused.
 *
 * Engine threads: towards a peer with M threads each of our N threads has
 * M sub-channels (its own tpchan, CC and paths), all made when the peer
 * comes up and removed when it goes. Connection (our thread i, its thread
 * j) uses sub-channel j of thread i, engine id nthr_chan(slot, j). When the
 * peer has several threads we first look the name up (LookupRep names the
 * listener's thread), so that our side is bound to the right sub-channel
 * before the peer's side can send; ConnectReq then names both threads. A wire id is
 * conn | generation << 16: a late packet for an earlier connection on the
 * same conn id is refused by the engine, not delivered into the new one.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <event2/event.h>

#include "daemon/chancc.h"
#include "daemon/daemon.h"
#include "daemon/engthr.h"
#include "daemon/lanes.h"
#include "daemon/log.h"
#include "daemon/names.h"
#include "daemon/nthr.h"
#include "daemon/peer.h"
#include "daemon/rconn.h"
#include "daemon/xconn.h"
#include "daemon/session.h"
#include "engine/cc/cc.h"

/* A data channel idle this long gives its per-packet state back (tpchan
 * idle_release_ns): long against an RTT, short against a peer gone quiet. */
#define CHAN_IDLE_RELEASE_NS 100000000ull   /* 100 ms */

struct dchan {
	bool used;                     /* a peer name holds this id */
	bool up;                       /* the engine has (or is getting) the channel */
	char peer[CONF_PEER_NAME_MAX + 1];
	uint64_t generation;
	uint64_t up_ms;
	uint32_t paths, mtu;
	bool crc;                      /* its DATA packets carry crc32c (either side's data_crc) */
	uint32_t rthreads;             /* the peer's engine threads: sub-channels per thread */
	bool knows_threads;            /* it reads the thread fields of connects */
	uint32_t rlanes;               /* its lanes (daemon/lanes.h) */
	uint64_t tag;                  /* this time up: what its engine channels report with */
};

struct rconn_chans {
	struct dchan ch[RCONN_MAX_CHANS];
	uint64_t tags;                 /* the last dchan.tag given */
};

/* A connect in progress; the session is parked (busy) meanwhile. */
struct rcon {
	struct session *s;             /* referenced */
	struct dep *ep;                /* valid while !s->closing */
	uint32_t conn, wire, chan;
	uint32_t rthr;                 /* the listener's engine thread there */
	uint32_t rep_ep, rep_conn;     /* the peer's side, once it accepted */
	uint32_t lanes;                /* lane sides bound with ours */
	uint64_t generation;           /* of the channel our side was bound to */
	bool looked_up;                /* rthr is known */
	bool bound;                    /* RCONN_ADD done */
	bool rebind;                   /* unbinding to start over, not to fail */
	char peer[CONF_PEER_NAME_MAX + 1];
	char name[66];
	bool dynamic;                  /* peer named by its address: dialed on demand */
	char target[CONF_PEER_NAME_MAX + 1]; /* that ADDRESS:PORT, as the client gave it */
	uint64_t deadline_ms;
	struct event *retry;
	int last_err;
	char last_why[224];
	/* the peer's last error as last seen (a dial that failed, or why it
	 * went down): a run-time peer that lost its place to another address
	 * takes its own with it */
	char dial_why[160];
};

static struct dchan *chan_by_name(struct daemon *d, const char *peer, uint32_t *id)
{
	for (uint32_t i = 0; i < RCONN_MAX_CHANS; i++) {
		if (d->rchans->ch[i].used && strcmp(d->rchans->ch[i].peer, peer) == 0) {
			*id = i;
			return &d->rchans->ch[i];
		}
	}
	return NULL;
}

/* Whether channel id is still the one that was up for peer at generation:
 * the slot may be another peer's by now, at the same generation number
 * (each peer counts its own), so the name tells them apart. */
static bool chan_is(const struct daemon *d, uint32_t id, const char *peer, uint64_t generation)
{
	const struct dchan *ch = &d->rchans->ch[id];

	return ch->used && ch->up && ch->generation == generation && strcmp(ch->peer, peer) == 0;
}

/* ---- channels follow the peers ---- */

/* Every open connection over chan is reset in the engine by the channel's
 * removal; mark them here too. */
static void mark_reset(struct daemon *d, uint32_t chan)
{
	for (struct session *s = d->sessions; s; s = s->next) {
		for (struct dep *ep = s->eps; ep; ep = ep->next) {
			for (uint32_t i = 0; i < ep->max_conns; i++) {
				struct dconn *dc = &ep->conns[i];

				if (dc->remote && dc->chan == chan && dc->state == CONN_OPEN)
					dc->state = CONN_RESET;
			}
		}
	}
}

static void chan_down(struct daemon *d, uint32_t id, const char *why)
{
	struct dchan *ch = &d->rchans->ch[id];

	if (!ch->up)
		return;
	for (uint32_t i = 0; i < d->n_thr; i++) {
		for (uint32_t j = 0; j < ch->rthreads; j++) {
			struct engcmd *c = calloc(1, sizeof(*c));

			if (!c)
				abort();   /* a channel must not outlive its peer */
			c->type = ENGCMD_CHAN_REMOVE;
			c->u.chan_rm.chan = nthr_chan(id, j, RCONN_MAX_CHANS);
			c->u.chan_rm.err = -ECONNRESET;
			engthr_submit_owned(d->thr[i], c);
		}
	}
	ch->up = false;
	mark_reset(d, id);
	log_info("peer %s: data channel %u closed (%s); its connections are reset", ch->peer, id, why);
}

/* The peer's thread j data address: its announced address at j's port. */
static void thread_addr(const struct peer_info *pi, uint32_t j, struct sockaddr_storage *ss)
{
	memcpy(ss, &pi->data_addr, sizeof(*ss));
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)pi->thread_port[j]);
	else
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)pi->thread_port[j]);
}

/* The command that adds sub-channel (our thread i, its thread j) of peer
 * channel id; NULL without memory. */
static struct engcmd *subchan_cmd(struct daemon *d, uint32_t id, uint32_t i, uint32_t j,
				  const struct peer_info *pi, uint32_t mtu, const struct cc_ops *cc)
{
	const struct conf *cf = &d->conf;
	struct engcmd *c = calloc(1, sizeof(*c));
	/* mtu is the link's: a UDP payload of mtu bytes would be an IP
	 * datagram too big for it (fragmented, and GSO refused) */
	uint32_t ip_udp = pi->data_addr.ss_family == AF_INET6 ? 48 : 28;
	uint64_t seed = 0;

	if (!c)
		return NULL;
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = daemon_now_ms() ^ id ^ (uint64_t)(i * 16 + j) << 32;
	c->type = ENGCMD_CHAN_ADD;
	c->u.chan.chan = nthr_chan(id, j, RCONN_MAX_CHANS);
	if (j == 0)
		memcpy(&c->u.chan.addr, &pi->data_addr, sizeof(pi->data_addr));
	else
		thread_addr(pi, j, &c->u.chan.addr);
	c->u.chan.addrlen = pi->data_addrlen;
	c->u.chan.tag = d->rchans->ch[id].tag;
	/* the receiving NIC knows a peer by its first data_paths ports */
	rconn_chan_params(d, mtu - ip_udp, pi->data_paths < cf->data_paths ? pi->data_paths
					   : cf->data_paths, pi->max_inflight_bytes, cc, pi->tx_token,
			  pi->rx_token, seed, &c->u.chan.p);
	/* both directions carry a crc if either side wants one */
	c->u.chan.p.crc = cf->data_crc || pi->data_crc;
	return c;
}

void rconn_chan_params(const struct daemon *d, uint32_t payload_mtu, uint32_t npaths,
		       uint64_t peer_inflight, const struct cc_ops *cc, uint64_t tx_token,
		       uint64_t rx_token, uint64_t seed, struct tpchan_params *out)
{
	const struct conf *cf = &d->conf;
	/* the scoreboards hold max_inflight_bytes in full packets, and no
	 * more go than the peer's window takes (it sizes it the same way) */
	uint32_t win = tpchan_inflight_pkts(cf->max_inflight_bytes, payload_mtu);
	uint32_t peer_win = tpchan_inflight_pkts(peer_inflight, payload_mtu);

	*out = (struct tpchan_params){
		.tx_token = tx_token,
		.rx_token = rx_token,
		.mtu = payload_mtu,
		.chunk_bytes = cf->chunk_bytes,
		.npaths = npaths,
		.max_inflight_pkts = win < peer_win ? win : peer_win,
		.rx_window_pkts = win,
		.max_inflight_bytes = cf->max_inflight_bytes,
		.max_msgs = cf->max_inflight_msgs,
		.go_back_n = cf->go_back_n,
		.adaptive_chunk = cf->adaptive_chunk,
		.path_per_packet = cf->path_per_packet,
		.path_run_bytes = cf->path_run_bytes,
		.rto_min_ns = (uint64_t)cf->rto_min_us * 1000,
		.ack_hold_ns = (uint64_t)cf->ack_hold_us * 1000,
		.dupthresh = cf->dupthresh,
		.rack_off = !cf->reorder_window,
		.cc_base_rtt_ns = (uint64_t)cf->cc_base_rtt_us * 1000,
		.cc = cc,
		.cc_delay_slack_ns = (uint64_t)cf->cc_delay_slack_us * 1000,
		.rto_init_ns = (uint64_t)cf->rto_min_us * 4000,
		.crc = cf->data_crc,
		.tx_gather = cf->udp_tx_gather,
		.seed = seed,
		/* an idle peer keeps ~1 KB, not the window's scoreboards */
		.idle_release_ns = CHAN_IDLE_RELEASE_NS,
	};
}

static void chan_up(struct daemon *d, uint32_t id, const struct peer_info *pi)
{
	struct dchan *ch = &d->rchans->ch[id];
	const struct conf *cf = &d->conf;
	uint32_t mtu = pi->mtu < cf->mtu ? pi->mtu : cf->mtu;
	const struct cc_ops *cc = chancc_for(d, pi->name);
	uint32_t rthreads = pi->n_threads < CONF_MAX_ENGINE_THREADS ? pi->n_threads
								    : CONF_MAX_ENGINE_THREADS;
	uint32_t rows = rthreads ? rthreads : 1, n = d->n_thr * rows, k;
	struct engcmd **cmds;
	bool ok;

	ch->rthreads = 0;
	ch->tag = ++d->rchans->tags;
	/* every sub-channel's command first, then all of them, or none: a
	 * connection placed on a thread without its sub-channel would wait
	 * for a channel that never comes */
	cmds = calloc(n, sizeof(*cmds));
	ok = cmds != NULL;
	for (k = 0; ok && k < n; k++)
		ok = (cmds[k] = subchan_cmd(d, id, k % d->n_thr, k / d->n_thr, pi, mtu, cc)) != NULL;
	if (!ok)
		log_err("peer %s: out of memory for its data channel; the channel stays down", pi->name);
	/* the engine threads build the channels later, with nobody to tell:
	 * settings are checked here (alike for all) */
	else if (!tpchan_params_ok(&cmds[0]->u.chan.p)) {
		log_err("peer %s: the transport refuses its data channel's settings (mtu %u, "
			"chunk_bytes, max_inflight_bytes, rto_min_us); the channel stays down",
			pi->name, mtu);
		ok = false;
	}
	if (ok) {
		ch->paths = cmds[0]->u.chan.p.npaths;
		ch->crc = cmds[0]->u.chan.p.crc;
		ch->rthreads = rows;
	}
	for (k = 0; k < n && cmds; k++) {
		if (ok)
			engthr_submit_owned(d->thr[k % d->n_thr], cmds[k]);
		else
			free(cmds[k]);
	}
	free(cmds);
	if (ch->rthreads == 0)
		return;
	ch->up = true;
	ch->knows_threads = pi->knows_threads;
	ch->rlanes = pi->lanes;
	ch->generation = pi->generation;
	ch->up_ms = daemon_now_ms();
	ch->mtu = mtu;
	if (d->n_thr == 1 && ch->rthreads == 1)
		log_info("peer %s: data channel %u up (mtu %u, %u paths, %s recovery, cc %s%s)", pi->name,
			 id, ch->mtu, ch->paths, cf->go_back_n ? "go-back-n" : "selective", cc->name,
			 ch->crc ? ", crc32c" : "");
	else
		log_info("peer %s: data channel %u up, %u x %u sub-channels (our threads x its) "
			 "(mtu %u, %u paths, %s recovery, cc %s%s)", pi->name, id, d->n_thr, ch->rthreads,
			 ch->mtu, ch->paths, cf->go_back_n ? "go-back-n" : "selective", cc->name,
			 ch->crc ? ", crc32c" : "");
}

/* The IP address of ss, port left out, in out (16 bytes, v4 as v4-mapped). */
static void ip_of(const struct sockaddr_storage *ss, uint8_t out[16])
{
	memset(out, 0, 16);
	if (ss->ss_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	} else {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	}
}

/* Does pi announce a data port that another peer that is up announced at
 * the same address? Our NIC knows a peer's packets by their source port
 * (the highest base at or below it wins), which is right for daemons that
 * bind their ports, but a peer announcing a base inside another's ports
 * would take that peer's packets. The first one keeps them. */
static bool ports_clash(struct daemon *d, const struct peer_info *pi, char *why, size_t len)
{
	uint8_t ip[16], oip[16];
	uint32_t n = pi->n_threads ? pi->n_threads : 1;

	ip_of(&pi->data_addr, ip);
	for (uint32_t k = 0; k < RCONN_MAX_CHANS; k++) {
		const struct dchan *o = &d->rchans->ch[k];
		struct peer_info oi;
		uint32_t on;

		if (!o->used || !o->up || strcmp(o->peer, pi->name) == 0 ||
		    peer_get(d->peers, o->peer, &oi) < 0 || oi.data_addrlen == 0)
			continue;
		ip_of(&oi.data_addr, oip);
		if (memcmp(ip, oip, 16) != 0)
			continue;
		on = oi.n_threads ? oi.n_threads : 1;
		for (uint32_t j = 0; j < n && j < 16; j++) {
			for (uint32_t m = 0; m < on && m < 16; m++) {
				uint32_t a = pi->thread_port[j], b = oi.thread_port[m];

				if (a < b + oi.data_paths && b < a + pi->data_paths) {
					snprintf(why, len, "its data ports %u-%u overlap those of peer %s "
						 "(%u-%u) at the same address", a, a + pi->data_paths - 1,
						 oi.name, b, b + oi.data_paths - 1);
					return true;
				}
			}
		}
	}
	return false;
}

/* peer_restart from the event loop, not from inside the peer manager's
 * notification that the peer came up */
struct restart_later {
	struct daemon *d;
	char name[CONF_PEER_NAME_MAX + 1];
	char why[256];
};

static void restart_later_cb(evutil_socket_t fd, short what, void *arg)
{
	struct restart_later *r = arg;

	(void)fd;
	(void)what;
	peer_restart(r->d->peers, r->name, r->why);
	free(r);
}

static void on_peer_event(void *arg, const char *name, bool up, uint64_t generation)
{
	struct daemon *d = arg;
	struct peer_info pi;
	struct dchan *ch;
	char why[256];
	uint32_t id = 0;

	ch = chan_by_name(d, name, &id);
	if (!up) {
		if (ch) {
			chan_down(d, id, "peer down");
			ch->used = false;
		}
		return;
	}
	if (peer_get(d->peers, name, &pi) < 0 || pi.data_addrlen == 0 || pi.generation != generation)
		return;                /* gone again, or its data plane is not announced */
	if (ports_clash(d, &pi, why, sizeof(why))) {
		struct restart_later *r = calloc(1, sizeof(*r));
		struct timeval now = { 0, 0 };

		log_err("peer %s: %s; closing its connection", name, why);
		if (ch) {
			chan_down(d, id, why);
			ch->used = false;
		}
		if (r) {
			r->d = d;
			snprintf(r->name, sizeof(r->name), "%s", name);
			snprintf(r->why, sizeof(r->why), "%s", why);
			if (event_base_once(d->base, -1, EV_TIMEOUT, restart_later_cb, r, &now) < 0)
				free(r);
		}
		return;
	}
	if (!ch) {
		for (id = 0; id < RCONN_MAX_CHANS && d->rchans->ch[id].used; id++)
			;
		if (id == RCONN_MAX_CHANS) {
			log_err("peer %s: no free data channel (max %u)", name, RCONN_MAX_CHANS);
			return;
		}
		ch = &d->rchans->ch[id];
		memset(ch, 0, sizeof(*ch));
		ch->used = true;
		snprintf(ch->peer, sizeof(ch->peer), "%s", name);
	}
	if (ch->up && ch->generation == generation)
		return;
	chan_down(d, id, "peer restarted with new tokens");
	chan_up(d, id, &pi);
}

/* A sub-channel to peer gave up (a packet went unacknowledged max_retx
 * times) while the control connection stayed up: the engine refuses new
 * connections over it. Restarting the peer rebuilds every channel to it on
 * both sides, with new tokens; connections over it were reset already. */
static void chan_failed(struct daemon *d, const char *peer, uint32_t id, uint64_t generation)
{
	/* only the channel the refusal came from: a late one must not
	 * restart a peer that is already back with fresh channels */
	if (!chan_is(d, id, peer, generation))
		return;
	if (!d->peers || peer_restart(d->peers, peer, "data channel failed: rebuilding it") < 0)
		return;
	log_warn("peer %s: a data channel gave up while the peer stayed connected; "
		 "restarting the peer to rebuild its channels", peer);
}

void rconn_chan_gave_up(void *arg, uint32_t thread, uint32_t chan, uint64_t tag)
{
	struct daemon *d = arg;
	uint32_t id = 0, k = 0;
	const struct dchan *ch;

	/* channels between our own threads are past the peers' (xconn.c) */
	if (nthr_chan_of(chan, RCONN_MAX_CHANS, &id, &k)) {
		xconn_chan_gave_up(d, thread, k, tag);
		return;
	}
	if (!d->rchans)
		return;
	ch = &d->rchans->ch[id];
	if (!ch->used || !ch->up || ch->tag != tag)
		return;
	chan_failed(d, ch->peer, id, ch->generation);
}

/* ---- connecting (our side) ---- */

static void rcon_free(struct rcon *rc)
{
	struct session *s = rc->s;

	if (rc->retry)
		event_free(rc->retry);
	free(rc);
	session_unref(s);
}

static struct dconn *rcon_dconn(struct rcon *rc)
{
	return &rc->ep->conns[rc->conn];
}

/* Release our conn id (after the engine forgot the side, if it had it). */
static void rcon_later(struct rcon *rc, int err, const char *why);

static void unbind_done(struct engcmd *c)
{
	struct rcon *rc = c->ctx;

	if (!rc->s->closing && rc->rebind) {
		char why[sizeof(rc->last_why)];

		struct dconn *dc = rcon_dconn(rc);

		/* a copy: rcon_later may format into rc->last_why */
		snprintf(why, sizeof(why), "%s", rc->last_why);
		/* the next attempt knows no peer side yet: a close meant for
		 * this one must not match it (on_conn_close), and a grace
		 * reset armed for this one finds the side no longer reset */
		dc->state = CONN_PENDING;
		dc->peer_ep = UINT32_MAX;
		dc->peer_conn = 0;
		rc->rebind = false;
		rc->bound = false;
		rc->looked_up = false;
		rcon_later(rc, rc->last_err, why);
		session_cmd_finish(c);
		return;
	}
	if (!rc->s->closing) {
		struct dconn *dc = rcon_dconn(rc);

		dc->state = CONN_FREE;
		dc->remote = false;
		rc->ep->n_conns--;
		session_reply_err(rc->s, rc->last_err, "%s", rc->last_why);
	}
	rcon_free(rc);
	session_cmd_finish(c);
}

static void rcon_fail(struct rcon *rc, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The engine forgets our side; unbind_done goes on. */
static void rcon_unbind(struct rcon *rc)
{
	struct engcmd *c = session_cmd_new(rc->s, ENGCMD_CONN_REMOVE, unbind_done);

	if (!c)
		abort();               /* the engine must forget the side */
	c->ctx = rc;
	c->u.conn_rm.ep = rc->ep->id;
	c->u.conn_rm.conn = rc->conn;
	engthr_submit(EP_THR(rc->s->d, rc->ep), c);
	lanes_unbind(rc->s->d, rc->ep, rc->conn, rc->lanes);
}

static void rcon_fail(struct rcon *rc, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rc->last_why, sizeof(rc->last_why), fmt, ap);
	va_end(ap);
	rc->last_err = err;
	if (rc->s->closing) {
		rcon_free(rc);         /* the endpoint's removal drops our side */
		return;
	}
	if (!rc->bound) {
		struct dconn *dc = rcon_dconn(rc);

		dc->state = CONN_FREE;
		dc->remote = false;
		rc->ep->n_conns--;
		session_reply_err(rc->s, err, "%s", rc->last_why);
		rcon_free(rc);
		return;
	}
	rcon_unbind(rc);
}

/* The peer went down, or came back, while we connected: forget our side
 * and start over on the channel it comes back with, within the connect's
 * deadline (the peer's side, if it made one, went with its channel). */
static void rcon_rebind(struct rcon *rc, int err, const char *why)
{
	if (rc->s->closing || !rc->bound) {
		rcon_later(rc, err, why);
		return;
	}
	snprintf(rc->last_why, sizeof(rc->last_why), "%s", why);
	rc->last_err = err;
	rc->rebind = true;
	rcon_unbind(rc);
}

static void rcon_step(struct rcon *rc);

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	rcon_step(arg);
}

/* Not there yet: try again shortly, or give up at the deadline. */
static void rcon_later(struct rcon *rc, int err, const char *why)
{
	struct timeval tv = { .tv_sec = 0, .tv_usec = RCONN_RETRY_MS * 1000 };

	if (rc->s->closing || daemon_now_ms() + RCONN_RETRY_MS > rc->deadline_ms) {
		rcon_fail(rc, err, "%s", why);
		return;
	}
	if (!rc->retry)
		rc->retry = evtimer_new(rc->s->d->base, retry_cb, rc);
	if (!rc->retry) {
		rcon_fail(rc, -ENOMEM, "out of memory");
		return;
	}
	evtimer_add(rc->retry, &tv);
}

/* The peer accepted, but our side will not use the connection: its side
 * must go too, or it sits in the listener's backlog with nobody behind it. */
static void tell_peer_closed(struct rcon *rc, uint32_t rep_ep, uint32_t rep_conn, uint32_t our_ep)
{
	struct daemon *d = rc->s->d;

	if (d->peers)          /* NULL once the daemon is stopping: nobody to tell */
		peer_conn_close(d->peers, rc->peer, rep_ep, rep_conn, our_ep, rc->wire);
}

static void rcon_connected(struct rcon *rc, int err);

/* Whether the channel our side was bound to is still the one up. */
static bool rcon_chan_same(const struct rcon *rc)
{
	return chan_is(rc->s->d, rc->chan, rc->peer, rc->generation);
}

static void lanes_connected(void *arg, int err)
{
	rcon_connected(arg, err);
}

static void connect_done(struct engcmd *c)
{
	struct rcon *rc = c->ctx;
	int r;

	if (c->result == 0 && !rc->s->closing && rc->lanes) {
		/* the peer's lanes are bound (it answered): ours learn its side */
		r = lanes_connect(rc->s, rc->ep, rc->conn, rc->lanes, rc->rep_ep, rc->rep_conn,
				  lanes_connected, rc);
		if (r < 0)
			rcon_connected(rc, r);
	} else {
		rcon_connected(rc, c->result);
	}
	session_cmd_finish(c);
}

/* Our side (and its lanes) named the peer's, or failed to. */
static void rcon_connected(struct rcon *rc, int err)
{
	struct session *s = rc->s;

	if (s->closing) {
		/* the endpoint's conns may be gone: peer_answered kept them in rc */
		tell_peer_closed(rc, rc->rep_ep, rc->rep_conn, UINT32_MAX);
		rcon_free(rc);
		return;
	}
	if (err < 0) {
		tell_peer_closed(rc, rc->rep_ep, rc->rep_conn, rc->ep->id);
		if (!rcon_chan_same(rc)) {
			/* the channel went, or came back, while our side (or a
			 * lane's) connected: start over, as in the success case */
			char why[96];

			snprintf(why, sizeof(why), "peer %s went down while connecting", rc->peer);
			rcon_rebind(rc, -ECONNRESET, why);
			return;
		}
		rcon_fail(rc, err, "connection to %s/%s was reset before it completed", rc->peer,
			  rc->name);
	} else {
		UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
		UcclCtl__ConnectRep cr = UCCL_CTL__CONNECT_REP__INIT;
		struct dconn *dc = rcon_dconn(rc);

		/* the channel went (or came back) after the connect was queued:
		 * its removal reset our side behind it, and mark_reset skipped
		 * it (pending) */
		if (!rcon_chan_same(rc)) {
			char why[96];

			snprintf(why, sizeof(why), "peer %s went down while connecting", rc->peer);
			rcon_rebind(rc, -ECONNRESET, why);
			return;
		}
		/* reset already if the peer closed its side meanwhile
		 * (on_conn_close): the client learns it from its operations */
		if (dc->state == CONN_PENDING)
			dc->state = CONN_OPEN;
		cr.conn_id = rc->conn;
		rep.body_case = UCCL_CTL__REPLY__BODY_CONNECT;
		rep.connect = &cr;
		log_debug("client %u endpoint %u conn %u -> %s endpoint %u (wire %#x, %u lanes)", s->id,
			  rc->ep->id, rc->conn, rc->peer, dc->peer_ep, dc->peer_conn, rc->lanes);
		session_reply(s, 0, NULL, &rep, NULL, 0);
		rcon_free(rc);
	}
}

static void peer_answered(void *arg, int status, uint32_t rep_ep, uint32_t rep_conn)
{
	struct rcon *rc = arg;
	struct session *s = rc->s;
	struct dconn *dc;
	struct engcmd *c;

	if (s->closing) {
		/* nobody will use it: the peer's side must go too */
		if (status == 0)
			tell_peer_closed(rc, rep_ep, rep_conn, UINT32_MAX);
		rcon_free(rc);
		return;
	}
	if (status == -ENOENT || status == -ESTALE) {
		char why[160];

		if (status == -ENOENT)
			snprintf(why, sizeof(why), "no endpoint listens on '%s' at %s", rc->name, rc->peer);
		else
			snprintf(why, sizeof(why), "'%s' at %s moved to another engine thread while "
				 "connecting", rc->name, rc->peer);
		if (!rc->looked_up && status == -ENOENT) {
			rcon_later(rc, -ECONNREFUSED, why);
			return;
		}
		/* the listener found on one of the peer's threads went, or is
		 * on another now: our side is unbound and it is looked up anew */
		rc->looked_up = false;
		rcon_rebind(rc, -ECONNREFUSED, why);
		return;
	}
	if (status == -ETIMEDOUT) {
		rcon_fail(rc, status, "%s did not answer the connect to '%s' in time", rc->peer, rc->name);
		return;
	}
	if (status == -ENOTCONN) {
		char why[96];

		snprintf(why, sizeof(why), "peer %s went down while connecting", rc->peer);
		rcon_rebind(rc, -ECONNRESET, why);
		return;
	}
	if (status < 0) {
		rcon_fail(rc, status, "%s refused the connection to '%s': %s", rc->peer, rc->name,
			  strerror(-status));
		return;
	}
	dc = rcon_dconn(rc);
	dc->peer_ep = rep_ep;
	dc->peer_conn = rep_conn;
	rc->rep_ep = rep_ep;
	rc->rep_conn = rep_conn;
	c = session_cmd_new(s, ENGCMD_RCONN_CONNECT, connect_done);
	if (!c) {
		tell_peer_closed(rc, rep_ep, rep_conn, rc->ep->id);
		rcon_fail(rc, -ENOMEM, "out of memory");
		return;
	}
	c->ctx = rc;
	c->u.rconn_c.ep = rc->ep->id;
	c->u.rconn_c.conn = rc->conn;
	c->u.rconn_c.rep = rep_ep;
	c->u.rconn_c.rwire = rep_conn;
	engthr_submit(EP_THR(s->d, rc->ep), c);
}

/* How long one request to the peer daemon may take: what is left of the
 * connect's timeout, but at least a second (capped by ctl_timeout_ms): a
 * connect with timeout 0, or one whose listener appeared late, would
 * otherwise give the peer a millisecond and fail with a listener there. */
#define RCON_ASK_MIN_MS 1000u

static uint32_t ask_ms(const struct rcon *rc)
{
	uint64_t now = daemon_now_ms();
	uint32_t min = rc->s->d->conf.ctl_timeout_ms < RCON_ASK_MIN_MS ?
			       rc->s->d->conf.ctl_timeout_ms : RCON_ASK_MIN_MS;
	uint64_t left = rc->deadline_ms > now ? rc->deadline_ms - now : 0;

	return left > min ? (uint32_t)left : min;   /* ctl_timeout_ms is at least 10 */
}

/* Why asking the peer daemon could not start (peer_connect_thr, peer_lookup). */
static const char *ask_why(int r)
{
	return r == -EBUSY ? "too many requests to the peer daemon in flight"
			   : "peer went down while connecting";
}

static void ask_peer(struct rcon *rc)
{
	int r;

	r = peer_connect_thr(rc->s->d->peers, rc->peer, rc->name, rc->ep->id, rc->wire, rc->ep->thr,
			     rc->rthr, ask_ms(rc), peer_answered, rc, NULL);
	if (r == -ENOTCONN || r == -EBUSY) {
		rcon_later(rc, r == -ENOTCONN ? -ECONNRESET : -EBUSY, ask_why(r));
		return;
	}
	if (r < 0)
		rcon_fail(rc, r, "cannot ask %s: %s", rc->peer, strerror(-r));
}

/* Our lanes are bound too (before the peer can send to them): ask. */
static void lanes_bound(void *arg, int err)
{
	struct rcon *rc = arg;

	if (rc->s->closing) {
		rcon_free(rc);         /* the endpoint's removal drops our sides */
		return;
	}
	if (err == -ENETRESET) {
		char why[128];

		snprintf(why, sizeof(why), "a data channel to %s failed and is being rebuilt", rc->peer);
		chan_failed(rc->s->d, rc->peer, rc->chan, rc->generation);
		rcon_rebind(rc, -ENETRESET, why);
	} else if (err < 0) {
		rcon_fail(rc, err, "engine refused the connection's lanes: %s", strerror(-err));
	} else {
		ask_peer(rc);
	}
}

static void bind_done(struct engcmd *c)
{
	struct rcon *rc = c->ctx;

	if (rc->s->closing) {
		rcon_free(rc);
		session_cmd_finish(c);
		return;
	}
	if (c->result == -ENETRESET) {
		char why[128];

		snprintf(why, sizeof(why), "the data channel to %s failed and is being rebuilt", rc->peer);
		chan_failed(rc->s->d, rc->peer, rc->chan, rc->generation);
		rcon_later(rc, -ENETRESET, why);
	} else if (c->result < 0) {
		rcon_fail(rc, c->result, "engine refused the connection: %s", strerror(-c->result));
	} else {
		rc->bound = true;
		if (!rcon_chan_same(rc)) {
			char why[96];

			snprintf(why, sizeof(why), "peer %s restarted while connecting", rc->peer);
			rcon_rebind(rc, -ECONNRESET, why);
		} else if (!rc->lanes)
			ask_peer(rc);
		else if (lanes_bind(rc->s, rc->ep, rc->conn, rc->lanes, rc->chan, rc->rthr,
				    rc->s->d->rchans->ch[rc->chan].rthreads, rc->wire, UINT32_MAX, 0,
				    lanes_bound, rc) < 0)
			rcon_fail(rc, -ENOMEM, "out of memory");
	}
	session_cmd_finish(c);
}

static void looked_up(void *arg, int status, uint32_t ep_id, uint32_t thread)
{
	struct rcon *rc = arg;
	struct daemon *d = rc->s->d;
	struct dchan *ch;
	uint32_t id;

	(void)ep_id;
	if (rc->s->closing) {
		rcon_fail(rc, -ECANCELED, "client went away");
		return;
	}
	if (status == -ENOENT) {
		char why[160];

		snprintf(why, sizeof(why), "no endpoint listens on '%s' at %s", rc->name, rc->peer);
		rcon_later(rc, -ECONNREFUSED, why);
		return;
	}
	if (status == -ENOTCONN) {
		rcon_later(rc, -ECONNRESET, "peer went down while connecting");
		return;
	}
	if (status < 0) {
		rcon_fail(rc, status, "cannot look '%s' up at %s: %s", rc->name, rc->peer,
			  strerror(-status));
		return;
	}
	ch = chan_by_name(d, rc->peer, &id);
	if (!ch || !ch->up || thread >= ch->rthreads) {
		rcon_fail(rc, -ECONNRESET, "peer %s restarted while connecting", rc->peer);
		return;
	}
	rc->rthr = thread;
	rc->looked_up = true;
	rcon_step(rc);
}

/* Wait for the channel, learn the listener's thread (a peer of several),
 * then bind our side (once), then ask. */
static void rcon_step(struct rcon *rc)
{
	struct daemon *d = rc->s->d;
	struct dchan *ch;
	struct engcmd *c;
	uint32_t id;
	int r = 0;

	if (rc->s->closing) {
		rcon_fail(rc, -ECANCELED, "client went away");
		return;
	}
	/* the peer at that address now: the same, one that dialed us
	 * meanwhile (its own connection won over ours), or one added again
	 * and dialed (a dynamic peer that could not be reached goes after a
	 * while) */
	if (rc->dynamic) {
		char host[CONF_PEER_NAME_MAX + 1];

		r = peermgr_dynamic(d->peers, rc->target, host, sizeof(host));
		if (r == 0)
			snprintf(rc->peer, sizeof(rc->peer), "%s", host);
	}
	ch = chan_by_name(d, rc->peer, &id);
	if (!ch || !ch->up) {
		char why[sizeof(rc->dial_why) + 96], last[sizeof(rc->dial_why)] = "";

		peermgr_last_error(d->peers, rc->peer, last, sizeof(last));
		if (last[0])
			snprintf(rc->dial_why, sizeof(rc->dial_why), "%s", last);
		else if (peer_get(d->peers, rc->peer, &(struct peer_info){ 0 }) == 0)
			rc->dial_why[0] = '\0';   /* up: its channel is on the way */
		if (r == -EUSERS)
			snprintf(why, sizeof(why), "cannot add %s: dynamic_peers are all taken%s%s%s",
				 rc->peer, rc->dial_why[0] ? " (its last error: " : "", rc->dial_why,
				 rc->dial_why[0] ? ")" : "");
		else
			snprintf(why, sizeof(why), "peer %s is not connected%s%s", rc->peer,
				 rc->dial_why[0] ? ": " : "", rc->dial_why);
		rcon_later(rc, -EHOSTUNREACH, why);
		return;
	}
	if (rc->bound) {
		if (id != rc->chan || ch->generation != rc->generation) {
			char why[96];

			snprintf(why, sizeof(why), "peer %s restarted while connecting", rc->peer);
			rcon_rebind(rc, -ECONNRESET, why);
			return;
		}
		ask_peer(rc);
		return;
	}
	if (rc->ep->thr != 0 && !ch->knows_threads) {
		/* it sends to our thread 0 only and would bind its side there */
		rcon_fail(rc, -EOPNOTSUPP, "peer %s predates engine threads: only endpoints on engine "
			  "thread 0 can connect to it (this one is on thread %u)", rc->peer, rc->ep->thr);
		return;
	}
	if (rc->looked_up && rc->rthr >= ch->rthreads)
		rc->looked_up = false;     /* it came back with fewer threads */
	if (!rc->looked_up && ch->rthreads > 1) {
		r = peer_lookup(d->peers, rc->peer, rc->name, ask_ms(rc), looked_up, rc, NULL);

		if (r == -ENOTCONN || r == -EBUSY)
			rcon_later(rc, r == -ENOTCONN ? -ECONNRESET : -EBUSY, ask_why(r));
		else if (r < 0)
			rcon_fail(rc, r, "cannot ask %s: %s", rc->peer, strerror(-r));
		return;
	}
	if (!rc->looked_up)
		rc->rthr = 0;
	c = session_cmd_new(rc->s, ENGCMD_RCONN_ADD, bind_done);
	if (!c) {
		rcon_fail(rc, -ENOMEM, "out of memory");
		return;
	}
	rc->chan = id;
	rc->generation = ch->generation;
	rc->lanes = lanes_count(d, ch->rlanes, ch->rthreads);
	rcon_dconn(rc)->chan = id;
	rcon_dconn(rc)->rthr = (uint8_t)rc->rthr;
	rcon_dconn(rc)->lanes = (uint8_t)rc->lanes;
	c->ctx = rc;
	c->u.rconn.ep = rc->ep->id;
	c->u.rconn.conn = rc->conn;
	c->u.rconn.wire = rc->wire;
	c->u.rconn.chan = nthr_chan(id, rc->rthr, RCONN_MAX_CHANS);
	engthr_submit(EP_THR(d, rc->ep), c);
}

void rconn_connect(struct session *s, struct dep *ep, const char *target, uint32_t timeout_ms)
{
	char host[CONF_PEER_NAME_MAX + 1];
	struct daemon *d = s->d;
	int r;
	const char *slash = strchr(target, '/');
	size_t hl = (size_t)(slash - target);
	struct rcon *rc;
	struct dconn *dc;
	uint32_t conn, id;

	if (!d->peers) {
		session_reply_err(s, -EHOSTUNREACH, "peering is off (peer_listen = none): cannot reach '%s'",
				  target);
		return;
	}
	if (hl == 0 || hl > CONF_PEER_NAME_MAX || !names_valid(slash + 1)) {
		session_reply_err(s, -EINVAL, "invalid remote name '%s': host/name, host as in peers or "
				  "ADDRESS:PORT of a daemon's peer_listen, name 1-64 characters of "
				  "A-Z a-z 0-9 . _ : -", target);
		return;
	}
	rc = calloc(1, sizeof(*rc));
	if (!rc) {
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	memcpy(rc->peer, target, hl);
	snprintf(rc->name, sizeof(rc->name), "%s", slash + 1);
	if (strcmp(rc->peer, peermgr_host_name(d->peers)) == 0) {
		free(rc);
		session_reply_err(s, -EINVAL, "'%s' is this host: connect to '%s'", target, slash + 1);
		return;
	}
	/* ADDRESS:PORT: the peer there, configured or added now (-EINVAL: not
	 * an address, a peer's name) */
	r = peermgr_dynamic(d->peers, rc->peer, host, sizeof(host));
	if (r != -EINVAL) {
		if (r < 0) {
			if (r == -EPERM)
				session_reply_err(s, -EHOSTUNREACH, "%s is not in peers, and dynamic_peers = 0 "
						  "(no peers added at run time)", rc->peer);
			else if (r == -EUSERS)
				session_reply_err(s, -EUSERS, "cannot add %s: dynamic_peers = %u peers were "
						  "added at run time already", rc->peer, d->conf.dynamic_peers);
			else if (r == -EEXIST)
				session_reply_err(s, -EINVAL, "%s is this daemon: connect to '%s'", rc->peer,
						  slash + 1);
			else
				session_reply_err(s, r, "cannot add %s as a peer: %s", rc->peer, strerror(-r));
			free(rc);
			return;
		}
		/* a configured peer at that address goes by its name */
		snprintf(rc->target, sizeof(rc->target), "%s", rc->peer);
		snprintf(rc->peer, sizeof(rc->peer), "%s", host);
		rc->dynamic = true;
	} else if (!chan_by_name(d, rc->peer, &id) &&
		   peer_get(d->peers, rc->peer, &(struct peer_info){ 0 }) == -ENOENT) {
		session_reply_err(s, -EHOSTUNREACH, "no peer named '%s' in peers (nor a numeric "
				  "ADDRESS:PORT)", rc->peer);
		free(rc);
		return;
	}
	if (sess_conn_alloc(ep, &conn) < 0) {
		session_reply_err(s, -ENOSPC, "endpoint %u has no free connection (max_conns_per_endpoint = %u)",
				  ep->id, ep->max_conns);
		free(rc);
		return;
	}
	if (timeout_ms > d->conf.ctl_timeout_ms)
		timeout_ms = d->conf.ctl_timeout_ms;
	dc = &ep->conns[conn];
	dc->gen++;
	*dc = (struct dconn){ .state = CONN_PENDING, .remote = true, .gen = dc->gen,
			      .peer_ep = UINT32_MAX, .wire = conn | (uint32_t)dc->gen << 16 };
	ep->n_conns++;
	rc->s = s;
	session_ref(s);
	rc->ep = ep;
	rc->conn = conn;
	rc->wire = dc->wire;
	rc->deadline_ms = daemon_now_ms() + timeout_ms;
	rcon_step(rc);
}

/* ---- the peer connects to us ---- */

struct racc {
	struct daemon *d;
	struct peer_connect_req *req;
	struct dep *l;
	uint32_t conn, chan;
	uint64_t generation;           /* of the channel when the request came */
	int add_res;                   /* RCONN_ADD's result (its done runs first) */
	uint32_t lanes;                /* lane sides to bind before answering */
	uint32_t src_thr, rthreads, src_ep, src_conn;
	struct session *s;             /* the listener's, while its lanes are bound */
	uint32_t l_id;                 /* ... and l by id and serial: it may go meanwhile */
	uint64_t l_serial;
	char peer[CONF_PEER_NAME_MAX + 1];
};

static void accept_add_done(struct engcmd *c)
{
	struct racc *ra = c->ctx;

	ra->add_res = c->result;
	session_cmd_finish(c);
}

/* Answer the peer's ConnectReq, unless the daemon is stopping: the peer
 * manager freed every pending request then (peermgr_free), and the peer
 * learns from its control connection closing. */
static void racc_answer(struct racc *ra, int status, uint32_t ep_id, uint32_t wire)
{
	if (ra->d->peers)
		peer_connect_answer(ra->d->peers, ra->req, status, ep_id, wire);
}

static void accept_finish(struct racc *ra, struct session *s, int res);

static void accept_lanes_done(void *arg, int err)
{
	struct racc *ra = arg;
	struct dep *l = ra->d->eps[ra->l_id];

	/* the listener's endpoint went while its lanes were bound (the
	 * owner thread's commands ran before the lane threads'): its
	 * removal took the sides */
	if (!l || l->serial != ra->l_serial) {
		racc_answer(ra, -ECONNREFUSED, 0, 0);
		session_unref(ra->s);
		free(ra);
		return;
	}
	ra->l = l;
	accept_finish(ra, ra->s, err);
}

static void accept_done(struct engcmd *c)
{
	struct racc *ra = c->ctx;
	struct session *s = c->arg;
	struct dep *l = ra->l;
	int res = c->result;

	/* our lanes bound before the answer: the asker may split at once */
	if (res == 0 && ra->lanes && !s->closing && l->live) {
		ra->s = s;
		ra->l_id = l->id;
		ra->l_serial = l->serial;
		session_ref(s);
		if (lanes_bind(s, l, ra->conn, ra->lanes, ra->chan, ra->src_thr, ra->rthreads,
			       l->conns[ra->conn].wire, ra->src_ep, ra->src_conn, accept_lanes_done,
			       ra) == 0) {
			session_cmd_finish(c);
			return;
		}
		session_unref(s);
		ra->s = NULL;
		res = -ENOMEM;
	}
	accept_finish(ra, s, res);
	session_cmd_finish(c);
}

/* The side (and its lanes) is made, or failed: answer the asker. */
static void accept_finish(struct racc *ra, struct session *s, int res)
{
	struct dep *l = ra->l;
	struct dconn *dc = &l->conns[ra->conn];

	if (!s->closing)
		l->backlog_pending--;
	/* the peer went down or restarted meanwhile: the engine reset this
	 * side when the channel went, and mark_reset skipped it (pending) */
	if (res == 0 && !chan_is(ra->d, ra->chan, ra->peer, ra->generation))
		res = -ECONNRESET;
	if (s->closing || !l->live) {
		racc_answer(ra, -ECONNREFUSED, 0, 0);
	} else if (res < 0) {
		struct engcmd *rm = session_cmd_new(s, ENGCMD_CONN_REMOVE, session_cmd_finish);
		/* our channel to it (or a lane's sub-channel) gave up */
		bool failed = ra->add_res == -ENETRESET || res == -ENETRESET;

		/* restarting first makes the answer go nowhere: the asker's
		 * request fails with -ENOTCONN and it binds again and asks
		 * again once the peer is back, within its timeout */
		if (failed)
			chan_failed(ra->d, ra->peer, ra->chan, ra->generation);

		/* the bind may have worked: the engine must forget the side
		 * before the id is free again (FIFO keeps a reuse behind it) */
		if (!rm)
			abort();
		rm->u.conn_rm.ep = l->id;
		rm->u.conn_rm.conn = ra->conn;
		engthr_submit(EP_THR(ra->d, l), rm);
		lanes_unbind(ra->d, l, ra->conn, ra->lanes);
		dc->state = CONN_FREE;
		dc->remote = false;
		l->n_conns--;
		racc_answer(ra, res == -ECONNRESET || failed ? -ECONNRESET : -ECONNREFUSED, 0, 0);
	} else {
		if (dc->state == CONN_PENDING)   /* else the peer closed it already */
			dc->state = CONN_OPEN;
		l->backlog[(l->backlog_head + l->backlog_n) % l->backlog_cap] = ra->conn;
		l->backlog_n++;
		racc_answer(ra, 0, l->id, dc->wire);
		log_debug("peer %s connected to '%s' (endpoint %u conn %u)", ra->peer, l->name, l->id,
			  ra->conn);
		sess_conn_try_accept(l);
	}
	if (ra->s)
		session_unref(ra->s);
	free(ra);
}

static void on_connect_req(void *arg, const char *peer, struct peer_connect_req *req, const char *name,
			   uint32_t src_ep, uint32_t src_conn)
{
	struct daemon *d = arg;
	struct dchan *ch;
	struct dep *l;
	struct dconn *dc;
	struct engcmd *add, *con;
	struct racc *ra;
	uint32_t id, conn, src_thr, dst_thr;

	ch = chan_by_name(d, peer, &id);
	if (!ch || !ch->up) {
		peer_connect_answer(d->peers, req, -EHOSTUNREACH, 0, 0);
		return;
	}
	l = names_valid(name) ? names_find(d->names, name) : NULL;
	if (!l || !l->live) {
		peer_connect_answer(d->peers, req, -ENOENT, 0, 0);
		return;
	}
	peer_connect_req_threads(req, &src_thr, &dst_thr);
	if (src_thr >= ch->rthreads) {
		/* its side is on a thread it never announced */
		peer_connect_answer(d->peers, req, -EINVAL, 0, 0);
		return;
	}
	if (l->thr != 0 && !ch->knows_threads) {
		/* it cannot reach our other threads' data planes */
		peer_connect_answer(d->peers, req, -EOPNOTSUPP, 0, 0);
		return;
	}
	if (dst_thr != l->thr) {
		/* the asker bound its side towards another of our threads */
		peer_connect_answer(d->peers, req, -ESTALE, 0, 0);
		return;
	}
	if (l->backlog_n + l->backlog_pending >= l->backlog_cap || sess_conn_alloc(l, &conn) < 0) {
		peer_connect_answer(d->peers, req, -ECONNREFUSED, 0, 0);
		return;
	}
	ra = calloc(1, sizeof(*ra));
	add = session_cmd_new(l->s, ENGCMD_RCONN_ADD, accept_add_done);
	con = session_cmd_new(l->s, ENGCMD_RCONN_CONNECT, accept_done);
	if (!ra || !add || !con) {
		free(ra);
		if (add)
			session_cmd_finish(add);
		if (con)
			session_cmd_finish(con);
		peer_connect_answer(d->peers, req, -ENOMEM, 0, 0);
		return;
	}
	dc = &l->conns[conn];
	dc->gen++;
	*dc = (struct dconn){ .state = CONN_PENDING, .remote = true, .gen = dc->gen, .chan = id,
			      .rthr = (uint8_t)src_thr, .peer_ep = src_ep, .peer_conn = src_conn,
			      .wire = conn | (uint32_t)dc->gen << 16 };
	l->n_conns++;
	l->backlog_pending++;
	*ra = (struct racc){ .d = d, .req = req, .l = l, .conn = conn, .chan = id,
			     .generation = ch->generation, .src_thr = src_thr,
			     .rthreads = ch->rthreads, .src_ep = src_ep, .src_conn = src_conn,
			     .lanes = lanes_count(d, ch->rlanes, ch->rthreads) };
	dc->lanes = (uint8_t)ra->lanes;
	snprintf(ra->peer, sizeof(ra->peer), "%s", peer);
	add->ctx = ra;
	add->u.rconn.ep = l->id;
	add->u.rconn.conn = conn;
	add->u.rconn.wire = dc->wire;
	add->u.rconn.chan = nthr_chan(id, src_thr, RCONN_MAX_CHANS);
	con->ctx = ra;
	con->u.rconn_c.ep = l->id;
	con->u.rconn_c.conn = conn;
	con->u.rconn_c.rep = src_ep;
	con->u.rconn_c.rwire = src_conn;
	engthr_submit(EP_THR(d, l), add);
	engthr_submit(EP_THR(d, l), con);
}

/* ---- closing ---- */

/* The peer's close travels on TCP and can overtake the UDP acknowledgments
 * of what it received before closing: our side is reset a little later, so
 * that operations the peer completed still complete here. */
#define CLOSE_GRACE_MS 100u

struct rclose {
	struct session *s;             /* referenced */
	uint32_t ep_id, conn, wire;    /* the endpoint may be gone by then: looked up again */
	uint64_t serial;               /* ... and its id reused by another */
	struct event *ev;
};

static void close_grace_cb(evutil_socket_t fd, short what, void *arg)
{
	struct rclose *rc = arg;
	struct session *s = rc->s;
	struct dep *ep = s->d->eps[rc->ep_id];
	struct engcmd *c;

	(void)fd;
	(void)what;
	if (!s->closing && ep && ep->s == s && ep->serial == rc->serial && ep->live &&
	    ep->conns[rc->conn].remote &&
	    ep->conns[rc->conn].wire == rc->wire && ep->conns[rc->conn].state == CONN_RESET &&
	    (c = session_cmd_new(s, ENGCMD_CONN_RESET, session_cmd_finish))) {
		c->u.conn_rm.ep = rc->ep_id;
		c->u.conn_rm.conn = rc->conn;
		engthr_submit(EP_THR(s->d, ep), c);
		lanes_reset(s->d, ep, rc->conn, ep->conns[rc->conn].lanes);
	}
	event_free(rc->ev);
	free(rc);
	session_unref(s);
}

static void on_conn_close(void *arg, const char *peer, uint32_t ep_id, uint32_t conn,
			  uint32_t src_ep, uint32_t src_conn)
{
	struct daemon *d = arg;
	struct dep *ep = ep_id < DAEMON_MAX_ENDPOINTS ? d->eps[ep_id] : NULL;
	struct timeval tv = { .tv_sec = 0, .tv_usec = CLOSE_GRACE_MS * 1000 };
	uint32_t id = conn & 0xffffu, chan;
	struct dconn *dc;
	struct rclose *rc;

	if (!ep || !ep->live || id >= ep->max_conns || !chan_by_name(d, peer, &chan))
		return;
	dc = &ep->conns[id];
	/* src_ep UINT32_MAX: the peer gave up before it learned ours. A
	 * pending side that knows the peer's (it answered) is reset too: the
	 * close can come before our engine finished the connect, and would
	 * otherwise be lost, the side left open with nothing behind it */
	if (!dc->remote || dc->wire != conn || dc->chan != chan || dc->peer_conn != src_conn ||
	    (src_ep != UINT32_MAX && dc->peer_ep != src_ep) ||
	    (dc->state != CONN_OPEN && (dc->state != CONN_PENDING || dc->peer_ep == UINT32_MAX)))
		return;
	rc = calloc(1, sizeof(*rc));
	if (rc)
		rc->ev = evtimer_new(d->base, close_grace_cb, rc);
	if (!rc || !rc->ev) {
		/* its operations still fail, refused by the peer's daemon */
		log_warn("peer %s closed endpoint %u conn %u: out of memory to reset our side", peer,
			 ep->id, id);
		free(rc);
		return;
	}
	rc->s = ep->s;
	session_ref(ep->s);
	rc->ep_id = ep->id;
	rc->serial = ep->serial;
	rc->conn = id;
	rc->wire = dc->wire;
	dc->state = CONN_RESET;
	evtimer_add(rc->ev, &tv);
	log_debug("peer %s closed its side of endpoint %u conn %u", peer, ep->id, id);
}

void rconn_tell_closed(struct daemon *d, struct dep *ep, uint32_t conn)
{
	struct dconn *dc = &ep->conns[conn];

	if (!d->peers || !dc->remote || dc->peer_ep == UINT32_MAX || dc->chan >= RCONN_MAX_CHANS ||
	    !d->rchans->ch[dc->chan].up)
		return;
	/* -ENOTCONN: the peer is down, its side was reset then */
	peer_conn_close(d->peers, d->rchans->ch[dc->chan].peer, dc->peer_ep, dc->peer_conn, ep->id,
			dc->wire);
}

void rconn_peer_label(const struct daemon *d, const struct dconn *dc, char *buf, size_t len)
{
	/* a connection reset since names no host: if its peer went down, the
	 * channel slot may serve another peer by now */
	const char *peer = dc->state == CONN_OPEN && d->rchans && dc->chan < RCONN_MAX_CHANS &&
				   d->rchans->ch[dc->chan].used ? d->rchans->ch[dc->chan].peer : NULL;

	if (!peer)
		snprintf(buf, len, "another host (the connection was reset before it was accepted)");
	else
		snprintf(buf, len, "host %s endpoint %u", peer, dc->peer_ep);
}

int rconn_chan_of(const struct daemon *d, const char *peer, uint32_t *chan, uint32_t *rthreads)
{
	for (uint32_t i = 0; d->rchans && i < RCONN_MAX_CHANS; i++) {
		const struct dchan *ch = &d->rchans->ch[i];

		if (ch->used && ch->up && strcmp(ch->peer, peer) == 0) {
			*chan = i;
			*rthreads = ch->rthreads;
			return 0;
		}
	}
	return -ENOTCONN;
}

size_t rconn_chans(const struct daemon *d, const char *peer, struct rconn_chan_info *out, size_t max)
{
	size_t n = 0;

	/* grouped by our thread: each thread's engine answers for its rows;
	 * without peering (no rchans) only the channels between threads */
	for (uint32_t t = 0; t < d->n_thr; t++) {
		for (uint32_t i = 0; d->rchans && i < RCONN_MAX_CHANS; i++) {
			const struct dchan *ch = &d->rchans->ch[i];

			if (peer && strcmp(ch->peer, peer) != 0)
				continue;
			for (uint32_t j = 0; ch->up && j < ch->rthreads; j++, n++) {
				if (n >= max)
					continue;      /* counted, not listed */
				out[n] = (struct rconn_chan_info){
					.chan = nthr_chan(i, j, RCONN_MAX_CHANS), .thread = t, .rthread = j,
					.up_ms = ch->up_ms, .paths = ch->paths, .mtu = ch->mtu,
					.crc = ch->crc };
				snprintf(out[n].peer, sizeof(out[n].peer), "%s", ch->peer);
			}
		}
		/* to our other threads (daemon/xconn.c), as peer "(self)" */
		for (uint32_t k = 0; d->xconn && (!peer || strcmp(peer, "(self)") == 0) &&
				     k < d->n_thr; k++) {
			if (k == t)
				continue;
			if (n < max) {
				out[n] = (struct rconn_chan_info){
					.chan = nthr_self_chan(k, RCONN_MAX_CHANS), .thread = t,
					.rthread = k, .up_ms = d->start_ms, .paths = d->conf.data_paths,
					.mtu = d->conf.mtu, .crc = d->conf.data_crc };
				snprintf(out[n].peer, sizeof(out[n].peer), "(self)");
			}
			n++;
		}
	}
	return n;
}

int rconn_start(struct daemon *d)
{
	struct peer_handlers h = {
		.connect = on_connect_req,
		.conn_close = on_conn_close,
		.arg = d,
	};

	d->rchans = calloc(1, sizeof(*d->rchans));
	d->chancc = chancc_new();
	if (!d->rchans || !d->chancc) {
		log_err("out of memory for data channels");
		return -ENOMEM;
	}
	peermgr_set_notify(d->peers, on_peer_event, d);
	peermgr_set_handlers(d->peers, &h);
	return 0;
}
