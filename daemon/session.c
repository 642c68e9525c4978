/* SPDX-License-Identifier: MIT */
/*
 * session: request handlers for one client's control connection, and the
 * release of everything it owns when it goes away (detach, crash, kill -9 or
 * bad input alike).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/chancc.h"
#include "daemon/clientid.h"
#include "daemon/daemon.h"
#include "daemon/engthr.h"
#include "daemon/log.h"
#include "daemon/memory.h"
#include "daemon/names.h"
#include "daemon/session.h"
#include "engine/ring.h"

static void read_cb(evutil_socket_t fd, short what, void *arg);
static void closed_cb(evutil_socket_t fd, short what, void *arg);
static void write_cb(evutil_socket_t fd, short what, void *arg);
static void drop_out(struct session *s);

/* An unattached connection holds a slot: it gets this long to attach, and
 * one uid may hold only so many such slots. A uid uccl.conf allows gets
 * enough for the ranks of a job starting at once (the accept loop takes
 * every pending connection before any attach is read, so a burst of N
 * processes holds N slots at once; attached, it could hold max_clients
 * anyway); any other uid only a few, since it will be refused at attach. */
#define ATTACH_DEADLINE_S 5
#define MAX_UNATTACHED_OTHER 4

/* ---- reference counting and replies ---- */

void session_ref(struct session *s)
{
	s->refs++;
}

static void session_destroy(struct session *s)
{
	struct daemon *d = s->d;

	ctlio_rx_fini(&s->rx);
	drop_out(s);
	if (s->park_timer)
		event_free(s->park_timer);
	if (s->ev_write)
		event_free(s->ev_write);
	if (s->attach_timer)
		event_free(s->attach_timer);
	if (s->ev_read)
		event_free(s->ev_read);
	if (s->ev_closed)
		event_free(s->ev_closed);
	d->closing_sessions--;
	if (s->cprev)
		s->cprev->cnext = s->cnext;
	else
		d->closing = s->cnext;
	if (s->cnext)
		s->cnext->cprev = s->cprev;
	mem_owner_end(&s->owner);      /* its regions are gone from every engine */
	free(s);
	daemon_session_gone(d);
}

void session_unref(struct session *s)
{
	if (--s->refs == 0)
		session_destroy(s);
}

static void resume_reading(struct session *s)
{
	s->busy = false;
	s->park = PARK_NONE;
	s->park_ep = NULL;
	if (!s->closing)
		event_add(s->ev_read, NULL);
}

static void drop_out(struct session *s)
{
	for (int i = 0; i < s->out_nfds; i++)
		close(s->out_fds[i]);
	s->out_nfds = 0;
	free(s->out);
	s->out = NULL;
	s->out_len = s->out_off = 0;
}

/* Push the pending reply without blocking the main thread. 1: all sent;
 * 0: the socket is full, EV_WRITE will continue; <0: the client is gone. */
static int flush_out(struct session *s)
{
	while (s->out_off < s->out_len) {
		union {
			char b[CMSG_SPACE(sizeof(int) * CTLIO_MAX_FDS)];
			struct cmsghdr align;
		} cm;
		struct iovec iov = { .iov_base = s->out + s->out_off, .iov_len = s->out_len - s->out_off };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;

		if (s->out_nfds) {
			memset(&cm, 0, sizeof(cm));
			mh.msg_control = cm.b;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)s->out_nfds);
			struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)s->out_nfds);
			memcpy(CMSG_DATA(c), s->out_fds, sizeof(int) * (size_t)s->out_nfds);
		}
		n = sendmsg(s->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				event_add(s->ev_write, NULL);
				return 0;
			}
			return -errno;
		}
		if (s->out_nfds) {   /* the fds went with the first byte */
			for (int i = 0; i < s->out_nfds; i++)
				close(s->out_fds[i]);
			s->out_nfds = 0;
		}
		s->out_off += (size_t)n;
	}
	drop_out(s);
	return 1;
}

static void write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	int r;

	(void)fd;
	(void)what;
	session_ref(s);
	r = flush_out(s);
	if (r == 1)
		resume_reading(s);
	else if (r < 0)
		session_close(s, NULL, false);
	session_unref(s);
}

/* One request, one reply: until the reply left, nothing more is read from
 * this client, so at most one reply per client waits in memory. */
void session_reply(struct session *s, int status, const char *error, UcclCtl__Reply *body,
		   const int *fds, int nfds)
{
	UcclCtl__Reply def = UCCL_CTL__REPLY__INIT;
	UcclCtl__Reply *rep = body ? body : &def;
	int r;

	if (s->closing || !s->busy || s->out)
		return;
	rep->seq = s->seq;
	rep->status = status;
	rep->error = status < 0 ? (char *)(error ? error : "") : NULL;
	if (status < 0) {
		s->d->stats.request_errors++;
		log_debug("client %u: %s failed: %s", s->id, s->req_name, error ? error : "");
	}
	r = frame_pack_reply(rep, &s->out, &s->out_len);
	if (r < 0) {
		session_close(s, "cannot encode a reply", false);
		return;
	}
	for (int i = 0; i < nfds && r == 0; i++) {
		s->out_fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 0);
		if (s->out_fds[i] < 0)
			r = -errno;
		else
			s->out_nfds++;
	}
	if (r < 0) {
		/* the reply promises the fds (an endpoint exists for them): a
		 * session that cannot get them goes, and its resources with it */
		log_warn("client %u: cannot pass file descriptors with the %s reply: %s (near the "
			 "daemon's open-file limit?); closing the session", s->id, s->req_name, strerror(-r));
		session_close(s, NULL, false);
		return;
	}
	r = flush_out(s);
	if (r == 1)
		resume_reading(s);
	else if (r < 0)
		session_close(s, NULL, false);
}

void session_reply_err(struct session *s, int status, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	session_reply(s, status, msg, NULL, NULL, 0);
}

/* ---- engine commands ---- */

struct engcmd *session_cmd_new(struct session *s, enum engcmd_type type, void (*done)(struct engcmd *))
{
	struct engcmd *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->type = type;
	c->done = done;
	c->arg = s;
	session_ref(s);
	return c;
}

void session_cmd_finish(struct engcmd *c)
{
	struct session *s = c->arg;

	free(c);
	session_unref(s);
}

/* ---- open / close ---- */

static bool id_in(uint32_t id, const uint32_t *list, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (list[i] == id)
			return true;
	return false;
}

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59              /* Linux 4.13 */
#endif
#define PEER_GROUPS_MAX 65536u        /* NGROUPS_MAX */

/* The groups the client process held when it connected (SO_PEERGROUPS),
 * after its primary gid in groups[0]: the kernel's answer, not a name
 * service's, so that nothing on this thread waits for LDAP and a process
 * that dropped a group does not count as its member. Returns how many, at
 * least 1; *heap is set if more than fit in `groups` were allocated. */
static int peer_groups(int fd, gid_t gid, gid_t *groups, int cap, gid_t **heap)
{
	socklen_t len = (socklen_t)((size_t)(cap - 1) * sizeof(gid_t));
	gid_t *g;

	*heap = NULL;
	groups[0] = gid;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups + 1, &len) == 0)
		return 1 + (int)(len / sizeof(gid_t));
	if (errno != ERANGE || len / sizeof(gid_t) > PEER_GROUPS_MAX)
		return 1;              /* an older kernel: the primary gid only */
	g = malloc(len + sizeof(gid_t));
	if (!g)
		return 1;
	g[0] = gid;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g + 1, &len) < 0) {
		free(g);
		return 1;
	}
	*heap = g;
	return 1 + (int)(len / sizeof(gid_t));
}

/* Decide allow/admin from SO_PEERCRED and the process's groups. */
static void check_creds(struct session *s)
{
	const struct conf *c = &s->d->conf;
	gid_t local[64], *heap, *groups;
	int ng = peer_groups(s->fd, s->gid, local, 64, &heap);

	groups = heap ? heap : local;
	/* root, and whoever runs this daemon, administer it */
	s->admin = s->uid == 0 || s->uid == geteuid();
	s->allowed = s->uid == 0 || c->allow_all || id_in(s->uid, c->allow_uids, c->n_allow_uids);
	for (int i = 0; i < ng; i++) {
		if (id_in(groups[i], c->allow_gids, c->n_allow_gids))
			s->allowed = true;
		if (c->admin_gid >= 0 && (int64_t)groups[i] == c->admin_gid)
			s->admin = true;
	}
	free(heap);
}

static void attach_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;

	(void)fd;
	(void)what;
	if (!s->attached && !s->busy)
		session_close(s, "no attach request in time", false);
}

/* A live session, or a closing one not yet destroyed, holds id. */
static bool client_id_taken(void *arg, uint32_t id)
{
	const struct daemon *d = arg;

	for (const struct session *o = d->sessions; o; o = o->next)
		if (o->id == id)
			return true;
	for (const struct session *o = d->closing; o; o = o->cnext)
		if (o->id == id)
			return true;
	return false;
}

int session_open(struct daemon *d, int fd)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct session *s;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
		return -errno;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->d = d;
	s->fd = fd;
	s->owner.pidfd = -1;
	s->pid = cred.pid;
	s->uid = cred.uid;
	s->gid = cred.gid;
	s->refs = 1;
	ctlio_rx_init(&s->rx, d->conf.max_ctl_msg);
	check_creds(s);
	if (!s->admin && d->n_sessions >= DAEMON_CONNS(d)) {
		free(s);
		return -ENFILE;
	}
	uint32_t unattached = 0;
	for (struct session *o = d->sessions; o; o = o->next)
		unattached += !o->attached && o->uid == cred.uid;
	/* a refused connection takes no id */
	if (unattached >= (s->allowed ? DAEMON_MAX_UNATTACHED_PER_UID : MAX_UNATTACHED_OTHER) ||
	    !(s->id = clientid_next(&d->next_client_id, client_id_taken, d))) {
		free(s);
		return -EUSERS;
	}
	struct timeval tv = { .tv_sec = ATTACH_DEADLINE_S };
	s->ev_read = event_new(d->base, fd, EV_READ | EV_PERSIST, read_cb, s);
	s->ev_closed = event_new(d->base, fd, EV_CLOSED | EV_PERSIST, closed_cb, s);
	s->ev_write = event_new(d->base, fd, EV_WRITE, write_cb, s);
	s->attach_timer = evtimer_new(d->base, attach_timeout, s);
	if (!s->ev_read || !s->ev_closed || !s->ev_write || !s->attach_timer ||
	    event_add(s->ev_read, NULL) < 0 || event_add(s->ev_closed, NULL) < 0 ||
	    evtimer_add(s->attach_timer, &tv) < 0) {
		if (s->ev_read)
			event_free(s->ev_read);
		if (s->ev_closed)
			event_free(s->ev_closed);
		if (s->ev_write)
			event_free(s->ev_write);
		if (s->attach_timer)
			event_free(s->attach_timer);
		free(s);
		return -ENOMEM;
	}
	s->next = d->sessions;
	if (d->sessions)
		d->sessions->prev = s;
	d->sessions = s;
	s->linked = true;
	d->n_sessions++;
	/* the process at pid now, while it connects: one that registers
	 * memory later may have exited by then and its pid gone to another
	 * (only the daemon's own uid may register; a failure is tried again
	 * at the first registration) */
	if (s->uid == geteuid())
		(void)mem_owner_watch(d->base, s->pid, &s->owner);
	log_debug("client %u: connected (pid %d uid %u gid %u)", s->id, (int)s->pid, s->uid, s->gid);
	return 0;
}


void session_close(struct session *s, const char *reason, bool bad_input)
{
	struct daemon *d = s->d;

	if (s->closing)
		return;
	s->closing = true;
	if (reason)
		log_warn("client %u (pid %d%s%s): closing: %s", s->id, (int)s->pid,
			 s->name[0] ? ", " : "", s->name, reason);
	if (bad_input)
		d->stats.bad_input++;
	event_del(s->ev_read);
	event_del(s->ev_closed);
	event_del(s->ev_write);
	event_del(s->attach_timer);
	if (s->park_timer)
		event_del(s->park_timer);
	close(s->fd);
	s->fd = -1;
	if (s->linked) {
		if (s->prev)
			s->prev->next = s->next;
		else
			d->sessions = s->next;
		if (s->next)
			s->next->prev = s->prev;
		s->linked = false;
		d->n_sessions--;
		if (s->attached && s->observer)
			d->n_observers--;
		else if (s->attached)
			d->n_clients--;
	}
	d->closing_sessions++;
	/* its id stays held until its regions are gone from every engine */
	s->cnext = d->closing;
	if (d->closing)
		d->closing->cprev = s;
	d->closing = s;
	/* Endpoints first: removing them drops their pending ops, which may
	 * reference the regions removed after them (commands run in order). */
	for (struct dep *ep = s->eps; ep; ep = ep->next) {
		struct engcmd *c;

		if (ep->name[0])
			names_del(d->names, ep->name);
		ep->name[0] = 0;
		ep->live = false;
		if (!ep->added)
			continue;   /* its EP_ADD is still queued; ep_add_done removes it */
		sess_ep_reset_peers(d, ep);
		c = session_cmd_new(s, ENGCMD_EP_REMOVE, sess_ep_release_done);
		if (!c)
			abort();   /* cannot leave mapped memory behind */
		c->u.ep_id = ep->id;
		engthr_submit(EP_THR(d, ep), c);
	}
	for (struct smr *m = s->mrs; m; m = m->next) {
		struct engcmd *c = session_cmd_new(s, ENGCMD_MR_REMOVE, sess_mem_release_done);

		if (!c)
			abort();
		c->u.mr_rm.client_id = s->id;
		c->u.mr_rm.mr_id = m->id;
		daemon_submit_all(d, c);
	}
	session_unref(s);
}

static void closed_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;

	(void)fd;
	(void)what;
	bool quiet = !s->attached || s->observer;   /* ucclctl and probes */

	session_ref(s);                /* close may drop the last reference */
	if (!quiet)
		s->d->stats.disconnects++;
	session_close(s, NULL, false);
	if (!quiet)
		log_info("client %u (pid %d): disconnected; resources released", s->id, (int)s->pid);
	session_unref(s);
}

static void read_frame(struct session *s, int fd);

/* Handlers may close the session (a failed reply, a refused attach,
 * detach): the reference held here keeps it alive until they return. */
static void read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;

	(void)what;
	session_ref(s);
	read_frame(s, fd);
	session_unref(s);
}

static void read_frame(struct session *s, int fd)
{
	UcclCtl__Request *req;
	int r;

	r = ctlio_rx_read(&s->rx, fd);
	if (r == 0)
		return;
	if (r == -ECONNRESET) {
		closed_cb(fd, 0, s);
		return;
	}
	if (r < 0) {
		char why[96];

		if (r == -EMSGSIZE)
			snprintf(why, sizeof(why), "bad frame length (limit %u bytes)", s->rx.max);
		else
			snprintf(why, sizeof(why), "read error: %s", strerror(-r));
		session_close(s, why, r == -EMSGSIZE);
		return;
	}
	r = frame_unpack_request(s->rx.buf, s->rx.need, &req);
	if (r < 0) {
		session_close(s, r == -EPROTO ? "request names no operation" : "undecodable request", true);
		return;
	}
	if (s->rx.extra_fds || s->rx.nfds != frame_request_nfds(req)) {
		char why[112];
		/* past the control buffer the kernel drops fds uncounted */
		snprintf(why, sizeof(why), "%s request carried %s%d file descriptor(s), expected %d",
			 frame_request_name(req), s->rx.fds_cut ? "more than " : "",
			 s->rx.nfds + s->rx.extra_fds - s->rx.fds_cut, frame_request_nfds(req));
		uccl_ctl__request__free_unpacked(req, NULL);
		session_close(s, why, true);
		return;
	}
	/* take the fds out of rx so that reset does not close them */
	int fds[CTLIO_MAX_FDS], nfds = s->rx.nfds;
	memcpy(fds, s->rx.fds, sizeof(int) * (size_t)nfds);
	s->rx.nfds = 0;
	ctlio_rx_reset(&s->rx);
	session_handle(s, req, fds, nfds);
	uccl_ctl__request__free_unpacked(req, NULL);
}

/* ---- attach ---- */

/* Attached sessions of uid: observers, or clients (the others). */
static uint32_t clients_of_uid(const struct daemon *d, uint32_t uid, bool observers)
{
	uint32_t n = 0;

	for (const struct session *o = d->sessions; o; o = o->next)
		n += o->attached && o->observer == observers && o->uid == uid;
	return n;
}

static void handle_attach(struct session *s, UcclCtl__AttachReq *a)
{
	struct daemon *d = s->d;
	UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
	UcclCtl__AttachRep ar = UCCL_CTL__ATTACH_REP__INIT;
	const char *why = NULL;
	char msg[160];
	int st = 0;

	if (a->proto_version != UCCL_PROTO_VERSION) {
		snprintf(msg, sizeof(msg), "client speaks control protocol %u, daemon speaks %u",
			 a->proto_version, UCCL_PROTO_VERSION);
		st = -EPROTONOSUPPORT;
		why = msg;
	} else if (!s->allowed) {
		snprintf(msg, sizeof(msg), "uid %u gid %u is not allowed by uccl.conf (allow_uids/allow_gids)",
			 s->uid, s->gid);
		st = -EACCES;
		why = msg;
	} else if (a->observer && d->n_observers >= DAEMON_MAX_OBSERVERS) {
		snprintf(msg, sizeof(msg), "too many observers (%u)", DAEMON_MAX_OBSERVERS);
		st = -EUSERS;
		why = msg;
	} else if (a->observer && !s->admin &&
		   clients_of_uid(d, s->uid, true) >= DAEMON_OBSERVERS_PER_UID) {
		snprintf(msg, sizeof(msg), "too many observers of uid %u (%u; admins may hold more)",
			 s->uid, DAEMON_OBSERVERS_PER_UID);
		st = -EUSERS;
		why = msg;
	} else if (a->observer && !s->admin &&
		   d->n_observers >= DAEMON_MAX_OBSERVERS - DAEMON_ADMIN_OBSERVERS) {
		snprintf(msg, sizeof(msg), "too many observers (%u; the last %u are kept for admins)",
			 DAEMON_MAX_OBSERVERS - DAEMON_ADMIN_OBSERVERS, DAEMON_ADMIN_OBSERVERS);
		st = -EUSERS;
		why = msg;
	} else if (!a->observer && d->n_clients >= d->conf.max_clients) {
		snprintf(msg, sizeof(msg), "too many clients (max_clients = %u)", d->conf.max_clients);
		st = -EUSERS;
		why = msg;
	} else if (!a->observer && d->conf.max_clients_per_uid &&
		   clients_of_uid(d, s->uid, false) >= d->conf.max_clients_per_uid) {
		/* one user must not take every slot from the others */
		snprintf(msg, sizeof(msg), "too many clients of uid %u (max_clients_per_uid = %u)",
			 s->uid, d->conf.max_clients_per_uid);
		st = -EUSERS;
		why = msg;
	}
	if (st < 0) {
		d->stats.refused++;
		log_limited(&d->refusal_log, LOG_LVL_WARN, "client %u (pid %d): attach refused: %s",
			    s->id, (int)s->pid, why);
		session_reply(s, st, why, NULL, NULL, 0);
		session_close(s, NULL, false);
		return;
	}
	s->attached = true;
	event_del(s->attach_timer);
	s->observer = a->has_observer && a->observer;
	if (a->name) {
		/* shown in logs and by ucclctl: printable ASCII only, so that a
		 * name cannot forge log lines or terminal escapes */
		snprintf(s->name, sizeof(s->name), "%s", a->name);
		for (char *p = s->name; *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				*p = '?';
	}
	s->attach_ms = daemon_now_ms();
	/* observers (ucclctl) are left out of attaches, as of detaches and
	 * disconnects, so that attaches - detaches - disconnects stays the
	 * clients attached */
	if (s->observer) {
		d->n_observers++;
	} else {
		d->n_clients++;
		d->stats.attaches++;
		log_info("client %u attached (pid %d uid %u%s%s)", s->id, (int)s->pid, s->uid,
			 s->name[0] ? " name " : "", s->name);
	}
	ar.proto_version = UCCL_PROTO_VERSION;
	ar.client_id = s->id;
	ar.daemon_version = (char *)PACKAGE_VERSION;
	ar.has_daemon_pid = true;
	ar.daemon_pid = (uint32_t)getpid();
	rep.body_case = UCCL_CTL__REPLY__BODY_ATTACH;
	rep.attach = &ar;
	session_reply(s, 0, NULL, &rep, NULL, 0);
}

/* ---- dispatch ---- */

void session_handle(struct session *s, UcclCtl__Request *req, int *fds, int nfds)
{
	int kind = req->body_case;

	s->d->stats.requests++;
	s->busy = true;
	s->seq = req->seq;
	s->req_name = frame_request_name(req);
	event_del(s->ev_read);
	if (kind == UCCL_CTL__REQUEST__BODY_ATTACH) {
		if (s->attached) {
			session_close(s, "attach on an attached session", true);
			return;
		}
		handle_attach(s, req->attach);
		return;
	}
	if (!s->attached) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		session_close(s, "request before attach", true);
		return;
	}
	switch (kind) {
	case UCCL_CTL__REQUEST__BODY_STATUS:
	case UCCL_CTL__REQUEST__BODY_CLIENTS:
	case UCCL_CTL__REQUEST__BODY_ENDPOINTS:
	case UCCL_CTL__REQUEST__BODY_MRS:
	case UCCL_CTL__REQUEST__BODY_STATS:
	case UCCL_CTL__REQUEST__BODY_PEERS:
	case UCCL_CTL__REQUEST__BODY_CHANNELS:
		status_reply(s, req);
		return;
	case UCCL_CTL__REQUEST__BODY_SET_CC:
		/* an admin action, open to observers (ucclctl) like lookup */
		chancc_request(s, req->set_cc);
		return;
	case UCCL_CTL__REQUEST__BODY_DETACH:
		if (!s->observer)
			s->d->stats.detaches++;
		session_reply(s, 0, NULL, NULL, NULL, 0);
		if (!s->observer)
			log_info("client %u detached", s->id);
		session_close(s, NULL, false);
		return;
	default:
		break;
	}
	if (s->observer) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		session_reply_err(s, -EPERM, "observer sessions may only query status");
		return;
	}
	switch (kind) {
	case UCCL_CTL__REQUEST__BODY_MEM_REG:
		sess_mem_reg(s, req->mem_reg, fds, nfds);
		return;
	case UCCL_CTL__REQUEST__BODY_MEM_DEREG:
		sess_mem_dereg(s, req->mem_dereg);
		break;
	case UCCL_CTL__REQUEST__BODY_EP_CREATE:
		sess_ep_create(s, req->ep_create);
		break;
	case UCCL_CTL__REQUEST__BODY_EP_DESTROY:
		sess_ep_destroy(s, req->ep_destroy);
		break;
	case UCCL_CTL__REQUEST__BODY_LISTEN:
		sess_conn_listen(s, req->listen);
		break;
	case UCCL_CTL__REQUEST__BODY_CONNECT:
		sess_conn_connect(s, req->connect);
		break;
	case UCCL_CTL__REQUEST__BODY_ACCEPT:
		sess_conn_accept(s, req->accept);
		break;
	case UCCL_CTL__REQUEST__BODY_CLOSE:
		sess_conn_close(s, req->close);
		break;
	default:
		session_close(s, "unknown request type", true);
		break;
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
}
