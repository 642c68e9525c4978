/* SPDX-License-Identifier: MIT */
/*
 * ops: the data path. Operations are written as 64-byte descriptors into the
 * endpoint's submission ring and results read from its completion ring, with
 * no system call unless one side sleeps: the daemon's engine when it set
 * NEED_WAKEUP on the submission ring (we write its doorbell), or us
 * when we set it on the completion ring (it writes our notify pipe).
 * Waiting spins briefly first, because a wakeup costs more than a short spin
 * when the answer is a few microseconds away.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/ctx.h"

#define SPIN_NS 20000                    /* poll this long before sleeping */
#define GONE_EVERY 1024                  /* idle calls between looks at the notify pipe */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Has the daemon closed its end of the notify pipe (it died, or dropped
 * this client)? For a pipe a hang-up is for good, whatever is unread. */
static bool notify_gone(struct uccl_ep *ep)
{
	struct pollfd p = { .fd = ep->notify_fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

/* A daemon's death shows only to a system call: a doorbell without a
 * reader, or the notify pipe's hang-up. A caller that spins on uccl_poll
 * finding nothing, or on -EAGAIN, makes none, so every GONE_EVERY such
 * calls look at the pipe: one poll(2) per 1024 idle calls. */
static bool daemon_gone(struct uccl_ep *ep)
{
	if (!ep->gone && ++ep->idle_calls % GONE_EVERY == 0)
		ep->gone = notify_gone(ep);
	return ep->gone;
}

/* The daemon's engine sleeps on this socket; a failed send (buffer
 * full) still leaves it readable, so that error needs no handling. A daemon
 * that died left it without a reader: the send must not kill the
 * application with SIGPIPE (the endpoint is marked gone instead), which
 * MSG_NOSIGNAL sees to in the one system call. An older
 * daemon hands out a pipe: there SIGPIPE is blocked around the write and
 * one it raised is taken, three more system calls. */
static void ring_doorbell(struct uccl_ep *ep)
{
	sigset_t pipe_set, old, pending;
	uint64_t one = 1;
	bool was_pending;
	ssize_t n;

	if (!ep->doorbell_pipe) {
		do
			n = send(ep->doorbell_fd, &one, sizeof(one), MSG_NOSIGNAL | MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
		if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
			ep->gone = true;
		if (n >= 0 || errno != ENOTSOCK)
			return;
		ep->doorbell_pipe = true;
	}

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	do
		n = write(ep->doorbell_fd, &one, sizeof(one));
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EPIPE)
		ep->gone = true;
	if (n < 0 && errno == EPIPE && !was_pending) {
		struct timespec zero = { 0, 0 };

		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static int sq_publish(struct uccl_ep *ep)
{
	uint32_t n = ring_prod_flush(&ep->sq);

	if (n && ring_prod_needs_wakeup(&ep->sq))
		ring_doorbell(ep);
	return (int)n;
}

static int sq_push(struct uccl_ep *ep, const struct uccl_sqe *sqe, unsigned flags)
{
	int space;

	if (ep->gone)
		return -ECONNRESET;
	/* a consumer index past what we staged (or a ring's length behind):
	 * written outside the library (a forked child's submissions, a
	 * stray store) */
	if ((space = ring_prod_space_checked(&ep->sq)) < 0)
		return space;
	if (space == 0) {
		/* a ring full of staged descriptors would stay full: the
		 * daemon takes only published ones */
		sq_publish(ep);
		/* a ring that stays full may be one the daemon stopped serving */
		int stopped = ring_cons_stopped(&ep->cq);

		if (stopped)
			return stopped;
		return daemon_gone(ep) ? -ECONNRESET : -EAGAIN;
	}
	memcpy(ring_prod_slot(&ep->sq, 0), sqe, sizeof(*sqe));
	ring_prod_stage(&ep->sq, 1);
	if (!(flags & UCCL_F_MORE))
		sq_publish(ep);
	return 0;
}

/* Common checks and the fields every descriptor has; reserved fields zero. */
static int sqe_init(struct uccl_sqe *sqe, const struct uccl_ep *ep, uint8_t opcode,
		    uint32_t conn, unsigned flags, uint64_t user_data)
{
	if (!ep || (flags & ~(UCCL_SQE_F_MASK | UCCL_F_MORE)) ||
	    ((flags & UCCL_SQE_F_SIGNAL) && opcode != UCCL_OP_PUT))
		return -EINVAL;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = opcode;
	sqe->flags = (uint8_t)(flags & UCCL_SQE_F_MASK);
	sqe->conn = conn;
	sqe->user_data = user_data;
	return 0;
}

/* The region must belong to the endpoint's context (ids are per client, so
 * another context's id would name a different region), and the range must
 * fit; the daemon checks again, this only fails early. */
static int sqe_local(struct uccl_sqe *sqe, const struct uccl_ep *ep, const struct uccl_mr *mr,
		     uint64_t off, uint64_t len)
{
	if (!mr || mr->ctx != ep->ctx)
		return -EINVAL;
	if (off > mr->len || len > mr->len - off)
		return -ERANGE;
	sqe->lmr = mr->id;
	sqe->loff = off;
	sqe->len = len;
	return 0;
}

static int rdma_op(struct uccl_ep *ep, uint8_t opcode, uint32_t conn, const struct uccl_mr *mr,
		   uint64_t loff, uint64_t rkey, uint64_t roff, uint64_t len, unsigned flags,
		   uint64_t user_data)
{
	struct uccl_sqe sqe;
	int r;

	r = sqe_init(&sqe, ep, opcode, conn, flags, user_data);
	if (r < 0)
		return r;
	r = sqe_local(&sqe, ep, mr, loff, len);
	if (r < 0)
		return r;
	sqe.rkey = rkey;
	sqe.roff = roff;
	return sq_push(ep, &sqe, flags);
}

UCCL_EXPORT int uccl_put(struct uccl_ep *ep, uint32_t conn, const struct uccl_mr *src,
			 uint64_t src_off, uint64_t rkey, uint64_t dst_off, uint64_t len,
			 unsigned flags, uint64_t user_data)
{
	return rdma_op(ep, UCCL_OP_PUT, conn, src, src_off, rkey, dst_off, len, flags, user_data);
}

UCCL_EXPORT int uccl_get(struct uccl_ep *ep, uint32_t conn, const struct uccl_mr *dst,
			 uint64_t dst_off, uint64_t rkey, uint64_t src_off, uint64_t len,
			 unsigned flags, uint64_t user_data)
{
	return rdma_op(ep, UCCL_OP_GET, conn, dst, dst_off, rkey, src_off, len, flags, user_data);
}

static int msg_op(struct uccl_ep *ep, uint8_t opcode, uint32_t conn, const struct uccl_mr *mr,
		  uint64_t off, uint64_t len, uint64_t tag, unsigned flags, uint64_t user_data)
{
	struct uccl_sqe sqe;
	int r;

	r = sqe_init(&sqe, ep, opcode, conn, flags, user_data);
	if (r < 0)
		return r;
	r = sqe_local(&sqe, ep, mr, off, len);
	if (r < 0)
		return r;
	sqe.tag = tag;
	return sq_push(ep, &sqe, flags);
}

UCCL_EXPORT int uccl_send(struct uccl_ep *ep, uint32_t conn, const struct uccl_mr *src,
			  uint64_t off, uint64_t len, uint64_t tag, unsigned flags,
			  uint64_t user_data)
{
	return msg_op(ep, UCCL_OP_SEND, conn, src, off, len, tag, flags, user_data);
}

UCCL_EXPORT int uccl_recv(struct uccl_ep *ep, uint32_t conn, const struct uccl_mr *dst,
			  uint64_t off, uint64_t len, uint64_t tag, unsigned flags,
			  uint64_t user_data)
{
	return msg_op(ep, UCCL_OP_RECV, conn, dst, off, len, tag, flags, user_data);
}

static int bare_op(struct uccl_ep *ep, uint8_t opcode, uint32_t conn, unsigned flags,
		   uint64_t user_data)
{
	struct uccl_sqe sqe;
	int r;

	r = sqe_init(&sqe, ep, opcode, conn, flags, user_data);
	if (r < 0)
		return r;
	return sq_push(ep, &sqe, flags);
}

UCCL_EXPORT int uccl_signal(struct uccl_ep *ep, uint32_t conn, unsigned flags,
			    uint64_t user_data)
{
	return bare_op(ep, UCCL_OP_SIGNAL, conn, flags, user_data);
}

UCCL_EXPORT int uccl_flush(struct uccl_ep *ep, uint32_t conn, unsigned flags,
			   uint64_t user_data)
{
	return bare_op(ep, UCCL_OP_FLUSH, conn, flags, user_data);
}

UCCL_EXPORT int uccl_nop(struct uccl_ep *ep, unsigned flags, uint64_t user_data)
{
	return bare_op(ep, UCCL_OP_NOP, 0, flags, user_data);
}

UCCL_EXPORT int uccl_submit(struct uccl_ep *ep)
{
	int n, stopped;

	if (!ep)
		return -EINVAL;
	n = sq_publish(ep);
	if (ep->gone)
		return -ECONNRESET;
	stopped = ring_cons_stopped(&ep->cq);
	return stopped ? stopped : n;
}

UCCL_EXPORT int uccl_poll(struct uccl_ep *ep, struct uccl_cqe *cqes, int max)
{
	int n;

	if (!ep || max < 0 || (max > 0 && !cqes))
		return -EINVAL;
	n = ring_cons_avail(&ep->cq);
	/* what the daemon posted before it went still comes first: look
	 * again once it is known gone */
	if (n == 0 && daemon_gone(ep))
		n = ring_cons_avail(&ep->cq);
	/* the daemon stopped serving the endpoint (it broke a ring): what it
	 * posted before it stored the stop is seen once the stop is (acquire),
	 * and comes first. The word shares prod's cache line: no extra miss */
	if (n == 0) {
		int stopped = ring_cons_stopped(&ep->cq);

		if (stopped && (n = ring_cons_avail(&ep->cq)) == 0)
			return stopped;
	}
	if (n < 0)
		return -EBADMSG;
	if (n > max)
		n = max;
	if (n == 0)
		return ep->gone ? -ECONNRESET : 0;
	for (int i = 0; i < n; i++)
		memcpy(&cqes[i], ring_cons_slot(&ep->cq, (uint32_t)i), sizeof(cqes[i]));
	ring_cons_release(&ep->cq, (uint32_t)n);
	/* The engine sleeps with descriptors still in our SQ when our full CQ
	 * held them back; the room we just made is work for it. */
	if (ring_prod_space(&ep->sq) < ep->sq.entries && ring_prod_needs_wakeup(&ep->sq))
		ring_doorbell(ep);
	/* Awake again: stop the daemon writing the notify pipe on every batch. */
	if (ep->armed) {
		ring_cons_disarm(&ep->cq);
		ep->armed = false;
	}
	return n;
}

/* Deadline in ns for timeout_ms (-1: none, returned as -1). */
static int64_t deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : client_now_ns() + (int64_t)timeout_ms * 1000000;
}

static bool past(int64_t deadline)
{
	return deadline >= 0 && client_now_ns() >= deadline;
}

/* Before arming: clear a count the daemon may have left in the notify
 * pipe since we last slept, so that only new events wake us. Costs a
 * system call only when such a count is possible. */
static void notify_read(struct uccl_ep *ep)
{
	char buf[256];

	/* our end is non-blocking: take all the wake-up bytes there are */
	while (read(ep->notify_fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf))
		;
}

static void notify_drain(struct uccl_ep *ep)
{
	struct pollfd p = { .fd = ep->notify_fd, .events = POLLIN };

	if (!ep->notify_dirty)
		return;
	if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN))
		notify_read(ep);
	ep->notify_dirty = false;
}

/* Set NEED_WAKEUP on the CQ; the daemon may write the notify pipe from now on.
 * Returns CQ entries seen after the fence (1 if none but the daemon stopped
 * serving the endpoint: its one wake-up may have been drained here, and
 * uccl_poll reports the stop), or -EBADMSG. */
static int notify_arm(struct uccl_ep *ep)
{
	int r;

	notify_drain(ep);
	r = ring_cons_arm(&ep->cq);
	ep->armed = true;
	ep->notify_dirty = true;
	if (r == 0 && ring_cons_stopped(&ep->cq))
		r = 1;
	return r < 0 ? -EBADMSG : r;
}

static void notify_disarm(struct uccl_ep *ep)
{
	ring_cons_disarm(&ep->cq);
	ep->armed = false;
}

/* Sleep on the notify pipe until it is written or the deadline passes
 * (-ETIMEDOUT); 0 on a wakeup or an interrupted sleep, the caller re-checks;
 * -ECONNRESET when the daemon's end is closed (it died): nothing can wake
 * us any more, and the pipe would report it at once on every poll.
 * NEED_WAKEUP must be armed. */
static int notify_sleep(struct uccl_ep *ep, int64_t deadline)
{
	struct pollfd p = { .fd = ep->notify_fd, .events = POLLIN };
	int t = -1, r;

	if (deadline >= 0) {
		int64_t left = deadline - client_now_ns();

		if (left <= 0)
			return -ETIMEDOUT;
		left = (left + 999999) / 1000000;
		t = left > INT_MAX ? INT_MAX : (int)left;
	}
	r = poll(&p, 1, t);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	if (r == 0)
		return past(deadline) ? -ETIMEDOUT : 0;
	if (p.revents & POLLNVAL)
		return -EBADF;
	if (p.revents & POLLIN)
		notify_read(ep);
	else if (p.revents & (POLLHUP | POLLERR))
		return -ECONNRESET;
	return 0;
}

UCCL_EXPORT int uccl_cq_wait(struct uccl_ep *ep, struct uccl_cqe *cqes, int max, int timeout_ms)
{
	int64_t deadline, spin_end;
	int n, r;

	if (!ep || max <= 0 || !cqes || timeout_ms < -1)
		return -EINVAL;
	n = uccl_poll(ep, cqes, max);
	if (n != 0)
		return n;
	if (timeout_ms == 0) {
		/* For an application's own event loop: leave the endpoint armed
		 * so that uccl_ep_fd() becomes readable when something arrives;
		 * the next call that finds completions disarms it. */
		r = notify_arm(ep);
		if (r < 0)
			return r;
		if (r > 0)
			return uccl_poll(ep, cqes, max);
		/* the daemon died: the fd is readable (HUP) for good, and an
		 * event loop calling us for it would spin on -ETIMEDOUT */
		return notify_gone(ep) ? -ECONNRESET : -ETIMEDOUT;
	}
	deadline = deadline_of(timeout_ms);
	for (;;) {
		spin_end = client_now_ns() + SPIN_NS;
		do {
			n = uccl_poll(ep, cqes, max);
			if (n != 0)
				return n;
			cpu_relax();
		} while (client_now_ns() < spin_end && !past(deadline));
		if (past(deadline))
			return -ETIMEDOUT;
		r = notify_arm(ep);
		if (r == 0)
			r = notify_sleep(ep, deadline);
		notify_disarm(ep);
		if (r < 0 && r != -ETIMEDOUT && r != -ECONNRESET)
			return r;
		n = uccl_poll(ep, cqes, max);  /* what came before it died, too */
		if (n != 0)
			return n;
		if (r == -ETIMEDOUT || r == -ECONNRESET)
			return r;
	}
}

static uint64_t sem_load(const struct uccl_ep *ep, uint32_t conn)
{
	return __atomic_load_n(&ep->sem[conn], __ATOMIC_ACQUIRE);
}

/* 0: the count reached value; -ECONNRESET: it did not and never will (the
 * connection was reset); 1: wait on. */
static int sem_check(const struct uccl_ep *ep, uint32_t conn, uint64_t value)
{
	uint64_t s = sem_load(ep, conn);

	if ((s & ~UCCL_SEM_RESET) >= value)
		return 0;
	return s & UCCL_SEM_RESET ? -ECONNRESET : 1;
}

UCCL_EXPORT uint64_t uccl_sem_value(const struct uccl_ep *ep, uint32_t conn)
{
	if (!ep || conn >= ep->sem_count)
		return 0;
	return sem_load(ep, conn) & ~UCCL_SEM_RESET;
}

/* sem_check, and when it says wait on: the daemon's stop error if it
 * stopped serving the endpoint (no signal comes any more). A bump made
 * before the stop is seen once the stop is (acquire): checked again. Not
 * in the spin: the stop lies on the CQ's cache line, which the spin does
 * not read otherwise. */
static int sem_or_stop(const struct uccl_ep *ep, uint32_t conn, uint64_t value)
{
	int r = sem_check(ep, conn, value), stopped;

	if (r != 1 || !(stopped = ring_cons_stopped(&ep->cq)))
		return r;
	r = sem_check(ep, conn, value);
	return r == 1 ? stopped : r;
}

UCCL_EXPORT int uccl_wait(struct uccl_ep *ep, uint32_t conn, uint64_t value, int timeout_ms)
{
	int64_t deadline, spin_end;
	int r, done;

	if (!ep || conn >= ep->sem_count || timeout_ms < -1)
		return -EINVAL;
	if ((r = sem_check(ep, conn, value)) <= 0)
		return r;
	/* a caller spinning on it learns that the daemon died, as one
	 * spinning on uccl_poll does (no wake-up or reset comes any more) */
	if (timeout_ms == 0)
		return (r = sem_or_stop(ep, conn, value)) != 1 ? r :
		       daemon_gone(ep) ? -ECONNRESET : -ETIMEDOUT;
	deadline = deadline_of(timeout_ms);
	for (;;) {
		spin_end = client_now_ns() + SPIN_NS;
		do {
			if ((r = sem_check(ep, conn, value)) <= 0)
				return r;
			cpu_relax();
		} while (client_now_ns() < spin_end && !past(deadline));
		/* no signal comes to an endpoint the daemon stopped serving */
		if ((r = sem_or_stop(ep, conn, value)) != 1)
			return r;
		if (past(deadline))
			return -ETIMEDOUT;
		/* The CQ's NEED_WAKEUP is the endpoint's one "I sleep" flag; the
		 * daemon honours it when it bumps a semaphore too. Arming fences,
		 * so the re-check cannot miss a bump made before the daemon
		 * looked at the flag. CQ entries do not matter here. */
		r = notify_arm(ep);
		if (r >= 0)
			r = sem_or_stop(ep, conn, value) != 1 ? 0 : notify_sleep(ep, deadline);
		notify_disarm(ep);
		if ((done = sem_or_stop(ep, conn, value)) != 1)
			return done;
		if (r < 0)
			return r;
	}
}
