/* SPDX-License-Identifier: MIT */
/*
 * sess_ep: a client's endpoints: the shared region with its rings, the
 * doorbell and notify pipes, the endpoint id, and their release.
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
#include "daemon/nthr.h"
#include "daemon/rconn.h"
#include "daemon/session.h"
#include "daemon/xconn.h"
#include "engine/ring.h"


struct dep *sess_ep_find(struct session *s, uint32_t id)
{
	for (struct dep *ep = s->eps; ep; ep = ep->next)
		if (ep->id == id && ep->live)
			return ep;
	return NULL;
}

static void free_ep(struct daemon *d, struct dep *ep)
{
	if (ep->region)
		munmap(ep->region, ep->region_len);
	if (ep->memfd >= 0)
		close(ep->memfd);
	if (ep->doorbell_fd >= 0)
		close(ep->doorbell_fd);
	if (ep->notify_fd >= 0)
		close(ep->notify_fd);
	if (ep->doorbell_peer >= 0)
		close(ep->doorbell_peer);
	if (ep->notify_peer >= 0)
		close(ep->notify_peer);
	if (d->eps[ep->id] == ep) {
		d->eps[ep->id] = NULL;
		d->n_eps--;
		d->thr_eps[ep->thr]--;
	}
	free(ep->conns);
	free(ep->backlog);
	free(ep);
}

static void unlink_ep(struct session *s, struct dep *ep)
{
	for (struct dep **pp = &s->eps; *pp; pp = &(*pp)->next) {
		if (*pp == ep) {
			*pp = ep->next;
			s->n_eps--;
			return;
		}
	}
}

static uint32_t round_pow2(uint32_t v)
{
	uint32_t n = 1;

	while (n < v && n < (1u << 31))
		n <<= 1;
	return n;
}

static void ep_add_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct dep *ep = s->d->eps[c->u.ep.p.ep_id];

	if (c->result < 0) {
		unlink_ep(s, ep);
		free_ep(s->d, ep);
		session_reply_err(s, c->result, "engine refused the endpoint: %s", strerror(-c->result));
	} else if (s->closing) {
		struct engcmd *rm = session_cmd_new(s, ENGCMD_EP_REMOVE, sess_ep_release_done);

		ep->added = true;
		if (!rm)
			abort();   /* cannot leave mapped memory behind */
		rm->u.ep_id = ep->id;
		engthr_submit(EP_THR(s->d, ep), rm);
	} else {
		UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
		UcclCtl__EpCreateRep er = UCCL_CTL__EP_CREATE_REP__INIT;
		int fds[3] = { ep->memfd, ep->doorbell_peer, ep->notify_peer };

		ep->added = true;
		ep->live = true;
		er.ep_id = ep->id;
		er.shm_size = ep->region_len;
		er.has_thread = 1;
		er.thread = ep->thr;
		rep.body_case = UCCL_CTL__REPLY__BODY_EP_CREATE;
		rep.ep_create = &er;
		session_reply(s, 0, NULL, &rep, fds, 3);
		/* the reply holds its own copies; ours are not needed any more */
		close(ep->memfd);
		close(ep->doorbell_peer);
		close(ep->notify_peer);
		ep->memfd = ep->doorbell_peer = ep->notify_peer = -1;
	}
	session_cmd_finish(c);
}

static int alloc_ep_id(struct daemon *d, uint32_t *id)
{
	for (uint32_t i = 0; i < DAEMON_MAX_ENDPOINTS; i++) {
		uint32_t j = (d->ep_hint + i) % DAEMON_MAX_ENDPOINTS;
		if (!d->eps[j]) {
			d->ep_hint = j + 1;
			*id = j;
			return 0;
		}
	}
	return -ENOSPC;
}


#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS 83               /* Linux 6.16 */
#endif

/* The SQ doorbell: a socket pair, so that the client's send can say
 * MSG_NOSIGNAL in its one system call instead of masking SIGPIPE around a
 * pipe write; refusing passed descriptors (SO_PASSRIGHTS off), or a client
 * could send the engine thread files whose last close it would run when it
 * reads the doorbell (one that blocks, such as a lingering TCP socket,
 * would stall every endpoint of that thread). Where the kernel cannot
 * refuse them, a pipe as before. db[0] is ours (read), db[1] the client's. */
static int doorbell_pair(int db[2])
{
	int zero = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, db) == 0) {
		if (setsockopt(db[0], SOL_SOCKET, SO_PASSRIGHTS, &zero, sizeof(zero)) == 0)
			return 0;
		close(db[0]);
		close(db[1]);
	}
	return pipe2(db, O_CLOEXEC) < 0 ? -errno : 0;
}

static int ep_setup(struct dep *ep, uint32_t sq, uint32_t cq)
{
	size_t len = ring_region_layout(sq, cq, ep->max_conns, &ep->hdr);

	if (len == 0)
		return -EINVAL;
	ep->memfd = memfd_create("uccl-ep", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (ep->memfd < 0)
		return -errno;
	if (ftruncate(ep->memfd, (off_t)len) < 0 ||
	    fcntl(ep->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return -errno;
	ep->region = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, ep->memfd, 0);
	if (ep->region == MAP_FAILED) {
		ep->region = NULL;
		return -errno;
	}
	ep->region_len = len;
	memcpy(ep->region, &ep->hdr, sizeof(ep->hdr));
	/* Not eventfds: each end is its own open file description, so a
	 * client cannot make the engine's ends blocking (an eventfd shared
	 * through SCM_RIGHTS shares O_NONBLOCK, and a full counter would then
	 * block the engine thread in write). */
	int db[2], nt[2];
	int r = doorbell_pair(db);
	if (r < 0)
		return r;
	ep->doorbell_fd = db[0];
	ep->doorbell_peer = db[1];
	if (pipe2(nt, O_CLOEXEC) < 0)
		return -errno;
	ep->notify_peer = nt[0];
	ep->notify_fd = nt[1];
	if (fcntl(ep->doorbell_fd, F_SETFL, O_NONBLOCK) < 0 || fcntl(ep->notify_fd, F_SETFL, O_NONBLOCK) < 0)
		return -errno;
	ep->conns = calloc(ep->max_conns, sizeof(*ep->conns));
	ep->backlog = calloc(ep->backlog_cap, sizeof(*ep->backlog));
	if (!ep->conns || !ep->backlog)
		return -ENOMEM;
	return 0;
}

void sess_ep_create(struct session *s, UcclCtl__EpCreateReq *q)
{
	struct daemon *d = s->d;
	const struct conf *cf = &d->conf;
	uint32_t sq = q->has_sq_entries && q->sq_entries ? q->sq_entries : cf->ring_depth;
	uint32_t cq = q->has_cq_entries && q->cq_entries ? q->cq_entries : cf->ring_depth;
	struct engcmd *c;
	struct dep *ep;
	uint32_t id;
	int r;

	if (q->has_sqe_size && q->sqe_size == UCCL_SQE16_SIZE) {
		session_reply_err(s, -EOPNOTSUPP, "the 16-byte GPU descriptor format is reserved and not implemented");
		return;
	}
	if (q->has_sqe_size && q->sqe_size != UCCL_SQE_SIZE) {
		session_reply_err(s, -EINVAL, "descriptor size %u: only %u is supported", q->sqe_size,
				  UCCL_SQE_SIZE);
		return;
	}
	if (s->n_eps >= cf->max_endpoints_per_client) {
		session_reply_err(s, -ENOSPC, "too many endpoints (max_endpoints_per_client = %u)",
				  cf->max_endpoints_per_client);
		return;
	}
	if (sq > cf->max_ring_depth || cq > cf->max_ring_depth) {
		session_reply_err(s, -EINVAL, "ring depth %u/%u over max_ring_depth = %u", sq, cq,
				  cf->max_ring_depth);
		return;
	}
	sq = round_pow2(sq < 16 ? 16 : sq);
	cq = round_pow2(cq < 16 ? 16 : cq);
	if (alloc_ep_id(d, &id) < 0) {
		session_reply_err(s, -ENOSPC, "daemon endpoint table full (%u)", DAEMON_MAX_ENDPOINTS);
		return;
	}
	ep = calloc(1, sizeof(*ep));
	if (!ep) {
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	ep->id = id;
	ep->serial = ++d->ep_serial;
	ep->s = s;
	ep->memfd = ep->doorbell_fd = ep->notify_fd = ep->doorbell_peer = ep->notify_peer = -1;
	ep->max_conns = cf->max_conns_per_endpoint;
	ep->backlog_cap = cf->max_listen_backlog;
	/* the thread asked for, or the one with the fewest endpoints, runs
	 * it for good; modulo, so that a client can spread its endpoints
	 * without knowing how many threads there are */
	ep->thr = (uint8_t)(q->has_thread ? q->thread % d->n_thr : nthr_pick(d->thr_eps, d->n_thr));
	d->thr_eps[ep->thr]++;
	d->eps[id] = ep;
	d->n_eps++;
	r = ep_setup(ep, sq, cq);
	if (r < 0) {
		free_ep(d, ep);
		session_reply_err(s, r, "cannot create endpoint region: %s", strerror(-r));
		return;
	}
	c = session_cmd_new(s, ENGCMD_EP_ADD, ep_add_done);
	if (!c) {
		free_ep(d, ep);
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	ep->next = s->eps;
	s->eps = ep;
	s->n_eps++;
	c->u.ep.p = (struct engine_ep_params){
		.ep_id = id, .client_id = s->id, .region = ep->region, .region_len = ep->region_len,
		.hdr = &ep->hdr, .max_conns = ep->max_conns, .max_outstanding = cf->max_outstanding,
	};
	c->u.ep.doorbell_fd = ep->doorbell_fd;
	c->u.ep.notify_fd = ep->notify_fd;
	engthr_submit(EP_THR(d, ep), c);
}

/* The daemon's view of connections to ep: the other sides become RESET
 * (the engine resets them itself when it removes ep). */
void sess_ep_reset_peers(struct daemon *d, struct dep *ep)
{
	for (uint32_t i = 0; i < ep->max_conns; i++) {
		struct dconn *dc = &ep->conns[i];
		struct dep *peer;

		if (dc->state == CONN_FREE)
			continue;
		if (dc->remote) {
			if (dc->state == CONN_OPEN)
				rconn_tell_closed(d, ep, i);
			continue;
		}
		if (dc->xthr)
			xconn_side_closed(d, ep, i);   /* its engine does not know of ep's */
		peer = dc->peer_ep < DAEMON_MAX_ENDPOINTS ? d->eps[dc->peer_ep] : NULL;
		if (peer && peer != ep && peer->conns[dc->peer_conn].peer_ep == ep->id) {
			if (peer->conns[dc->peer_conn].state == CONN_OPEN)
				peer->conns[dc->peer_conn].state = CONN_RESET;
			/* ep's id may be reused: forget it */
			peer->conns[dc->peer_conn].peer_ep = UINT32_MAX;
		}
	}
}

void sess_ep_release_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct dep *ep = s->d->eps[c->u.ep_id];

	if (ep && ep->s == s) {
		/* its lane sides' shadow endpoints go too, queued before any
		 * later use of the id (released just below) */
		lanes_ep_gone(s->d, ep);
		unlink_ep(s, ep);
		free_ep(s->d, ep);
	}
	if (!s->closing && c->result < 0)
		session_reply_err(s, c->result, "the engine refused to remove it: %s", strerror(-c->result));
	else if (!s->closing)
		session_reply(s, 0, NULL, NULL, NULL, 0);
	session_cmd_finish(c);
}

void sess_ep_destroy(struct session *s, UcclCtl__EpDestroyReq *q)
{
	struct dep *ep = sess_ep_find(s, q->ep_id);
	struct engcmd *c;

	if (!ep) {
		session_reply_err(s, -ENOENT, "no endpoint %u", q->ep_id);
		return;
	}
	c = session_cmd_new(s, ENGCMD_EP_REMOVE, sess_ep_release_done);
	if (!c) {
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	if (ep->name[0])
		names_del(s->d->names, ep->name);
	ep->name[0] = 0;
	ep->live = false;
	sess_ep_reset_peers(s->d, ep);
	c->u.ep_id = ep->id;
	engthr_submit(EP_THR(s->d, ep), c);
}
