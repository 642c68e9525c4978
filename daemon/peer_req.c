/* SPDX-License-Identifier: MIT */
/*
 * peer_req: requests and answers on an up peer connection (see peer.h and
 * docs/peer-protocol.md). Asked by us: lookups and connects, one struct
 * preq each, listed on their peer until answered, timed out, cancelled or
 * failed with the connection. Asked of us: lookups are answered at once;
 * connects are handed to the daemon's handler as a struct peer_connect_req,
 * listed on the manager until the daemon answers, however late. One-way:
 * ConnClose, both ways.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "daemon/log.h"
#include "daemon/peer.h"
#include "daemon/peer_int.h"
#include "proto/peerframe.h"

struct preq {
	struct preq *next, *prev;      /* peer->reqs */
	struct peer *peer;
	enum preq_kind kind;
	uint32_t id;
	uint64_t handle;
	struct event *timer;
	/* a connect that timed out or was cancelled: its caller is gone, but
	 * it waits for its answer, to close what a late success set up */
	bool abandoned;
	uint32_t src_ep, src_conn;     /* a connect's side on this daemon */
	union preq_cb {
		peer_lookup_cb lookup;
		peer_connect_cb connect;
	} cb;
	void *arg;
};

struct peer_connect_req {
	struct peer_connect_req *next, *prev;   /* pm->asked */
	struct pconn *c;               /* the connection it came on; NULL once that is gone */
	uint32_t id;
	uint32_t src_thread, dst_thread;
};

static const uint32_t max_reqs[PREQ_KINDS] = {
	[PREQ_LOOKUP] = PEER_MAX_LOOKUPS,
	[PREQ_CONNECT] = PEER_MAX_CONNECTS,
};

/* ---- asked by us ----------------------------------------------------------------- */

static void preq_drop(struct preq *q)
{
	struct peer *p = q->peer;

	if (q->prev)
		q->prev->next = q->next;
	else
		p->reqs = q->next;
	if (q->next)
		q->next->prev = q->prev;
	p->n_reqs[q->kind]--;
	event_free(q->timer);
	free(q);
}

/* Its caller gives up: a lookup is forgotten, a connect waits on, without
 * a caller, for its answer (and still holds its slot). */
static void preq_abandon(struct preq *q)
{
	if (q->kind == PREQ_LOOKUP) {
		preq_drop(q);
		return;
	}
	event_del(q->timer);
	q->abandoned = true;
}

/* Tell the caller, and drop q (answered) or abandon it (timed out). */
static void preq_finish(struct preq *q, int status, uint32_t ep_id, uint32_t conn, bool answered)
{
	enum preq_kind kind = q->kind;
	union preq_cb cb = q->cb;
	void *arg = q->arg;

	if (answered)
		preq_drop(q);
	else
		preq_abandon(q);
	/* a lookup's answer carries the endpoint's thread where a connect's
	 * carries its conn */
	if (kind == PREQ_LOOKUP)
		cb.lookup(arg, status, ep_id, conn);
	else
		cb.connect(arg, status, ep_id, conn);
}

void peer_reqs_fail(struct peer *p, int status)
{
	/* from the head each time: a callback may cancel others */
	while (p->reqs) {
		if (p->reqs->abandoned)
			preq_drop(p->reqs);
		else
			preq_finish(p->reqs, status, 0, 0, true);
	}
}

static void preq_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	preq_finish(arg, -ETIMEDOUT, 0, 0, false);
}

/* A request of kind to peer, not sent yet; NULL with *err. */
static struct preq *preq_new(struct peermgr *pm, const char *peer, enum preq_kind kind,
			     const char *name, uint32_t timeout_ms, int *err)
{
	struct peer *p = find_peer(pm, peer);
	struct preq *q;

	*err = 0;
	if (!p || p->removing)
		*err = -ESRCH;
	else if (!peerframe_listen_name_valid(name) || timeout_ms == 0)
		*err = -EINVAL;
	else if (p->state != PEER_UP || !p->conn)
		*err = -ENOTCONN;
	else if (p->n_reqs[kind] >= max_reqs[kind])
		*err = -EBUSY;
	if (*err)
		return NULL;
	q = calloc(1, sizeof(*q));
	if (q)
		q->timer = evtimer_new(pm->base, preq_timeout_cb, q);
	if (!q || !q->timer) {
		free(q);
		*err = -ENOMEM;
		return NULL;
	}
	q->peer = p;
	q->kind = kind;
	q->id = ++p->next_id[kind];
	q->handle = ++pm->next_handle;
	return q;
}

/* Send m (q's request) and wait for the answer; on failure q is freed. */
static int preq_send(struct preq *q, const UcclPeer__PeerMsg *m, uint32_t timeout_ms,
		     uint64_t *handle)
{
	struct peer *p = q->peer;
	struct timeval tv = tv_ms(timeout_ms);
	int r = pconn_send(p->conn, m);

	if (r < 0 || evtimer_add(q->timer, &tv) < 0) {
		event_free(q->timer);
		free(q);
		return r < 0 ? (r == -ENOBUFS ? -EBUSY : r) : -ENOMEM;
	}
	q->next = p->reqs;
	if (p->reqs)
		p->reqs->prev = q;
	p->reqs = q;
	p->n_reqs[q->kind]++;
	if (handle)
		*handle = q->handle;
	return 0;
}

int peer_lookup(struct peermgr *pm, const char *peer, const char *name, uint32_t timeout_ms,
		peer_lookup_cb cb, void *arg, uint64_t *handle)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__LookupReq lq = UCCL_PEER__LOOKUP_REQ__INIT;
	struct preq *q;
	int r;

	q = preq_new(pm, peer, PREQ_LOOKUP, name, timeout_ms, &r);
	if (!q)
		return r;
	q->cb.lookup = cb;
	q->arg = arg;
	lq.id = q->id;
	lq.name = (char *)name;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_LOOKUP_REQ;
	m.lookup_req = &lq;
	return preq_send(q, &m, timeout_ms, handle);
}

int peer_connect(struct peermgr *pm, const char *peer, const char *name, uint32_t src_ep,
		 uint32_t src_conn, uint32_t timeout_ms, peer_connect_cb cb, void *arg,
		 uint64_t *handle)
{
	return peer_connect_thr(pm, peer, name, src_ep, src_conn, 0, 0, timeout_ms, cb, arg, handle);
}

int peer_connect_thr(struct peermgr *pm, const char *peer, const char *name, uint32_t src_ep,
		     uint32_t src_conn, uint32_t src_thread, uint32_t dst_thread, uint32_t timeout_ms,
		     peer_connect_cb cb, void *arg, uint64_t *handle)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__ConnectReq cq = UCCL_PEER__CONNECT_REQ__INIT;
	struct preq *q;
	int r;

	q = preq_new(pm, peer, PREQ_CONNECT, name, timeout_ms, &r);
	if (!q)
		return r;
	q->cb.connect = cb;
	q->arg = arg;
	q->src_ep = src_ep;
	q->src_conn = src_conn;
	cq.id = q->id;
	cq.name = (char *)name;
	cq.src_ep = src_ep;
	cq.src_conn = src_conn;
	/* thread 0 on both sides: the request of a one-thread daemon */
	cq.has_src_thread = cq.has_dst_thread = src_thread || dst_thread;
	cq.src_thread = src_thread;
	cq.dst_thread = dst_thread;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONNECT_REQ;
	m.connect_req = &cq;
	return preq_send(q, &m, timeout_ms, handle);
}

void peer_lookup_cancel(struct peermgr *pm, uint64_t handle)
{
	for (uint32_t i = 0; i < pm->n_peers; i++) {
		for (struct preq *q = pm->peers[i]->reqs; q; q = q->next) {
			if (q->handle == handle && !q->abandoned) {
				preq_abandon(q);
				return;
			}
		}
	}
}

void peer_connect_cancel(struct peermgr *pm, uint64_t handle)
{
	peer_lookup_cancel(pm, handle);
}

static struct preq *preq_find(struct peer *p, enum preq_kind kind, uint32_t id)
{
	for (struct preq *q = p->reqs; q; q = q->next)
		if (q->kind == kind && q->id == id)
			return q;
	return NULL;
}

/* An answer that matches no request waiting: a late answer to one that was
 * given up on is fine, one to a request never sent closes c. */
static void unmatched_answer(struct pconn *c, enum preq_kind kind, uint32_t id)
{
	static const char *const why[PREQ_KINDS] = {
		[PREQ_LOOKUP] = "lookup_rep: answers a lookup never sent",
		[PREQ_CONNECT] = "connect_rep: answers a connect never sent",
	};

	if (id == 0 || id > c->peer->next_id[kind])
		pconn_close(c, why[kind], -EPROTO);
}

static void handle_lookup_rep(struct pconn *c, const UcclPeer__LookupRep *a)
{
	struct preq *q = preq_find(c->peer, PREQ_LOOKUP, a->id);

	if (q)
		preq_finish(q, a->found ? 0 : -ENOENT, a->found ? a->ep_id : 0,
			    a->found && a->has_thread ? a->thread : 0, true);
	else
		unmatched_answer(c, PREQ_LOOKUP, a->id);
}

static void send_conn_close(struct pconn *c, uint32_t ep_id, uint32_t conn, uint32_t src_ep,
			    uint32_t src_conn)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__ConnClose cc = UCCL_PEER__CONN_CLOSE__INIT;

	cc.ep_id = ep_id;
	cc.conn = conn;
	cc.src_ep = src_ep;
	cc.src_conn = src_conn;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONN_CLOSE;
	m.conn_close = &cc;
	pconn_send_or_close_soon(c, &m);
}

static void handle_connect_rep(struct pconn *c, const UcclPeer__ConnectRep *a)
{
	struct preq *q = preq_find(c->peer, PREQ_CONNECT, a->id);

	if (!q) {
		unmatched_answer(c, PREQ_CONNECT, a->id);
		return;
	}
	if (!q->abandoned) {
		preq_finish(q, a->status, a->ep_id, a->conn, true);
		return;
	}
	/* nobody here wants the connection any more: the peer closes its side */
	if (a->status == 0) {
		log_debug("peer %s: connect %u answered after it was given up; closing it",
			  c->peer->name, a->id);
		send_conn_close(c, a->ep_id, a->conn, q->src_ep, q->src_conn);
	}
	preq_drop(q);
}

/* ---- asked of us ------------------------------------------------------------------ */

static void handle_lookup_req(struct pconn *c, const UcclPeer__LookupReq *q)
{
	struct peermgr *pm = c->pm;
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__LookupRep a = UCCL_PEER__LOOKUP_REP__INIT;
	uint32_t ep_id = 0, thread = 0;
	int r = pm->resolve ? pm->resolve(pm->resolve_arg, q->name, &ep_id, &thread) : -ENOENT;

	if (r == -EINVAL) {
		pconn_close(c, "lookup_req: bad name", -EINVAL);
		return;
	}
	a.id = q->id;
	a.found = r == 0;
	a.has_ep_id = r == 0;
	a.ep_id = ep_id;
	/* only a daemon of several threads says which: the one-thread answer
	 * stays what it was */
	a.has_thread = r == 0 && thread != 0;
	a.thread = a.has_thread ? thread : 0;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_LOOKUP_REP;
	m.lookup_rep = &a;
	log_debug("peer %s: lookup '%s': %s", c->peer->name, q->name, r == 0 ? "found" : "none");
	pconn_send_or_close(c, &m);
}

static void send_connect_rep(struct pconn *c, uint32_t id, int status, uint32_t ep_id,
			     uint32_t conn)
{
	UcclPeer__PeerMsg m = UCCL_PEER__PEER_MSG__INIT;
	UcclPeer__ConnectRep a = UCCL_PEER__CONNECT_REP__INIT;

	a.id = id;
	a.status = status;
	a.has_ep_id = a.has_conn = status == 0;
	a.ep_id = status == 0 ? ep_id : 0;
	a.conn = status == 0 ? conn : 0;
	m.body_case = UCCL_PEER__PEER_MSG__BODY_CONNECT_REP;
	m.connect_rep = &a;
	pconn_send_or_close_soon(c, &m);
}

static void handle_connect_req(struct pconn *c, const UcclPeer__ConnectReq *q)
{
	struct peermgr *pm = c->pm;
	struct peer_connect_req *req = NULL;
	int r = -ENOMEM;

	if (!pm->handlers.connect)
		r = -EOPNOTSUPP;
	else if (c->n_asked >= PEER_MAX_CONNECTS)
		r = -EBUSY;
	else
		req = calloc(1, sizeof(*req));
	if (!req) {
		log_debug("peer %s: connect %u to '%s': %s", c->peer->name, q->id, q->name,
			  strerror(-r));
		send_connect_rep(c, q->id, r, 0, 0);
		return;
	}
	req->c = c;
	req->id = q->id;
	req->src_thread = q->has_src_thread ? q->src_thread : 0;
	req->dst_thread = q->has_dst_thread ? q->dst_thread : 0;
	req->next = pm->asked;
	if (pm->asked)
		pm->asked->prev = req;
	pm->asked = req;
	c->n_asked++;
	log_debug("peer %s: connect %u to '%s' from %u/%u", c->peer->name, q->id, q->name,
		  q->src_ep, q->src_conn);
	pm->handlers.connect(pm->handlers.arg, c->peer->name, req, q->name, q->src_ep, q->src_conn);
}

void peer_connect_answer(struct peermgr *pm, struct peer_connect_req *req, int status,
			 uint32_t ep_id, uint32_t conn)
{
	struct pconn *c = req->c;

	if (req->prev)
		req->prev->next = req->next;
	else
		pm->asked = req->next;
	if (req->next)
		req->next->prev = req->prev;
	if (c) {
		if (status > 0 || status < -4095) {
			log_warn("peer %s: connect %u answered %d, not 0 or an errno; sent as -EIO",
				 c->peer ? c->peer->name : c->ratext, req->id, status);
			status = -EIO;
		}
		c->n_asked--;
		send_connect_rep(c, req->id, status, ep_id, conn);
	}
	free(req);
}

void peer_connect_req_threads(const struct peer_connect_req *req, uint32_t *src_thread,
			      uint32_t *dst_thread)
{
	*src_thread = req->src_thread;
	*dst_thread = req->dst_thread;
}

void peer_reqs_conn_gone(struct pconn *c)
{
	for (struct peer_connect_req *req = c->pm->asked; req && c->n_asked; req = req->next) {
		if (req->c == c) {
			req->c = NULL;
			c->n_asked--;
		}
	}
}

void peer_reqs_free(struct peermgr *pm)
{
	while (pm->asked) {
		struct peer_connect_req *req = pm->asked;

		pm->asked = req->next;
		free(req);
	}
}

/* ---- both ways --------------------------------------------------------------------- */

void peermgr_set_handlers(struct peermgr *pm, const struct peer_handlers *h)
{
	if (h)
		pm->handlers = *h;
	else
		memset(&pm->handlers, 0, sizeof(pm->handlers));
}

int peer_conn_close(struct peermgr *pm, const char *peer, uint32_t ep_id, uint32_t conn,
		    uint32_t src_ep, uint32_t src_conn)
{
	struct peer *p = find_peer(pm, peer);

	if (!p || p->removing)
		return -ESRCH;
	if (p->state != PEER_UP || !p->conn)
		return -ENOTCONN;
	send_conn_close(p->conn, ep_id, conn, src_ep, src_conn);
	return 0;
}

static void handle_conn_close(struct pconn *c, const UcclPeer__ConnClose *cc)
{
	struct peermgr *pm = c->pm;

	log_debug("peer %s: connection %u/%u (theirs %u/%u) closed", c->peer->name, cc->ep_id,
		  cc->conn, cc->src_ep, cc->src_conn);
	if (pm->handlers.conn_close)
		pm->handlers.conn_close(pm->handlers.arg, c->peer->name, cc->ep_id, cc->conn,
					cc->src_ep, cc->src_conn);
}

bool peer_reqs_handle(struct pconn *c, const UcclPeer__PeerMsg *m)
{
	switch (m->body_case) {
	case UCCL_PEER__PEER_MSG__BODY_LOOKUP_REQ:
		handle_lookup_req(c, m->lookup_req);
		return true;
	case UCCL_PEER__PEER_MSG__BODY_LOOKUP_REP:
		handle_lookup_rep(c, m->lookup_rep);
		return true;
	case UCCL_PEER__PEER_MSG__BODY_CONNECT_REQ:
		handle_connect_req(c, m->connect_req);
		return true;
	case UCCL_PEER__PEER_MSG__BODY_CONNECT_REP:
		handle_connect_rep(c, m->connect_rep);
		return true;
	case UCCL_PEER__PEER_MSG__BODY_CONN_CLOSE:
		handle_conn_close(c, m->conn_close);
		return true;
	default:
		return false;
	}
}
