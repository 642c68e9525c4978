/* SPDX-License-Identifier: MIT */
/*
 * xconn: see xconn.h. Joining runs in two rounds of commands, one on each
 * side's thread: bind both sides to their channels (RCONN_ADD), then name
 * each the other (RCONN_CONNECT). Neither side can send before the second
 * round, so no packet meets a side that is not bound yet. The endpoints may
 * go away meanwhile (each thread removes its own on its own time): they are
 * looked up again by id and serial after every round.
 */
#include "config.h"

#include <errno.h>
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
#include "daemon/log.h"
#include "daemon/nthr.h"
#include "daemon/rconn.h"
#include "daemon/session.h"
#include "daemon/xconn.h"

#define XCLOSE_GRACE_MS 100u    /* as rconn's CLOSE_GRACE_MS: the close overtakes acks */

static void plain_done(struct engcmd *c)
{
	free(c);
}

/* The pair's entry (one per unordered pair of threads) of its channels'
 * token and of when they were last made again. */
static uint64_t *pair_token(struct daemon *d, uint32_t i, uint32_t k)
{
	return &d->xtoken[i < k ? i : k][i < k ? k : i];
}

static uint64_t *pair_rebuilt(struct daemon *d, uint32_t i, uint32_t k)
{
	return &d->xrebuilt_ms[i < k ? i : k][i < k ? k : i];
}

/* A give-up that came within a second of the last rebuild: the next
 * connect between the two makes them again before it starts. */
static bool *pair_owed(struct daemon *d, uint32_t i, uint32_t k)
{
	return &d->xrebuild_owed[i < k ? i : k][i < k ? k : i];
}

/* An engine that could not make the channel: connects between the two
 * threads fail (-EINVAL, no channel) until it is made again; a token of 0
 * tells join_step so, and the next rebuild may come at once. */
static void add_done(struct engcmd *c)
{
	struct daemon *d = c->arg;
	uint32_t i = (uint32_t)(uintptr_t)c->ctx, k = c->u.chan.chan % CONF_MAX_ENGINE_THREADS;

	if (c->result < 0 && *pair_token(d, i, k) == c->u.chan.tag) {
		log_err("engine thread %u: no channel to thread %u: %s; connects between them fail "
			"until it is made again (at the next one)", i, k, strerror(-c->result));
		*pair_token(d, i, k) = 0;
		*pair_rebuilt(d, i, k) = 0;
	}
	free(c);
}

/* Thread i's channel to thread k, with token (both directions carry the
 * same one: none of it leaves this host's data planes); not submitted. */
static struct engcmd *chan_add_cmd(struct daemon *d, uint32_t i, uint32_t k, uint64_t token)
{
	const struct conf *cf = &d->conf;
	const struct conf_addr *a = conf_data_addr(cf);
	uint32_t ip_udp = a->family == AF_INET6 ? 48 : 28;
	struct engcmd *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->type = ENGCMD_CHAN_ADD;
	c->done = add_done;
	c->arg = d;
	c->ctx = (void *)(uintptr_t)i;
	c->u.chan.chan = nthr_self_chan(k, RCONN_MAX_CHANS);
	if (a->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&c->u.chan.addr;

		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, a->addr, 16);
		s6->sin6_port = htons((uint16_t)d->thr_port[k]);
		c->u.chan.addrlen = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&c->u.chan.addr;

		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, a->addr, 4);
		s4->sin_port = htons((uint16_t)d->thr_port[k]);
		c->u.chan.addrlen = sizeof(*s4);
	}
	rconn_chan_params(d, cf->mtu - ip_udp, cf->data_paths, cf->max_inflight_bytes,
			  chancc_for(d, ""), token, token, token ^ ((uint64_t)i << 32 | k), &c->u.chan.p);
	c->u.chan.tag = token;         /* what a give-up of it is reported with */
	return c;
}

static void chan_add_submit(struct daemon *d, uint32_t i, struct engcmd *c)
{
	*pair_token(d, i, c->u.chan.chan % CONF_MAX_ENGINE_THREADS) = c->u.chan.tag;
	engthr_submit(d->thr[i], c);
}

static uint64_t new_token(void)
{
	uint64_t token = 0;

	if (getrandom(&token, sizeof(token), GRND_NONBLOCK) != sizeof(token) || !token)
		token = daemon_now_ms() | 1;
	return token;
}

int xconn_start(struct daemon *d)
{
	uint64_t token;

	if (d->n_thr < 2)
		return 0;
	token = new_token();
	for (uint32_t i = 0; i < d->n_thr; i++) {
		for (uint32_t k = 0; k < d->n_thr; k++) {
			struct engcmd *c = k != i ? chan_add_cmd(d, i, k, token) : NULL;

			if (k != i && !c)
				return -ENOMEM;     /* the daemon does not start */
			if (c)
				chan_add_submit(d, i, c);
		}
	}
	d->xconn = true;
	log_info("engine threads: %u x %u channels between them over the data planes", d->n_thr,
		 d->n_thr - 1);
	return 0;
}

/* The channels between threads i and k gave up (a packet went unacknowledged
 * max_retx times: a thread stalled for seconds), or one could not be made:
 * the engines refuse every connection over them from then on, and nothing
 * else replaces them. Both are made again, with a new token, so that the
 * next connect works; the connections that were on them were reset
 * already. At most once a second per pair, or joins failing together would
 * tear down each other's (one more within it is owed to the next connect).
 * All four commands or none: half of them would leave one thread without a
 * channel that nothing then reports. */
static void chans_rebuild(struct daemon *d, uint32_t i, uint32_t k)
{
	uint64_t now = daemon_now_ms(), token = new_token();
	uint64_t *last = pair_rebuilt(d, i, k);
	struct engcmd *rm[2], *add[2];
	bool ok = true;

	if (*last && now - *last < 1000) {
		*pair_owed(d, i, k) = true;
		return;
	}
	for (int dir = 0; dir < 2; dir++) {
		uint32_t x = dir ? k : i, y = dir ? i : k;

		rm[dir] = calloc(1, sizeof(*rm[dir]));
		add[dir] = chan_add_cmd(d, x, y, token);
		ok = ok && rm[dir] && add[dir];
	}
	if (!ok) {
		for (int dir = 0; dir < 2; dir++) {
			free(rm[dir]);
			free(add[dir]);
		}
		log_err("engine threads %u and %u: out of memory to make their channel again; "
			"the next connect between them tries again", i, k);
		return;
	}
	*last = now;
	*pair_owed(d, i, k) = false;
	for (int dir = 0; dir < 2; dir++) {
		uint32_t x = dir ? k : i, y = dir ? i : k;

		rm[dir]->type = ENGCMD_CHAN_REMOVE;
		rm[dir]->done = plain_done;
		rm[dir]->u.chan_rm.chan = nthr_self_chan(y, RCONN_MAX_CHANS);
		rm[dir]->u.chan_rm.err = -ENETRESET;
		engthr_submit(d->thr[x], rm[dir]);   /* per-thread order: before the add */
		chan_add_submit(d, x, add[dir]);
	}
	log_warn("engine threads %u and %u: the channel between them gave up; made again", i, k);
}

void xconn_chan_gave_up(struct daemon *d, uint32_t i, uint32_t k, uint64_t tag)
{
	if (!d->xconn || i >= d->n_thr || k >= d->n_thr || i == k || *pair_token(d, i, k) != tag)
		return;
	chans_rebuild(d, i, k);
}

/* ---- joining ---- */

struct xjoin {
	struct session *s;             /* the connecting session, referenced */
	struct session *ls;            /* the listener's, referenced */
	uint32_t a, ca, b, cb;         /* endpoint ids and conns: connecting, listening */
	uint64_t sa, sb;               /* their serials */
	uint32_t wa, wb;               /* their wire ids */
	uint32_t left;
	int err;
	int round;                     /* 1: binding, 2: connecting */
	uint64_t token;                /* the pair's channels' when it began (pair_token) */
};

static struct dep *ep_of(struct daemon *d, uint32_t id, uint64_t serial)
{
	struct dep *ep = d->eps[id];

	return ep && ep->serial == serial ? ep : NULL;
}

static void side_free(struct dep *ep, uint32_t conn)
{
	ep->conns[conn].state = CONN_FREE;
	ep->conns[conn].xthr = false;
	ep->n_conns--;
}

static void join_free(struct xjoin *j)
{
	session_unref(j->s);
	session_unref(j->ls);
	free(j);
}

static void join_step(struct engcmd *c);

static int join_submit(struct xjoin *j, struct dep *ep, enum engcmd_type type, uint32_t conn,
		       uint32_t wire, uint32_t other_thr, uint32_t rep, uint32_t rwire)
{
	struct engcmd *c = session_cmd_new(j->s, type, join_step);

	if (!c)
		return -ENOMEM;
	c->ctx = j;
	if (type == ENGCMD_RCONN_ADD) {
		c->u.rconn.ep = ep->id;
		c->u.rconn.conn = conn;
		c->u.rconn.wire = wire;
		c->u.rconn.chan = nthr_self_chan(other_thr, RCONN_MAX_CHANS);
	} else if (type == ENGCMD_RCONN_CONNECT) {
		c->u.rconn_c.ep = ep->id;
		c->u.rconn_c.conn = conn;
		c->u.rconn_c.rep = rep;
		c->u.rconn_c.rwire = rwire;
	} else {
		c->u.conn_rm.ep = ep->id;
		c->u.conn_rm.conn = conn;
	}
	j->left++;
	engthr_submit(EP_THR(j->s->d, ep), c);
	return 0;
}

/* Give up: the engines forget both sides (those still there), the daemon
 * frees them, the connecting client hears why. */
static void join_fail(struct xjoin *j, struct dep *ep, struct dep *l)
{
	struct daemon *d = j->s->d;

	j->round = 3;
	if (ep && join_submit(j, ep, ENGCMD_CONN_REMOVE, j->ca, 0, 0, 0, 0) < 0)
		abort();               /* the engine must forget the side */
	if (l && join_submit(j, l, ENGCMD_CONN_REMOVE, j->cb, 0, 0, 0, 0) < 0)
		abort();
	if (ep)
		side_free(ep, j->ca);
	if (l) {
		l->backlog_pending--;
		side_free(l, j->cb);
	}
	if (!j->s->closing)
		session_reply_err(j->s, j->err ? j->err : -ECONNRESET,
				  "connection between engine threads failed: %s%s",
				  strerror(-(j->err ? j->err : -ECONNRESET)),
				  j->err == -ENETRESET ? " (the channel between the threads gave up and "
				  "is made again: connect again)" : "");
	if (j->left == 0)
		join_free(j);
	(void)d;
}

static void join_done(struct xjoin *j, struct dep *ep, struct dep *l)
{
	UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
	UcclCtl__ConnectRep cr = UCCL_CTL__CONNECT_REP__INIT;

	l->backlog_pending--;
	ep->conns[j->ca].state = CONN_OPEN;
	l->conns[j->cb].state = CONN_OPEN;
	l->backlog[(l->backlog_head + l->backlog_n) % l->backlog_cap] = j->cb;
	l->backlog_n++;
	sess_conn_try_accept(l);
	cr.conn_id = j->ca;
	rep.body_case = UCCL_CTL__REPLY__BODY_CONNECT;
	rep.connect = &cr;
	session_reply(j->s, 0, NULL, &rep, NULL, 0);
	join_free(j);
}

static void join_step(struct engcmd *c)
{
	struct xjoin *j = c->ctx;
	struct daemon *d = j->s->d;
	struct dep *ep, *l;

	if (c->result < 0 && !j->err)
		j->err = c->result;
	session_cmd_finish(c);
	if (--j->left)
		return;
	if (j->round == 3) {
		join_free(j);
		return;
	}
	ep = ep_of(d, j->a, j->sa);
	l = ep_of(d, j->b, j->sb);
	/* a side whose endpoint is going was reset with it */
	if (j->err || j->s->closing || !ep || !ep->live || !l || !l->live) {
		/* refused for a channel that gave up, or that an engine could
		 * not make (add_done): make it again, for the next connect
		 * (this one fails, saying so) */
		/* ... unless they were made again since it began: a stale
		 * refusal would tear down the new ones */
		if (ep && l && *pair_token(d, ep->thr, l->thr) == j->token &&
		    (j->err == -ENETRESET || (j->err == -EINVAL && j->token == 0)))
			chans_rebuild(d, ep->thr, l->thr);
		join_fail(j, ep && ep->s == j->s ? ep : NULL, l);
		return;
	}
	if (j->round == 1) {
		j->round = 2;
		if (join_submit(j, ep, ENGCMD_RCONN_CONNECT, j->ca, 0, 0, l->id, j->wb) < 0 ||
		    join_submit(j, l, ENGCMD_RCONN_CONNECT, j->cb, 0, 0, ep->id, j->wa) < 0) {
			/* the submitted one finishes first; then it fails */
			j->err = -ENOMEM;
			if (j->left == 0)
				join_fail(j, ep, l);
		}
		return;
	}
	join_done(j, ep, l);
}

void xconn_join(struct session *s, struct dep *ep, uint32_t ca, struct dep *l, uint32_t cb)
{
	struct daemon *d = s->d;
	struct xjoin *j;

	if (!d->xconn) {
		l->backlog_pending--;
		side_free(ep, ca);
		side_free(l, cb);
		/* the data plane did not open (a daemon with one thread has
		 * no second thread to meet) */
		session_reply_err(s, -EOPNOTSUPP, "endpoint %u runs on engine thread %u and '%s' on "
				  "thread %u: connections between engine threads need the data plane, "
				  "which is not open", ep->id, ep->thr, l->name, l->thr);
		return;
	}
	/* before the join's commands, which then run on the new channels */
	if (*pair_owed(d, ep->thr, l->thr))
		chans_rebuild(d, ep->thr, l->thr);
	j = calloc(1, sizeof(*j));
	if (!j) {
		l->backlog_pending--;
		side_free(ep, ca);
		side_free(l, cb);
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	*j = (struct xjoin){ .s = s, .ls = l->s, .a = ep->id, .ca = ca, .b = l->id, .cb = cb,
			     .sa = ep->serial, .sb = l->serial, .round = 1,
			     .token = *pair_token(d, ep->thr, l->thr) };
	session_ref(s);
	session_ref(l->s);
	ep->conns[ca].xthr = l->conns[cb].xthr = true;
	/* a late packet for an earlier use of the conn id is refused */
	ep->conns[ca].gen++;
	l->conns[cb].gen++;
	ep->conns[ca].wire = j->wa = ca | (uint32_t)ep->conns[ca].gen << 16;
	l->conns[cb].wire = j->wb = cb | (uint32_t)l->conns[cb].gen << 16;
	if (join_submit(j, ep, ENGCMD_RCONN_ADD, ca, j->wa, l->thr, 0, 0) < 0 ||
	    join_submit(j, l, ENGCMD_RCONN_ADD, cb, j->wb, ep->thr, 0, 0) < 0) {
		j->err = -ENOMEM;
		if (j->left == 0)
			join_fail(j, ep, l);
	}
}

/* ---- closing ---- */

struct xclose {
	struct session *s;             /* the other side's, referenced */
	uint32_t ep_id, conn, wire;
	uint64_t serial;
	struct event *ev;
};

static void xclose_cb(evutil_socket_t fd, short what, void *arg)
{
	struct xclose *x = arg;
	struct session *s = x->s;
	struct dep *ep = ep_of(s->d, x->ep_id, x->serial);
	struct engcmd *c;

	(void)fd;
	(void)what;
	if (!s->closing && ep && ep->live && ep->conns[x->conn].xthr &&
	    ep->conns[x->conn].wire == x->wire &&
	    (c = session_cmd_new(s, ENGCMD_CONN_RESET, session_cmd_finish))) {
		c->u.conn_rm.ep = ep->id;
		c->u.conn_rm.conn = x->conn;
		engthr_submit(EP_THR(s->d, ep), c);
	}
	event_free(x->ev);
	free(x);
	session_unref(s);
}

void xconn_side_closed(struct daemon *d, struct dep *ep, uint32_t conn)
{
	struct dconn *dc = &ep->conns[conn];
	struct timeval tv = { .tv_sec = 0, .tv_usec = XCLOSE_GRACE_MS * 1000 };
	struct dep *p = dc->peer_ep < DAEMON_MAX_ENDPOINTS ? d->eps[dc->peer_ep] : NULL;
	struct xclose *x;

	if (!dc->xthr || !p || p == ep || p->conns[dc->peer_conn].peer_ep != ep->id ||
	    !p->conns[dc->peer_conn].xthr)
		return;
	x = calloc(1, sizeof(*x));
	if (x)
		x->ev = evtimer_new(d->base, xclose_cb, x);
	if (!x || !x->ev) {
		/* its operations still fail: our engine refuses what it sends */
		log_warn("endpoint %u conn %u: out of memory to reset the other side", ep->id, conn);
		free(x);
		return;
	}
	x->s = p->s;
	session_ref(p->s);
	x->ep_id = p->id;
	x->conn = dc->peer_conn;
	x->wire = p->conns[dc->peer_conn].wire;
	x->serial = p->serial;
	evtimer_add(x->ev, &tv);
}
