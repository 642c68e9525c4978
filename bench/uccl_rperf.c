/* SPDX-License-Identifier: MIT */
/*
 * uccl_rperf: measures what an application sees through libucclclient between
 * two hosts, each with its own ucclsvcd. The server listens on its daemon,
 * offers one receive region and answers pings; the client, attached to the
 * other daemon, connects to "host/NAME" and measures goodput per message size
 * (messages written with back-to-back puts, several in flight; a put's
 * completion means written at the receiver) and 64-byte ping-pong latency:
 * a put and a signal each way (the default), a put that raises the
 * semaphore itself (--lat-op put-signal: UCCL_SQE_F_SIGNAL), or send/recv
 * (--lat-op send: one message a hop into a posted receive, what UCX's
 * tag_lat does). It reports what it measured and how much (messages,
 * bytes, samples, seconds); it never fills in a figure.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <uccl/uccl.h>

#include "bench/benchutil.h"
#include "client/units.h"

#define NS_PER_S          1000000000ull
#define NS_PER_MS         1000000ull
#define KiB               ((uint64_t)1 << 10)
#define MiB               ((uint64_t)1 << 20)
#define GiB               ((uint64_t)1 << 30)

#define SQ_ENTRIES        4096u
#define CQ_ENTRIES        4096u
#define POLL_MAX          256
#define CTL_LEN           4096u             /* hello/ready/done/bye and ping slots */
#define CONNECT_MS        10000
#define CTL_TIMEOUT_MS    30000             /* one control message this late: give up */
#define OP_TIMEOUT_NS     (30 * NS_PER_S)   /* no completion for this long: a hang */

#define MAX_SIZES         32
#define MAX_SIZE          (64 * GiB)
#define REGION_CAP        GiB               /* the receive region, at most */
#define REGION_FLOOR      (16 * MiB)        /* smallest fallback region */
#define DEF_PUT_MAX       (16 * MiB)
#define DEF_WINDOW        (32 * MiB)
#define MAX_WINDOW_PUTS   1024u             /* the daemon's default max_outstanding */
#define MSG_TRACK         2048u             /* > messages in flight (window + 1) */
#define MIN_MESSAGES      3u

#define LAT_SIZE          64u
#define LAT_WARMUP        1000u
#define DEF_LAT_SAMPLES   10000u
#define MAX_LAT_SAMPLES   (1u << 22)
#define LAT_SLOTS         16u               /* rotating 64 B source slots */
#define SPIN_AFTER_PING_NS (10 * NS_PER_MS) /* server: keep spinning this long */

/* Control messages (send/recv tags) and their layout in the control region. */
#define MAGIC             0x75726631u       /* "urf1" */
#define TAG_HELLO         1
#define TAG_READY         2
#define TAG_DONE          3
#define TAG_BYE           4
#define TAG_PING          5                 /* --lat-op send */
#define TAG_PONG          6
#define OFF_HELLO         0
#define OFF_READY         256
#define OFF_DONE          512
#define OFF_BYE           768
#define OFF_PING          1024              /* LAT_SLOTS x 64 B */

/* user_data of operations that are not data-path puts */
#define UD_CTL            (1ull << 63)
#define UD_HELLO          (UD_CTL | 1)
#define UD_READY          (UD_CTL | 2)
#define UD_DONE           (UD_CTL | 3)
#define UD_BYE            (UD_CTL | 4)
#define UD_PING           (UD_CTL | 5)
#define UD_PONG           (UD_CTL | 6)
#define UD_SIGNAL         (UD_CTL | 7)
#define UD_LATRECV        (UD_CTL | 8)      /* a ping's or pong's receive: counted */

#define HELLO_F_SPIN      0x1u
#define HELLO_F_SEND      0x2u              /* ping-pong by send/recv */
#define HELLO_F_FUSED     0x4u              /* ping-pong by puts with UCCL_SQE_F_SIGNAL */

struct hello {                       /* client -> server */
	uint32_t magic;
	uint32_t flags;                  /* HELLO_F_* */
	uint64_t region_want;            /* bytes */
	uint64_t lat_rkey;               /* where the server's pongs go */
};

struct ready {                       /* server -> client */
	uint32_t magic;
	int32_t err;                     /* 0, or why there is no region */
	uint64_t rkey;
	uint64_t region_bytes;
	uint64_t region_asked;
};

struct done {                        /* client -> server */
	uint32_t magic;
	uint32_t pad;
	uint64_t pings;
};

struct bye {                         /* server -> client */
	uint32_t magic;
	uint32_t pad;
	uint64_t pongs;
	uint64_t bad_pings;              /* ping payloads that were not their number */
};

struct gp_result {
	uint64_t size;
	uint64_t put_len;
	uint64_t puts_per_msg;
	uint64_t window_puts;
	uint64_t messages;
	uint64_t bytes;
	double seconds;
	double gbit_s;
	bool wrapped;                    /* a message was larger than the region */
};

struct lat_result {
	uint64_t samples;
	double seconds;
	double p50_us, p99_us, min_us, max_us;   /* one-way = RTT / 2 */
	uint64_t bad_pongs;
};

struct opts {
	const char *socket;
	const char *target;
	uint64_t sizes[MAX_SIZES];
	int nsizes;
	double seconds;
	uint64_t lat_samples;
	uint64_t put_max;
	uint64_t window;
	double timeout_s;                /* server: for the client to connect and finish */
	bool spin;
	bool lat_send;                   /* --lat-op send */
	bool lat_fused;                  /* --lat-op put-signal */
	bool json;
	bool vmem;                       /* data regions: uccl_mem_reg of our own memory */
};

struct rperf {
	const struct opts *o;
	struct uccl_ctx *ctx;
	struct uccl_ep *ep;
	uint32_t conn;
	struct uccl_mr *ctl;             /* control messages, ping sources */
	struct uccl_mr *src;             /* client: put sources */
	struct uccl_mr *lat;             /* client: where pongs land */
	struct uccl_mr *region;          /* server: the receive region */
	uint64_t rkey;                   /* client: the server's region */
	uint64_t region_bytes;
	uint64_t region_asked;
	uint64_t warmup_bytes;
	uint64_t outstanding;            /* completions not reaped yet (non-put) */
	bool ctl_done[8];                /* control completions seen, by UD_* & 7 */
	uint64_t lat_recvd;              /* UD_LATRECV completions */
};

static const char *g_role = "uccl_rperf";

static const char *lat_op_name(const struct opts *o)
{
	return o->lat_send ? "send/recv" : o->lat_fused ? "put with signal" : "put+signal";
}

/* How the client waits for a pong (wait_pong): SPIN when spinning. */
static const char *lat_wait_name(const struct opts *o, const char *spin)
{
	return o->spin ? spin : o->lat_send ? "uccl_cq_wait" : "uccl_wait";
}
static struct uccl_ctx *g_ctx;

/* A failed call ends the run: a benchmark that carries on after an error
 * would report a figure for something other than what it names. */
static void __attribute__((noreturn)) api_fail(const char *what, int err)
{
	const char *last = g_ctx ? uccl_last_error(g_ctx) : "";

	fprintf(stderr, "%s: %s: %s", g_role, what, uccl_strerror(err));
	if (last && *last)
		fprintf(stderr, " (daemon: %s)", last);
	fputc('\n', stderr);
	exit(1);
}

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", g_role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", g_role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const char *op_name(uint8_t opcode)
{
	switch (opcode) {
	case UCCL_OP_PUT: return "uccl_put";
	case UCCL_OP_SIGNAL: return "uccl_signal";
	case UCCL_OP_SEND: return "uccl_send";
	case UCCL_OP_RECV: return "uccl_recv";
	default: return "operation";
	}
}

/* Account a control completion (user_data with UD_CTL); data puts are the
 * caller's. Every completion here is expected to succeed. */
static void ctl_cqe(struct rperf *p, const struct uccl_cqe *c)
{
	if (c->res < 0)
		api_fail(op_name(c->opcode), c->res);
	if (c->user_data == UD_LATRECV && c->len != LAT_SIZE)
		fail("a %u B ping or pong arrived as %" PRIu64 " B", LAT_SIZE, c->len);
	if (c->user_data == UD_LATRECV)
		p->lat_recvd++;
	else if (c->user_data & UD_CTL)
		p->ctl_done[c->user_data & 7] = true;
	if ((c->user_data & UD_CTL) && p->outstanding)
		p->outstanding--;
}

/* Reap what is there (timeout_ms 0: without waiting, else up to that
 * long for one); control completions only expected. */
static void cq_wait(struct rperf *p, int timeout_ms)
{
	struct uccl_cqe c[POLL_MAX];
	int n = timeout_ms ? uccl_cq_wait(p->ep, c, POLL_MAX, timeout_ms) :
			     uccl_poll(p->ep, c, POLL_MAX);

	if (n < 0 && n != -ETIMEDOUT)
		api_fail(timeout_ms ? "uccl_cq_wait" : "uccl_poll", n);
	for (int i = 0; i < n; i++) {
		if (!(c[i].user_data & UD_CTL))
			fail("internal: data completion %" PRIu64 " outside a goodput run",
			     c[i].user_data);
		ctl_cqe(p, &c[i]);
	}
}

static void reap(struct rperf *p)
{
	cq_wait(p, 0);
}

/* Wait, bounded, until the control operation ud completed. */
static void wait_ctl(struct rperf *p, uint64_t ud, int timeout_ms, const char *what)
{
	uint64_t deadline = bench_now_ns() + (uint64_t)timeout_ms * NS_PER_MS;

	while (!p->ctl_done[ud & 7]) {
		struct uccl_cqe c[POLL_MAX];
		int n = uccl_cq_wait(p->ep, c, POLL_MAX, 100);

		if (n < 0 && n != -ETIMEDOUT)
			api_fail("uccl_cq_wait", n);
		for (int i = 0; i < n; i++) {
			if (!(c[i].user_data & UD_CTL))
				fail("internal: data completion while waiting for %s", what);
			ctl_cqe(p, &c[i]);
		}
		if (!p->ctl_done[ud & 7] && bench_now_ns() > deadline)
			fail("%s: nothing within %d s", what, timeout_ms / 1000);
	}
	p->ctl_done[ud & 7] = false;
}

/* Post a control or ping operation; a full ring is reaped and retried. */
#define POST(p, what, call) do {                                        \
	int r_;                                                         \
	uint64_t t_ = bench_now_ns();                                         \
	while ((r_ = (call)) == -EAGAIN) {                              \
		uccl_submit((p)->ep);                                   \
		reap(p);                                                \
		if (bench_now_ns() - t_ > OP_TIMEOUT_NS)                      \
			fail("%s: ring full for 30 s", what);           \
	}                                                               \
	if (r_ < 0)                                                     \
		api_fail(what, r_);                                     \
	(p)->outstanding++;                                             \
} while (0)

static void *ctl_at(struct rperf *p, size_t off)
{
	return (uint8_t *)uccl_mr_addr(p->ctl) + off;
}

static void attach(struct rperf *p, const char *name)
{
	struct uccl_ep_attr attr = { .sq_entries = SQ_ENTRIES, .cq_entries = CQ_ENTRIES };
	int r;

	r = uccl_attach(p->o->socket, name, &p->ctx);
	if (r < 0)
		fail("uccl_attach: %s (socket %s)", uccl_strerror(r),
		     p->o->socket ? p->o->socket : getenv("UCCL_SOCKET") ? getenv("UCCL_SOCKET") :
		     UCCL_DEFAULT_SOCKET);
	g_ctx = p->ctx;
	r = uccl_ep_create(p->ctx, &attr, &p->ep);
	if (r < 0)
		api_fail("uccl_ep_create", r);
	r = uccl_mem_alloc(p->ctx, CTL_LEN, &p->ctl);
	if (r < 0)
		api_fail("uccl_mem_alloc (control region)", r);
}

/* A data region: one the daemon maps (uccl_mem_alloc), or with --vmem this
 * process's own memory, registered (uccl_mem_reg: the daemon copies with
 * process_vm_readv/writev). Left mapped at the end: the process exits. */
static int data_region(struct rperf *p, uint64_t len, struct uccl_mr **mr)
{
	void *a;
	int r;

	if (!p->o->vmem)
		return uccl_mem_alloc(p->ctx, len, mr);
	a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED)
		return -ENOMEM;
	r = uccl_mem_reg(p->ctx, a, len, mr);
	if (r < 0)
		munmap(a, len);
	return r;
}

/* ---- server ---- */

/* The receive region: what the client asked for, capped at REGION_CAP;
 * halved while the daemon refuses it for lack of room, down to REGION_FLOOR
 * (or the request, if smaller). */
static int server_region(struct rperf *p, uint64_t want)
{
	uint64_t len = want < REGION_CAP ? want : REGION_CAP;
	uint64_t floor = len < REGION_FLOOR ? len : REGION_FLOOR;
	char a[32], b[32];
	int r;

	len = (len + 4095) & ~4095ull;
	p->region_asked = len;
	for (;;) {
		r = data_region(p, len, &p->region);
		if (r == 0)
			break;
		if ((r != -ENOSPC && r != -ENOMEM) || len / 2 < floor)
			return r;
		note("a %s region refused: %s (daemon: %s); trying %s",
		     units_size_str(a, sizeof(a), len), uccl_strerror(r), uccl_last_error(p->ctx),
		     units_size_str(b, sizeof(b), len / 2));
		len /= 2;
	}
	if (len < p->region_asked)
		note("receive region is %s, not the %s asked for; larger messages wrap "
		     "around in it", units_size_str(a, sizeof(a), len),
		     units_size_str(b, sizeof(b), p->region_asked));
	/* fault the pages in on this side before anything is timed */
	memset(uccl_mr_addr(p->region), 0, len);
	p->region_bytes = len;
	return 0;
}

static int run_server(const struct opts *o, const char *name)
{
	struct rperf pp = { .o = o }, *p = &pp;
	uint64_t deadline, next = 1, pongs = 0, bad = 0, spin_until = 0;
	struct hello h;
	struct ready *rd;
	struct bye *bye;
	bool spin, by_send, fused, done = false;
	int r, timeout_ms;

	g_role = "uccl_rperf server";
	deadline = bench_now_ns() + (uint64_t)(o->timeout_s * 1e9);
	timeout_ms = o->timeout_s * 1000 > INT32_MAX ? INT32_MAX : (int)(o->timeout_s * 1000);
	attach(p, "uccl_rperf-server");
	r = uccl_listen(p->ep, name);
	if (r < 0)
		api_fail("uccl_listen", r);
	note("listening on '%s'", name);
	fflush(stderr);
	r = uccl_accept(p->ep, timeout_ms, &p->conn);
	if (r == -ETIMEDOUT)
		fail("no client connected within %g s", o->timeout_s);
	if (r < 0)
		api_fail("uccl_accept", r);

	POST(p, "uccl_recv (hello)",
	     uccl_recv(p->ep, p->conn, p->ctl, OFF_HELLO, sizeof(h), TAG_HELLO, 0, UD_HELLO));
	wait_ctl(p, UD_HELLO, CTL_TIMEOUT_MS, "waiting for the client's hello");
	memcpy(&h, ctl_at(p, OFF_HELLO), sizeof(h));
	if (h.magic != MAGIC)
		fail("the client's hello is not uccl_rperf's (magic %#x)", h.magic);
	if (h.region_want == 0 || h.region_want > MAX_SIZE)
		fail("the client asked for a region of %" PRIu64 " bytes", h.region_want);
	spin = h.flags & HELLO_F_SPIN;
	by_send = h.flags & HELLO_F_SEND;
	fused = h.flags & HELLO_F_FUSED;

	rd = ctl_at(p, OFF_READY);
	memset(rd, 0, sizeof(*rd));
	rd->magic = MAGIC;
	r = server_region(p, h.region_want);
	if (r < 0) {
		/* tell the client why, then stop */
		rd->err = r;
		POST(p, "uccl_send (ready)",
		     uccl_send(p->ep, p->conn, p->ctl, OFF_READY, sizeof(*rd), TAG_READY, 0, UD_READY));
		wait_ctl(p, UD_READY, CTL_TIMEOUT_MS, "sending the refusal");
		api_fail("uccl_mem_alloc (receive region)", r);
	}
	rd->rkey = uccl_mr_key(p->region);
	rd->region_bytes = p->region_bytes;
	rd->region_asked = p->region_asked;
	POST(p, "uccl_recv (done)",
	     uccl_recv(p->ep, p->conn, p->ctl, OFF_DONE, sizeof(struct done), TAG_DONE, 0, UD_DONE));
	POST(p, "uccl_send (ready)",
	     uccl_send(p->ep, p->conn, p->ctl, OFF_READY, sizeof(*rd), TAG_READY, 0, UD_READY));
	wait_ctl(p, UD_READY, CTL_TIMEOUT_MS, "sending the region's key");
	if (by_send)                  /* the first ping's receive */
		POST(p, "uccl_recv (ping)",
		     uccl_recv(p->ep, p->conn, p->region, 0, LAT_SIZE, TAG_PING, 0, UD_LATRECV));

	/* Serve: each signal is a ping whose 64 B (its number) were put at
	 * offset 0 before it; answer with a 64 B put of the same number into
	 * the client's latency region, then a signal. With send/recv, each
	 * ping is a message into offset 0; the answer is a message back, and
	 * the next ping's receive is posted with it. */
	while (!done) {
		uint64_t t;

		if ((by_send ? p->lat_recvd : uccl_sem_value(p->ep, p->conn)) >= next) {
			uint64_t v, off = OFF_PING + (next % LAT_SLOTS) * LAT_SIZE;

			memcpy(&v, uccl_mr_addr(p->region), sizeof(v));
			bad += v != next;
			memcpy(ctl_at(p, off), &next, sizeof(next));
			if (by_send) {
				POST(p, "uccl_send (pong)",
				     uccl_send(p->ep, p->conn, p->ctl, off, LAT_SIZE, TAG_PONG, UCCL_F_MORE,
					       UD_PONG));
				POST(p, "uccl_recv (ping)",
				     uccl_recv(p->ep, p->conn, p->region, 0, LAT_SIZE, TAG_PING, 0,
					       UD_LATRECV));
			} else if (fused) {
				POST(p, "uccl_put (pong, with signal)",
				     uccl_put(p->ep, p->conn, p->ctl, off, h.lat_rkey, 0, LAT_SIZE,
					      UCCL_SQE_F_SIGNAL, UD_PONG));
			} else {
				POST(p, "uccl_put (pong)",
				     uccl_put(p->ep, p->conn, p->ctl, off, h.lat_rkey, 0, LAT_SIZE,
					      UCCL_F_MORE, UD_PONG));
				POST(p, "uccl_signal (pong)", uccl_signal(p->ep, p->conn, 0, UD_SIGNAL));
			}
			pongs++;
			next++;
			t = bench_now_ns();
			spin_until = spin ? t + SPIN_AFTER_PING_NS : 0;
		} else {
			t = bench_now_ns();
			/* spin only while a ping-pong is going on; sleep otherwise,
			 * so that the engines have the cores during goodput runs */
			if (t >= spin_until && by_send) {
				cq_wait(p, 100);
			} else if (t >= spin_until) {
				r = uccl_wait(p->ep, p->conn, next, 100);
				if (r < 0 && r != -ETIMEDOUT)
					api_fail("uccl_wait", r);
			}
		}
		reap(p);              /* every pass: the CQ cannot fill */
		done = p->ctl_done[UD_DONE & 7];
		if (!done && t > deadline)
			fail("the client did not finish within %g s (--timeout)", o->timeout_s);
	}

	struct done dn;

	memcpy(&dn, ctl_at(p, OFF_DONE), sizeof(dn));
	if (dn.magic != MAGIC)
		fail("the client's done message is not uccl_rperf's");
	bye = ctl_at(p, OFF_BYE);
	memset(bye, 0, sizeof(*bye));
	bye->magic = MAGIC;
	bye->pongs = pongs;
	bye->bad_pings = bad;
	POST(p, "uccl_send (bye)",
	     uccl_send(p->ep, p->conn, p->ctl, OFF_BYE, sizeof(*bye), TAG_BYE, 0, UD_BYE));
	wait_ctl(p, UD_BYE, CTL_TIMEOUT_MS, "sending the final counts");
	note("done: %" PRIu64 " pings answered, %" PRIu64 " with a wrong payload", pongs, bad);
	uccl_close(p->ep, p->conn);
	uccl_detach(p->ctx);
	return bad || dn.pings != pongs ? 1 : 0;
}

/* ---- client ---- */

/* Goodput of one message size: messages of `size` bytes, each written by
 * puts of at most put_max bytes, back to back; up to window_puts puts
 * outstanding. Messages are started until `seconds` have passed and at least
 * MIN_MESSAGES were started; then every started message is finished. When
 * `warm` is nonzero it is an untimed run of about that many messages instead
 * (the caller makes them one put each). */
static void goodput(struct rperf *p, uint64_t size, uint64_t warm, struct gp_result *res)
{
	const struct opts *o = p->o;
	uint64_t put_len = size < o->put_max ? size : o->put_max;
	uint64_t ppm = (size + put_len - 1) / put_len;
	uint64_t win = o->window / put_len;
	uint64_t dst_slots = p->region_bytes / put_len;
	uint64_t src_slots = uccl_mr_len(p->src) / put_len;
	uint64_t ns = (uint64_t)(o->seconds * 1e9);
	static uint64_t remaining[MSG_TRACK];   /* puts left, per message in flight */
	uint64_t started = 0, done_msgs = 0, done_bytes = 0, outstanding = 0;
	uint64_t in_msg = 0, msg_left = 0, total_puts = 0, t0, t1, last_progress;
	bool stopping = false;
	char sz[32];

	if (win < 2)
		win = 2;
	if (win > MAX_WINDOW_PUTS)
		win = MAX_WINDOW_PUTS;
	if (dst_slots == 0 || src_slots == 0)
		fail("internal: region of %" PRIu64 " bytes for puts of %" PRIu64, p->region_bytes,
		     put_len);
	if (!warm)
		fprintf(stderr, "goodput %s ... ", units_size_str(sz, sizeof(sz), size));
	t0 = last_progress = bench_now_ns();
	for (;;) {
		struct uccl_cqe c[POLL_MAX];
		int n;

		/* keep the window full */
		while (!stopping && outstanding < win) {
			uint64_t len, doff, soff;
			int r;

			if (msg_left == 0) {
				if (warm ? started >= warm :
				    started >= MIN_MESSAGES && bench_now_ns() - t0 >= ns) {
					stopping = true;
					break;
				}
				if (started - done_msgs >= MSG_TRACK)
					break;          /* cannot happen: window < MSG_TRACK */
				in_msg = 0;
				msg_left = ppm;
				remaining[started % MSG_TRACK] = ppm;
				started++;
			}
			len = size - in_msg * put_len < put_len ? size - in_msg * put_len : put_len;
			doff = (total_puts % dst_slots) * put_len;
			soff = (total_puts % src_slots) * put_len;
			r = uccl_put(p->ep, p->conn, p->src, soff, p->rkey, doff, len, 0,
				     started - 1);
			if (r == -EAGAIN)
				break;
			if (r < 0)
				api_fail("uccl_put", r);
			outstanding++;
			total_puts++;
			in_msg++;
			msg_left--;
		}
		if (stopping && outstanding == 0)
			break;
		n = uccl_cq_wait(p->ep, c, POLL_MAX, 1000);
		if (n < 0 && n != -ETIMEDOUT)
			api_fail("uccl_cq_wait", n);
		for (int i = 0; i < n; i++) {
			uint64_t m;

			if (c[i].user_data & UD_CTL) {
				ctl_cqe(p, &c[i]);
				continue;
			}
			if (c[i].res < 0) {
				char what[128];

				snprintf(what, sizeof(what), "uccl_put of %" PRIu64 " bytes%s", put_len,
					 c[i].res == -EMSGSIZE ?
					 " (over the daemon's max_op_bytes? see --put-max)" : "");
				api_fail(what, c[i].res);
			}
			outstanding--;
			m = c[i].user_data;
			if (--remaining[m % MSG_TRACK] == 0) {
				done_msgs++;
				done_bytes += size;
			}
		}
		t1 = bench_now_ns();
		if (n > 0)
			last_progress = t1;
		else if (t1 - last_progress > OP_TIMEOUT_NS)
			fail("goodput %s: %" PRIu64 " puts outstanding, no completion for %llu s",
			     units_size_str(sz, sizeof(sz), size), outstanding, OP_TIMEOUT_NS / NS_PER_S);
	}
	t1 = bench_now_ns();
	if (done_msgs != started)
		fail("internal: %" PRIu64 " messages started, %" PRIu64 " finished", started,
		     done_msgs);
	if (warm) {
		p->warmup_bytes += total_puts * put_len;
		return;
	}
	res->size = size;
	res->put_len = put_len;
	res->puts_per_msg = ppm;
	res->window_puts = win;
	res->messages = done_msgs;
	res->bytes = done_bytes;
	res->seconds = (double)(t1 - t0) / 1e9;
	res->gbit_s = (double)done_bytes * 8 / res->seconds / 1e9;
	res->wrapped = size > p->region_bytes;
	fprintf(stderr, "%.2f Gbit/s (%" PRIu64 " messages in %.3f s)\n", res->gbit_s, done_msgs,
		res->seconds);
}

/* The pongs so far: signals, or received messages (--lat-op send). */
static uint64_t pongs_in(struct rperf *p)
{
	if (!p->o->lat_send)
		return uccl_sem_value(p->ep, p->conn);
	if (p->o->spin)
		reap(p);
	return p->lat_recvd;
}

/* Wait until the pongs reach v: spinning, or with uccl_wait (uccl_cq_wait
 * for send/recv). */
static void wait_pong(struct rperf *p, uint64_t v)
{
	if (p->o->spin) {
		uint64_t start = 0;

		for (uint32_t spins = 0; pongs_in(p) < v; spins++) {
			if ((spins & 4095) == 4095) {
				uint64_t t = bench_now_ns();

				if (!start)
					start = t;
				else if (t - start > OP_TIMEOUT_NS)
					fail("latency: no answer to ping %" PRIu64 " within %llu s", v,
					     OP_TIMEOUT_NS / NS_PER_S);
			}
		}
		return;
	}
	if (p->o->lat_send) {
		uint64_t t = bench_now_ns();

		while (p->lat_recvd < v) {
			cq_wait(p, 100);
			if (p->lat_recvd < v && bench_now_ns() - t > OP_TIMEOUT_NS)
				fail("latency: no answer to ping %" PRIu64 " within %llu s", v,
				     OP_TIMEOUT_NS / NS_PER_S);
		}
		return;
	}
	int r = uccl_wait(p->ep, p->conn, v, (int)(OP_TIMEOUT_NS / NS_PER_MS));

	if (r == -ETIMEDOUT)
		fail("latency: no answer to ping %" PRIu64 " within %llu s", v,
		     OP_TIMEOUT_NS / NS_PER_S);
	if (r < 0)
		api_fail("uccl_wait", r);
}

/* Ping-pong: put 64 B (the ping's number) at offset 0 of the server's region
 * and signal; the server puts the number back into our latency region and
 * signals. With --lat-op send, the ping is a 64 B message into the server's
 * posted receive and the pong one into ours, posted before the ping goes
 * (untimed, as the server posts its next one with its answer).
 * One-way = round trip / 2. */
static void latency(struct rperf *p, struct lat_result *res)
{
	bool by_send = p->o->lat_send;
	uint64_t n = p->o->lat_samples, base = by_send ? p->lat_recvd : uccl_sem_value(p->ep, p->conn);
	uint64_t *s = malloc(sizeof(*s) * n), first = 0, last = 0, bad = 0;
	volatile uint64_t *pong = uccl_mr_addr(p->lat);

	if (!s)
		fail("out of memory for %" PRIu64 " samples", n);
	fprintf(stderr, "latency 64 B %s ping-pong ... ", lat_op_name(p->o));
	if (by_send)
		POST(p, "uccl_recv (pong)",
		     uccl_recv(p->ep, p->conn, p->lat, 0, LAT_SIZE, TAG_PONG, 0, UD_LATRECV));
	for (uint64_t i = 1; i <= LAT_WARMUP + n; i++) {
		uint64_t off = OFF_PING + (i % LAT_SLOTS) * LAT_SIZE, t0, t1;

		memcpy(ctl_at(p, off), &i, sizeof(i));
		if (by_send) {
			t0 = bench_now_ns();
			POST(p, "uccl_send (ping)",
			     uccl_send(p->ep, p->conn, p->ctl, off, LAT_SIZE, TAG_PING, 0, UD_PING));
		} else if (p->o->lat_fused) {
			t0 = bench_now_ns();
			POST(p, "uccl_put (ping, with signal)",
			     uccl_put(p->ep, p->conn, p->ctl, off, p->rkey, 0, LAT_SIZE, UCCL_SQE_F_SIGNAL,
				      UD_PING));
		} else {
			t0 = bench_now_ns();
			POST(p, "uccl_put (ping)",
			     uccl_put(p->ep, p->conn, p->ctl, off, p->rkey, 0, LAT_SIZE, UCCL_F_MORE,
				      UD_PING));
			POST(p, "uccl_signal (ping)", uccl_signal(p->ep, p->conn, 0, UD_SIGNAL));
		}
		wait_pong(p, base + i);
		t1 = bench_now_ns();
		bad += *pong != i;
		if (by_send && i < LAT_WARMUP + n)      /* the next pong's, untimed */
			POST(p, "uccl_recv (pong)",
			     uccl_recv(p->ep, p->conn, p->lat, 0, LAT_SIZE, TAG_PONG, 0, UD_LATRECV));
		reap(p);
		if (i <= LAT_WARMUP)
			continue;
		if (!first)
			first = t0;
		last = t1;
		s[i - LAT_WARMUP - 1] = (t1 - t0) / 2;
	}
	qsort(s, n, sizeof(*s), bench_cmp_u64);
	res->samples = n;
	res->seconds = (double)(last - first) / 1e9;
	res->p50_us = bench_pct_us(s, n, 0.50);
	res->p99_us = bench_pct_us(s, n, 0.99);
	res->min_us = (double)s[0] / 1e3;
	res->max_us = (double)s[n - 1] / 1e3;
	res->bad_pongs = bad;
	free(s);
	fprintf(stderr, "p50 %.2f us (%" PRIu64 " round trips)\n", res->p50_us, n);
}

static void print_text(const struct rperf *p, const struct gp_result *g, int ng,
		       const struct lat_result *l)
{
	char a[32], b[32];

	printf("target %s: receive region %s", p->o->target,
	       units_size_str(a, sizeof(a), p->region_bytes));
	if (p->region_bytes < p->region_asked)
		printf(" (asked for %s)", units_size_str(b, sizeof(b), p->region_asked));
	printf(", puts of at most %s, window %s\n", units_size_str(a, sizeof(a), p->o->put_max),
	       units_size_str(b, sizeof(b), p->o->window));
	if (ng) {
		printf("%-10s  %10s  %10s  %16s  %9s  %s\n", "size", "Gbit/s", "messages", "bytes",
		       "seconds", "(puts/message, puts in flight)");
		for (int i = 0; i < ng; i++)
			printf("%-10s  %10.3f  %10" PRIu64 "  %16" PRIu64 "  %9.3f  (%" PRIu64 ", %" PRIu64
			       ")%s\n", units_size_str(a, sizeof(a), g[i].size), g[i].gbit_s, g[i].messages,
			       g[i].bytes, g[i].seconds, g[i].puts_per_msg, g[i].window_puts,
			       g[i].wrapped ? " wraps in the region" : "");
	}
	if (l)
		printf("latency 64 B %s ping-pong, %s: one-way p50 %.2f us, p99 %.2f us, "
		       "min %.2f, max %.2f (%" PRIu64 " round trips in %.3f s, after %u warm-up)\n",
		       lat_op_name(p->o), lat_wait_name(p->o, "spinning"), l->p50_us, l->p99_us, l->min_us,
		       l->max_us,
		       l->samples, l->seconds, LAT_WARMUP);
}

/* A JSON string: the target comes from the command line. */

static void print_json(const struct rperf *p, const struct gp_result *g, int ng,
		       const struct lat_result *l)
{
	const struct opts *o = p->o;

	printf("{\n  \"tool\": \"uccl_rperf\",\n  \"version\": ");
	bench_json_str(PACKAGE_VERSION);
	printf(",\n  \"library\": ");
	bench_json_str(uccl_version());
	printf(",\n  \"target\": ");
	bench_json_str(o->target);
	printf(",\n  \"seconds\": %g,\n  \"min_messages\": %u,\n  \"region_bytes\": %" PRIu64
	       ",\n  \"region_asked\": %" PRIu64 ",\n  \"put_max\": %" PRIu64 ",\n  \"window_bytes\": %"
	       PRIu64 ",\n  \"warmup_bytes\": %" PRIu64 ",\n  \"goodput\": [",
	       o->seconds, MIN_MESSAGES, p->region_bytes, p->region_asked, o->put_max, o->window,
	       p->warmup_bytes);
	for (int i = 0; i < ng; i++)
		printf("%s\n    {\"size\": %" PRIu64 ", \"gbit_per_s\": %.6g, \"messages\": %" PRIu64
		       ", \"bytes\": %" PRIu64 ", \"seconds\": %.6f, \"put_bytes\": %" PRIu64
		       ", \"puts_per_message\": %" PRIu64 ", \"window_puts\": %" PRIu64
		       ", \"wraps\": %s}", i ? "," : "", g[i].size, g[i].gbit_s, g[i].messages,
		       g[i].bytes, g[i].seconds, g[i].put_len, g[i].puts_per_msg, g[i].window_puts,
		       g[i].wrapped ? "true" : "false");
	printf("\n  ],\n  \"latency\": ");
	if (l)
		printf("{\"size\": %u, \"op\": \"%s\", \"wait\": \"%s\", \"warmup\": %u, \"samples\": %" PRIu64
		       ", \"seconds\": %.6f, \"one_way_p50_us\": %.3f, \"one_way_p99_us\": %.3f"
		       ", \"one_way_min_us\": %.3f, \"one_way_max_us\": %.3f}\n}\n",
		       LAT_SIZE, lat_op_name(o), lat_wait_name(o, "spin"), LAT_WARMUP, l->samples, l->seconds,
		       l->p50_us, l->p99_us, l->min_us, l->max_us);
	else
		printf("null\n}\n");
}

static int run_client(const struct opts *o)
{
	struct rperf pp = { .o = o }, *p = &pp;
	static struct gp_result g[MAX_SIZES];
	struct lat_result l;
	struct hello *h;
	struct ready rd;
	struct done *dn;
	struct bye bye;
	uint64_t max_size = 0, src_len;
	int r;

	g_role = "uccl_rperf";
	for (int i = 0; i < o->nsizes; i++)
		if (o->sizes[i] > max_size)
			max_size = o->sizes[i];
	attach(p, "uccl_rperf-client");
	/* sources: a window's worth of put slots (at least two), reused */
	src_len = o->window > 2 * o->put_max ? o->window : 2 * o->put_max;
	if (max_size && src_len > 2 * max_size)
		src_len = 2 * max_size;
	if (src_len < 2 * LAT_SIZE)
		src_len = 2 * LAT_SIZE;
	src_len = (src_len + 4095) & ~4095ull;
	r = data_region(p, src_len, &p->src);
	if (r < 0)
		api_fail(o->vmem ? "uccl_mem_reg (source region)" : "uccl_mem_alloc (source region)", r);
	memset(uccl_mr_addr(p->src), 0x5a, src_len);
	r = uccl_mem_alloc(p->ctx, 4096, &p->lat);
	if (r < 0)
		api_fail("uccl_mem_alloc (latency region)", r);
	r = uccl_connect(p->ep, o->target, CONNECT_MS, &p->conn);
	if (r < 0)
		api_fail("uccl_connect", r);

	h = ctl_at(p, OFF_HELLO);
	h->magic = MAGIC;
	h->flags = (o->spin ? HELLO_F_SPIN : 0) | (o->lat_send ? HELLO_F_SEND : 0) |
		   (o->lat_fused ? HELLO_F_FUSED : 0);
	h->region_want = max_size ? max_size : LAT_SIZE;
	h->lat_rkey = uccl_mr_key(p->lat);
	POST(p, "uccl_recv (ready)",
	     uccl_recv(p->ep, p->conn, p->ctl, OFF_READY, sizeof(rd), TAG_READY, 0, UD_READY));
	POST(p, "uccl_send (hello)",
	     uccl_send(p->ep, p->conn, p->ctl, OFF_HELLO, sizeof(*h), TAG_HELLO, 0, UD_HELLO));
	wait_ctl(p, UD_HELLO, CTL_TIMEOUT_MS, "sending the hello");
	wait_ctl(p, UD_READY, CTL_TIMEOUT_MS, "waiting for the server's region key");
	memcpy(&rd, ctl_at(p, OFF_READY), sizeof(rd));
	if (rd.magic != MAGIC)
		fail("the server's reply is not uccl_rperf's (magic %#x)", rd.magic);
	if (rd.err < 0)
		fail("the server could not allocate its receive region: %s", uccl_strerror(rd.err));
	p->rkey = rd.rkey;
	p->region_bytes = rd.region_bytes;
	p->region_asked = rd.region_asked;
	if (p->region_bytes < (max_size < o->put_max ? max_size : o->put_max) ||
	    p->region_bytes < LAT_SIZE)
		fail("the server's region (%" PRIu64 " bytes) is smaller than one put", p->region_bytes);
	if (p->region_bytes < max_size) {
		char a[32];

		note("the server's region is %s: messages larger than that wrap around in it",
		     units_size_str(a, sizeof(a), p->region_bytes));
	}

	if (o->nsizes) {
		/* one untimed pass over the receive region: first touches of its
		 * pages in the server's daemon are not what this measures */
		goodput(p, p->region_bytes < o->put_max ? p->region_bytes : o->put_max,
			(p->region_bytes + o->put_max - 1) / o->put_max, NULL);
		for (int i = 0; i < o->nsizes; i++) {
			uint64_t put_len = o->sizes[i] < o->put_max ? o->sizes[i] : o->put_max;

			/* one window of single-put messages untimed, so that the
			 * channel's window is open when the timing starts */
			goodput(p, put_len, o->window / put_len > 2 ? o->window / put_len : 2, NULL);
			goodput(p, o->sizes[i], 0, &g[i]);
		}
	}
	if (o->lat_samples)
		latency(p, &l);

	dn = ctl_at(p, OFF_DONE);
	memset(dn, 0, sizeof(*dn));
	dn->magic = MAGIC;
	dn->pings = o->lat_samples ? LAT_WARMUP + o->lat_samples : 0;
	POST(p, "uccl_recv (bye)",
	     uccl_recv(p->ep, p->conn, p->ctl, OFF_BYE, sizeof(bye), TAG_BYE, 0, UD_BYE));
	POST(p, "uccl_send (done)",
	     uccl_send(p->ep, p->conn, p->ctl, OFF_DONE, sizeof(*dn), TAG_DONE, 0, UD_DONE));
	wait_ctl(p, UD_DONE, CTL_TIMEOUT_MS, "sending done");
	wait_ctl(p, UD_BYE, CTL_TIMEOUT_MS, "waiting for the server's counts");
	memcpy(&bye, ctl_at(p, OFF_BYE), sizeof(bye));
	if (bye.magic != MAGIC)
		fail("the server's final message is not uccl_rperf's");
	if (bye.pongs != dn->pings)
		fail("the server answered %" PRIu64 " pings of %" PRIu64, bye.pongs, dn->pings);
	if (bye.bad_pings)
		fail("%" PRIu64 " pings arrived at the server without their payload (%s)",
		     bye.bad_pings, o->lat_send ? "a wrong message" : "put not visible before its signal");
	if (o->lat_samples && l.bad_pongs)
		fail("%" PRIu64 " pongs arrived without their payload (%s)", l.bad_pongs,
		     o->lat_send ? "a wrong message" : "put not visible before its signal");
	uccl_close(p->ep, p->conn);
	uccl_detach(p->ctx);
	g_ctx = NULL;

	if (o->json)
		print_json(p, g, o->nsizes, o->lat_samples ? &l : NULL);
	else
		print_text(p, g, o->nsizes, o->lat_samples ? &l : NULL);
	if (fflush(stdout) != 0 || ferror(stdout))
		fail("writing results: %s", strerror(errno));
	return 0;
}

/* ---- options ---- */

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end || v == 0 || v > MAX_SIZE >> shift)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_sizes(const char *arg, struct opts *o)
{
	char buf[512], *tok, *save;

	if (strlen(arg) >= sizeof(buf))
		return -1;
	strcpy(buf, arg);
	o->nsizes = 0;
	if (strcmp(arg, "none") == 0)
		return 0;              /* latency only */
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->nsizes == MAX_SIZES || parse_size(tok, &o->sizes[o->nsizes]) < 0)
			return -1;
		o->nsizes++;
	}
	return o->nsizes ? 0 : -1;
}

static int parse_seconds(const char *arg, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v > 0) || v > max)
		return -1;
	*out = v;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: uccl_rperf [OPTIONS] server NAME\n"
		"       uccl_rperf [OPTIONS] client HOST/NAME\n"
		"Measure goodput and latency between two hosts through their ucclsvcd.\n"
		"\n"
		"  -s, --socket PATH      control socket (default: $UCCL_SOCKET, else %s)\n"
		"client:\n"
		"  -z, --sizes LIST       sizes (default 64K,1M,16M,256M,1G; none: latency only)\n"
		"  -t, --seconds S        measuring time per size (default 2; at least %u messages)\n"
		"  -n, --lat-samples N    ping-pong samples after %u warm-up (default %u; 0: none)\n"
		"  -p, --put-max BYTES    largest single put (default 16M)\n"
		"  -w, --window BYTES     puts in flight, in bytes (default 32M; at least 2 puts)\n"
		"  -S, --spin             both sides busy-poll during the ping-pong\n"
		"  -l, --lat-op OP        ping-pong by put (put, then signal; the default), put-signal\n"
		"                         (a put that raises the semaphore) or send (send/recv)\n"
		"  -v, --vmem             data in this process's memory, uccl_mem_reg (either side)\n"
		"  -j, --json             print results as JSON\n"
		"server:\n"
		"  -T, --timeout S        for the client to connect and finish (default 600)\n"
		"\n"
		"  -h, --help             show this help\n"
		"  -V, --version          show the version\n",
		UCCL_DEFAULT_SOCKET, MIN_MESSAGES, LAT_WARMUP, DEF_LAT_SAMPLES);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "sizes", required_argument, NULL, 'z' },
		{ "seconds", required_argument, NULL, 't' },
		{ "lat-samples", required_argument, NULL, 'n' },
		{ "put-max", required_argument, NULL, 'p' },
		{ "window", required_argument, NULL, 'w' },
		{ "spin", no_argument, NULL, 'S' },
		{ "lat-op", required_argument, NULL, 'l' },
		{ "vmem", no_argument, NULL, 'v' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct opts o = {
		.seconds = 2, .lat_samples = DEF_LAT_SAMPLES, .put_max = DEF_PUT_MAX,
		.window = DEF_WINDOW, .timeout_s = 600,
	};
	int opt;

	parse_sizes("64K,1M,16M,256M,1G", &o);
	while ((opt = getopt_long(argc, argv, "s:z:t:n:p:w:Sl:vjT:hV", lopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			o.socket = optarg;
			break;
		case 'z':
			if (parse_sizes(optarg, &o) < 0) {
				fprintf(stderr, "uccl_rperf: --sizes: want up to %d sizes like 64K,1M,1G "
					"(1 B to 64G), not '%s'\n", MAX_SIZES, optarg);
				return 2;
			}
			break;
		case 't':
			if (parse_seconds(optarg, 3600, &o.seconds) < 0) {
				fprintf(stderr, "uccl_rperf: --seconds: want a number in (0, 3600], "
					"not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'n': {
			char *end;

			errno = 0;
			o.lat_samples = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || *optarg == '-' ||
			    o.lat_samples > MAX_LAT_SAMPLES) {
				fprintf(stderr, "uccl_rperf: --lat-samples: want 0 to %u, not '%s'\n",
					MAX_LAT_SAMPLES, optarg);
				return 2;
			}
			break;
		}
		case 'p':
			if (parse_size(optarg, &o.put_max) < 0 || o.put_max > GiB) {
				fprintf(stderr, "uccl_rperf: --put-max: want 1 B to 1G, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'w':
			if (parse_size(optarg, &o.window) < 0 || o.window > 16 * GiB) {
				fprintf(stderr, "uccl_rperf: --window: want 1 B to 16G, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'S':
			o.spin = true;
			break;
		case 'l':
			if (strcmp(optarg, "put") && strcmp(optarg, "put-signal") && strcmp(optarg, "send")) {
				fprintf(stderr, "uccl_rperf: --lat-op: want put, put-signal or send, not '%s'\n",
					optarg);
				return 2;
			}
			o.lat_send = !strcmp(optarg, "send");
			o.lat_fused = !strcmp(optarg, "put-signal");
			break;
		case 'v':
			o.vmem = true;
			break;
		case 'j':
			o.json = true;
			break;
		case 'T':
			if (parse_seconds(optarg, 86400, &o.timeout_s) < 0) {
				fprintf(stderr, "uccl_rperf: --timeout: want a number in (0, 86400], "
					"not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("uccl_rperf %s (libucclclient %s)\n", PACKAGE_VERSION, uccl_version());
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 2 != argc) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[optind], "server") == 0)
		return run_server(&o, argv[optind + 1]);
	if (strcmp(argv[optind], "client") != 0) {
		usage(stderr);
		return 2;
	}
	o.target = argv[optind + 1];
	if (!strchr(o.target, '/')) {
		fprintf(stderr, "uccl_rperf: client: want HOST/NAME (an endpoint on another "
			"daemon), not '%s'\n", o.target);
		return 2;
	}
	if (o.lat_samples == 0 && o.nsizes == 0) {
		fprintf(stderr, "uccl_rperf: nothing to measure\n");
		return 2;
	}
	return run_client(&o);
}
