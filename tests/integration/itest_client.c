/* SPDX-License-Identifier: MIT */
/*
 * itest_client: the client side of the integration tests. Each mode is one
 * scenario run against a real ucclsvcd ($UCCL_SOCKET) by real processes;
 * it prints one "ok"/"not ok" line per check and exits 0 only if all passed.
 *
 *   primitives          two processes: put/get/signal/wait/flush/send/recv,
 *                       memfd and registered memory, ordering, close
 *   pserve NAME         the server half of primitives on its own
 *   pclient TARGET      the client half, connecting to TARGET ("host/NAME":
 *                       across daemons, where a send into a receive posted
 *                       later succeeds at the sender)
 *   lasterror           two threads fail on one context in turn; each
 *                       reads its own uccl_last_error text; a call refused
 *                       for its own arguments replaces it
 *   orphans PID         creates, a connect and an accept that time out while
 *                       daemon PID is stopped are undone when their late
 *                       replies come
 *   emfile N            against max_endpoints_per_client = N: with this
 *                       process's descriptor table full but 0, 1 or 2,
 *                       endpoint creation fails with -EMFILE (the reply's
 *                       3 descriptors do not fit) and leaves nothing in
 *                       the daemon: N endpoints can still be made
 *   uidcap N            against max_clients_per_uid = N: N attaches, one
 *                       more refused (EUSERS), room again after a detach
 *   backpressure        ring full is -EAGAIN and nothing is lost
 *   isolation           keys, owners and bounds keep clients apart
 *   hold NAME [N]       3 allocated and N registered regions (needs the
 *                       daemon's uid); listen on NAME, accept one peer,
 *                       print "ready", sleep
 *   peer NAME           connect to NAME, post a recv, print "ready", then
 *                       expect -ECONNRESET once the holder is killed
 *   connect TARGET MS   one connect with that timeout; prints its result
 *   closedearly TARGET MS  connects to TARGET, whose side the peer closes
 *                       as it accepts; posts a recv and prints "recv res R
 *                       after T ms" once it completes (exit 0 if R is
 *                       -ECONNRESET) or "recv: no completion in MS ms"
 *                       (exit 1)
 *   badinput SOCKET     malformed control traffic; the daemon must close
 *                       each offender and keep serving
 *   badreply SOCKET garbage|ahead|late  against a fake daemon on SOCKET
 *                       that answers the attach, then the next request
 *                       badly (late: after the call timed out): the call
 *                       (late: the next) fails and the connection is
 *                       closed (the call after is -EPIPE)
 *   badring             an endpoint whose submission ring index is broken
 *                       while the client sleeps in uccl_cq_wait: woken at
 *                       once with -EBADMSG, as are uccl_wait and
 *                       uccl_submit; its other endpoint is still served
 *   hup SECONDS [shut]  create an endpoint, close its doorbell (the SQ
 *                       socket's client end) under the library (with shut:
 *                       shut it down for writing, keeping it open), try to
 *                       pass it a descriptor first (refused), print
 *                       "closed", then stay attached for SECONDS
 *   fserve NAME GO      a 64 KiB region with known bytes, its key sent to
 *                       the peer that connects to NAME; after the peer's
 *                       signal, prints "ready", waits for the file GO, and
 *                       checks that only the peer's own put changed it
 *   fclient TARGET GO   connects, puts 64 B at offset 4096 of the server's
 *                       region, signals, prints "put done", keeps the
 *                       connection until the file GO exists
 *   gserve NAME BYTES GO  a region of BYTES, its key sent to the peer that
 *                       connects to NAME; stays until the file GO exists
 *   gclient TARGET BYTES GO  connects, takes the key, prints "keyed", waits
 *                       for the file GO, gets BYTES from the server's region
 *                       and prints "get res R after T ms" once it completes
 *                       (exit 0) or "get: no completion in 30 s" (exit 1)
 *   daemondies [pipe]   an endpoint whose daemon is killed: waits end with
 *                       -ECONNRESET and ringing the doorbell raises no
 *                       SIGPIPE; with pipe, the doorbell is first made a
 *                       pipe without a reader, as older daemons hand out
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <uccl/uccl.h>

#include "client/ctx.h"            /* badring breaks a ring index under the library */

#define T_MS 10000

static int failures;
static const char *who = "";
static bool remote;            /* the peer is on another daemon */

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s%s - %s", ok ? "ok" : "not ok", who, "");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		failures++;
}

static void die(const char *what, int r, struct uccl_ctx *ctx)
{
	fprintf(stderr, "itest_client%s: %s: %s (%s)\n", who, what, uccl_strerror(r),
		ctx ? uccl_last_error(ctx) : "");
	exit(1);
}

#define TRY(ctx, call) do { int r_ = (call); if (r_ < 0) die(#call, r_, ctx); } while (0)

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Wait for the completion carrying user_data ud; others are kept aside. */
struct cq_stash { struct uccl_cqe c[256]; int n; };

static int wait_ud(struct uccl_ep *ep, struct cq_stash *st, uint64_t ud, struct uccl_cqe *out)
{
	for (;;) {
		struct uccl_cqe c[16];
		int n;

		for (int i = 0; i < st->n; i++) {
			if (st->c[i].user_data == ud) {
				*out = st->c[i];
				/* keep arrival order: ordering checks read the stash */
				memmove(&st->c[i], &st->c[i + 1], sizeof(st->c[0]) * (size_t)(st->n - i - 1));
				st->n--;
				return 0;
			}
		}
		n = uccl_cq_wait(ep, c, 16, T_MS);
		if (n < 0)
			return n;
		for (int i = 0; i < n && st->n < 256; i++)
			st->c[st->n++] = c[i];
	}
}

static int op_res(struct uccl_ep *ep, struct cq_stash *st, uint64_t ud)
{
	struct uccl_cqe c;
	int r = wait_ud(ep, st, ud, &c);

	return r < 0 ? r : c.res;
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

static bool same_as(const uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		if (p[i] != (uint8_t)(seed >> 16))
			return false;
	}
	return true;
}

/* ---- primitives: two processes ---- */

#define REG 1048576u
struct keys { uint64_t alloc_key, vaddr_key; };

static int primitives_server(const char *name)
{
	struct uccl_ctx *ctx;
	struct uccl_ep *ep;
	struct uccl_mr *mr, *vmr, *kmr;
	struct cq_stash st = { .n = 0 };
	struct keys *k;
	uint8_t *vbuf;
	uint32_t conn;
	int r;

	who = " [server]";
	TRY(NULL, uccl_attach(NULL, "itest-server", &ctx));
	TRY(ctx, uccl_mem_alloc(ctx, REG, &mr));
	vbuf = mmap(NULL, REG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vbuf == MAP_FAILED)
		die("mmap", -errno, NULL);
	TRY(ctx, uccl_mem_reg(ctx, vbuf, REG, &vmr));
	TRY(ctx, uccl_mem_alloc(ctx, 4096, &kmr));
	TRY(ctx, uccl_ep_create(ctx, NULL, &ep));
	TRY(ctx, uccl_listen(ep, name));
	TRY(ctx, uccl_accept(ep, T_MS, &conn));
	check(true, "accepted a connection");

	/* keys: ours at offset 0, the client's arrive at offset 64 */
	k = uccl_mr_addr(kmr);
	k->alloc_key = uccl_mr_key(mr);
	k->vaddr_key = uccl_mr_key(vmr);
	TRY(ctx, uccl_recv(ep, conn, kmr, 64, sizeof(struct keys), 1, 0, 101));
	TRY(ctx, uccl_send(ep, conn, kmr, 0, sizeof(struct keys), 2, 0, 102));
	check(op_res(ep, &st, 101) == 0, "recv of the client's keys");
	check(op_res(ep, &st, 102) == 0, "send of our keys");
	struct keys ck = *(struct keys *)((uint8_t *)uccl_mr_addr(kmr) + 64);

	/* 1: client puts into both regions, then signals */
	r = uccl_wait(ep, conn, 1, T_MS);
	check(r == 0, "wait for signal 1 (%s)", uccl_strerror(r));
	check(same_as(uccl_mr_addr(mr), REG, 7), "put into memfd region delivered 1 MiB intact");
	check(same_as(vbuf, REG, 8), "put into registered (malloc) region delivered 1 MiB intact");

	/* 2: we put back into the client's region and signal */
	fill(uccl_mr_addr(mr), REG, 9);
	TRY(ctx, uccl_put(ep, conn, mr, 0, ck.alloc_key, 0, REG, 0, 201));
	TRY(ctx, uccl_signal(ep, conn, 0, 202));
	check(op_res(ep, &st, 201) == 0, "put back to the client");
	check(op_res(ep, &st, 202) == 0, "signal back to the client");

	/* 3: client gets from vbuf; wait for its signal 2 that it is done */
	fill(vbuf, REG, 10);
	TRY(ctx, uccl_signal(ep, conn, 0, 203));   /* "vbuf ready" */
	check(op_res(ep, &st, 203) == 0, "signal: region ready for get");
	r = uccl_wait(ep, conn, 2, T_MS);
	check(r == 0, "wait for signal 2 (get done)");

	/* 4: ordering: the client's send (tag 5) waits until we post a recv,
	 * we do that only after its signal 3 */
	r = uccl_wait(ep, conn, 3, T_MS);
	check(r == 0, "wait for signal 3 (send posted)");
	usleep(50000);
	TRY(ctx, uccl_recv(ep, conn, mr, 0, 4096, 5, 0, 301));
	struct uccl_cqe c;
	r = wait_ud(ep, &st, 301, &c);
	check(r == 0 && c.res == 0 && c.len == 4096 && c.tag == 5, "late recv matched the waiting send");

	/* 5: TAG_ANY and a too-small buffer */
	TRY(ctx, uccl_recv(ep, conn, mr, 0, 4096, UCCL_TAG_ANY, 0, 401));
	r = wait_ud(ep, &st, 401, &c);
	check(r == 0 && c.res == 0 && c.tag == 77 && c.len == 100, "TAG_ANY matched tag 77");
	TRY(ctx, uccl_recv(ep, conn, mr, 0, 10, 6, 0, 402));
	check(op_res(ep, &st, 402) == -EMSGSIZE, "recv into a too-small buffer: -EMSGSIZE");

	/* 6: the client closes; a wait for a signal that will not come ends
	 * with the reset (not the timeout), and our next operation sees it */
	r = uccl_wait(ep, conn, 4, T_MS);
	check(r == 0, "wait for signal 4 (closing)");
	int64_t t0 = now_ms();
	r = uccl_wait(ep, conn, 5, T_MS);
	check(r == -ECONNRESET && now_ms() - t0 < T_MS / 2,
	      "wait for a signal after the peer closed: -ECONNRESET in %lld ms (%s)",
	      (long long)(now_ms() - t0), uccl_strerror(r));
	check(uccl_sem_value(ep, conn) == 4, "the count stays readable: 4 signals");
	check(uccl_wait(ep, conn, 4, 0) == 0, "a wait for signals that came still succeeds");
	for (int i = 0; i < 200; i++) {
		TRY(ctx, uccl_put(ep, conn, mr, 0, ck.alloc_key, 0, 8, 0, 500 + i));
		r = op_res(ep, &st, 500 + i);
		if (r == -ECONNRESET)
			break;
		usleep(10000);
	}
	check(r == -ECONNRESET, "put after the peer closed: -ECONNRESET (%s)", uccl_strerror(r));
	TRY(ctx, uccl_close(ep, conn));
	TRY(ctx, uccl_mem_free(vmr));
	munmap(vbuf, REG);
	TRY(ctx, uccl_ep_destroy(ep));
	uccl_detach(ctx);
	return failures ? 1 : 0;
}

static int primitives_client(const char *name)
{
	struct uccl_ctx *ctx;
	struct uccl_ep *ep;
	struct uccl_mr *mr, *kmr, *src2;
	struct cq_stash st = { .n = 0 };
	struct keys *k, sk;
	uint32_t conn;
	int r;

	who = " [client]";
	TRY(NULL, uccl_attach(NULL, "itest-client", &ctx));
	TRY(ctx, uccl_mem_alloc(ctx, REG, &mr));
	TRY(ctx, uccl_mem_alloc(ctx, REG, &src2));
	TRY(ctx, uccl_mem_alloc(ctx, 4096, &kmr));
	TRY(ctx, uccl_ep_create(ctx, NULL, &ep));
	TRY(ctx, uccl_connect(ep, name, T_MS, &conn));
	check(true, "connected to '%s'", name);

	k = uccl_mr_addr(kmr);
	k->alloc_key = uccl_mr_key(mr);
	k->vaddr_key = 0;
	TRY(ctx, uccl_send(ep, conn, kmr, 0, sizeof(struct keys), 1, 0, 1));
	TRY(ctx, uccl_recv(ep, conn, kmr, 64, sizeof(struct keys), 2, 0, 2));
	check(op_res(ep, &st, 1) == 0, "send of our keys");
	check(op_res(ep, &st, 2) == 0, "recv of the server's keys");
	sk = *(struct keys *)((uint8_t *)uccl_mr_addr(kmr) + 64);

	/* 1: put 1 MiB into each of the server's regions, flush, signal */
	fill(uccl_mr_addr(mr), REG, 7);
	fill(uccl_mr_addr(src2), REG, 8);
	TRY(ctx, uccl_put(ep, conn, mr, 0, sk.alloc_key, 0, REG, UCCL_F_MORE, 10));
	TRY(ctx, uccl_put(ep, conn, src2, 0, sk.vaddr_key, 0, REG, 0, 11));
	TRY(ctx, uccl_flush(ep, conn, 0, 12));
	TRY(ctx, uccl_signal(ep, conn, 0, 13));
	check(op_res(ep, &st, 10) == 0, "put 1 MiB into the server's memfd region");
	check(op_res(ep, &st, 11) == 0, "put 1 MiB into the server's registered region");
	check(op_res(ep, &st, 12) == 0, "flush");
	check(op_res(ep, &st, 13) == 0, "signal");

	/* 2: the server puts back */
	r = uccl_wait(ep, conn, 1, T_MS);
	check(r == 0 && same_as(uccl_mr_addr(mr), REG, 9), "server's put arrived intact after its signal");
	r = uccl_wait(ep, conn, 2, T_MS);
	check(r == 0, "server's region ready for get");
	TRY(ctx, uccl_get(ep, conn, mr, 0, sk.vaddr_key, 0, REG, 0, 20));
	check(op_res(ep, &st, 20) == 0 && same_as(uccl_mr_addr(mr), REG, 10),
	      "get 1 MiB from the server's registered region");
	TRY(ctx, uccl_signal(ep, conn, 0, 21));
	check(op_res(ep, &st, 21) == 0, "signal: get done");

	/* 3: ordering: a send the server has no recv for yet, then a strict
	 * put (must complete after the send) and a relaxed put (may not wait) */
	fill(uccl_mr_addr(src2), 4096, 11);
	TRY(ctx, uccl_send(ep, conn, src2, 0, 4096, 5, 0, 30));
	TRY(ctx, uccl_put(ep, conn, mr, 0, sk.alloc_key, 8192, 64, UCCL_SQE_F_STRICT, 31));
	TRY(ctx, uccl_put(ep, conn, mr, 0, sk.alloc_key, 16384, 64, 0, 32));
	struct uccl_cqe c;
	r = wait_ud(ep, &st, 32, &c);
	check(r == 0 && c.res == 0, "relaxed put completed while an earlier send waits");
	struct uccl_cqe early[32];
	int n = 0;
	bool strict_early = false;
	int order[2], got = 0;
	/* what arrived while waiting for 32 came first, in arrival order */
	for (int i = 0; i < st.n && n < 16; i++)
		early[n++] = st.c[i];
	st.n = 0;
	n += uccl_poll(ep, early + n, 16 - n);
	for (int i = 0; i < n; i++) {
		uint64_t ud = early[i].user_data;

		strict_early |= ud == 31 && got == 0;
		/* across hosts the send may already be done (buffered there),
		 * and the strict put right after it */
		if (remote && (ud == 30 || (ud == 31 && got == 1)))
			order[got++] = (int)ud;
		else
			st.c[st.n++] = early[i];
	}
	check(!strict_early, "strict put did not complete before the earlier send");
	TRY(ctx, uccl_signal(ep, conn, 0, 33));   /* tells the server to post its recv */
	/* completions must now come: send (30) before strict put (31) */
	while (got < 2) {
		struct uccl_cqe cc[8];
		int m = uccl_cq_wait(ep, cc, 8, T_MS);
		if (m <= 0)
			break;
		for (int i = 0; i < m; i++) {
			if (cc[i].user_data == 30 || cc[i].user_data == 31)
				order[got++] = (int)cc[i].user_data;
			else if (st.n < 256)
				st.c[st.n++] = cc[i];
		}
	}
	check(got == 2 && order[0] == 30 && order[1] == 31, "strict put completed after the send (%d: %d %d)",
	      got, got > 0 ? order[0] : 0, got > 1 ? order[1] : 0);
	check(op_res(ep, &st, 33) == 0, "signal 3");
	/* fence: starts only after earlier ops completed (nothing pending now) */
	TRY(ctx, uccl_put(ep, conn, mr, 0, sk.alloc_key, 0, 64, UCCL_SQE_F_FENCE, 34));
	check(op_res(ep, &st, 34) == 0, "fenced put");

	/* 4: TAG_ANY, and a message too long for the receiver */
	TRY(ctx, uccl_send(ep, conn, src2, 0, 100, 77, 0, 40));
	check(op_res(ep, &st, 40) == 0, "send tag 77");
	TRY(ctx, uccl_send(ep, conn, src2, 0, 100, 6, 0, 41));
	r = op_res(ep, &st, 41);
	/* across hosts a send buffered before the receive was posted has
	 * already succeeded; only the receiver sees -EMSGSIZE then */
	check(r == -EMSGSIZE || (remote && r == 0), "send into a too-small recv: -EMSGSIZE (%s)",
	      uccl_strerror(r));

	/* 5: malformed and out-of-range operations complete with errors */
	TRY(ctx, uccl_put(ep, conn, mr, 0, sk.alloc_key, REG - 8, 64, 0, 50));
	check(op_res(ep, &st, 50) == -ERANGE, "put past the end of the remote region: -ERANGE");
	TRY(ctx, uccl_put(ep, 999, mr, 0, sk.alloc_key, 0, 8, 0, 51));
	check(op_res(ep, &st, 51) == -ENOTCONN, "put on an unknown connection: -ENOTCONN");

	/* 6: close; the server must see the reset */
	TRY(ctx, uccl_signal(ep, conn, 0, 60));
	check(op_res(ep, &st, 60) == 0, "signal 4");
	TRY(ctx, uccl_close(ep, conn));
	TRY(ctx, uccl_put(ep, conn, mr, 0, sk.alloc_key, 0, 8, 0, 61));
	r = op_res(ep, &st, 61);
	check(r == -ENOTCONN, "put on our closed connection: -ENOTCONN (%s)", uccl_strerror(r));
	{
		int64_t t0 = now_ms();

		r = uccl_wait(ep, conn, 5, T_MS);
		check(r == -ECONNRESET && now_ms() - t0 < T_MS / 2,
		      "wait for a signal on our closed connection: -ECONNRESET in %lld ms (%s)",
		      (long long)(now_ms() - t0), uccl_strerror(r));
	}
	TRY(ctx, uccl_mem_free(src2));
	uccl_detach(ctx);   /* frees the rest */
	return failures ? 1 : 0;
}

static int mode_primitives(void)
{
	char name[64];
	pid_t pid;
	int status, rc;

	snprintf(name, sizeof(name), "itest-%d", (int)getpid());
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		_exit(primitives_server(name));
	rc = primitives_client(name);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("not ok - server process failed (status 0x%x)\n", status);
		rc = 1;
	}
	return rc;
}

/* ---- uccl_last_error per thread ---- */

struct lasterr {
	struct uccl_ctx *ctx;
	pthread_barrier_t *bar;
	char name[64];
	int order;                     /* fails before (0) or after (1) the other */
	bool own;                      /* read its own failure's text */
	struct uccl_ep *ep;            /* accept_a_while's listener */
};

/* Wait in uccl_accept for a second (nobody connects): a control call that
 * holds the context meanwhile. */
static void *accept_a_while(void *arg)
{
	struct lasterr *l = arg;
	uint32_t conn;

	(void)uccl_accept(l->ep, 1000, &conn);
	return NULL;
}

/* Listen twice under one name: the second is refused, naming it. */
static void *lasterr_thread(void *arg)
{
	struct lasterr *l = arg;
	struct uccl_ep *a = NULL, *b = NULL;
	int r;

	TRY(l->ctx, uccl_ep_create(l->ctx, NULL, &a));
	TRY(l->ctx, uccl_ep_create(l->ctx, NULL, &b));
	TRY(l->ctx, uccl_listen(a, l->name));
	pthread_barrier_wait(l->bar);
	if (l->order == 1)
		pthread_barrier_wait(l->bar);          /* the other fails first */
	r = uccl_listen(b, l->name);
	check(r == -EADDRINUSE, "second listen on %s refused: %s", l->name, uccl_strerror(r));
	if (l->order == 0)
		pthread_barrier_wait(l->bar);
	pthread_barrier_wait(l->bar);                  /* both failed: now read */
	l->own = strstr(uccl_last_error(l->ctx), l->name) != NULL;
	check(l->own, "thread %d reads its own failure: '%s'", l->order, uccl_last_error(l->ctx));
	uccl_ep_destroy(b);
	uccl_ep_destroy(a);
	return NULL;
}

static int mode_lasterror(void)
{
	struct uccl_ctx *ctx;
	pthread_barrier_t bar;
	struct lasterr l[2];
	pthread_t t[2];

	TRY(NULL, uccl_attach(NULL, "itest-lasterror", &ctx));
	pthread_barrier_init(&bar, NULL, 2);
	for (int i = 0; i < 2; i++) {
		l[i] = (struct lasterr){ .ctx = ctx, .bar = &bar, .order = i };
		snprintf(l[i].name, sizeof(l[i].name), "lasterr-%d-%d", i, (int)getpid());
		if (pthread_create(&t[i], NULL, lasterr_thread, &l[i]) != 0)
			return 1;
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&bar);
	/* a thread with no failure of its own reads the context's last */
	check(strstr(uccl_last_error(ctx), l[1].name) != NULL,
	      "a third thread reads the context's last failure: '%s'", uccl_last_error(ctx));
	/* a call refused for its own arguments says so, not an older failure */
	struct uccl_ep *ep;
	uint32_t conn;
	int r;

	TRY(ctx, uccl_ep_create(ctx, NULL, &ep));
	r = uccl_connect(ep, "x", -2, &conn);
	check(r == -EINVAL && strstr(uccl_last_error(ctx), "timeout_ms -2"),
	      "a bad timeout is named: %s: '%s'", uccl_strerror(r), uccl_last_error(ctx));
	r = uccl_listen(ep, "");
	check(r == -EINVAL && strstr(uccl_last_error(ctx), "uccl_listen: no name"),
	      "an empty listen name is named: %s: '%s'", uccl_strerror(r), uccl_last_error(ctx));
	r = uccl_mem_alloc(ctx, 4096, NULL);
	check(r == -EINVAL && strstr(uccl_last_error(ctx), "uccl_mem_alloc"),
	      "a missing result pointer is named: %s: '%s'", uccl_strerror(r), uccl_last_error(ctx));
	r = uccl_set_timeout(ctx, 0);
	check(r == -EINVAL && strstr(uccl_last_error(ctx), "uccl_set_timeout"),
	      "a zero control timeout is named: %s: '%s'", uccl_strerror(r), uccl_last_error(ctx));

	/* ... at once, while another thread waits in a control call */
	struct lasterr acc = { .ctx = ctx };
	pthread_t at;

	TRY(ctx, uccl_ep_create(ctx, NULL, &acc.ep));
	snprintf(acc.name, sizeof(acc.name), "lasterr-acc-%d", (int)getpid());
	TRY(ctx, uccl_listen(acc.ep, acc.name));
	if (pthread_create(&at, NULL, accept_a_while, &acc) != 0)
		return 1;
	usleep(200000);                /* it is in uccl_accept by now */
	int64_t t0 = now_ms();
	r = uccl_connect(ep, "x", -2, &conn);
	int64_t waited = now_ms() - t0;
	check(r == -EINVAL && waited < 400, "a refused argument does not wait for another thread's "
	      "control call (%lld ms)", (long long)waited);
	{
		struct uccl_ep_attr bad = { .flags = 0x80 };
		struct uccl_mr *m;
		struct uccl_ep *e2;
		int rs[4];

		t0 = now_ms();
		rs[0] = uccl_mem_alloc(ctx, 0, &m);
		rs[1] = uccl_mem_reg(ctx, NULL, 4096, &m);
		rs[2] = uccl_ep_create(ctx, &bad, &e2);
		rs[3] = uccl_set_channel_cc(ctx, "", "window");
		waited = now_ms() - t0;
		check(rs[0] == -EINVAL && rs[1] == -EINVAL && rs[2] == -EINVAL && rs[3] == -EINVAL &&
		      waited < 400, "nor do a zero-length region, a NULL one, unknown endpoint flags "
		      "and an empty peer name (%d %d %d %d, %lld ms)", rs[0], rs[1], rs[2], rs[3],
		      (long long)waited);
	}
	pthread_join(at, NULL);
	uccl_ep_destroy(acc.ep);
	uccl_ep_destroy(ep);
	uccl_detach(ctx);

	/* a failed attach's explanation survives a later one that works */
	struct uccl_ctx *c2;

	r = uccl_attach("/nonexistent/ucclsvcd.sock", "itest-lasterror", &c2);
	check(r < 0 && uccl_last_error(NULL)[0], "a failed attach explains: %s: '%s'", uccl_strerror(r),
	      uccl_last_error(NULL));
	TRY(NULL, uccl_attach(NULL, "itest-lasterror", &c2));
	check(strstr(uccl_last_error(NULL), "/nonexistent/ucclsvcd.sock") != NULL,
	      "... and a later attach that works leaves it: '%s'", uccl_last_error(NULL));
	uccl_detach(c2);
	return failures ? 1 : 0;
}

/* ---- late replies to timed-out calls ---- */

/* The daemon (pid dpid) runs with max_endpoints_per_client = 4,
 * max_mrs_per_client = 2 and max_conns_per_endpoint = 1. A create or a
 * connect that times out while the daemon is stopped is still carried out
 * once it goes on; the library undoes it when the late reply arrives, so
 * the next one fits the limit again. */
static int mode_orphans(pid_t dpid)
{
	char na[64], nb[64], nc[64];
	struct uccl_ctx *ctx, *ctx2;
	struct uccl_ep *ep1, *la, *lb, *lc, *cx, *ep4 = NULL, *lost = NULL;
	struct uccl_mr *mr1, *mr2 = NULL, *lostmr = NULL;
	uint32_t conn;
	int r;

	snprintf(na, sizeof(na), "orphan-a-%d", (int)getpid());
	snprintf(nb, sizeof(nb), "orphan-b-%d", (int)getpid());
	TRY(NULL, uccl_attach(NULL, "itest-orphans", &ctx));
	TRY(ctx, uccl_ep_create(ctx, NULL, &ep1));
	TRY(ctx, uccl_ep_create(ctx, NULL, &la));
	TRY(ctx, uccl_ep_create(ctx, NULL, &lb));
	TRY(ctx, uccl_listen(la, na));
	TRY(ctx, uccl_listen(lb, nb));
	TRY(ctx, uccl_mem_alloc(ctx, 4096, &mr1));

	TRY(ctx, uccl_set_timeout(ctx, 300));
	check(kill(dpid, SIGSTOP) == 0, "daemon stopped");
	r = uccl_ep_create(ctx, NULL, &lost);
	check(r == -ETIMEDOUT, "ep_create with the daemon stopped times out: %s", uccl_strerror(r));
	r = uccl_mem_alloc(ctx, 4096, &lostmr);
	check(r == -ETIMEDOUT, "mem_alloc with the daemon stopped times out: %s", uccl_strerror(r));
	r = uccl_connect(ep1, na, 100, &conn);
	check(r == -ETIMEDOUT, "connect with the daemon stopped times out: %s", uccl_strerror(r));
	check(kill(dpid, SIGCONT) == 0, "daemon continued");
	usleep(300 * 1000);            /* it makes all three and answers late */
	TRY(ctx, uccl_set_timeout(ctx, T_MS));

	/* a late reply still on its way when a call starts is undone by the
	 * next call: a slow daemon (sanitizers) gets a few tries */
	for (int i = 0; (r = uccl_ep_create(ctx, NULL, &ep4)) == -ENOSPC && i < 20; i++)
		usleep(100 * 1000);
	check(r == 0, "the fourth endpoint fits max_endpoints_per_client = 4: %s (%s)",
	      uccl_strerror(r), r < 0 ? uccl_last_error(ctx) : "");
	for (int i = 0; (r = uccl_mem_alloc(ctx, 4096, &mr2)) == -ENOSPC && i < 20; i++)
		usleep(100 * 1000);
	check(r == 0, "the second region fits max_mrs_per_client = 2: %s (%s)",
	      uccl_strerror(r), r < 0 ? uccl_last_error(ctx) : "");
	for (int i = 0; (r = uccl_connect(ep1, nb, 2000, &conn)) == -ENOSPC && i < 20; i++)
		usleep(100 * 1000);
	check(r == 0, "a connect fits max_conns_per_endpoint = 1 again: %s (%s)",
	      uccl_strerror(r), r < 0 ? uccl_last_error(ctx) : "");

	/* an accept that times out and then takes a queued connection: a
	 * second context listens, ep4 connects to it */
	snprintf(nc, sizeof(nc), "orphan-c-%d", (int)getpid());
	TRY(NULL, uccl_attach(NULL, "itest-orphans-2", &ctx2));
	TRY(ctx2, uccl_ep_create(ctx2, NULL, &lc));
	TRY(ctx2, uccl_listen(lc, nc));
	TRY(ctx, ep4 ? uccl_connect(ep4, nc, 2000, &conn) : -EINVAL);
	TRY(ctx2, uccl_set_timeout(ctx2, 300));
	check(kill(dpid, SIGSTOP) == 0, "daemon stopped");
	r = uccl_accept(lc, 0, &conn);
	check(r == -ETIMEDOUT, "accept with the daemon stopped times out: %s", uccl_strerror(r));
	check(kill(dpid, SIGCONT) == 0, "daemon continued");
	usleep(300 * 1000);            /* it hands out the queued connection late */
	TRY(ctx2, uccl_set_timeout(ctx2, T_MS));
	TRY(ctx2, uccl_ep_create(ctx2, NULL, &cx));
	for (int i = 0; (r = uccl_connect(cx, nc, 2000, &conn)) == -ECONNREFUSED && i < 20; i++)
		usleep(100 * 1000);
	check(r == 0, "the listener has room again under max_conns_per_endpoint = 1: %s (%s)",
	      uccl_strerror(r), r < 0 ? uccl_last_error(ctx2) : "");
	r = uccl_accept(lc, 2000, &conn);
	check(r == 0, "... and accepts the new connection: %s (%s)", uccl_strerror(r),
	      r < 0 ? uccl_last_error(ctx2) : "");
	uccl_detach(ctx2);
	if (mr2)
		uccl_mem_free(mr2);
	if (ep4)
		uccl_ep_destroy(ep4);
	uccl_mem_free(mr1);
	uccl_ep_destroy(lb);
	uccl_ep_destroy(la);
	uccl_ep_destroy(ep1);
	uccl_detach(ctx);
	return failures ? 1 : 0;
}

/* ---- max_clients_per_uid ---- */

/* The daemon runs with max_clients_per_uid = cap: cap contexts of this
 * process (one uid) attach, one more is refused with EUSERS and a text that
 * names the option, and a detach makes room again. */
static int mode_uidcap(int cap)
{
	struct uccl_ctx *ctx[64], *extra = NULL;
	int r;

	if (cap < 1 || cap > 63)
		return 2;
	for (int i = 0; i < cap; i++)
		TRY(NULL, uccl_attach(NULL, "itest-uidcap", &ctx[i]));
	r = uccl_attach(NULL, "itest-uidcap", &extra);
	check(r == -EUSERS, "attach %d of one uid refused: %s", cap + 1, uccl_strerror(r));
	check(r < 0 && strstr(uccl_last_error(NULL), "max_clients_per_uid") != NULL,
	      "... naming the option: '%s'", uccl_last_error(NULL));
	if (r == 0)
		uccl_detach(extra);
	uccl_detach(ctx[cap - 1]);
	r = uccl_attach(NULL, "itest-uidcap", &ctx[cap - 1]);
	check(r == 0, "after a detach one more attaches: %s", uccl_strerror(r));
	for (int i = 0; i < cap; i++)
		if (r == 0 || i < cap - 1)
			uccl_detach(ctx[i]);
	return failures ? 1 : 0;
}

static int mode_emfile(int max_eps)
{
	struct rlimit rl;
	struct uccl_ctx *ctx;
	struct uccl_ep *ep[64];
	int r;

	if (max_eps < 1 || max_eps > 32)
		return 2;
	TRY(NULL, uccl_attach(NULL, "itest-emfile", &ctx));
	r = getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = 64;
	check(r == 0 && setrlimit(RLIMIT_NOFILE, &rl) == 0, "a table of 64 descriptors");
	for (int spare = 0; spare < 3; spare++) {
		int filler[64], nf = 0, f;

		while (nf < 64 && (f = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
			filler[nf++] = f;
		for (int k = 0; k < spare && nf; k++)
			close(filler[--nf]);
		r = uccl_ep_create(ctx, NULL, &ep[0]);
		check(r == -EMFILE, "with %d descriptors free, endpoint creation is -EMFILE: %s (%s)", spare,
		      uccl_strerror(r), r < 0 ? uccl_last_error(ctx) : "");
		if (r == 0)
			uccl_ep_destroy(ep[0]);
		while (nf)
			close(filler[--nf]);
	}
	/* none of those is left in the daemon: the whole quota is there */
	for (int i = 0; i < max_eps; i++) {
		r = uccl_ep_create(ctx, NULL, &ep[i]);
		check(r == 0, "endpoint %d of %d: %s", i + 1, max_eps, uccl_strerror(r));
		if (r < 0)
			break;
	}
	uccl_detach(ctx);
	return failures ? 1 : 0;
}

/* ---- backpressure ---- */

static int mode_backpressure(void)
{
	struct uccl_ep_attr a = { .sq_entries = 16, .cq_entries = 16 };
	struct uccl_ctx *ctx;
	struct uccl_ep *ep, *l;
	struct uccl_mr *mr;
	uint64_t submitted = 0, completed = 0;
	struct uccl_cqe c[64];
	int r = 0, n;
	uint32_t conn, lconn;
	char name[64];

	TRY(NULL, uccl_attach(NULL, "itest-backpressure", &ctx));
	TRY(ctx, uccl_ep_create(ctx, &a, &ep));
	/* nobody polls completions: the ring must fill and say -EAGAIN */
	for (int retries = 0; retries < 200;) {
		r = uccl_nop(ep, 0, submitted);
		if (r == 0) {
			submitted++;
			continue;
		}
		if (r != -EAGAIN)
			break;
		/* the engine may not have taken what is there yet */
		usleep(1000);
		retries++;
	}
	check(r == -EAGAIN, "full rings answer -EAGAIN (after %llu descriptors)",
	      (unsigned long long)submitted);
	/* the engine takes a descriptor only with a completion slot reserved:
	 * 16 completions wait in the CQ, 16 descriptors in the SQ */
	check(submitted == 16 + 16, "in flight is exactly SQ + CQ (%llu)", (unsigned long long)submitted);
	usleep(100000);
	while (completed < submitted) {
		n = uccl_cq_wait(ep, c, 64, 2000);
		if (n <= 0)
			break;
		for (int i = 0; i < n; i++)
			if (c[i].user_data == completed && c[i].res == 0)
				completed++;
	}
	check(completed == submitted, "every descriptor completed once, in order (%llu/%llu)",
	      (unsigned long long)completed, (unsigned long long)submitted);
	check(uccl_poll(ep, c, 64) == 0, "no extra completions");

	/* staged (UCCL_F_MORE) until the ring is full: the -EAGAIN hands
	 * them over, so that polling and retrying, as documented, ends
	 * without a uccl_submit */
	submitted = completed = 0;
	while ((r = uccl_nop(ep, UCCL_F_MORE, submitted)) == 0)
		submitted++;
	check(r == -EAGAIN && submitted == 16, "a full ring of staged descriptors says -EAGAIN (%d after %llu)",
	      r, (unsigned long long)submitted);
	for (int i = 0; i < 40 && completed < submitted; i++) {
		n = uccl_cq_wait(ep, c, 64, 50);
		for (int k = 0; k < n; k++)
			if (c[k].user_data == completed && c[k].res == 0)
				completed++;
	}
	check(completed == submitted, "... and they complete without uccl_submit (%llu/%llu)",
	      (unsigned long long)completed, (unsigned long long)submitted);
	check(uccl_nop(ep, 0, 99) == 0 && uccl_cq_wait(ep, c, 1, 2000) == 1 && c[0].user_data == 99,
	      "the retried descriptor goes");

	/* outstanding receives are bounded by max_outstanding, then the
	 * ring fills; a late sender completes them all */
	snprintf(name, sizeof(name), "bp-%d", (int)getpid());
	TRY(ctx, uccl_mem_alloc(ctx, 4096, &mr));
	TRY(ctx, uccl_ep_create(ctx, NULL, &l));
	TRY(ctx, uccl_listen(l, name));
	TRY(ctx, uccl_connect(ep, name, T_MS, &conn));
	TRY(ctx, uccl_accept(l, T_MS, &lconn));
	submitted = 0;
	r = 0;
	for (int i = 0; i < 1000 && r == 0; i++) {
		r = uccl_recv(ep, conn, mr, 0, 8, 9, 0, 1000 + submitted);
		if (r == 0)
			submitted++;
		usleep(200);
	}
	check(r == -EAGAIN, "posted receives fill up to backpressure (%llu)", (unsigned long long)submitted);
	uint64_t sent = 0;
	completed = 0;
	for (int spins = 0; completed < submitted && spins < 100000; spins++) {
		if (sent < submitted && uccl_send(l, lconn, mr, 0, 8, 9, 0, 5000 + sent) == 0)
			sent++;
		n = uccl_poll(ep, c, 64);
		for (int i = 0; i < n; i++)
			completed += c[i].res == 0;
		while (uccl_poll(l, c, 64) > 0)
			;
		if (n == 0)
			usleep(100);
	}
	check(completed == submitted, "every receive completed once a sender came (%llu/%llu)",
	      (unsigned long long)completed, (unsigned long long)submitted);
	uccl_detach(ctx);
	return failures ? 1 : 0;
}

/* ---- isolation ---- */

static int mode_isolation(void)
{
	struct uccl_ctx *a, *b, *cc;
	struct uccl_ep *ea, *eb, *eb2, *ec;
	struct uccl_mr *ma, *ma2, *mb, *mc;
	struct cq_stash sb = { .n = 0 }, sc = { .n = 0 };
	uint32_t ab, ba, bc, cb;
	char na[64], nb[64];
	int r;

	snprintf(na, sizeof(na), "iso-a-%d", (int)getpid());
	snprintf(nb, sizeof(nb), "iso-b-%d", (int)getpid());
	TRY(NULL, uccl_attach(NULL, "iso-a", &a));
	TRY(NULL, uccl_attach(NULL, "iso-b", &b));
	TRY(NULL, uccl_attach(NULL, "iso-c", &cc));
	TRY(a, uccl_mem_alloc(a, 65536, &ma));
	TRY(a, uccl_mem_alloc(a, 4096, &ma2));
	TRY(b, uccl_mem_alloc(b, 65536, &mb));
	TRY(cc, uccl_mem_alloc(cc, 65536, &mc));
	fill(uccl_mr_addr(ma), 65536, 42);
	fill(uccl_mr_addr(mb), 65536, 43);
	TRY(a, uccl_ep_create(a, NULL, &ea));
	TRY(b, uccl_ep_create(b, NULL, &eb));
	TRY(b, uccl_ep_create(b, NULL, &eb2));
	TRY(cc, uccl_ep_create(cc, NULL, &ec));
	TRY(a, uccl_listen(ea, na));
	TRY(b, uccl_listen(eb2, nb));
	TRY(b, uccl_connect(eb, na, T_MS, &ba));
	TRY(a, uccl_accept(ea, T_MS, &ab));
	TRY(cc, uccl_connect(ec, nb, T_MS, &cb));
	TRY(b, uccl_accept(eb2, T_MS, &bc));
	(void)ab;
	(void)bc;

	uint64_t key = uccl_mr_key(ma);
	TRY(b, uccl_put(eb, ba, mb, 0, key ^ 0x5a5a5a5a5a5a5a5aull, 0, 64, 0, 1));
	check(op_res(eb, &sb, 1) == -EACCES, "put with a guessed key: -EACCES");
	TRY(b, uccl_put(eb, ba, mb, 0, uccl_mr_key(mb), 0, 64, 0, 2));
	check(op_res(eb, &sb, 2) == -EACCES, "put with a key of our own region through a peer: -EACCES");
	TRY(b, uccl_put(eb, ba, mb, 0, key, 65536 - 32, 64, 0, 3));
	check(op_res(eb, &sb, 3) == -ERANGE, "put past the end of the peer's region: -ERANGE");
	TRY(b, uccl_put(eb, ba, mb, 0, key, UINT64_MAX - 8, 64, 0, 4));
	check(op_res(eb, &sb, 4) == -ERANGE, "put with a wrapping offset: -ERANGE");
	TRY(cc, uccl_put(ec, cb, mc, 0, key, 0, 64, 0, 5));
	check(op_res(ec, &sc, 5) == -EACCES, "A's real key used on a connection to B: -EACCES");
	TRY(cc, uccl_get(ec, cb, mc, 0, key, 0, 64, 0, 6));
	check(op_res(ec, &sc, 6) == -EACCES, "get with A's key through B: -EACCES");
	/* a region of another context as the local source: the library
	 * refuses it (the daemon would scope the id to B's own regions) */
	r = uccl_put(eb, ba, ma2, 0, key, 0, 64, 0, 7);
	check(r == -EINVAL, "another client's region as local source refused (%s)", uccl_strerror(r));
	check(same_as(uccl_mr_addr(ma), 65536, 42), "A's memory untouched by all refused operations");
	TRY(b, uccl_put(eb, ba, mb, 0, key, 0, 64, 0, 8));
	check(op_res(eb, &sb, 8) == 0 && memcmp(uccl_mr_addr(ma), uccl_mr_addr(mb), 64) == 0,
	      "the right key does work");
	/* existing memory: anonymous (also shared) qualifies; a file mapping
	 * could stall the engine on a page fault (FUSE) and is refused */
	{
		struct uccl_mr *xm;
		void *sh = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		check(sh != MAP_FAILED && uccl_mem_reg(a, sh, 65536, &xm) == 0 && uccl_mem_free(xm) == 0,
		      "shared anonymous memory can be registered");
		char tmpl[] = "/tmp/uccl-itest-map.XXXXXX";
		int tfd = mkstemp(tmpl);
		void *fm = MAP_FAILED;
		if (tfd >= 0 && ftruncate(tfd, 65536) == 0)
			fm = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, tfd, 0);
		r = fm == MAP_FAILED ? -999 : uccl_mem_reg(a, fm, 65536, &xm);
		check(r == -EFAULT, "a regular file mapping is refused with -EFAULT (%s)", uccl_strerror(r));
		if (fm != MAP_FAILED)
			munmap(fm, 65536);
		if (tfd >= 0) {
			close(tfd);
			unlink(tmpl);
		}
		if (sh != MAP_FAILED)
			munmap(sh, 65536);
	}

	/* registering existing memory runs process_vm_* with the daemon's
	 * rights: a client of another user must be refused */
	if (geteuid() == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			struct uccl_ctx *x;
			static char buf[8192];
			struct uccl_mr *xm;
			if (setgid(65534) < 0 || setuid(65534) < 0)
				_exit(3);
			if (uccl_attach(NULL, "iso-other-uid", &x) < 0)
				_exit(4);
			int rr = uccl_mem_reg(x, buf, sizeof(buf), &xm);
			uccl_detach(x);
			_exit(rr == -EPERM ? 0 : 5);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		check(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "existing memory of a client of another uid refused with -EPERM (status %d)",
		      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	} else {
		printf("ok - # skip: other-uid registration needs root\n");
	}
	uccl_detach(cc);
	uccl_detach(b);
	uccl_detach(a);
	return failures ? 1 : 0;
}

/* ---- kill -9: holder and peer ---- */

static int mode_hold(const char *name, int vregs)
{
	struct uccl_ctx *ctx;
	struct uccl_ep *ep;
	struct uccl_mr *mr;
	uint32_t conn;

	TRY(NULL, uccl_attach(NULL, "itest-hold", &ctx));
	for (int i = 0; i < 3; i++)
		TRY(ctx, uccl_mem_alloc(ctx, 1 << 20, &mr));
	/* and vregs of its own memory: the daemon watches this process with
	 * one descriptor for all of them */
	for (int i = 0; i < vregs; i++) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			die("mmap", -errno, NULL);
		TRY(ctx, uccl_mem_reg(ctx, p, 4096, &mr));
	}
	TRY(ctx, uccl_ep_create(ctx, NULL, &ep));
	TRY(ctx, uccl_listen(ep, name));
	printf("listening\n");
	fflush(stdout);
	TRY(ctx, uccl_accept(ep, T_MS, &conn));
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
	return 0;
}

static int mode_peer(const char *name)
{
	struct uccl_ctx *ctx;
	struct uccl_ep *ep;
	struct uccl_mr *mr;
	struct cq_stash st = { .n = 0 };
	uint32_t conn;
	int r;

	who = " [peer]";
	TRY(NULL, uccl_attach(NULL, "itest-peer", &ctx));
	TRY(ctx, uccl_mem_alloc(ctx, 4096, &mr));
	TRY(ctx, uccl_ep_create(ctx, NULL, &ep));
	TRY(ctx, uccl_connect(ep, name, T_MS, &conn));
	TRY(ctx, uccl_recv(ep, conn, mr, 0, 64, 1, 0, 1));
	printf("ready\n");
	fflush(stdout);
	r = op_res(ep, &st, 1);
	check(r == -ECONNRESET, "pending recv failed with -ECONNRESET when the holder died (%s)",
	      uccl_strerror(r));
	TRY(ctx, uccl_signal(ep, conn, 0, 2));
	r = op_res(ep, &st, 2);
	check(r == -ECONNRESET, "later signal: -ECONNRESET (%s)", uccl_strerror(r));
	TRY(ctx, uccl_close(ep, conn));
	uccl_detach(ctx);
	return failures ? 1 : 0;
}

/* ---- a region under forged packets (forged_keys.sh) ---- */

#define FREG 65536u
#define FPUT_OFF 4096u
#define FPUT_LEN 64u

/* Until the file go exists, at most ms. */
static bool wait_file(const char *go, int64_t ms)
{
	for (int64_t t0 = now_ms(); now_ms() - t0 < ms; usleep(10000))
		if (access(go, F_OK) == 0)
			return true;
	return false;
}

/* The two ends of a test that hands one region's key over a connection. */
struct keyed {
	struct uccl_ctx *ctx;
	struct uccl_ep *ep;
	struct uccl_mr *mr, *kmr;      /* the region; where its key travels */
	struct cq_stash st;
	uint32_t conn;
	uint64_t key;                  /* the client's: the server's region key */
};

/* Either end: attach as app, a region of bytes (filled from seed, 0:
 * not), a buffer for the key, an endpoint. */
static void key_open(struct keyed *k, const char *app, uint64_t bytes, uint32_t seed)
{
	k->st.n = 0;
	TRY(NULL, uccl_attach(NULL, app, &k->ctx));
	TRY(k->ctx, uccl_mem_alloc(k->ctx, bytes, &k->mr));
	TRY(k->ctx, uccl_mem_alloc(k->ctx, 4096, &k->kmr));
	if (seed)
		fill(uccl_mr_addr(k->mr), bytes, seed);
	TRY(k->ctx, uccl_ep_create(k->ctx, NULL, &k->ep));
}

/* Server: key_open, listen on name, accept one peer and send it the
 * region's key. */
static void key_serve(struct keyed *k, const char *app, const char *name, uint64_t bytes,
		      uint32_t seed)
{
	struct uccl_ctx *ctx;

	key_open(k, app, bytes, seed);
	ctx = k->ctx;
	TRY(ctx, uccl_listen(k->ep, name));
	TRY(ctx, uccl_accept(k->ep, T_MS, &k->conn));
	*(uint64_t *)uccl_mr_addr(k->kmr) = uccl_mr_key(k->mr);
	TRY(ctx, uccl_send(k->ep, k->conn, k->kmr, 0, sizeof(uint64_t), 1, 0, 1));
	check(op_res(k->ep, &k->st, 1) == 0, "the region's key sent");
}

/* Client: key_open, connect to target and receive the server's region key
 * into k->key. */
static void key_take(struct keyed *k, const char *app, const char *target, uint64_t bytes)
{
	struct uccl_ctx *ctx;

	key_open(k, app, bytes, 0);
	ctx = k->ctx;
	TRY(ctx, uccl_connect(k->ep, target, T_MS, &k->conn));
	TRY(ctx, uccl_recv(k->ep, k->conn, k->kmr, 0, sizeof(uint64_t), 1, 0, 1));
	check(op_res(k->ep, &k->st, 1) == 0, "the server's key received");
	k->key = *(uint64_t *)uccl_mr_addr(k->kmr);
}

static int mode_fserve(const char *name, const char *go)
{
	struct keyed k;
	struct uccl_ctx *ctx;
	struct uccl_ep *ep;
	struct uccl_mr *mr;
	uint8_t *want;
	uint32_t conn;
	int r;

	who = " [fserve]";
	want = malloc(FREG);
	if (!want)
		die("malloc", -ENOMEM, NULL);
	key_serve(&k, "itest-fserve", name, FREG, 43);
	ctx = k.ctx, ep = k.ep, mr = k.mr, conn = k.conn;
	r = uccl_wait(ep, conn, 1, T_MS);
	check(r == 0, "the peer's put signalled (%s)", uccl_strerror(r));
	/* what the region must hold from now on: its bytes and the put's */
	fill(want, FREG, 43);
	fill(want + FPUT_OFF, FPUT_LEN, 44);
	check(memcmp(uccl_mr_addr(mr), want, FREG) == 0, "the peer's put landed, nothing else changed");
	printf("ready\n");
	check(wait_file(go, T_MS), "told to look again");
	check(memcmp(uccl_mr_addr(mr), want, FREG) == 0, "the region is unchanged after the forged packets");
	free(want);
	uccl_detach(ctx);
	return failures ? 1 : 0;
}

static int mode_fclient(const char *target, const char *go)
{
	struct keyed k;
	struct uccl_ctx *ctx;

	who = " [fclient]";
	key_take(&k, "itest-fclient", target, 4096);
	ctx = k.ctx;
	fill(uccl_mr_addr(k.mr), FPUT_LEN, 44);
	TRY(ctx, uccl_put(k.ep, k.conn, k.mr, 0, k.key, FPUT_OFF, FPUT_LEN, 0, 2));
	TRY(ctx, uccl_signal(k.ep, k.conn, 0, 3));
	check(op_res(k.ep, &k.st, 2) == 0, "put of %u B", FPUT_LEN);
	check(op_res(k.ep, &k.st, 3) == 0, "signal");
	printf("put done\n");
	/* the connection stays: the forged packets name it */
	check(wait_file(go, T_MS), "told to go");
	uccl_detach(ctx);
	return failures ? 1 : 0;
}

/* ---- a get whose responder gives up ---- */

static int mode_gserve(const char *name, uint64_t bytes, const char *go)
{
	struct keyed k;

	who = " [gserve]";
	key_serve(&k, "itest-gserve", name, bytes, 0);
	/* longer than the client waits: it is the one that must give up */
	check(wait_file(go, 60000), "told to go");
	uccl_detach(k.ctx);
	return failures ? 1 : 0;
}

static int mode_gclient(const char *target, uint64_t bytes, const char *go)
{
	struct keyed k;
	int64_t t0;

	who = " [gclient]";
	key_take(&k, "itest-gclient", target, bytes);
	printf("keyed\n");
	fflush(stdout);
	check(wait_file(go, T_MS), "told to go");
	TRY(k.ctx, uccl_get(k.ep, k.conn, k.mr, 0, k.key, 0, bytes, 0, 2));
	t0 = now_ms();
	while (now_ms() - t0 < 30000) {
		struct uccl_cqe c;
		int n = uccl_cq_wait(k.ep, &c, 1, 1000);

		if (n == 1 && c.user_data == 2) {
			printf("get res %d after %lld ms\n", c.res, (long long)(now_ms() - t0));
			uccl_detach(k.ctx);
			return 0;
		}
	}
	printf("get: no completion in 30 s\n");
	uccl_detach(k.ctx);
	return 1;
}

/* ---- a doorbell closed by the client ---- */

/* Close every pipe write end the process holds, the endpoint's doorbell
 * among them: what a client may do by mistake or on purpose, and what the
 * library does when a destroy request fails. The daemon must not spin on
 * the HUP. */
/* Descriptors that may be a doorbell: Unix sockets, and pipes we write
 * (a kernel that cannot refuse passed descriptors gets a pipe). */
static void doorbell_candidates(bool cand[1024], bool sock[1024])
{
	char path[64], link[64];

	for (int fd = 0; fd < 1024; fd++) {
		struct sockaddr_un sa;
		socklen_t len = sizeof(sa);
		ssize_t k;
		int fl;

		cand[fd] = sock[fd] = false;
		if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0 && sa.sun_family == AF_UNIX) {
			cand[fd] = sock[fd] = true;
			continue;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		k = readlink(path, link, sizeof(link) - 1);
		if (k <= 0)
			continue;
		link[k] = '\0';
		fl = fcntl(fd, F_GETFL);
		cand[fd] = strncmp(link, "pipe:", 5) == 0 && fl >= 0 && (fl & O_ACCMODE) == O_WRONLY;
	}
}

/* A new endpoint, and its doorbell under the library: the candidate that
 * creating it added. Returns how many were added (1), the first in *fd. */
static int ep_with_doorbell(struct uccl_ctx *ctx, struct uccl_ep **ep, int *fd, bool *is_sock)
{
	static bool before[1024], after[1024], sock[1024], unused[1024];
	int n = 0;

	doorbell_candidates(before, unused);
	if (uccl_ep_create(ctx, NULL, ep) < 0)
		return -1;
	doorbell_candidates(after, sock);
	for (int i = 0; i < 1024; i++) {
		if (after[i] && !before[i]) {
			if (n++ == 0) {
				*fd = i;
				*is_sock = sock[i];
			}
		}
	}
	return n;
}

/* Pass fd 0 over the doorbell: 0 if it went, else -errno. */
static int pass_fd(int doorbell)
{
	char byte = 1, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	int zero = 0;

	memset(cbuf, 0, sizeof(cbuf));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &zero, sizeof(zero));
	return sendmsg(doorbell, &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static int mode_hup(unsigned seconds, bool shut)
{
	struct uccl_ctx *ctx;
	struct uccl_ep *ep;
	int fd = -1, n, r;
	bool sock = false;

	who = " [hup]";
	TRY(NULL, uccl_attach(NULL, "itest-hup", &ctx));
	n = ep_with_doorbell(ctx, &ep, &fd, &sock);
	if (n == 1 && sock) {
		/* the engine thread must never receive (and close) our files */
		r = pass_fd(fd);
		check(r == -EPERM, "the daemon refuses a descriptor passed over the doorbell (%d)", r);
	}
	if (n == 1) {
		if (shut && sock)
			shutdown(fd, SHUT_WR);
		else
			close(fd);
	}
	check(n == 1, "closed the endpoint's doorbell (%d: %s)", n,
	      sock ? (shut ? "socket shut down for writing" : "socket") : "pipe");
	printf("closed\n");
	fflush(stdout);
	sleep(seconds);
	return failures ? 1 : 0;
}

/* ---- a daemon that answers badly ---- */

static int mode_badreply(const char *path, const char *kind)
{
	bool ahead = strcmp(kind, "ahead") == 0, late = strcmp(kind, "late") == 0;
	int want = ahead ? -EPROTO : -EBADMSG;
	struct uccl_ctx *ctx;
	struct uccl_ep *ep;
	int r;

	who = ahead ? " [badreply ahead]" : late ? " [badreply late]" : " [badreply garbage]";
	TRY(NULL, uccl_attach(path, "itest-badreply", &ctx));
	if (late) {
		/* an endpoint the daemon may make after the call gave up:
		 * its late reply must be read, and it does not decode */
		TRY(ctx, uccl_set_timeout(ctx, 300));
		r = uccl_ep_create(ctx, NULL, &ep);
		check(r == -ETIMEDOUT, "the unanswered ep_create times out (%s)", uccl_strerror(r));
		usleep(900 * 1000);
	}
	r = uccl_set_channel_cc(ctx, "peer-x", "window");
	check(r == want, "the badly answered call fails with %s (%s)", uccl_strerror(want),
	      uccl_strerror(r));
	check(strstr(uccl_last_error(ctx), "control connection is closed") != NULL,
	      "... and says the connection is closed (%s)", uccl_last_error(ctx));
	r = uccl_set_channel_cc(ctx, "peer-x", "window");
	check(r == -EPIPE, "the next call fails at once with EPIPE (%s)", uccl_strerror(r));
	uccl_detach(ctx);
	return failures;
}

/* ---- a ring the client broke ---- */

struct breaker {
	struct uccl_ep *ep;
};

/* What a buggy client thread would do: publish a producer index more than
 * the ring holds ahead, and ring the doorbell of the sleeping engine. Only
 * the shared word and the doorbell are touched, not the library's state. */
static void *break_sq(void *arg)
{
	struct breaker *b = arg;
	uint64_t one = 1;

	usleep(300 * 1000);
	__atomic_store_n(&b->ep->sq.ctl->prod, b->ep->sq.idx + b->ep->sq.entries + 5,
			 __ATOMIC_RELEASE);
	if (send(b->ep->doorbell_fd, &one, sizeof(one), MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
	    write(b->ep->doorbell_fd, &one, sizeof(one)) < 0)
		perror("doorbell");
	return NULL;
}

static int mode_badring(void)
{
	struct uccl_ctx *ctx;
	struct uccl_ep *ep, *other, *third;
	struct uccl_cqe cqe;
	struct breaker b;
	pthread_t th;
	uint32_t conn, aconn;
	char name[64];
	int64_t t0, took;
	int r;

	who = " [badring]";
	snprintf(name, sizeof(name), "badring-%d", (int)getpid());
	TRY(NULL, uccl_attach(NULL, "itest-badring", &ctx));
	TRY(ctx, uccl_ep_create(ctx, NULL, &ep));
	TRY(ctx, uccl_ep_create(ctx, NULL, &other));
	TRY(ctx, uccl_listen(other, name));
	TRY(ctx, uccl_connect(ep, name, T_MS, &conn));
	TRY(ctx, uccl_accept(other, T_MS, &aconn));
	(void)aconn;
	/* slept on once before: a wake-up count may be left to drain */
	r = uccl_cq_wait(ep, &cqe, 1, 50);
	check(r == -ETIMEDOUT, "nothing comes before the ring breaks (%s)", uccl_strerror(r));
	b.ep = ep;
	if (pthread_create(&th, NULL, break_sq, &b) != 0)
		die("pthread_create", -EAGAIN, NULL);
	t0 = now_ms();
	r = uccl_cq_wait(ep, &cqe, 1, 5000);
	took = now_ms() - t0;
	pthread_join(th, NULL);
	check(r == -EBADMSG, "uccl_cq_wait on the endpoint with the broken ring: -EBADMSG (%s)",
	      uccl_strerror(r));
	check(took >= 250 && took < 2500, "woken when the daemon stopped it, not at the 5 s "
	      "timeout (%lld ms)", (long long)took);
	r = uccl_wait(ep, conn, 1, 5000);
	check(r == -EBADMSG, "uccl_wait for a signal on it: -EBADMSG (%s)", uccl_strerror(r));
	r = uccl_submit(ep);
	check(r == -EBADMSG, "uccl_submit on it: -EBADMSG (%s)", uccl_strerror(r));
	TRY(ctx, uccl_nop(other, 0, 7));
	r = uccl_cq_wait(other, &cqe, 1, T_MS);
	check(r == 1 && cqe.user_data == 7 && cqe.res == 0,
	      "the same client's other endpoint is still served (%d)", r);
	/* the SQ's consumer index moved past what was published (a forked
	 * child's submissions, a stray store): the library says so instead of
	 * calling the ring full for ever */
	TRY(ctx, uccl_ep_create(ctx, NULL, &third));
	__atomic_store_n(&third->sq.ctl->cons, third->sq.idx + 5, __ATOMIC_RELEASE);
	r = uccl_nop(third, 0, 9);
	check(r == -EBADMSG, "a submission on a ring whose consumer is ahead: -EBADMSG (%s)",
	      uccl_strerror(r));
	uccl_detach(ctx);
	return failures;
}

/* ---- the daemon dies ---- */

/* The daemon is killed under a client that then waits: each wait ends at
 * once with -ECONNRESET instead of spinning to its timeout (the notify
 * pipe reports HUP for good), and a submission that rings the dead
 * engine's doorbell does not kill the application with SIGPIPE (its
 * default disposition here, unlike the rest of this program). */
static int mode_daemondies(bool pipe_doorbell)
{
	struct uccl_ctx *ctx;
	struct uccl_ep *ep, *ep2, *ep3;
	struct uccl_cqe cqe;
	int64_t t0, dt;
	int r, fd, p[2], i;
	bool sock;

	signal(SIGPIPE, SIG_DFL);
	who = " [daemondies]";
	TRY(NULL, uccl_attach(NULL, "itest-daemondies", &ctx));
	check(ep_with_doorbell(ctx, &ep, &fd, &sock) == 1, "endpoint created, its doorbell found");
	if (pipe_doorbell) {
		/* what a daemon before the socket pair handed out, its reader
		 * already gone: the library must fall back to write() */
		check(pipe(p) == 0 && dup2(p[1], fd) == fd, "the doorbell is now a pipe");
		close(p[0]);
		close(p[1]);
	}
	TRY(ctx, uccl_ep_create(ctx, NULL, &ep2));   /* its doorbell is never rung */
	TRY(ctx, uccl_ep_create(ctx, NULL, &ep3));   /* nor this one's */
	printf("ready\n");
	fflush(stdout);
	sleep(2);                      /* the script kills the daemon meanwhile */
	r = uccl_nop(ep, 0, 7);
	printf("nop %d\n", r);
	t0 = now_ms();
	r = uccl_cq_wait(ep, &cqe, 1, 5000);
	dt = now_ms() - t0;
	check(r == -ECONNRESET && dt < 1000, "cq_wait ends with -ECONNRESET at once (%d after %lld ms)",
	      r, (long long)dt);
	t0 = now_ms();
	r = uccl_wait(ep, 0, 1, 5000);
	dt = now_ms() - t0;
	check(r == -ECONNRESET && dt < 1000, "wait ends with -ECONNRESET at once (%d after %lld ms)",
	      r, (long long)dt);
	r = uccl_cq_wait(ep, &cqe, 1, 0);
	check(r == -ECONNRESET, "cq_wait without waiting says the daemon is gone (%d)", r);
	/* a caller spinning on poll, or submitting, learns it too */
	for (i = 0; i < 100000 && (r = uccl_poll(ep2, &cqe, 1)) == 0; i++)
		;
	check(r == -ECONNRESET, "poll says the daemon is gone after %d empty polls (%d)", i, r);
	/* and one spinning on a semaphore without waiting (it spun on
	 * -ETIMEDOUT for ever) */
	for (i = 0; i < 100000 && (r = uccl_wait(ep3, 0, 1, 0)) == -ETIMEDOUT; i++)
		;
	check(r == -ECONNRESET, "wait without waiting says the daemon is gone after %d calls (%d)", i,
	      r);
	r = uccl_nop(ep, 0, 8);
	check(r == -ECONNRESET, "a submission says the daemon is gone (%d)", r);
	r = uccl_submit(ep);
	check(r == -ECONNRESET, "so does uccl_submit (%d)", r);
	uccl_ep_destroy(ep3);
	uccl_ep_destroy(ep2);
	uccl_ep_destroy(ep);
	uccl_detach(ctx);
	printf("done\n");
	return failures ? 1 : 0;
}

/* ---- bad control input ---- */

static int raw_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect", -errno, NULL);
	return fd;
}

/* true if the daemon closes fd within 3 s (after maybe sending a reply) */
static bool closed_by_daemon(int fd)
{
	struct timeval tv = { .tv_sec = 3 };
	char buf[4096];

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0)
			return true;
		if (n < 0)
			return errno == ECONNRESET;
	}
}

static void send_frame(int fd, const void *payload, uint32_t len, int pass_fd)
{
	uint8_t buf[4 + 256];
	struct iovec iov = { .iov_base = buf, .iov_len = 4 + len };
	union { char b[CMSG_SPACE(sizeof(int))]; struct cmsghdr a; } cm;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	buf[0] = len & 0xff;
	buf[1] = (len >> 8) & 0xff;
	buf[2] = (len >> 16) & 0xff;
	buf[3] = (len >> 24) & 0xff;
	memcpy(buf + 4, payload, len);
	if (pass_fd >= 0) {
		mh.msg_control = cm.b;
		mh.msg_controllen = sizeof(cm.b);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0)
		die("sendmsg", -errno, NULL);
}

static int mode_badinput(const char *path)
{
	/* hand-encoded Request{seq=1, attach{proto_version=V}}:
	 * 08 01 | 52 02 08 V */
	uint8_t attach_v1[] = { 0x08, 0x01, 0x52, 0x02, 0x08, 0x01 };
	uint8_t attach_v99[] = { 0x08, 0x01, 0x52, 0x02, 0x08, 0x63 };
	/* Request{seq=2, status{}} before attach */
	uint8_t status_req[] = { 0x08, 0x02, 0xf2, 0x01, 0x00 };
	/* Request{seq=2, field 99 (unknown) } : no body set */
	uint8_t unknown[] = { 0x08, 0x02, 0x98, 0x06, 0x01 };
	/* Request{seq=2, mem_dereg{mr_id=1}} */
	uint8_t dereg[] = { 0x08, 0x02, 0x6a, 0x02, 0x08, 0x01 };
	uint8_t junk[200];
	int fd;

	fd = raw_connect(path);
	if (write(fd, "\x10\x00", 2) < 0)   /* half a header, then hang up */
		die("write", -errno, NULL);
	close(fd);
	check(true, "truncated header sent and connection dropped");

	fd = raw_connect(path);
	if (write(fd, "\xff\xff\xff\x7f", 4) < 0)
		die("write", -errno, NULL);
	check(closed_by_daemon(fd), "oversized length: daemon closes the connection");
	close(fd);

	fd = raw_connect(path);
	send_frame(fd, attach_v99, sizeof(attach_v99), -1);
	check(closed_by_daemon(fd), "wrong protocol version: refused and closed");
	close(fd);

	fd = raw_connect(path);
	send_frame(fd, status_req, sizeof(status_req), -1);
	check(closed_by_daemon(fd), "request before attach: closed");
	close(fd);

	fd = raw_connect(path);
	send_frame(fd, attach_v1, sizeof(attach_v1), -1);
	send_frame(fd, unknown, sizeof(unknown), -1);
	check(closed_by_daemon(fd), "unknown message type: closed");
	close(fd);

	srand(7);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)rand();
	fd = raw_connect(path);
	send_frame(fd, attach_v1, sizeof(attach_v1), -1);
	send_frame(fd, junk, sizeof(junk), -1);
	check(closed_by_daemon(fd), "random bytes: closed");
	close(fd);

	fd = raw_connect(path);
	send_frame(fd, attach_v1, sizeof(attach_v1), -1);
	send_frame(fd, dereg, sizeof(dereg), STDIN_FILENO);
	check(closed_by_daemon(fd), "file descriptor attached to a request that takes none: closed");
	close(fd);

	fd = raw_connect(path);
	send_frame(fd, attach_v1, sizeof(attach_v1), -1);
	if (write(fd, "\x20\x00\x00\x00\x08", 5) < 0)   /* frame cut short, then EOF */
		die("write", -errno, NULL);
	shutdown(fd, SHUT_WR);
	check(closed_by_daemon(fd), "truncated frame then EOF: closed");
	close(fd);

	/* attached, owns nothing, hangs up without detach (the session is
	 * released inside its own disconnect handler) */
	fd = raw_connect(path);
	send_frame(fd, attach_v1, sizeof(attach_v1), -1);
	{
		char rbuf[256];
		struct timeval tv = { .tv_sec = 3 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		check(recv(fd, rbuf, sizeof(rbuf), 0) > 0, "attach answered");
	}
	close(fd);

	/* a client that pipelines requests and never reads the replies must
	 * not hold up anyone else */
	fd = raw_connect(path);
	send_frame(fd, attach_v1, sizeof(attach_v1), -1);
	{
		uint8_t st[] = { 0x08, 0x02, 0xf2, 0x01, 0x00 };
		uint8_t fr[4 + sizeof(st)] = { sizeof(st), 0, 0, 0 };
		int sent = 0;
		memcpy(fr + 4, st, sizeof(st));
		for (int i = 0; i < 20000; i++) {
			if (send(fd, fr, sizeof(fr), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(fr))
				break;
			sent++;
		}
		struct timespec a, b;
		struct uccl_ctx *other;
		clock_gettime(CLOCK_MONOTONIC, &a);
		int r2 = uccl_attach(path, "bystander", &other);
		clock_gettime(CLOCK_MONOTONIC, &b);
		double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
		check(r2 == 0 && ms < 500, "another client attaches in %.1f ms while one floods %d unread requests",
		      ms, sent);
		if (r2 == 0)
			uccl_detach(other);
	}
	close(fd);

	/* a connection that never attaches is closed at the deadline */
	fd = raw_connect(path);
	{
		struct timeval tv = { .tv_sec = 8 };
		char c1;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		check(recv(fd, &c1, 1, 0) == 0, "silent unattached connection closed by the daemon");
	}
	close(fd);

	/* and the daemon still serves a well-behaved client */
	struct uccl_ctx *ctx;
	struct uccl_ep *ep;
	int r = uccl_attach(path, "after-bad-input", &ctx);
	check(r == 0, "a normal client attaches afterwards");
	if (r == 0) {
		r = uccl_ep_create(ctx, NULL, &ep);
		check(r == 0, "and creates an endpoint");
		struct uccl_cqe c;
		if (r == 0) {
			uccl_nop(ep, 0, 9);
			r = uccl_cq_wait(ep, &c, 1, T_MS);
			check(r == 1 && c.user_data == 9, "and its operations complete");
		}
		uccl_detach(ctx);
	}
	return failures ? 1 : 0;
}

static int mode_connect(const char *target, int timeout_ms)
{
	struct uccl_ctx *ctx;
	struct uccl_ep *ep;
	uint32_t conn;
	int r;

	TRY(NULL, uccl_attach(NULL, "itest-connect", &ctx));
	TRY(ctx, uccl_ep_create(ctx, NULL, &ep));
	r = uccl_connect(ep, target, timeout_ms, &conn);
	printf("connect %s: %s (%s) %s\n", target, r == 0 ? "ok" : r == -ECONNREFUSED ? "ECONNREFUSED"
		: r == -EHOSTUNREACH ? "EHOSTUNREACH" : r == -ETIMEDOUT ? "ETIMEDOUT" : "other",
	       uccl_strerror(r), r < 0 ? uccl_last_error(ctx) : "");
	uccl_detach(ctx);
	return r == 0 ? 0 : 1;
}

/* ---- a connection the peer closed while we connected ---- */

static int mode_closedearly(const char *target, int wait_ms)
{
	struct uccl_ctx *ctx;
	struct uccl_ep *ep;
	struct uccl_mr *mr;
	uint32_t conn;
	int64_t t0;
	int r;

	TRY(NULL, uccl_attach(NULL, "itest-closedearly", &ctx));
	TRY(ctx, uccl_mem_alloc(ctx, 4096, &mr));
	TRY(ctx, uccl_ep_create(ctx, NULL, &ep));
	/* succeeds either way: the peer accepted; what it closed shows in
	 * the operations */
	r = uccl_connect(ep, target, T_MS, &conn);
	if (r < 0)
		die("uccl_connect", r, ctx);
	printf("connected\n");
	/* nothing will ever arrive: the peer's side is gone */
	TRY(ctx, uccl_recv(ep, conn, mr, 0, 64, 1, 0, 1));
	t0 = now_ms();
	while (now_ms() - t0 < wait_ms) {
		struct uccl_cqe c;
		int n = uccl_cq_wait(ep, &c, 1, (int)(wait_ms - (now_ms() - t0)) + 1);

		if (n == 1 && c.user_data == 1) {
			printf("recv res %d (%s) after %lld ms\n", c.res, uccl_strerror(c.res),
			       (long long)(now_ms() - t0));
			uccl_detach(ctx);
			return c.res == -ECONNRESET ? 0 : 1;
		}
		if (n < 0 && n != -ETIMEDOUT)
			die("uccl_cq_wait", n, ctx);
	}
	printf("recv: no completion in %d ms\n", wait_ms);
	uccl_detach(ctx);
	return 1;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && strcmp(argv[1], "primitives") == 0)
		return mode_primitives();
	if (argc >= 3 && strcmp(argv[1], "pserve") == 0) {
		remote = true;
		return primitives_server(argv[2]);
	}
	if (argc >= 3 && strcmp(argv[1], "pclient") == 0) {
		remote = strchr(argv[2], '/') != NULL;
		return primitives_client(argv[2]);
	}
	if (argc >= 3 && strcmp(argv[1], "orphans") == 0)
		return mode_orphans((pid_t)atoi(argv[2]));
	if (argc >= 3 && strcmp(argv[1], "emfile") == 0)
		return mode_emfile(atoi(argv[2]));
	if (argc >= 3 && strcmp(argv[1], "uidcap") == 0)
		return mode_uidcap(atoi(argv[2]));
	if (argc >= 2 && strcmp(argv[1], "lasterror") == 0)
		return mode_lasterror();
	if (argc >= 5 && strcmp(argv[1], "gserve") == 0)
		return mode_gserve(argv[2], strtoull(argv[3], NULL, 0), argv[4]);
	if (argc >= 5 && strcmp(argv[1], "gclient") == 0)
		return mode_gclient(argv[2], strtoull(argv[3], NULL, 0), argv[4]);
	if (argc >= 2 && strcmp(argv[1], "backpressure") == 0)
		return mode_backpressure();
	if (argc >= 2 && strcmp(argv[1], "isolation") == 0)
		return mode_isolation();
	if (argc >= 3 && strcmp(argv[1], "hold") == 0)
		return mode_hold(argv[2], argc >= 4 ? atoi(argv[3]) : 0);
	if (argc >= 3 && strcmp(argv[1], "peer") == 0)
		return mode_peer(argv[2]);
	if (argc >= 4 && strcmp(argv[1], "connect") == 0)
		return mode_connect(argv[2], atoi(argv[3]));
	if (argc >= 4 && strcmp(argv[1], "closedearly") == 0)
		return mode_closedearly(argv[2], atoi(argv[3]));
	if (argc >= 3 && strcmp(argv[1], "hup") == 0)
		return mode_hup((unsigned)atoi(argv[2]), argc >= 4 && strcmp(argv[3], "shut") == 0);
	if (argc >= 3 && strcmp(argv[1], "badinput") == 0)
		return mode_badinput(argv[2]);
	if (argc >= 4 && strcmp(argv[1], "fserve") == 0)
		return mode_fserve(argv[2], argv[3]);
	if (argc >= 4 && strcmp(argv[1], "fclient") == 0)
		return mode_fclient(argv[2], argv[3]);
	if (argc >= 4 && strcmp(argv[1], "badreply") == 0)
		return mode_badreply(argv[2], argv[3]);
	if (argc >= 2 && strcmp(argv[1], "badring") == 0)
		return mode_badring();
	if (argc >= 2 && strcmp(argv[1], "daemondies") == 0)
		return mode_daemondies(argc >= 3 && strcmp(argv[2], "pipe") == 0);
	fprintf(stderr, "usage: itest_client primitives|pserve NAME|pclient TARGET|emfile N|backpressure|isolation|"
		"hold NAME [N]|peer NAME|fserve NAME GO|fclient TARGET GO|gserve NAME BYTES GO|"
		"gclient TARGET BYTES GO|badinput SOCKET|badreply SOCKET KIND|badring|daemondies [pipe]|hup SECONDS [shut]|"
		"connect TARGET MS|closedearly TARGET MS\n");
	return 2;
}
