/* SPDX-License-Identifier: MIT */
/*
 * uccl_perf: measures what an application sees through libucclclient on one
 * host: descriptor rate through a ring (NOPs), put round-trip latency,
 * put+signal ping-pong latency between two threads, and put bandwidth next
 * to memcpy bandwidth over the same memory. One process, two endpoints
 * connected to each other through the local daemon. It reports what it
 * measured and how much (samples, seconds); it never fills in a figure.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>                    /* isfinite: a macro, no libm */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uccl/uccl.h>

#include "bench/benchutil.h"

#define SQ_ENTRIES        4096u
#define CQ_ENTRIES        4096u
#define POLL_MAX          256
#define CONNECT_MS        5000
#define OP_TIMEOUT_NS     (10 * NS_PER_S)   /* one operation this late is a hang */
#define NS_PER_S          1000000000ull

#define LAT_WARMUP        1000u
#define LAT_MIN_SAMPLES   10000u
#define LAT_MAX_SAMPLES   (1u << 22)        /* 32 MiB of samples at most */

#define BW_CHUNK          (1u << 20)
#define BW_SLOTS          8u                /* 8 x 1 MiB in flight, 8 MiB regions */
#define REGION_LEN        (BW_CHUNK * BW_SLOTS)

#define MAX_RESULTS       64

enum {
	CASE_RING = 1 << 0,
	CASE_LAT  = 1 << 1,
	CASE_BW   = 1 << 2,
	CASE_IDLE = 1 << 3,
};

struct result {
	const char *name;                /* case: ring, lat, pingpong, bw */
	char param[24];                  /* size or batch, as printed */
	const char *metric;
	const char *unit;
	double value;
	uint64_t count;                  /* what value was computed from */
	const char *count_what;          /* "completions", "samples", ... */
	double elapsed_s;
};

struct perf {
	struct uccl_ctx *ctx;
	struct uccl_ep *a, *b;
	uint32_t conn_a;                 /* A's end of the A<->B connection */
	uint32_t conn_b;                 /* B's end */
	struct uccl_mr *mr_a, *mr_b;
	uint64_t ns;                     /* measuring time per case */
	struct result res[MAX_RESULTS];
	int nres;
};

static struct perf *g_perf;          /* for error messages from threads */
static bool g_progress_open;         /* a progress line awaits its "done" */

/* A failed call ends the run: a benchmark that carries on after an error
 * would report a figure for something other than what it names. */
static void __attribute__((noreturn)) api_fail(const char *fn, int err)
{
	const char *last = g_perf && g_perf->ctx ? uccl_last_error(g_perf->ctx) : "";

	fprintf(stderr, "%succl_perf: %s: %s", g_progress_open ? "\n" : "", fn,
		uccl_strerror(err));
	if (last && *last)
		fprintf(stderr, " (daemon: %s)", last);
	fputc('\n', stderr);
	exit(1);
}

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	fputs(g_progress_open ? "\nuccl_perf: " : "uccl_perf: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void progress(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
	g_progress_open = fmt[strlen(fmt) - 1] != '\n';
}

static struct result *add_result(struct perf *p, const char *name, const char *param,
				 const char *metric, const char *unit, double value,
				 uint64_t count, const char *count_what, double elapsed_s)
{
	struct result *r;

	if (p->nres == MAX_RESULTS)
		fail("internal: more than %d results", MAX_RESULTS);
	r = &p->res[p->nres++];
	r->name = name;
	snprintf(r->param, sizeof(r->param), "%s", param);
	r->metric = metric;
	r->unit = unit;
	r->value = value;
	r->count = count;
	r->count_what = count_what;
	r->elapsed_s = elapsed_s;
	return r;
}

/* Check a batch of completions; every operation here is expected to succeed. */
static void check_cqes(const struct uccl_cqe *c, int n)
{
	static const char *const fn[] = {
		[UCCL_OP_NOP] = "uccl_nop", [UCCL_OP_PUT] = "uccl_put",
		[UCCL_OP_SIGNAL] = "uccl_signal",
	};

	for (int i = 0; i < n; i++) {
		if (c[i].res < 0) {
			const char *f = c[i].opcode < sizeof(fn) / sizeof(fn[0]) && fn[c[i].opcode] ?
					fn[c[i].opcode] : "completion";
			api_fail(f, c[i].res);
		}
	}
}

/* Busy-poll ep until the completion of user_data arrives (the caller has
 * exactly one operation outstanding). */
static void wait_one(struct uccl_ep *ep, uint64_t user_data)
{
	struct uccl_cqe c;
	uint64_t start = 0;

	for (uint32_t spins = 0;; spins++) {
		int n = uccl_poll(ep, &c, 1);

		if (n < 0)
			api_fail("uccl_poll", n);
		if (n == 1) {
			check_cqes(&c, 1);
			if (c.user_data != user_data)
				fail("completion for %" PRIu64 " while waiting for %" PRIu64,
				     c.user_data, user_data);
			return;
		}
		/* reading the clock on every spin would slow the poll being timed */
		if ((spins & 4095) == 4095) {
			uint64_t t = bench_now_ns();

			if (!start)
				start = t;
			else if (t - start > OP_TIMEOUT_NS)
				fail("no completion within %llu s (daemon stuck?)",
				     OP_TIMEOUT_NS / NS_PER_S);
		}
	}
}

/* Reap whatever completions ep has, without waiting; returns how many. */
static uint64_t reap(struct uccl_ep *ep)
{
	struct uccl_cqe c[POLL_MAX];
	int n = uccl_poll(ep, c, POLL_MAX);

	if (n < 0)
		api_fail("uccl_poll", n);
	check_cqes(c, n);
	return (uint64_t)n;
}

/* Wait until every one of `outstanding` completions is reaped. */
static void drain(struct uccl_ep *ep, uint64_t outstanding)
{
	struct uccl_cqe c[POLL_MAX];
	uint64_t deadline = bench_now_ns() + OP_TIMEOUT_NS;

	while (outstanding > 0) {
		int n = uccl_cq_wait(ep, c, POLL_MAX, 1000);

		if (n < 0 && n != -ETIMEDOUT)
			api_fail("uccl_cq_wait", n);
		if (n > 0) {
			check_cqes(c, n);
			outstanding -= (uint64_t)n < outstanding ? (uint64_t)n : outstanding;
		}
		if (outstanding > 0 && bench_now_ns() > deadline)
			fail("%" PRIu64 " completions still missing after %llu s", outstanding,
			     OP_TIMEOUT_NS / NS_PER_S);
	}
}

/* 1. Descriptors per second through A's ring: NOPs complete in the engine
 * without touching a connection, so this is the ring and the engine's loop. */
static void case_ring(struct perf *p, unsigned batch)
{
	const uint64_t limit = SQ_ENTRIES / 2;
	struct uccl_cqe c[POLL_MAX];
	uint64_t submitted = 0, completed = 0, t0, t1, deadline, stop_at = 0;
	char param[24];
	bool stop = false;
	unsigned pass = 0;

	snprintf(param, sizeof(param), "batch %u", batch);
	progress("ring %s ... ", param);
	t0 = bench_now_ns();
	deadline = t0 + p->ns;
	while (!stop || completed < submitted) {
		int n;

		/* the clock costs as much as a descriptor: look every 64 passes */
		if (!stop && (++pass & 63) == 0 && bench_now_ns() >= deadline) {
			stop = true;
			stop_at = bench_now_ns();
		}
		while (!stop && submitted - completed + batch <= limit) {
			unsigned i;
			int r = 0;

			for (i = 0; i < batch; i++) {
				r = uccl_nop(p->a, i + 1 < batch ? UCCL_F_MORE : 0, submitted + i);
				if (r < 0)
					break;
			}
			if (r == -EAGAIN) {
				/* ring full: publish what was staged, then reap */
				r = uccl_submit(p->a);
				if (r < 0)
					api_fail("uccl_submit", r);
				submitted += i;
				break;
			}
			if (r < 0)
				api_fail("uccl_nop", r);
			submitted += batch;
		}
		n = uccl_poll(p->a, c, POLL_MAX);
		if (n < 0)
			api_fail("uccl_poll", n);
		check_cqes(c, n);
		completed += (uint64_t)n;
		if (stop && n == 0 && bench_now_ns() - stop_at > OP_TIMEOUT_NS)
			fail("ring: %" PRIu64 " NOPs not completed after %llu s",
			     submitted - completed, OP_TIMEOUT_NS / NS_PER_S);
	}
	t1 = bench_now_ns();
	add_result(p, "ring", param, "NOP rate", "Mdesc/s",
		   (double)completed / ((double)(t1 - t0) / 1e9) / 1e6, completed, "completions",
		   (double)(t1 - t0) / 1e9);
	progress("done\n");
}

/* 2a. Put round trip from B into A's region: submit, busy-poll B's CQ until
 * the completion, one operation at a time. */
static void case_lat(struct perf *p, uint64_t size, const char *param)
{
	uint64_t *s = malloc(sizeof(*s) * LAT_MAX_SAMPLES);
	uint64_t key_a = uccl_mr_key(p->mr_a), deadline = UINT64_MAX, t0, t1, first = 0;
	size_t n = 0;

	if (!s)
		fail("out of memory for %u samples", LAT_MAX_SAMPLES);
	progress("lat put %s ... ", param);
	for (uint64_t i = 0;; i++) {
		int r;

		t0 = bench_now_ns();
		r = uccl_put(p->b, p->conn_b, p->mr_b, 0, key_a, 0, size, 0, i);
		if (r < 0)
			api_fail("uccl_put", r);
		wait_one(p->b, i);
		t1 = bench_now_ns();
		if (i < LAT_WARMUP)
			continue;
		if (n == 0) {
			first = t0;
			deadline = t0 + p->ns;
		}
		s[n++] = t1 - t0;
		if (n == LAT_MAX_SAMPLES || (n >= LAT_MIN_SAMPLES && t1 >= deadline))
			break;
	}
	qsort(s, n, sizeof(*s), bench_cmp_u64);
	add_result(p, "lat", param, "put RTT p50", "us", bench_pct_us(s, n, 0.50), n, "samples",
		   (double)(t1 - first) / 1e9);
	add_result(p, "lat", param, "put RTT p99", "us", bench_pct_us(s, n, 0.99), n, "samples",
		   (double)(t1 - first) / 1e9);
	add_result(p, "lat", param, "put RTT p99.9", "us", bench_pct_us(s, n, 0.999), n, "samples",
		   (double)(t1 - first) / 1e9);
	add_result(p, "lat", param, "put RTT max", "us", (double)s[n - 1] / 1e3, n, "samples",
		   (double)(t1 - first) / 1e9);
	free(s);
	progress("done (%zu samples)\n", n);
}

/* 2b. Ping-pong: thread B puts 8 B into A and signals; thread A waits for the
 * semaphore, puts 8 B back and signals; B waits for that. One-way = RTT / 2.
 * The waits are uccl_wait (spin, then sleep on the eventfd), the way an
 * application would wait; on a machine with fewer cores than busy threads
 * the sleeping is what keeps the engine running. */
struct pingpong {
	struct perf *p;
	uint64_t base_a, base_b;         /* semaphore values before the first ping */
	uint64_t *samples;
	size_t n;
	uint64_t first, last;
	atomic_bool stop;
	uint64_t out_a, out_b;           /* completions not reaped yet, per side */
};

static void *pong_thread(void *arg)
{
	struct pingpong *pp = arg;
	struct perf *p = pp->p;
	uint64_t key_b = uccl_mr_key(p->mr_b);

	for (uint64_t i = 1;; i++) {
		uint64_t waited = 0;
		int r;

		/* short waits, so that the end of the run (no more pings) is seen */
		while ((r = uccl_wait(p->a, p->conn_a, pp->base_a + i, 100)) == -ETIMEDOUT) {
			if (atomic_load(&pp->stop))
				return NULL;
			waited += 100;
			if (waited * 1000000ull > OP_TIMEOUT_NS)
				fail("pingpong: no ping %" PRIu64 " within %llu s", i,
				     OP_TIMEOUT_NS / NS_PER_S);
		}
		if (r < 0)
			api_fail("uccl_wait", r);
		r = uccl_put(p->a, p->conn_a, p->mr_a, 64, key_b, 64, 8, UCCL_F_MORE, i);
		if (r < 0)
			api_fail("uccl_put", r);
		r = uccl_signal(p->a, p->conn_a, 0, i);
		if (r < 0)
			api_fail("uccl_signal", r);
		pp->out_a += 2;
		pp->out_a -= reap(p->a);
		/* completions that lag far behind must not overflow the CQ */
		if (pp->out_a > CQ_ENTRIES / 2) {
			drain(p->a, pp->out_a);
			pp->out_a = 0;
		}
	}
}

static void *ping_thread(void *arg)
{
	struct pingpong *pp = arg;
	struct perf *p = pp->p;
	uint64_t key_a = uccl_mr_key(p->mr_a), deadline = UINT64_MAX;

	for (uint64_t i = 1;; i++) {
		uint64_t t0 = bench_now_ns(), t1;
		int r;

		r = uccl_put(p->b, p->conn_b, p->mr_b, 0, key_a, 0, 8, UCCL_F_MORE, i);
		if (r < 0)
			api_fail("uccl_put", r);
		r = uccl_signal(p->b, p->conn_b, 0, i);
		if (r < 0)
			api_fail("uccl_signal", r);
		r = uccl_wait(p->b, p->conn_b, pp->base_b + i, (int)(OP_TIMEOUT_NS / 1000000));
		if (r < 0)
			api_fail("uccl_wait", r);
		t1 = bench_now_ns();
		pp->out_b += 2;
		pp->out_b -= reap(p->b);
		if (pp->out_b > CQ_ENTRIES / 2) {
			drain(p->b, pp->out_b);
			pp->out_b = 0;
		}
		if (i <= LAT_WARMUP)
			continue;
		if (pp->n == 0) {
			pp->first = t0;
			deadline = t0 + p->ns;
		}
		pp->samples[pp->n++] = t1 - t0;
		pp->last = t1;
		if (pp->n == LAT_MAX_SAMPLES || (pp->n >= LAT_MIN_SAMPLES && t1 >= deadline))
			break;
	}
	atomic_store(&pp->stop, true);
	return NULL;
}

static void case_pingpong(struct perf *p)
{
	struct pingpong pp = { .p = p };
	pthread_t ta, tb;
	double el;
	int r;

	pp.samples = malloc(sizeof(*pp.samples) * LAT_MAX_SAMPLES);
	if (!pp.samples)
		fail("out of memory for %u samples", LAT_MAX_SAMPLES);
	pp.base_a = uccl_sem_value(p->a, p->conn_a);
	pp.base_b = uccl_sem_value(p->b, p->conn_b);
	atomic_init(&pp.stop, false);
	progress("pingpong put+signal 8 B ... ");
	r = pthread_create(&ta, NULL, pong_thread, &pp);
	if (r)
		fail("pthread_create: %s", strerror(r));
	r = pthread_create(&tb, NULL, ping_thread, &pp);
	if (r)
		fail("pthread_create: %s", strerror(r));
	pthread_join(tb, NULL);
	pthread_join(ta, NULL);
	/* leave both CQs empty for the next case */
	drain(p->a, pp.out_a);
	drain(p->b, pp.out_b);
	for (size_t i = 0; i < pp.n; i++)
		pp.samples[i] /= 2;
	qsort(pp.samples, pp.n, sizeof(*pp.samples), bench_cmp_u64);
	el = (double)(pp.last - pp.first) / 1e9;
	add_result(p, "pingpong", "8 B", "put+signal one-way p50", "us",
		   bench_pct_us(pp.samples, pp.n, 0.50), pp.n, "round trips", el);
	add_result(p, "pingpong", "8 B", "put+signal one-way p99", "us",
		   bench_pct_us(pp.samples, pp.n, 0.99), pp.n, "round trips", el);
	free(pp.samples);
	progress("done (%zu round trips)\n", pp.n);
}

/* 3. Put bandwidth: 8 puts of 1 MiB in flight from B into A's 8 MiB region,
 * then memcpy over the same two regions as the reference. */
static double case_bw_put(struct perf *p)
{
	uint64_t key_a = uccl_mr_key(p->mr_a);
	struct uccl_cqe c[BW_SLOTS];
	uint64_t submitted = 0, completed = 0, t0, t1, deadline, stop_at = 0;
	bool stop = false, warm = true;
	double el, gbs;

	progress("bw put 1 MiB ... ");
	/* one pass over the region first: the daemon's first touch of each
	 * page is not what this measures */
	t0 = bench_now_ns();
	deadline = t0;
	for (;;) {
		int n;

		if (!stop && (warm ? submitted >= BW_SLOTS : bench_now_ns() >= deadline)) {
			stop = true;
			stop_at = bench_now_ns();
		}
		while (!stop && submitted - completed < BW_SLOTS) {
			uint64_t off = (submitted % BW_SLOTS) * BW_CHUNK;
			int r = uccl_put(p->b, p->conn_b, p->mr_b, off, key_a, off, BW_CHUNK, 0,
					 submitted);

			if (r == -EAGAIN)
				break;
			if (r < 0)
				api_fail("uccl_put", r);
			submitted++;
			if (warm && submitted >= BW_SLOTS)
				break;
		}
		n = uccl_poll(p->b, c, BW_SLOTS);
		if (n < 0)
			api_fail("uccl_poll", n);
		check_cqes(c, n);
		completed += (uint64_t)n;
		if (stop && completed == submitted) {
			if (!warm)
				break;
			/* warm-up done: start the timed run */
			warm = stop = false;
			submitted = completed = 0;
			t0 = bench_now_ns();
			deadline = t0 + p->ns;
			continue;
		}
		if (stop && n == 0 && bench_now_ns() - stop_at > OP_TIMEOUT_NS)
			fail("bw: %" PRIu64 " puts not completed after %llu s",
			     submitted - completed, OP_TIMEOUT_NS / NS_PER_S);
	}
	t1 = bench_now_ns();
	el = (double)(t1 - t0) / 1e9;
	gbs = (double)completed * BW_CHUNK / el / 1e9;
	add_result(p, "bw", "1 MiB", "put bandwidth", "GB/s", gbs, completed, "puts", el);
	progress("done\n");
	return gbs;
}

static double case_bw_memcpy(struct perf *p)
{
	char *dst = uccl_mr_addr(p->mr_a), *src = uccl_mr_addr(p->mr_b);
	uint64_t copies = 0, t0, t1, deadline;
	double el, gbs;

	progress("bw memcpy 1 MiB ... ");
	memcpy(dst, src, REGION_LEN);            /* warm-up pass */
	t0 = bench_now_ns();
	deadline = t0 + p->ns;
	do {
		uint64_t off = (copies % BW_SLOTS) * BW_CHUNK;

		memcpy(dst + off, src + off, BW_CHUNK);
		/* the copies must happen even though nothing here reads them */
		__asm__ __volatile__("" ::: "memory");
		copies++;
		t1 = bench_now_ns();
	} while (t1 < deadline);
	el = (double)(t1 - t0) / 1e9;
	gbs = (double)copies * BW_CHUNK / el / 1e9;
	add_result(p, "bw", "1 MiB", "memcpy bandwidth (reference)", "GB/s", gbs, copies,
		   "copies", el);
	progress("done\n");
	return gbs;
}

static void case_bw(struct perf *p)
{
	double put = case_bw_put(p);
	double mc = case_bw_memcpy(p);

	/* no count: it is computed from the two rows before it */
	add_result(p, "bw", "1 MiB", "ratio put/memcpy", "", put / mc, 0, "", 0);
}

/* Attach, two endpoints connected to each other, two regions. */
static void setup(struct perf *p, const char *socket, bool regions)
{
	struct uccl_ep_attr attr = { .sq_entries = SQ_ENTRIES, .cq_entries = CQ_ENTRIES };
	char name[64];
	int r;

	r = uccl_attach(socket, "uccl_perf", &p->ctx);
	if (r < 0)
		fail("uccl_attach: %s (socket %s)", uccl_strerror(r),
		     socket ? socket : getenv("UCCL_SOCKET") ? getenv("UCCL_SOCKET") :
		     UCCL_DEFAULT_SOCKET);
	r = uccl_ep_create(p->ctx, &attr, &p->a);
	if (r < 0)
		api_fail("uccl_ep_create", r);
	r = uccl_ep_create(p->ctx, &attr, &p->b);
	if (r < 0)
		api_fail("uccl_ep_create", r);
	snprintf(name, sizeof(name), "uccl-perf-%ld", (long)getpid());
	r = uccl_listen(p->a, name);
	if (r < 0)
		api_fail("uccl_listen", r);
	/* connect returns once the daemon queued it, so one thread can do both */
	r = uccl_connect(p->b, name, CONNECT_MS, &p->conn_b);
	if (r < 0)
		api_fail("uccl_connect", r);
	r = uccl_accept(p->a, CONNECT_MS, &p->conn_a);
	if (r < 0)
		api_fail("uccl_accept", r);
	if (!regions)
		return;
	r = uccl_mem_alloc(p->ctx, REGION_LEN, &p->mr_a);
	if (r < 0)
		api_fail("uccl_mem_alloc", r);
	r = uccl_mem_alloc(p->ctx, REGION_LEN, &p->mr_b);
	if (r < 0)
		api_fail("uccl_mem_alloc", r);
	/* fault the pages in on this side before anything is timed */
	memset(uccl_mr_addr(p->mr_a), 0, REGION_LEN);
	memset(uccl_mr_addr(p->mr_b), 0x5a, REGION_LEN);
}

static void teardown(struct perf *p)
{
	int r;

	if ((r = uccl_mem_free(p->mr_a)) < 0 || (r = uccl_mem_free(p->mr_b)) < 0)
		api_fail("uccl_mem_free", r);
	if ((r = uccl_ep_destroy(p->a)) < 0 || (r = uccl_ep_destroy(p->b)) < 0)
		api_fail("uccl_ep_destroy", r);
	uccl_detach(p->ctx);
	p->ctx = NULL;
}

static void idle(struct perf *p, double seconds)
{
	struct timespec ts = { .tv_sec = (time_t)seconds };

	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);

	progress("idle: 2 endpoints, 1 connection, sleeping %.1f s\n", seconds);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void print_text(const struct perf *p)
{
	int wc = 4, wp = 10, wm = 6;

	for (int i = 0; i < p->nres; i++) {
		const struct result *r = &p->res[i];
		int l;

		if ((l = (int)strlen(r->name)) > wc)
			wc = l;
		if ((l = (int)strlen(r->param)) > wp)
			wp = l;
		if ((l = (int)strlen(r->metric)) > wm)
			wm = l;
	}
	printf("%-*s  %-*s  %-*s  %12s  %-7s  %s\n", wc, "case", wp, "size/batch", wm, "metric",
	       "value", "unit", "measured over");
	for (int i = 0; i < p->nres; i++) {
		const struct result *r = &p->res[i];

		printf("%-*s  %-*s  %-*s  %12.3f  %-7s  ", wc, r->name, wp, r->param, wm, r->metric,
		       r->value, r->unit);
		if (r->count_what[0])
			printf("%" PRIu64 " %s in %.3f s\n", r->count, r->count_what, r->elapsed_s);
		else
			printf("the two rows above\n");
	}
}

/* A JSON string. Only the library's version string comes from outside this
 * file; it is escaped all the same, so the output always parses. */

static void print_json(const struct perf *p, double seconds)
{
	printf("{\n  \"tool\": \"uccl_perf\",\n  \"version\": ");
	bench_json_str(PACKAGE_VERSION);
	printf(",\n  \"library\": ");
	bench_json_str(uccl_version());
	printf(",\n  \"seconds\": %g,\n  \"results\": [", seconds);
	for (int i = 0; i < p->nres; i++) {
		const struct result *r = &p->res[i];

		/* the rest are this file's literals: nothing to escape */
		printf("%s\n    {\"case\": \"%s\", \"param\": \"%s\", \"metric\": \"%s\", "
		       "\"unit\": \"%s\", ", i ? "," : "", r->name, r->param, r->metric, r->unit);
		if (isfinite(r->value))
			printf("\"value\": %.6g", r->value);
		else
			printf("\"value\": null");
		if (r->count_what[0])
			printf(", \"count\": %" PRIu64 ", \"count_of\": \"%s\", "
			       "\"elapsed_s\": %.6f", r->count, r->count_what, r->elapsed_s);
		putchar('}');
	}
	printf("\n  ]\n}\n");
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: uccl_perf [--socket PATH] [--seconds S] [--json] [--case CASE]\n"
		"Measure libucclclient through a running ucclsvcd.\n"
		"\n"
		"  -s, --socket PATH  control socket (default: $UCCL_SOCKET, else %s)\n"
		"  -t, --seconds S    measuring time per case (default 2)\n"
		"  -j, --json         print results as JSON\n"
		"  -c, --case CASE    all (default), ring, lat, bw; or idle: set up\n"
		"                     endpoints, sleep S seconds, measure nothing\n"
		"  -h, --help         show this help\n"
		"  -V, --version      show the version\n",
		UCCL_DEFAULT_SOCKET);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "case", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct perf perf;         /* static: the result table is not small */
	struct perf *p = &perf;
	const char *socket = NULL;
	double seconds = 2;
	unsigned cases = CASE_RING | CASE_LAT | CASE_BW;
	bool json = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "s:t:jc:hV", lopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			socket = optarg;
			break;
		case 't': {
			char *end;

			errno = 0;
			seconds = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(seconds > 0) || seconds > 3600) {
				fprintf(stderr, "uccl_perf: --seconds: want a number in (0, 3600], "
					"got '%s'\n", optarg);
				return 2;
			}
			break;
		}
		case 'j':
			json = true;
			break;
		case 'c':
			if (strcmp(optarg, "all") == 0)
				cases = CASE_RING | CASE_LAT | CASE_BW;
			else if (strcmp(optarg, "ring") == 0)
				cases = CASE_RING;
			else if (strcmp(optarg, "lat") == 0)
				cases = CASE_LAT;
			else if (strcmp(optarg, "bw") == 0)
				cases = CASE_BW;
			else if (strcmp(optarg, "idle") == 0)
				cases = CASE_IDLE;
			else {
				fprintf(stderr, "uccl_perf: --case: all, ring, lat, bw or idle, "
					"not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("uccl_perf %s (libucclclient %s)\n", PACKAGE_VERSION, uccl_version());
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uccl_perf: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}

	g_perf = p;
	p->ns = (uint64_t)(seconds * 1e9);
	setup(p, socket, !(cases & CASE_IDLE));
	if (cases & CASE_IDLE) {
		idle(p, seconds);
		teardown(p);
		return 0;
	}
	if (cases & CASE_RING) {
		case_ring(p, 1);
		case_ring(p, 32);
	}
	if (cases & CASE_LAT) {
		case_lat(p, 8, "8 B");
		case_lat(p, 64, "64 B");
		case_lat(p, 4096, "4 KiB");
		case_pingpong(p);
	}
	if (cases & CASE_BW)
		case_bw(p);
	teardown(p);

	if (json)
		print_json(p, seconds);
	else
		print_text(p);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "uccl_perf: writing results: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
