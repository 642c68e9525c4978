/* SPDX-License-Identifier: MIT */
/*
 * ctx: attaching to ucclsvcd and the control round trip every other control
 * call goes through. One Unix stream socket per context; requests carry a
 * sequence number and are serialised by the context's mutex, so the reply to
 * read is always the one for the newest request, and late replies to earlier
 * requests that timed out are recognised: what they made (an endpoint, a
 * region, a connection the caller was told failed) is undone, the rest is
 * dropped.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client/ctx.h"

/* uccl_attach() has no context to keep its explanation in when it fails, so
 * it is kept per thread and read with uccl_last_error(NULL). */
static __thread char attach_err[CTX_ERR_LEN];

/* The calling thread's last failure on a context: a context's own text is
 * shared by all of its threads, and another thread's failure would replace
 * it before this one read it. serial tells the context apart from a later
 * one at the same address (0: none yet). */
static __thread struct {
	uint64_t serial;
	char text[CTX_ERR_LEN];
} thread_err;
static uint64_t ctx_serials;

int64_t client_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The calling thread's text becomes the context's too. Writers are calls
 * under ctx->lock and ctx_fail, which holds none: a spin lock of its own,
 * held for one copy. */
static void err_publish(struct uccl_ctx *ctx)
{
	thread_err.serial = ctx->serial;
	while (__atomic_test_and_set(&ctx->err_busy, __ATOMIC_ACQUIRE))
		;
	memcpy(ctx->err, thread_err.text, sizeof(ctx->err));
	__atomic_clear(&ctx->err_busy, __ATOMIC_RELEASE);
}

void ctx_set_error(struct uccl_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(thread_err.text, sizeof(thread_err.text), fmt, ap);
	va_end(ap);
	err_publish(ctx);
}

const char *ctx_thread_error(void)
{
	return thread_err.text;
}

int ctx_fail(struct uccl_ctx *ctx, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(thread_err.text, sizeof(thread_err.text), fmt, ap);
	va_end(ap);
	err_publish(ctx);
	return err;
}

int ctx_timeout(const struct uccl_ctx *ctx)
{
	return __atomic_load_n(&ctx->timeout_ms, __ATOMIC_RELAXED);
}

static void close_fds(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* The stream can no longer be trusted to be at a frame boundary (or the
 * daemon is gone): every later call fails at once instead of misreading.
 * Nothing can be released through it any more, so the connection is shut
 * down: the daemon then drops this client's endpoints and regions at once
 * rather than at uccl_detach (peers must not write memory the application
 * frees and reuses meanwhile). */
static int ctx_break(struct uccl_ctx *ctx, int err, const char *what)
{
	shutdown(ctx->fd, SHUT_RDWR);
	if (err == -ECONNRESET || err == -EPIPE)
		ctx_set_error(ctx, "daemon closed the control connection (%s)", what);
	else if (err == -EMSGSIZE)
		ctx_set_error(ctx, "daemon sent a frame of impossible length (%s)", what);
	else if (err == -EBADMSG)
		ctx_set_error(ctx, "undecodable reply from the daemon (%s); the control connection "
			      "is closed", what);
	else
		ctx_set_error(ctx, "control connection to the daemon failed during %s: %s", what,
			      uccl_strerror(err));
	ctx->broken = err;
	return err;
}

/* Reply m answers a request not sent yet (the last sent is ctx->seq): the
 * daemon is confused, and the answers to ours would come unmatched later.
 * Frees m. */
static int ctx_break_ahead(struct uccl_ctx *ctx, UcclCtl__Reply *m, const char *what)
{
	uint32_t seq = m->seq;

	uccl_ctl__reply__free_unpacked(m, NULL);
	ctx_break(ctx, -EPROTO, what);
	ctx_set_error(ctx, "daemon answered request %u, not sent yet (the last was %u), during %s; "
		      "the control connection is closed", seq, ctx->seq, what);
	return -EPROTO;
}

/* A request could not be sent: the stream is lost if part of it went, or
 * the daemon is gone; with nothing sent (the daemon not reading in time,
 * no memory) it is still at a frame boundary and only this call fails. */
static int send_failed(struct uccl_ctx *ctx, int err, size_t sent, const char *what)
{
	if (sent == 0 && err != -EPIPE && err != -ECONNRESET) {
		ctx_set_error(ctx, "cannot send %s to the daemon: %s", what, uccl_strerror(err));
		return err;
	}
	return ctx_break(ctx, err, what);
}

/* Wait for the socket to become readable until deadline_ns (< 0: never). */
static int wait_readable(int fd, int64_t deadline_ns)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int t = -1, r;

		if (deadline_ns >= 0) {
			int64_t left = deadline_ns - client_now_ns();

			if (left <= 0)
				return -ETIMEDOUT;
			left = (left + 999999) / 1000000;
			t = left > INT_MAX ? INT_MAX : (int)left;
		}
		r = poll(&p, 1, t);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/*
 * Read the next whole frame. ctx->rx persists across calls: a frame half read
 * when a timeout struck is finished by the next call rather than lost, which
 * would leave the stream in the middle of a frame.
 */
/* *extra: fds past CTLIO_MAX_FDS that were counted; *cut: the kernel
 * dropped more without saying how many. */
static int read_frame(struct uccl_ctx *ctx, int64_t deadline_ns, uint8_t **buf, uint32_t *len,
		      int *fds, int *nfds, int *extra, bool *cut)
{
	struct ctlio_rx *rx = &ctx->rx;
	int r;

	for (;;) {
		r = ctlio_rx_read(rx, ctx->fd);
		if (r == 1)
			break;
		if (r < 0)
			return r;
		r = wait_readable(ctx->fd, deadline_ns);
		if (r < 0)
			return r;
	}
	*buf = rx->buf;
	*len = rx->need;
	memcpy(fds, rx->fds, sizeof(int) * (size_t)rx->nfds);
	*nfds = rx->nfds;
	*extra = rx->extra_fds - rx->fds_cut;
	*cut = rx->fds_cut > 0;
	/* Ownership of buf and fds moved to the caller. */
	rx->buf = NULL;
	rx->nfds = 0;
	ctlio_rx_reset(rx);
	return 0;
}

/* ---- late replies ---- */

/* Whether req creates something in the daemon (an endpoint, a region, a
 * connection), and what its undo needs into *l. */
static bool late_of(const UcclCtl__Request *req, struct ctx_late *l)
{
	*l = (struct ctx_late){ .seq = req->seq, .body = req->body_case };
	switch (req->body_case) {
	case UCCL_CTL__REQUEST__BODY_EP_CREATE:
	case UCCL_CTL__REQUEST__BODY_MEM_REG:
		return true;
	case UCCL_CTL__REQUEST__BODY_CONNECT:
		l->ep_id = req->connect->ep_id;
		return true;
	case UCCL_CTL__REQUEST__BODY_ACCEPT:
		l->ep_id = req->accept->ep_id;
		return true;
	default:
		return false;
	}
}

/* A request that timed out: if it creates something, remember it (the
 * oldest is forgotten when the table is full: bounded, best effort). */
static void late_note(struct uccl_ctx *ctx, const UcclCtl__Request *req)
{
	struct ctx_late l;

	if (!late_of(req, &l))
		return;
	if (ctx->nlate == CTX_LATE_MAX) {
		memmove(ctx->late, ctx->late + 1, sizeof(ctx->late[0]) * (CTX_LATE_MAX - 1));
		ctx->nlate--;
	}
	ctx->late[ctx->nlate++] = l;
}

/* Send req without waiting for its reply, which a later call drops as late. */
static int send_nowait(struct uccl_ctx *ctx, UcclCtl__Request *req)
{
	uint8_t *out;
	size_t outlen, sent;
	int r;

	req->seq = ++ctx->seq;
	r = frame_pack_request(req, &out, &outlen);
	if (r < 0) {
		ctx_set_error(ctx, "cannot encode %s request: %s", frame_request_name(req),
			      uccl_strerror(r));
		return r;
	}
	r = ctlio_send_part(ctx->fd, out, outlen, NULL, 0, ctx_timeout(ctx), &sent);
	free(out);
	if (r < 0)
		return send_failed(ctx, r, sent, frame_request_name(req));
	return 0;
}

/* Undo what reply m to request l made (nothing if it failed), so that it
 * does not count against this client's limits until uccl_detach. */
static int undo_made(struct uccl_ctx *ctx, const struct ctx_late *l, const UcclCtl__Reply *m)
{
	UcclCtl__Request req = UCCL_CTL__REQUEST__INIT;
	UcclCtl__EpDestroyReq e = UCCL_CTL__EP_DESTROY_REQ__INIT;
	UcclCtl__MemDeregReq d = UCCL_CTL__MEM_DEREG_REQ__INIT;
	UcclCtl__CloseReq c = UCCL_CTL__CLOSE_REQ__INIT;

	if (m->status != 0)
		return 0;              /* it made nothing */
	switch (l->body) {
	case UCCL_CTL__REQUEST__BODY_EP_CREATE:
		if (m->body_case != UCCL_CTL__REPLY__BODY_EP_CREATE)
			return 0;
		e.ep_id = m->ep_create->ep_id;
		req.body_case = UCCL_CTL__REQUEST__BODY_EP_DESTROY;
		req.ep_destroy = &e;
		break;
	case UCCL_CTL__REQUEST__BODY_MEM_REG:
		if (m->body_case != UCCL_CTL__REPLY__BODY_MEM_REG)
			return 0;
		d.mr_id = m->mem_reg->mr_id;
		req.body_case = UCCL_CTL__REQUEST__BODY_MEM_DEREG;
		req.mem_dereg = &d;
		break;
	case UCCL_CTL__REQUEST__BODY_CONNECT:
		if (m->body_case != UCCL_CTL__REPLY__BODY_CONNECT)
			return 0;
		c.ep_id = l->ep_id;
		c.conn_id = m->connect->conn_id;
		req.body_case = UCCL_CTL__REQUEST__BODY_CLOSE;
		req.close = &c;
		break;
	case UCCL_CTL__REQUEST__BODY_ACCEPT:
		if (m->body_case != UCCL_CTL__REPLY__BODY_ACCEPT)
			return 0;
		c.ep_id = l->ep_id;
		c.conn_id = m->accept->conn_id;
		req.body_case = UCCL_CTL__REQUEST__BODY_CLOSE;
		req.close = &c;
		break;
	default:
		return 0;
	}
	return send_nowait(ctx, &req);
}

/* The late reply m to a request that timed out: undo what it made. */
static int late_reply(struct uccl_ctx *ctx, const UcclCtl__Reply *m)
{
	struct ctx_late l;
	uint32_t i;

	for (i = 0; i < ctx->nlate && ctx->late[i].seq != m->seq; i++)
		;
	if (i == ctx->nlate)
		return 0;
	l = ctx->late[i];
	memmove(ctx->late + i, ctx->late + i + 1, sizeof(ctx->late[0]) * (ctx->nlate - i - 1));
	ctx->nlate--;
	return undo_made(ctx, &l, m);
}

/* Before a new request: the late replies that arrived meanwhile, so that
 * what they made is gone before the daemon judges the request. */
static int late_drain(struct uccl_ctx *ctx)
{
	while (ctx->nlate) {
		int got[CTLIO_MAX_FDS], ngot = 0, extra = 0;
		UcclCtl__Reply *m = NULL;
		uint8_t *buf;
		uint32_t len;
		bool cut;
		int r = read_frame(ctx, client_now_ns(), &buf, &len, got, &ngot, &extra, &cut);

		if (r == -ETIMEDOUT)
			return 0;              /* nothing more yet */
		if (r < 0)
			return ctx_break(ctx, r, "a late reply");
		close_fds(got, ngot);
		r = frame_unpack_reply(buf, len, &m);
		free(buf);
		/* as in ctx_call: what it made could not be undone, so the
		 * connection goes and the session's all is freed with it */
		if (r < 0)
			return ctx_break(ctx, r, "a late reply");
		if ((int32_t)(m->seq - ctx->seq) > 0)
			return ctx_break_ahead(ctx, m, "a late reply");
		r = late_reply(ctx, m);
		uccl_ctl__reply__free_unpacked(m, NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

int ctx_call(struct uccl_ctx *ctx, UcclCtl__Request *req, const int *fds, int nfds,
	     int64_t extra_ms, UcclCtl__Reply__BodyCase want, int want_fds, int *rfds,
	     UcclCtl__Reply **rep)
{
	const char *what = frame_request_name(req);
	int64_t wait_ms = ctx_timeout(ctx) + (extra_ms > 0 ? extra_ms : 0);
	int64_t deadline = client_now_ns() + wait_ms * 1000000;
	UcclCtl__Reply *m = NULL;
	uint8_t *out;
	size_t outlen, sent;
	int r;

	if (ctx->broken) {
		ctx_set_error(ctx, "control connection to the daemon is closed");
		return -EPIPE;
	}
	if (ctx->nlate) {
		r = late_drain(ctx);
		if (r < 0)
			return r;
	}
	req->seq = ++ctx->seq;
	r = frame_pack_request(req, &out, &outlen);
	if (r < 0) {
		ctx_set_error(ctx, "cannot encode %s request: %s", what, uccl_strerror(r));
		return r;
	}
	r = ctlio_send_part(ctx->fd, out, outlen, fds, nfds, (int)(wait_ms > INT_MAX ? INT_MAX : wait_ms),
			    &sent);
	free(out);
	if (r < 0)
		return send_failed(ctx, r, sent, what);

	for (;;) {
		int got[CTLIO_MAX_FDS], ngot = 0, extra = 0;
		uint8_t *buf;
		uint32_t len;
		bool cut = false;

		r = read_frame(ctx, deadline, &buf, &len, got, &ngot, &extra, &cut);
		if (r == -ETIMEDOUT) {
			late_note(ctx, req);
			ctx_set_error(ctx, "daemon did not answer %s within %lld ms", what,
				      (long long)wait_ms);
			return r;
		}
		if (r < 0)
			return ctx_break(ctx, r, what);
		r = frame_unpack_reply(buf, len, &m);
		free(buf);
		if (r < 0) {
			/* whatever the request made in the daemon (an endpoint)
			 * cannot be named to undo it: closing the connection
			 * frees it with the session */
			close_fds(got, ngot);
			return ctx_break(ctx, r, what);
		}
		if (m->seq == req->seq) {
			r = 0;
			if (m->status < 0) {
				ctx_set_error(ctx, "%s", m->error ? m->error : "");
				r = m->status;
			} else if (m->status > 0 ||
				   (want != UCCL_CTL__REPLY__BODY__NOT_SET && m->body_case != want)) {
				ctx_set_error(ctx, "malformed %s reply from the daemon", what);
				r = -EPROTO;
			} else if (cut && ngot + extra < want_fds) {
				/* the kernel could not give us all of them: our
				 * descriptor table is full, not the daemon's fault */
				ctx_set_error(ctx, "no room in this process for the %d file descriptors of "
					      "the %s reply (RLIMIT_NOFILE reached)", want_fds, what);
				r = -EMFILE;
			} else if (ngot != want_fds || extra || cut) {
				ctx_set_error(ctx, "daemon sent %s%d file descriptors with the %s reply, "
					      "expected %d", cut ? "more than " : "", ngot + extra, what,
					      want_fds);
				r = -EPROTO;
			}
			if (r < 0) {
				close_fds(got, ngot);
				/* a success we cannot use made something in the
				 * daemon (an endpoint): undone as a late one is,
				 * without taking a place among the late ones */
				struct ctx_late l;

				if (m->status == 0 && m->body_case == want && late_of(req, &l))
					(void)undo_made(ctx, &l, m);
				uccl_ctl__reply__free_unpacked(m, NULL);
				return r;
			}
			if (want_fds)
				memcpy(rfds, got, sizeof(int) * (size_t)want_fds);
			if (rep)
				*rep = m;
			else
				uccl_ctl__reply__free_unpacked(m, NULL);
			return 0;
		}
		close_fds(got, ngot);
		if ((int32_t)(m->seq - req->seq) > 0)
			return ctx_break_ahead(ctx, m, what);
		/* Late reply to a request that timed out earlier: undo what
		 * it made, else drop it. */
		r = late_reply(ctx, m);
		uccl_ctl__reply__free_unpacked(m, NULL);
		m = NULL;
		if (r < 0)
			return r;
	}
}

/* $UCCL_TIMEOUT_MS, or the default. -EINVAL if set but not a positive int. */
static int env_timeout(int *ms)
{
	const char *s = getenv("UCCL_TIMEOUT_MS");
	char *end;
	long v;

	*ms = CTX_TIMEOUT_MS;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		return -EINVAL;
	*ms = (int)v;
	return 0;
}

static int open_socket(struct uccl_ctx *ctx, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int tmo = ctx_timeout(ctx);
	struct timeval tv = { .tv_sec = tmo / 1000, .tv_usec = (tmo % 1000) * 1000 };
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		ctx_set_error(ctx, "socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		ctx_set_error(ctx, "socket: %s", uccl_strerror(r));
		return r;
	}
	/* A Unix connect() blocks while the listener's backlog is full; the
	 * send timeout bounds that wait. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while ((r = connect(fd, (struct sockaddr *)&sa, sizeof(sa))) < 0 && errno == EINTR)
		;
	if (r < 0) {
		r = -errno;
		if (r == -EAGAIN) {
			r = -ETIMEDOUT;
			ctx_set_error(ctx, "daemon did not accept the connection on %s within %d ms",
				      path, tmo);
		} else if (r == -ENOENT || r == -ECONNREFUSED) {
			ctx_set_error(ctx, "no daemon listening on %s (is ucclsvcd running?)", path);
		} else if (r == -EACCES || r == -EPERM) {
			ctx_set_error(ctx, "no permission to connect to %s", path);
		} else {
			ctx_set_error(ctx, "cannot connect to %s: %s", path, uccl_strerror(r));
		}
		goto out_close;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
		r = -errno;
		ctx_set_error(ctx, "SO_PEERCRED on %s: %s", path, uccl_strerror(r));
		goto out_close;
	}
	ctx->daemon_pid = cred.pid;
	ctx->fd = fd;
	return 0;

out_close:
	close(fd);
	return r;
}

static int do_attach(struct uccl_ctx *ctx, const char *name)
{
	UcclCtl__Request req = UCCL_CTL__REQUEST__INIT;
	UcclCtl__AttachReq a = UCCL_CTL__ATTACH_REQ__INIT;
	UcclCtl__Reply *rep;
	int r;

	a.proto_version = UCCL_PROTO_VERSION;
	a.name = (char *)name;
	a.has_observer = 1;
	a.observer = 0;
	req.body_case = UCCL_CTL__REQUEST__BODY_ATTACH;
	req.attach = &a;
	r = ctx_call(ctx, &req, NULL, 0, 0, UCCL_CTL__REPLY__BODY_ATTACH, 0, NULL, &rep);
	/* closed before any answer: the daemon refuses connections it has no
	 * room for before it reads them, and says why only in its log */
	if (r == -ECONNRESET || r == -EPIPE)
		ctx_set_error(ctx, "the daemon closed the connection before answering: it is "
			      "stopping, at max_clients, or too many connections of this user are "
			      "attaching at once (its log says which)");
	if (r < 0)
		return r;
	if (rep->attach->proto_version != UCCL_PROTO_VERSION) {
		ctx_set_error(ctx, "daemon %s speaks control protocol %u, this library %u",
			      rep->attach->daemon_version, rep->attach->proto_version,
			      UCCL_PROTO_VERSION);
		r = -EPROTONOSUPPORT;
	} else {
		ctx->client_id = rep->attach->client_id;
		/* SO_PEERCRED names whoever created the socket: systemd (pid 1)
		 * under socket activation; the daemon says who it really is */
		if (rep->attach->has_daemon_pid && rep->attach->daemon_pid > 0)
			ctx->daemon_pid = (pid_t)rep->attach->daemon_pid;
		else
			ctx->daemon_pid = 0;
	}
	uccl_ctl__reply__free_unpacked(rep, NULL);
	return r;
}

UCCL_EXPORT int uccl_attach(const char *socket_path, const char *name, struct uccl_ctx **ret)
{
	struct uccl_ctx *ctx;
	int r;

	/* attach_err is written on failure only: a later attach that works
	 * leaves the explanation of the one that failed */
	if (!ret) {
		snprintf(attach_err, sizeof(attach_err), "uccl_attach: no place for the context");
		return -EINVAL;
	}
	if (!socket_path || !*socket_path)
		socket_path = getenv("UCCL_SOCKET");
	if (!socket_path || !*socket_path)
		socket_path = UCCL_DEFAULT_SOCKET;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		snprintf(attach_err, sizeof(attach_err), "out of memory");
		return -ENOMEM;
	}
	ctx->fd = -1;
	ctx->serial = __atomic_add_fetch(&ctx_serials, 1, __ATOMIC_RELAXED);
	ctlio_rx_init(&ctx->rx, CTX_REPLY_MAX);
	r = env_timeout(&ctx->timeout_ms);
	if (r < 0) {
		snprintf(attach_err, sizeof(attach_err),
			 "UCCL_TIMEOUT_MS must be a positive number of milliseconds");
		goto out_free;
	}
	r = pthread_mutex_init(&ctx->lock, NULL);
	if (r) {
		r = -r;
		snprintf(attach_err, sizeof(attach_err), "pthread_mutex_init failed");
		goto out_free;
	}
	r = open_socket(ctx, socket_path);
	if (r < 0)
		goto out_mutex;
	r = do_attach(ctx, name);
	if (r < 0)
		goto out_socket;
	*ret = ctx;
	return 0;

out_socket:
	ctlio_rx_fini(&ctx->rx);
	close(ctx->fd);
out_mutex:
	pthread_mutex_destroy(&ctx->lock);
	memcpy(attach_err, ctx->err, sizeof(attach_err));
out_free:
	free(ctx);
	return r;
}

UCCL_EXPORT void uccl_detach(struct uccl_ctx *ctx)
{
	UcclCtl__Request req = UCCL_CTL__REQUEST__INIT;
	UcclCtl__DetachReq d = UCCL_CTL__DETACH_REQ__INIT;

	if (!ctx)
		return;
	ctx_lock(ctx);
	/* The daemon drops everything of this client on detach (and on a closed
	 * socket), so objects are only torn down locally here: one round trip
	 * instead of one per object. */
	while (ctx->eps)
		ep_destroy_locked(ctx->eps, false);
	while (ctx->mrs)
		mr_free_locked(ctx->mrs, false);
	req.body_case = UCCL_CTL__REQUEST__BODY_DETACH;
	req.detach = &d;
	(void)ctx_call(ctx, &req, NULL, 0, 0, UCCL_CTL__REPLY__BODY__NOT_SET, 0, NULL, NULL);
	close(ctx->fd);
	ctlio_rx_fini(&ctx->rx);
	ctx_unlock(ctx);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

UCCL_EXPORT const char *uccl_last_error(const struct uccl_ctx *ctx)
{
	if (!ctx)
		return attach_err;
	/* this thread's own failure, while ctx is the last it failed on;
	 * else the context's last, whichever thread had it */
	return thread_err.serial == ctx->serial ? thread_err.text : ctx->err;
}

UCCL_EXPORT int uccl_set_timeout(struct uccl_ctx *ctx, int timeout_ms)
{
	if (!ctx)
		return -EINVAL;
	if (timeout_ms <= 0)
		return ctx_fail(ctx, -EINVAL, "uccl_set_timeout: %d ms: the timeout must be positive",
				timeout_ms);
	__atomic_store_n(&ctx->timeout_ms, timeout_ms, __ATOMIC_RELAXED);
	return 0;
}
