/* SPDX-License-Identifier: MIT */
/*
 * session: request handlers for one client's control connection, and the
 * release of everything it owns when it goes away (detach, crash, kill -9 or
 * bad input alike).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

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
 * one uid may hold only a few such slots. */
#define ATTACH_DEADLINE_S 5
#define MAX_UNATTACHED_PER_UID 4

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
	if (r == 0)
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

static struct engcmd *cmd_new(struct session *s, enum engcmd_type type, void (*done)(struct engcmd *))
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

static void cmd_finish(struct engcmd *c)
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

/* Decide allow/admin from SO_PEERCRED and the process's groups. */
static void check_creds(struct session *s)
{
	const struct conf *c = &s->d->conf;
	gid_t groups[64];
	int ng = 64;
	struct passwd pw, *pwp = NULL;
	char buf[1024];

	groups[0] = s->gid;
	if (getpwuid_r(s->uid, &pw, buf, sizeof(buf), &pwp) == 0 && pwp) {
		if (getgrouplist(pwp->pw_name, s->gid, groups, &ng) < 0)
			ng = 64;
	} else {
		ng = 1;
	}
	/* root, and whoever runs this daemon, administer it */
	s->admin = s->uid == 0 || s->uid == geteuid();
	s->allowed = s->uid == 0 || c->allow_all || id_in(s->uid, c->allow_uids, c->n_allow_uids);
	for (int i = 0; i < ng; i++) {
		if (id_in(groups[i], c->allow_gids, c->n_allow_gids))
			s->allowed = true;
		if (c->admin_gid >= 0 && (int64_t)groups[i] == c->admin_gid)
			s->admin = true;
	}
}

static void attach_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;

	(void)fd;
	(void)what;
	if (!s->attached && !s->busy)
		session_close(s, "no attach request in time", false);
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
	s->pid = cred.pid;
	s->uid = cred.uid;
	s->gid = cred.gid;
	s->refs = 1;
	s->id = ++d->next_client_id;
	ctlio_rx_init(&s->rx, d->conf.max_ctl_msg);
	uint32_t unattached = 0;
	for (struct session *o = d->sessions; o; o = o->next)
		unattached += !o->attached && o->uid == cred.uid;
	if (unattached >= MAX_UNATTACHED_PER_UID) {
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
	check_creds(s);
	s->next = d->sessions;
	if (d->sessions)
		d->sessions->prev = s;
	d->sessions = s;
	s->linked = true;
	d->n_sessions++;
	log_debug("client %u: connected (pid %d uid %u gid %u)", s->id, (int)s->pid, s->uid, s->gid);
	return 0;
}

static void ep_release_done(struct engcmd *c);
static void mr_release_done(struct engcmd *c);
static void mark_peers_reset(struct daemon *d, struct dep *ep);

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
		mark_peers_reset(d, ep);
		c = cmd_new(s, ENGCMD_EP_REMOVE, ep_release_done);
		if (!c)
			abort();   /* cannot leave mapped memory behind */
		c->u.ep_id = ep->id;
		engthr_submit(d->eng, c);
	}
	for (struct smr *m = s->mrs; m; m = m->next) {
		struct engcmd *c = cmd_new(s, ENGCMD_MR_REMOVE, mr_release_done);

		if (!c)
			abort();
		c->u.mr_rm.client_id = s->id;
		c->u.mr_rm.mr_id = m->id;
		engthr_submit(d->eng, c);
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
		char why[96];
		snprintf(why, sizeof(why), "%s request carried %d file descriptor(s), expected %d",
			 frame_request_name(req), s->rx.nfds + s->rx.extra_fds, frame_request_nfds(req));
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
	} else if (!a->observer && d->n_clients >= d->conf.max_clients) {
		snprintf(msg, sizeof(msg), "too many clients (max_clients = %u)", d->conf.max_clients);
		st = -EUSERS;
		why = msg;
	}
	if (st < 0) {
		d->stats.refused++;
		log_warn("client %u (pid %d): attach refused: %s", s->id, (int)s->pid, why);
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
	if (s->observer)
		d->n_observers++;
	else
		d->n_clients++;
	d->stats.attaches++;
	if (!s->observer)
		log_info("client %u attached (pid %d uid %u%s%s)", s->id, (int)s->pid, s->uid,
			 s->name[0] ? " name " : "", s->name);
	ar.proto_version = UCCL_PROTO_VERSION;
	ar.client_id = s->id;
	ar.daemon_version = (char *)PACKAGE_VERSION;
	rep.body_case = UCCL_CTL__REPLY__BODY_ATTACH;
	rep.attach = &ar;
	session_reply(s, 0, NULL, &rep, NULL, 0);
}

/* ---- memory ---- */

static struct smr *find_mr(struct session *s, uint32_t id)
{
	for (struct smr *m = s->mrs; m; m = m->next)
		if (m->id == id)
			return m;
	return NULL;
}

static void unlink_mr(struct session *s, struct smr *mr)
{
	for (struct smr **pp = &s->mrs; *pp; pp = &(*pp)->next) {
		if (*pp == mr) {
			*pp = mr->next;
			break;
		}
	}
	s->n_mrs--;
	s->reg_bytes -= mr->len;
	s->d->n_mrs--;
	s->d->reg_bytes -= mr->len;
}

static void free_mr(struct smr *m)
{
	if (m->kind == MR_MAPPED)
		mem_unmap(m->base, m->len);
	free(m);
}

static void mr_add_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct smr *m = find_mr(s, c->u.mr.id);

	if (c->result < 0 && m) {
		unlink_mr(s, m);
		free_mr(m);
		session_reply_err(s, c->result, "engine refused the region: %s", strerror(-c->result));
	} else if (m) {
		UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
		UcclCtl__MemRegRep mr = UCCL_CTL__MEM_REG_REP__INIT;

		m->live = true;
		mr.mr_id = m->id;
		mr.rkey = m->rkey;
		rep.body_case = UCCL_CTL__REPLY__BODY_MEM_REG;
		rep.mem_reg = &mr;
		session_reply(s, 0, NULL, &rep, NULL, 0);
	}
	cmd_finish(c);
}

static void handle_mem_reg(struct session *s, UcclCtl__MemRegReq *q, int *fds, int nfds)
{
	const struct conf *cf = &s->d->conf;
	struct smr *m;
	struct engcmd *c;
	int r;

	if (s->n_mrs >= cf->max_mrs_per_client) {
		session_reply_err(s, -ENOSPC, "too many memory regions (max_mrs_per_client = %u)",
				  cf->max_mrs_per_client);
		goto out_fds;
	}
	if (q->len == 0 || q->len > cf->max_registered_bytes ||
	    s->reg_bytes + q->len > cf->max_registered_bytes) {
		session_reply_err(s, q->len == 0 ? -EINVAL : -ENOSPC,
				  "region of %llu bytes refused: %llu registered, max_registered_bytes = %llu",
				  (unsigned long long)q->len, (unsigned long long)s->reg_bytes,
				  (unsigned long long)cf->max_registered_bytes);
		goto out_fds;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		session_reply_err(s, -ENOMEM, "out of memory");
		goto out_fds;
	}
	m->len = q->len;
	if (q->kind == UCCL_CTL__MEM_KIND__MEM_MEMFD) {
		m->kind = MR_MAPPED;
		r = mem_map_memfd(fds[0], q->len, &m->base);
		if (r < 0) {
			session_reply_err(s, r, "memfd refused: %s", r == -EINVAL ?
					  "not a size-sealed memfd (F_SEAL_SHRINK) of at least len bytes" :
					  strerror(-r));
			free(m);
			goto out_fds;
		}
	} else {
		m->kind = MR_REMOTE_VA;
		m->addr = q->addr;
		/* process_vm_* run with the daemon's credentials: only a client
		 * of the daemon's own user may name its memory this way, or a
		 * root daemon would read and write for anyone */
		if (s->uid != geteuid()) {
			session_reply_err(s, -EPERM, "registering existing memory needs the client to run as "
					  "the daemon's user (uid %u); use uccl_mem_alloc", (unsigned)geteuid());
			free(m);
			goto out_fds;
		}
		r = q->has_addr ? mem_check_vaddr(s->pid, s->uid, q->addr, q->len) : -EINVAL;
		if (r < 0) {
			session_reply_err(s, r, "cannot register [0x%llx, +%llu) of pid %d: %s (needs read-write "
					  "anonymous, memfd or shm memory)",
					  (unsigned long long)q->addr, (unsigned long long)q->len,
					  (int)s->pid, strerror(-r));
			free(m);
			goto out_fds;
		}
	}
	c = cmd_new(s, ENGCMD_MR_ADD, mr_add_done);
	if (!c) {
		free_mr(m);
		session_reply_err(s, -ENOMEM, "out of memory");
		goto out_fds;
	}
	do
		m->id = ++s->next_mr_id;
	while (m->id == 0 || find_mr(s, m->id));
	m->rkey = mem_new_rkey();
	m->next = s->mrs;
	s->mrs = m;
	s->n_mrs++;
	s->reg_bytes += m->len;
	s->d->n_mrs++;
	s->d->reg_bytes += m->len;
	c->u.mr = (struct mr){
		.id = m->id, .client_id = s->id, .rkey = m->rkey, .len = m->len,
		.kind = m->kind, .base = m->base, .pid = s->pid, .addr = m->addr,
	};
	engthr_submit(s->d->eng, c);
out_fds:
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
}

static void mr_release_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct smr *m = find_mr(s, c->u.mr_rm.mr_id);

	if (m) {
		unlink_mr(s, m);
		free_mr(m);
	}
	if (!s->closing) {
		if (c->result < 0)
			session_reply_err(s, c->result, "engine: %s", strerror(-c->result));
		else
			session_reply(s, 0, NULL, NULL, NULL, 0);
	}
	cmd_finish(c);
}

static void handle_mem_dereg(struct session *s, UcclCtl__MemDeregReq *q)
{
	struct smr *m = find_mr(s, q->mr_id);
	struct engcmd *c;

	if (!m || !m->live) {
		session_reply_err(s, -ENOENT, "no memory region %u", q->mr_id);
		return;
	}
	c = cmd_new(s, ENGCMD_MR_REMOVE, mr_release_done);
	if (!c) {
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	m->live = false;
	c->u.mr_rm.client_id = s->id;
	c->u.mr_rm.mr_id = m->id;
	engthr_submit(s->d->eng, c);
}

/* ---- endpoints ---- */

static struct dep *find_ep(struct session *s, uint32_t id)
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
		struct engcmd *rm = cmd_new(s, ENGCMD_EP_REMOVE, ep_release_done);

		ep->added = true;
		if (!rm)
			abort();   /* cannot leave mapped memory behind */
		rm->u.ep_id = ep->id;
		engthr_submit(s->d->eng, rm);
	} else {
		UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
		UcclCtl__EpCreateRep er = UCCL_CTL__EP_CREATE_REP__INIT;
		int fds[3] = { ep->memfd, ep->doorbell_peer, ep->notify_peer };

		ep->added = true;
		ep->live = true;
		er.ep_id = ep->id;
		er.shm_size = ep->region_len;
		rep.body_case = UCCL_CTL__REPLY__BODY_EP_CREATE;
		rep.ep_create = &er;
		session_reply(s, 0, NULL, &rep, fds, 3);
		/* the reply holds its own copies; ours are not needed any more */
		close(ep->memfd);
		close(ep->doorbell_peer);
		close(ep->notify_peer);
		ep->memfd = ep->doorbell_peer = ep->notify_peer = -1;
	}
	cmd_finish(c);
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
	/* Pipes, not eventfds: each end is its own open file description, so
	 * a client cannot make the engine's ends blocking (an eventfd shared
	 * through SCM_RIGHTS shares O_NONBLOCK, and a full counter would then
	 * block the engine thread in write). */
	int db[2], nt[2];
	if (pipe2(db, O_CLOEXEC) < 0)
		return -errno;
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

static void handle_ep_create(struct session *s, UcclCtl__EpCreateReq *q)
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
	ep->s = s;
	ep->memfd = ep->doorbell_fd = ep->notify_fd = ep->doorbell_peer = ep->notify_peer = -1;
	ep->max_conns = cf->max_conns_per_endpoint;
	ep->backlog_cap = cf->max_listen_backlog;
	d->eps[id] = ep;
	d->n_eps++;
	r = ep_setup(ep, sq, cq);
	if (r < 0) {
		free_ep(d, ep);
		session_reply_err(s, r, "cannot create endpoint region: %s", strerror(-r));
		return;
	}
	c = cmd_new(s, ENGCMD_EP_ADD, ep_add_done);
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
	engthr_submit(d->eng, c);
}

/* The daemon's view of connections to ep: the other sides become RESET
 * (the engine resets them itself when it removes ep). */
static void mark_peers_reset(struct daemon *d, struct dep *ep)
{
	for (uint32_t i = 0; i < ep->max_conns; i++) {
		struct dconn *dc = &ep->conns[i];
		struct dep *peer;

		if (dc->state == CONN_FREE)
			continue;
		peer = dc->peer_ep < DAEMON_MAX_ENDPOINTS ? d->eps[dc->peer_ep] : NULL;
		if (peer && peer != ep && peer->conns[dc->peer_conn].peer_ep == ep->id) {
			if (peer->conns[dc->peer_conn].state == CONN_OPEN)
				peer->conns[dc->peer_conn].state = CONN_RESET;
			/* ep's id may be reused: forget it */
			peer->conns[dc->peer_conn].peer_ep = UINT32_MAX;
		}
	}
}

static void ep_release_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct dep *ep = s->d->eps[c->u.ep_id];

	if (ep && ep->s == s) {
		unlink_ep(s, ep);
		free_ep(s->d, ep);
	}
	if (!s->closing)
		session_reply(s, c->result < 0 ? c->result : 0, c->result < 0 ? "engine refused" : NULL,
			      NULL, NULL, 0);
	cmd_finish(c);
}

static void handle_ep_destroy(struct session *s, UcclCtl__EpDestroyReq *q)
{
	struct dep *ep = find_ep(s, q->ep_id);
	struct engcmd *c;

	if (!ep) {
		session_reply_err(s, -ENOENT, "no endpoint %u", q->ep_id);
		return;
	}
	c = cmd_new(s, ENGCMD_EP_REMOVE, ep_release_done);
	if (!c) {
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	if (ep->name[0])
		names_del(s->d->names, ep->name);
	ep->name[0] = 0;
	ep->live = false;
	mark_peers_reset(s->d, ep);
	c->u.ep_id = ep->id;
	engthr_submit(s->d->eng, c);
}

/* ---- listen / connect / accept / close ---- */

static int alloc_conn(struct dep *ep, uint32_t *id)
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
static void try_accept(struct dep *l)
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
	struct dep *p = l->conns[conn].peer_ep < DAEMON_MAX_ENDPOINTS ? s->d->eps[l->conns[conn].peer_ep] : NULL;
	if (p)
		peer_label(p, peer, sizeof(peer));
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
		cmd_finish(c);
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
			try_accept(l);
		}
	}
	if (!s->closing)
		reply_conn(s, c->u.conn.conn_a, NULL, false);
	cmd_finish(c);
}

static void do_connect(struct session *s, struct dep *ep, struct dep *l)
{
	struct engcmd *c;
	uint32_t ca, cb;

	if (l->backlog_n + l->backlog_pending >= l->backlog_cap) {
		session_reply_err(s, -ECONNREFUSED, "listen backlog of '%s' is full (max_listen_backlog = %u)",
				  l->name, l->backlog_cap);
		return;
	}
	if (alloc_conn(ep, &ca) < 0) {
		session_reply_err(s, -ENOSPC, "endpoint %u has no free connection (max_conns_per_endpoint = %u)",
				  ep->id, ep->max_conns);
		return;
	}
	ep->conns[ca].state = CONN_PENDING;   /* reserve before looking for cb on the same ep */
	if (alloc_conn(l, &cb) < 0) {
		ep->conns[ca].state = CONN_FREE;
		session_reply_err(s, -ECONNREFUSED, "listener '%s' has no free connection", l->name);
		return;
	}
	c = cmd_new(s, ENGCMD_CONN_ADD, conn_add_done);
	if (!c) {
		ep->conns[ca].state = CONN_FREE;
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	ep->conns[ca] = (struct dconn){ .state = CONN_PENDING, .peer_ep = l->id, .peer_conn = cb };
	l->conns[cb] = (struct dconn){ .state = CONN_PENDING, .peer_ep = ep->id, .peer_conn = ca };
	ep->n_conns++;
	l->n_conns++;
	l->backlog_pending++;
	c->u.conn.ep_a = ep->id;
	c->u.conn.conn_a = ca;
	c->u.conn.ep_b = l->id;
	c->u.conn.conn_b = cb;
	engthr_submit(s->d->eng, c);
}

static void handle_listen(struct session *s, UcclCtl__ListenReq *q)
{
	struct daemon *d = s->d;
	struct dep *ep = find_ep(s, q->ep_id);
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
	if (r < 0) {
		session_reply_err(s, r, r == -EINVAL ?
				  "invalid name: 1-64 characters of A-Z a-z 0-9 . _ : -" :
				  "name '%s' is taken", q->name);
		return;
	}
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

static void handle_connect(struct session *s, UcclCtl__ConnectReq *q)
{
	struct dep *ep = find_ep(s, q->ep_id);
	struct dep *l;

	if (!ep) {
		session_reply_err(s, -ENOENT, "no endpoint %u", q->ep_id);
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

static void handle_accept(struct session *s, UcclCtl__AcceptReq *q)
{
	struct dep *ep = find_ep(s, q->ep_id);

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
	try_accept(ep);
}

static void conn_remove_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct daemon *d = s->d;
	struct dep *ep = d->eps[c->u.conn_rm.ep];

	if (ep && ep->s == s) {
		struct dconn *dc = &ep->conns[c->u.conn_rm.conn];
		struct dep *peer = dc->peer_ep < DAEMON_MAX_ENDPOINTS ? d->eps[dc->peer_ep] : NULL;

		if (peer && peer->conns[dc->peer_conn].peer_ep == ep->id) {
			if (peer->conns[dc->peer_conn].state == CONN_OPEN)
				peer->conns[dc->peer_conn].state = CONN_RESET;
			peer->conns[dc->peer_conn].peer_ep = UINT32_MAX;
		}
		if (c->result == 0) {
			dc->state = CONN_FREE;
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
	cmd_finish(c);
}

static void handle_close(struct session *s, UcclCtl__CloseReq *q)
{
	struct dep *ep = find_ep(s, q->ep_id);
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
	/* a queued, not yet accepted connection leaves the backlog too */
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
	c = cmd_new(s, ENGCMD_CONN_REMOVE, conn_remove_done);
	if (!c) {
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	ep->conns[q->conn_id].state = CONN_CLOSING;
	c->u.conn_rm.ep = ep->id;
	c->u.conn_rm.conn = q->conn_id;
	engthr_submit(s->d->eng, c);
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
		status_reply(s, req);
		return;
	case UCCL_CTL__REQUEST__BODY_DETACH:
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
		handle_mem_reg(s, req->mem_reg, fds, nfds);
		return;
	case UCCL_CTL__REQUEST__BODY_MEM_DEREG:
		handle_mem_dereg(s, req->mem_dereg);
		break;
	case UCCL_CTL__REQUEST__BODY_EP_CREATE:
		handle_ep_create(s, req->ep_create);
		break;
	case UCCL_CTL__REQUEST__BODY_EP_DESTROY:
		handle_ep_destroy(s, req->ep_destroy);
		break;
	case UCCL_CTL__REQUEST__BODY_LISTEN:
		handle_listen(s, req->listen);
		break;
	case UCCL_CTL__REQUEST__BODY_CONNECT:
		handle_connect(s, req->connect);
		break;
	case UCCL_CTL__REQUEST__BODY_ACCEPT:
		handle_accept(s, req->accept);
		break;
	case UCCL_CTL__REQUEST__BODY_CLOSE:
		handle_close(s, req->close);
		break;
	default:
		session_close(s, "unknown request type", true);
		break;
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
}
