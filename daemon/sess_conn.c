/* SPDX-License-Identifier: MIT */
/*
 * sess_conn: listen names, connect and accept (waiting for a peer with a
 * deadline), and closing connections; both sides of a same-host connection
 * are joined in the engine by one command.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/daemon.h"
#include "daemon/engthr.h"
#include "daemon/lanes.h"
#include "daemon/log.h"
#include "daemon/memory.h"
#include "daemon/names.h"
#include "daemon/rconn.h"
#include "daemon/session.h"
#include "daemon/xconn.h"
#include "engine/ring.h"

int sess_conn_alloc(struct dep *ep, uint32_t *id)
{
	for (uint32_t i = 0; i < ep->max_conns; i++) {
		if (ep->conns[i].state == CONN_FREE) {
			*id = i;
			return 0;
		}
	}
	return -ENOSPC;
}

static void reply_conn(struct session *s, uint32_t conn, const char *peer, bool accept)
{
	UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
	UcclCtl__ConnectRep cr = UCCL_CTL__CONNECT_REP__INIT;
	UcclCtl__AcceptRep ar = UCCL_CTL__ACCEPT_REP__INIT;

	if (accept) {
		ar.conn_id = conn;
		ar.peer = (char *)peer;
		rep.body_case = UCCL_CTL__REPLY__BODY_ACCEPT;
		rep.accept = &ar;
	} else {
		cr.conn_id = conn;
		rep.body_case = UCCL_CTL__REPLY__BODY_CONNECT;
		rep.connect = &cr;
	}
	session_reply(s, 0, NULL, &rep, NULL, 0);
}

static void peer_label(struct dep *ep, char *buf, size_t len)
{
	snprintf(buf, len, "client %u endpoint %u%s%s", ep->s->id, ep->id, ep->s->name[0] ? " " : "",
		 ep->s->name);
}

/* Hand the next queued connection to a parked accept, if any. */
void sess_conn_try_accept(struct dep *l)
{
	struct session *s = l->s;
	uint32_t conn;
	char peer[128] = "";

	if (s->closing || s->park != PARK_ACCEPT || s->park_ep != l || l->backlog_n == 0)
		return;
	conn = l->backlog[l->backlog_head];
	l->backlog_head = (l->backlog_head + 1) % l->backlog_cap;
	l->backlog_n--;
	event_del(s->park_timer);
	/* answered: a reply the socket does not take at once keeps the
	 * session busy, and a second connection must not be taken for it */
	s->park = PARK_NONE;
	s->park_ep = NULL;
	struct dconn *dc = &l->conns[conn];
	struct dep *p = !dc->remote && dc->peer_ep < DAEMON_MAX_ENDPOINTS ? s->d->eps[dc->peer_ep] : NULL;
	if (p)
		peer_label(p, peer, sizeof(peer));
	else if (dc->remote)
		rconn_peer_label(s->d, dc, peer, sizeof(peer));
	reply_conn(s, conn, peer, true);
}

static void conn_add_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct daemon *d = s->d;
	struct dep *ep = d->eps[c->u.conn.ep_a];
	struct dep *l = d->eps[c->u.conn.ep_b];

	l->backlog_pending--;
	if (c->result < 0) {
		ep->conns[c->u.conn.conn_a].state = CONN_FREE;
		ep->n_conns--;
		l->conns[c->u.conn.conn_b].state = CONN_FREE;
		l->n_conns--;
		session_reply_err(s, c->result, "engine refused the connection: %s", strerror(-c->result));
		session_cmd_finish(c);
		return;
	}
	/* Either side may have gone while the command was queued; the engine
	 * already reset the survivor in that case. */
	if (ep->conns[c->u.conn.conn_a].state == CONN_PENDING)
		ep->conns[c->u.conn.conn_a].state = l->live ? CONN_OPEN : CONN_RESET;
	if (l->conns[c->u.conn.conn_b].state == CONN_PENDING) {
		l->conns[c->u.conn.conn_b].state = ep->live ? CONN_OPEN : CONN_RESET;
		if (l->live) {
			l->backlog[(l->backlog_head + l->backlog_n) % l->backlog_cap] = c->u.conn.conn_b;
			l->backlog_n++;
			sess_conn_try_accept(l);
		}
	}
	if (!s->closing)
		reply_conn(s, c->u.conn.conn_a, NULL, false);
	session_cmd_finish(c);
}

static void do_connect(struct session *s, struct dep *ep, struct dep *l)
{
	struct engcmd *c;
	uint32_t ca, cb;

	if (s->d->conf.connect_same_user && s->uid != 0 && l->s->uid != s->uid) {
		/* a name is not owned: without this, another user's listener
		 * under the name one expects would take the connection */
		session_reply_err(s, -EACCES, "'%s' is listened on by another user (connect_same_user)",
				  l->name);
		return;
	}
	if (l->backlog_n + l->backlog_pending >= l->backlog_cap) {
		session_reply_err(s, -ECONNREFUSED, "listen backlog of '%s' is full (max_listen_backlog = %u)",
				  l->name, l->backlog_cap);
		return;
	}
	if (sess_conn_alloc(ep, &ca) < 0) {
		session_reply_err(s, -ENOSPC, "endpoint %u has no free connection (max_conns_per_endpoint = %u)",
				  ep->id, ep->max_conns);
		return;
	}
	ep->conns[ca].state = CONN_PENDING;   /* reserve before looking for cb on the same ep */
	if (sess_conn_alloc(l, &cb) < 0) {
		ep->conns[ca].state = CONN_FREE;
		session_reply_err(s, -ECONNREFUSED, "listener '%s' has no free connection "
				  "(max_conns_per_endpoint = %u)", l->name, l->max_conns);
		return;
	}
	/* one engine joins both sides of a same-host connection in memory;
	 * between threads they are joined over a channel (daemon/xconn.c) */
	c = ep->thr == l->thr ? session_cmd_new(s, ENGCMD_CONN_ADD, conn_add_done) : NULL;
	if (!c && ep->thr == l->thr) {
		ep->conns[ca].state = CONN_FREE;
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	ep->conns[ca] = (struct dconn){ .state = CONN_PENDING, .peer_ep = l->id, .peer_conn = cb,
					.gen = ep->conns[ca].gen };
	l->conns[cb] = (struct dconn){ .state = CONN_PENDING, .peer_ep = ep->id, .peer_conn = ca,
				       .gen = l->conns[cb].gen };
	ep->n_conns++;
	l->n_conns++;
	l->backlog_pending++;
	if (!c) {
		xconn_join(s, ep, ca, l, cb);
		return;
	}
	c->u.conn.ep_a = ep->id;
	c->u.conn.conn_a = ca;
	c->u.conn.ep_b = l->id;
	c->u.conn.conn_b = cb;
	engthr_submit(EP_THR(s->d, ep), c);
}

void sess_conn_listen(struct session *s, UcclCtl__ListenReq *q)
{
	struct daemon *d = s->d;
	struct dep *ep = sess_ep_find(s, q->ep_id);
	int r;

	if (!ep) {
		session_reply_err(s, -ENOENT, "no endpoint %u", q->ep_id);
		return;
	}
	if (ep->name[0]) {
		session_reply_err(s, -EALREADY, "endpoint %u already listens as '%s'", ep->id, ep->name);
		return;
	}
	r = names_add(d->names, q->name, ep);
	if (r == -EINVAL)
		session_reply_err(s, r, "invalid name: 1-64 characters of A-Z a-z 0-9 . _ : -");
	else if (r == -EADDRINUSE)
		session_reply_err(s, r, "name '%s' is taken", q->name);
	else if (r < 0)
		session_reply_err(s, r, "cannot listen as '%s': %s", q->name, strerror(-r));
	if (r < 0)
		return;
	snprintf(ep->name, sizeof(ep->name), "%s", q->name);
	session_reply(s, 0, NULL, NULL, NULL, 0);
	if (!ep->live)
		return;        /* the reply failed and closed us */
	/* connects that were waiting for this name; a reply may close the
	 * session it goes to, so hold it while stepping past it */
	for (struct session *o = d->sessions, *next; o; o = next) {
		session_ref(o);
		if (o->park == PARK_CONNECT && strcmp(o->park_name, ep->name) == 0 && o->park_ep->live &&
		    ep->live) {
			event_del(o->park_timer);
			o->park = PARK_NONE;
			do_connect(o, o->park_ep, ep);
		}
		next = o->linked ? o->next : NULL;
		if (!o->linked)
			next = d->sessions;   /* o left the list: start over (parked ones are skipped now) */
		session_unref(o);
	}
}

static void park_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	enum park_kind k = s->park;

	(void)fd;
	(void)what;
	s->park = PARK_NONE;
	session_ref(s);
	if (k == PARK_CONNECT)
		session_reply_err(s, -ETIMEDOUT, "no endpoint listened on '%s' in time", s->park_name);
	else if (k == PARK_ACCEPT)
		session_reply_err(s, -ETIMEDOUT, "no connection arrived in time");
	session_unref(s);
}

static void park(struct session *s, enum park_kind k, struct dep *ep, uint32_t timeout_ms)
{
	uint32_t cap = s->d->conf.ctl_timeout_ms;
	struct timeval tv;

	if (timeout_ms > cap)
		timeout_ms = cap;
	if (!s->park_timer)
		s->park_timer = evtimer_new(s->d->base, park_timeout, s);
	if (!s->park_timer) {
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	s->park = k;
	s->park_ep = ep;
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	evtimer_add(s->park_timer, &tv);
}

void sess_conn_connect(struct session *s, UcclCtl__ConnectReq *q)
{
	struct dep *ep = sess_ep_find(s, q->ep_id);
	struct dep *l;

	if (!ep) {
		session_reply_err(s, -ENOENT, "no endpoint %u", q->ep_id);
		return;
	}
	if (strchr(q->name, '/')) {
		/* host/name: an endpoint on another host's daemon */
		rconn_connect(s, ep, q->name, q->has_timeout_ms ? q->timeout_ms : 0);
		return;
	}
	if (!names_valid(q->name)) {
		session_reply_err(s, -EINVAL, "invalid name: 1-64 characters of A-Z a-z 0-9 . _ : -");
		return;
	}
	l = names_find(s->d->names, q->name);
	if (l) {
		do_connect(s, ep, l);
		return;
	}
	if (!q->has_timeout_ms || q->timeout_ms == 0) {
		session_reply_err(s, -ECONNREFUSED, "no endpoint listens on '%s'", q->name);
		return;
	}
	snprintf(s->park_name, sizeof(s->park_name), "%s", q->name);
	park(s, PARK_CONNECT, ep, q->timeout_ms);
}

void sess_conn_accept(struct session *s, UcclCtl__AcceptReq *q)
{
	struct dep *ep = sess_ep_find(s, q->ep_id);

	if (!ep) {
		session_reply_err(s, -ENOENT, "no endpoint %u", q->ep_id);
		return;
	}
	if (!ep->name[0]) {
		session_reply_err(s, -EINVAL, "endpoint %u does not listen", ep->id);
		return;
	}
	if (ep->backlog_n == 0 && (!q->has_timeout_ms || q->timeout_ms == 0)) {
		session_reply_err(s, -EAGAIN, "no connection queued");
		return;
	}
	park(s, PARK_ACCEPT, ep, q->has_timeout_ms ? q->timeout_ms : 0);
	sess_conn_try_accept(ep);
}

static void conn_remove_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct daemon *d = s->d;
	struct dep *ep = d->eps[c->u.conn_rm.ep];

	if (ep && ep->s == s) {
		struct dconn *dc = &ep->conns[c->u.conn_rm.conn];
		struct dep *peer = !dc->remote && dc->peer_ep < DAEMON_MAX_ENDPOINTS ? d->eps[dc->peer_ep]
										      : NULL;

		if (peer && peer->conns[dc->peer_conn].peer_ep == ep->id) {
			if (peer->conns[dc->peer_conn].state == CONN_OPEN)
				peer->conns[dc->peer_conn].state = CONN_RESET;
			peer->conns[dc->peer_conn].peer_ep = UINT32_MAX;
		}
		if (c->result == 0) {
			dc->state = CONN_FREE;
			dc->remote = false;
			ep->n_conns--;
		} else {
			dc->state = CONN_RESET;
		}
	}
	if (!s->closing) {
		if (c->result < 0)
			session_reply_err(s, c->result, "engine: %s", strerror(-c->result));
		else
			session_reply(s, 0, NULL, NULL, NULL, 0);
	}
	session_cmd_finish(c);
}

void sess_conn_close(struct session *s, UcclCtl__CloseReq *q)
{
	struct dep *ep = sess_ep_find(s, q->ep_id);
	struct engcmd *c;

	if (!ep) {
		session_reply_err(s, -ENOENT, "no endpoint %u", q->ep_id);
		return;
	}
	if (q->conn_id >= ep->max_conns ||
	    (ep->conns[q->conn_id].state != CONN_OPEN && ep->conns[q->conn_id].state != CONN_RESET)) {
		session_reply_err(s, -ENOTCONN, "no connection %u on endpoint %u", q->conn_id, ep->id);
		return;
	}
	c = session_cmd_new(s, ENGCMD_CONN_REMOVE, conn_remove_done);
	if (!c) {
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	/* a queued, not yet accepted connection leaves the backlog too; only
	 * once the close goes ahead (refused, it must still be accepted) */
	for (uint32_t i = 0; i < ep->backlog_n; i++) {
		uint32_t k = (ep->backlog_head + i) % ep->backlog_cap;
		if (ep->backlog[k] == q->conn_id) {
			for (uint32_t j = i; j + 1 < ep->backlog_n; j++)
				ep->backlog[(ep->backlog_head + j) % ep->backlog_cap] =
					ep->backlog[(ep->backlog_head + j + 1) % ep->backlog_cap];
			ep->backlog_n--;
			break;
		}
	}
	if (ep->conns[q->conn_id].remote)
		rconn_tell_closed(s->d, ep, q->conn_id);
	else if (ep->conns[q->conn_id].xthr)
		xconn_side_closed(s->d, ep, q->conn_id);
	ep->conns[q->conn_id].state = CONN_CLOSING;
	c->u.conn_rm.ep = ep->id;
	c->u.conn_rm.conn = q->conn_id;
	engthr_submit(EP_THR(s->d, ep), c);
	if (ep->conns[q->conn_id].remote)
		lanes_unbind(s->d, ep, q->conn_id, ep->conns[q->conn_id].lanes);
}
