/* SPDX-License-Identifier: MIT */
/*
 * uccl_xfer: moves a stream of bytes from one application to another through
 * ucclsvcd and checks every byte on arrival. The receiver offers a ring of
 * slots in its memory; the sender puts each chunk into the next slot and
 * signals; the receiver verifies the chunk and signals the slot back. This is
 * the flow control an application builds on put/signal/wait (MSCCL++ style).
 * With --streams K the bytes are split over K such streams, each its own
 * process and endpoint pair, stream i on engine thread i of both daemons
 * (UCCL_EP_THREAD): how an application spreads one transfer over cores.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <uccl/uccl.h>

#include "client/units.h"

#define TIMEOUT_MS 10000

struct hello {                 /* sender -> receiver, tag 1 */
	uint64_t total;
	uint64_t slot_size;
	uint64_t slots;
};
struct ready {                 /* receiver -> sender, tag 2 */
	uint64_t rkey;
};
struct verdict {               /* receiver -> sender, tag 3 */
	uint64_t chunks_ok;
	uint64_t chunks_bad;
	uint64_t bytes;
};

#define MAX_STREAMS 16

struct opts {
	const char *sock;
	const char *name;
	uint64_t total;
	uint64_t slot_size;
	uint64_t slots;
	bool json;
	bool quiet;
	bool vmem;                  /* data buffers: uccl_mem_reg, not uccl_mem_alloc */
	uint32_t streams;           /* 0: one, with no thread asked for */
	uint32_t stream;            /* which one this process runs */
	char stream_name[160];      /* NAME.i */
};

/* What a sending stream measured (a child's, through a pipe). */
struct result {
	uint64_t bytes, chunks, chunks_ok, chunks_bad, failed, ops;
	double t0, t1;              /* CLOCK_MONOTONIC: the transfer's span */
	double p50, p99;            /* 64 B put round trip, us; 0: not measured */
	int32_t thread;             /* engine thread of its endpoint */
	int32_t ok;
	int32_t first_err;          /* the first failed completion's res; 0: none */
	uint32_t slot;              /* which stream */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The stream this process runs (--streams), for messages; -1: none. */
static int this_stream = -1;

static void die(const char *what, int r, struct uccl_ctx *ctx)
{
	char who[32] = "";

	if (this_stream >= 0)
		snprintf(who, sizeof(who), "stream %d: ", this_stream);
	/* without a context, uccl_last_error(NULL) is why uccl_attach failed */
	fprintf(stderr, "uccl_xfer: %s%s: %s%s%s\n", who, what, uccl_strerror(r),
		*uccl_last_error(ctx) ? ": " : "", uccl_last_error(ctx));
	exit(1);
}

/* WHAT says what failed in the user's terms, not the call's C text */
#define TRY(ctx, what, call) do { int r_ = (call); if (r_ < 0) die(what, r_, ctx); } while (0)

/* The content of chunk i: 64-bit words derived from (i, word index), so a
 * misplaced, stale or torn chunk fails the check. A length that is not a
 * multiple of 8 (the last chunk of an odd --bytes) ends with the first
 * bytes of the next word: every byte is filled and checked. */
static inline uint64_t word(uint64_t chunk, uint64_t w)
{
	uint64_t x = chunk * 0x9e3779b97f4a7c15ull + w;

	x ^= x >> 31;
	return x * 0xbf58476d1ce4e5b9ull;
}

static void fill_chunk(uint64_t *p, uint64_t chunk, uint64_t len)
{
	uint64_t w, last;

	for (w = 0; w < len / 8; w++)
		p[w] = word(chunk, w);
	last = word(chunk, w);
	memcpy(p + w, &last, len % 8);
}

static bool check_chunk(const uint64_t *p, uint64_t chunk, uint64_t len)
{
	uint64_t bad = 0, w, last;

	for (w = 0; w < len / 8; w++)
		bad |= p[w] ^ word(chunk, w);
	last = word(chunk, w);
	return bad == 0 && memcmp(p + w, &last, len % 8) == 0;
}

/* Completions are reaped wherever this program waits (for a slot, for a
 * chunk, for its own ops). Those reaped with a user_data below 64 are
 * noted here, so that wait_ud() does not wait for one that came early:
 * the receiver's verdict can arrive while the sender still polls for its
 * puts' completions. */
static uint64_t reaped;

/* Operations posted whose completion was not reaped yet: each one posted
 * (POST) completes exactly once, and every completion passes note_reaped. */
static uint64_t inflight;

/* The first failed completion counted (its res), for the summary: a count
 * of failures alone does not say why. */
static int first_err;

static void note_failed(const struct uccl_cqe *c, uint64_t *failed)
{
	if (c->res >= 0)
		return;
	if (!*failed)
		first_err = c->res;
	++*failed;
}

static void note_reaped(const struct uccl_cqe *c, int n)
{
	inflight -= (uint64_t)n;
	for (int i = 0; i < n; i++)
		if (c[i].user_data < 64)
			reaped |= 1ull << c[i].user_data;
}

/* Completions as they come (waiting up to wait_ms for the first), the
 * failed ones counted into *failed. */
static void reap(struct uccl_ep *ep, struct uccl_ctx *ctx, uint64_t *failed, int wait_ms)
{
	struct uccl_cqe c[64];
	int n = wait_ms ? uccl_cq_wait(ep, c, 64, wait_ms) : uccl_poll(ep, c, 64);

	if (n == -ETIMEDOUT)
		n = 0;                 /* none in wait_ms */
	if (n < 0)
		die("taking completions", n, ctx);
	for (int k = 0; k < n; k++)
		note_failed(&c[k], failed);
	note_reaped(c, n);
}

/* Post one operation (WHAT names it if it fails). While the ring refuses
 * it (-EAGAIN: full, or its completions unread), publish what is staged and
 * take completions (failures counted into *failed) for up to TIMEOUT_MS;
 * only the refused call is tried again, as nothing refused is queued. */
#define POST(ctx, ep, failed, what, call) do {                                  \
	double u_ = 0;         /* the clock only once refused */                \
	int r_;                                                                 \
	while ((r_ = (call)) == -EAGAIN) {                                      \
		if (u_ == 0)                                                    \
			u_ = now_s() + TIMEOUT_MS / 1000.0;                     \
		else if (now_s() >= u_)                                         \
			break;                                                  \
		uccl_submit(ep);                                                \
		reap(ep, ctx, failed, 10);                                      \
	}                                                                       \
	if (r_ < 0)                                                             \
		die(what, r_, ctx);                                             \
	inflight++;                                                             \
} while (0)

/* Take the completions of everything posted (failures into *failed), so
 * that the last messages find the rings empty: a ring of 16 can be full of
 * unread completions when a transfer ends. */
static void drain(struct uccl_ep *ep, struct uccl_ctx *ctx, uint64_t *failed)
{
	double until = now_s() + TIMEOUT_MS / 1000.0;

	while (inflight) {
		if (now_s() > until)
			die("taking the last completions", -ETIMEDOUT, ctx);
		reap(ep, ctx, failed, 100);
	}
}

/* Wait for the completion with user_data ud (below 64), unless it was
 * reaped already; fail on an error completion. */
static void wait_ud(struct uccl_ep *ep, uint64_t ud, struct uccl_ctx *ctx)
{
	while (!(reaped >> ud & 1)) {
		struct uccl_cqe c[32];
		int n = uccl_cq_wait(ep, c, 32, TIMEOUT_MS);

		if (n == 0)
			n = -ETIMEDOUT;        /* nothing for TIMEOUT_MS: give up */
		if (n < 0)
			die("waiting for a completion", n, ctx);
		for (int i = 0; i < n; i++)
			if (c[i].res < 0)
				die("operation failed", c[i].res, ctx);
		note_reaped(c, n);
	}
	reaped &= ~(1ull << ud);
}

/* uccl_wait in short slices, failing at once on an error completion (an
 * operation can fail while its connection stays up; a peer that went away
 * ends the wait itself with -ECONNRESET). */
static int wait_sem(struct uccl_ep *ep, uint32_t conn, uint64_t value, struct uccl_ctx *ctx)
{
	for (int waited = 0; waited < TIMEOUT_MS; waited += 100) {
		struct uccl_cqe c[64];
		int r = uccl_wait(ep, conn, value, 100);
		int n;

		if (r != -ETIMEDOUT)
			return r;
		n = uccl_poll(ep, c, 64);
		for (int k = 0; k < n; k++)
			if (c[k].res < 0)
				die("operation failed", c[k].res, ctx);
		note_reaped(c, n);
	}
	return -ETIMEDOUT;
}

/* With --streams, the endpoint of stream i runs on engine thread i. */
static void create_ep(const struct opts *o, struct uccl_ctx *ctx, struct uccl_ep **ep)
{
	struct uccl_ep_attr a = { .flags = UCCL_EP_THREAD, .thread = o->stream };

	TRY(ctx, "creating an endpoint", uccl_ep_create(ctx, o->streams ? &a : NULL, ep));
}

/* A data buffer: shared memory the daemon maps, or (--vmem) this
 * process's own memory registered, which the daemon copies with
 * process_vm_readv/writev. */
static void data_buf(const struct opts *o, struct uccl_ctx *ctx, uint64_t len, struct uccl_mr **mr)
{
	void *p;

	if (!o->vmem) {
		TRY(ctx, "allocating the data buffer", uccl_mem_alloc(ctx, len, mr));
		return;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mapping a buffer", -errno, ctx);
	TRY(ctx, "registering the data buffer", uccl_mem_reg(ctx, p, len, mr));
}

static int do_recv(const struct opts *o)
{
	struct uccl_ctx *ctx;
	struct uccl_ep *ep;
	struct uccl_mr *ring, *msg;
	struct hello h;
	struct verdict v = { 0, 0, 0 };
	uint64_t failed = 0;               /* of the signals handing slots back */
	uint32_t conn;

	TRY(NULL, "attaching to the daemon", uccl_attach(o->sock, "uccl_xfer-recv", &ctx));
	TRY(ctx, "allocating the message buffer", uccl_mem_alloc(ctx, 4096, &msg));
	create_ep(o, ctx, &ep);
	TRY(ctx, "listening on the name", uccl_listen(ep, o->name));
	if (!o->quiet)
		fprintf(stderr, "uccl_xfer: receiver listening on '%s'\n", o->name);
	TRY(ctx, "waiting for the sender", uccl_accept(ep, TIMEOUT_MS * 3, &conn));
	POST(ctx, ep, &failed, "receiving the ring size", uccl_recv(ep, conn, msg, 0, sizeof(h), 1, 0, 1));
	wait_ud(ep, 1, ctx);
	memcpy(&h, uccl_mr_addr(msg), sizeof(h));
	if (h.slot_size == 0 || h.slot_size % 8 || h.slots == 0 || h.slots > 1024 ||
	    h.slot_size > (256u << 20)) {
		fprintf(stderr, "uccl_xfer: sender proposed a bad ring (%" PRIu64 " x %" PRIu64 ")\n",
			h.slots, h.slot_size);
		return 1;
	}
	data_buf(o, ctx, h.slots * h.slot_size, &ring);
	struct ready rd = { .rkey = uccl_mr_key(ring) };
	memcpy((uint8_t *)uccl_mr_addr(msg) + 64, &rd, sizeof(rd));
	POST(ctx, ep, &failed, "sending the ring's key", uccl_send(ep, conn, msg, 64, sizeof(rd), 2, 0, 2));
	wait_ud(ep, 2, ctx);

	uint64_t chunks = (h.total + h.slot_size - 1) / h.slot_size;
	for (uint64_t i = 0; i < chunks; i++) {
		uint64_t len = i + 1 < chunks ? h.slot_size : h.total - i * h.slot_size;
		int r = wait_sem(ep, conn, i + 1, ctx);
		if (r < 0)
			die("waiting for a chunk", r, ctx);
		const uint64_t *p = (const uint64_t *)((uint8_t *)uccl_mr_addr(ring) +
						       (i % h.slots) * h.slot_size);
		if (check_chunk(p, i, len))
			v.chunks_ok++;
		else
			v.chunks_bad++;
		v.bytes += len;
		/* hand the slot back; completions are reaped in batches, and
		 * while the ring is full */
		POST(ctx, ep, &failed, "handing a slot back", uccl_signal(ep, conn, 0, 100));
		reap(ep, ctx, &failed, 0);
		if (failed)
			die("signal failed", -EIO, ctx);
	}
	drain(ep, ctx, &failed);
	if (failed)
		die("signal failed", -EIO, ctx);
	memcpy((uint8_t *)uccl_mr_addr(msg) + 128, &v, sizeof(v));
	/* the sender's "done" (tag 4) comes after its latency test, which can
	 * take seconds on a busy machine; a sender that dies resets the
	 * connection and fails this receive at once */
	POST(ctx, ep, &failed, "receiving the sender's done", uccl_recv(ep, conn, msg, 256, 8, 4, 0, 4));
	POST(ctx, ep, &failed, "sending the verdict", uccl_send(ep, conn, msg, 128, sizeof(v), 3, 0, 3));
	if (failed)                    /* reaped while the send was refused */
		die("sending the verdict", -EIO, ctx);
	/* both, in either order: a sender without a latency test says done
	 * before our verdict's completion is reaped */
	double until = now_s() + 6 * TIMEOUT_MS / 1000.0;

	while ((~reaped & (1u << 3 | 1u << 4)) && now_s() < until) {
		struct uccl_cqe c[8];
		int n = uccl_cq_wait(ep, c, 8, 100);

		if (n == -ETIMEDOUT)
			continue;
		if (n < 0)
			die("sending the verdict", n, ctx);
		for (int k = 0; k < n; k++)
			if (c[k].user_data == 3 && c[k].res < 0)
				die("sending the verdict", c[k].res, ctx);
		note_reaped(c, n);
	}
	if (!(reaped >> 3 & 1))
		die("sending the verdict", -ETIMEDOUT, ctx);
	uccl_detach(ctx);
	return v.chunks_bad ? 1 : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void print_result(const struct opts *o, const struct result *rs, uint32_t n);

/* Sends o->total bytes to o->name; fills *res, and prints it unless with
 * --streams (the parent prints them all). */
static int do_send(const struct opts *o, struct result *res)
{
	struct uccl_ctx *ctx;
	struct uccl_ep *ep;
	struct uccl_mr *src, *msg;
	struct hello h = { .total = o->total, .slot_size = o->slot_size, .slots = o->slots };
	struct ready rd;
	struct verdict v;
	uint32_t conn;
	uint64_t chunks = (o->total + o->slot_size - 1) / o->slot_size;
	uint64_t failed = 0, posted = 0;

	TRY(NULL, "attaching to the daemon", uccl_attach(o->sock, "uccl_xfer-send", &ctx));
	TRY(ctx, "allocating the message buffer", uccl_mem_alloc(ctx, 4096, &msg));
	/* one source buffer per slot, filled just before its put */
	data_buf(o, ctx, o->slots * o->slot_size, &src);
	create_ep(o, ctx, &ep);
	TRY(ctx, "connecting to the receiver", uccl_connect(ep, o->name, TIMEOUT_MS * 3, &conn));
	memcpy(uccl_mr_addr(msg), &h, sizeof(h));
	POST(ctx, ep, &failed, "sending the ring size", uccl_send(ep, conn, msg, 0, sizeof(h), 1, 0, 1));
	POST(ctx, ep, &failed, "receiving the ring's key", uccl_recv(ep, conn, msg, 64, sizeof(rd), 2, 0, 2));
	wait_ud(ep, 2, ctx);
	memcpy(&rd, (uint8_t *)uccl_mr_addr(msg) + 64, sizeof(rd));
	POST(ctx, ep, &failed, "receiving the verdict", uccl_recv(ep, conn, msg, 128, sizeof(v), 3, 0, 3));

	/* pre-fill: filling is the application's work, not the transport's */
	uint8_t *base = uccl_mr_addr(src);
	double t0 = now_s(), tlast = t0;
	uint64_t last_bytes = 0, sent = 0;
	for (uint64_t i = 0; i < chunks; i++) {
		uint64_t slot = i % o->slots;
		uint64_t len = i + 1 < chunks ? o->slot_size : o->total - i * o->slot_size;
		int r;

		/* the slot is free once the receiver checked chunk i - slots */
		if (i >= o->slots) {
			r = wait_sem(ep, conn, i - o->slots + 1, ctx);
			if (r < 0)
				die("waiting for a free slot", r, ctx);
		}
		fill_chunk((uint64_t *)(base + slot * o->slot_size), i, len);
		/* a full ring: submit what is staged, take completions (the
		 * daemon stops taking descriptors while ours are unread), and
		 * try again only what was refused: the put may be in already */
		POST(ctx, ep, &failed, "putting a chunk",
		     uccl_put(ep, conn, src, slot * o->slot_size, rd.rkey, slot * o->slot_size, len,
			      UCCL_F_MORE, 10));
		POST(ctx, ep, &failed, "signalling a chunk", uccl_signal(ep, conn, 0, 11));
		posted += 2;
		sent += len;
		reap(ep, ctx, &failed, 0);
		double t = now_s();
		if (!o->quiet && !o->streams && t - tlast >= 1.0) {
			fprintf(stderr, "  progress: %6" PRIu64 " MiB  %6.2f GB/s\n", sent >> 20,
				(double)(sent - last_bytes) / (t - tlast) / 1e9);
			tlast = t;
			last_bytes = sent;
		}
	}
	int r = wait_sem(ep, conn, chunks, ctx);
	if (r < 0)
		die("waiting for the last chunk", r, ctx);
	double t1 = now_s();
	wait_ud(ep, 3, ctx);
	drain(ep, ctx, &failed);
	memcpy(&v, (uint8_t *)uccl_mr_addr(msg) + 128, sizeof(v));

	/* 64-byte put round trips on the same connection (not while other
	 * streams still move bytes: their queues would be measured) */
	enum { LAT_N = 2000 };
	uint64_t *lat = o->streams ? NULL : calloc(LAT_N, sizeof(*lat));
	for (int i = 0; lat && i < LAT_N; i++) {
		struct uccl_cqe c;
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		POST(ctx, ep, &failed, "putting for the latency test",
		     uccl_put(ep, conn, src, 0, rd.rkey, 0, 64, 0, 20));
		/* a late completion of the transfer's ops is not this put's;
		 * spinning, as the latency is the point, but not for ever */
		double tp = now_s();

		do {
			uint64_t spins = 0;
			int n;

			while ((n = uccl_poll(ep, &c, 1)) == 0)
				if ((++spins & 0xfffff) == 0 && now_s() - tp > TIMEOUT_MS / 1000.0)
					die("waiting for a latency put", -ETIMEDOUT, ctx);
			if (n < 0)
				die("waiting for a latency put", n, ctx);
			note_failed(&c, &failed);
			note_reaped(&c, 1);
		} while (c.user_data != 20);
		clock_gettime(CLOCK_MONOTONIC, &b);
		lat[i] = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull + (uint64_t)(b.tv_nsec - a.tv_nsec);
	}
	if (lat)
		qsort(lat, LAT_N, sizeof(*lat), cmp_u64);
	*res = (struct result){
		.bytes = o->total, .chunks = chunks, .chunks_ok = v.chunks_ok, .chunks_bad = v.chunks_bad,
		.failed = failed, .ops = posted + (lat ? LAT_N : 0), .t0 = t0, .t1 = t1,
		.p50 = lat ? lat[LAT_N / 2] / 1e3 : 0, .p99 = lat ? lat[LAT_N * 99 / 100] / 1e3 : 0,
		.thread = uccl_ep_thread(ep), .first_err = first_err,
	};
	res->ok = v.chunks_bad == 0 && v.chunks_ok == chunks && v.bytes == o->total && failed == 0;
	if (!o->streams)
		print_result(o, res, 1);
	free(lat);
	/* lets the receiver finish */
	POST(ctx, ep, &failed, "saying done", uccl_send(ep, conn, msg, 0, 8, 4, 0, 30));
	wait_ud(ep, 30, ctx);
	uccl_close(ep, conn);
	uccl_detach(ctx);
	return res->ok ? 0 : 1;
}

static double rate(uint64_t bytes, double secs)
{
	return secs > 0 ? (double)bytes / secs / 1e9 : 0;
}

/* Always in GB/s with Gbit/s beside it (scripts read "(N Gbit/s)"), with
 * more decimals below 0.01 GB/s, so that a tiny transfer's rate is not
 * 0.00. */
static const char *rate_str(char *buf, size_t len, double gbs)
{
	if (gbs >= 0.01)
		snprintf(buf, len, "%.2f GB/s (%.1f Gbit/s)", gbs, gbs * 8);
	else
		snprintf(buf, len, "%.6f GB/s (%.5f Gbit/s)", gbs, gbs * 8);
	return buf;
}

/* Seconds, or microseconds for a transfer too short to show in ms. */
static const char *secs_str(char *buf, size_t len, double secs)
{
	if (secs >= 0.01)
		snprintf(buf, len, "%.3f s", secs);
	else
		snprintf(buf, len, "%.1f us", secs * 1e6);
	return buf;
}

/* One result, or the sum of several streams' (their bytes over the span from
 * the first start to the last end); rs[i].ok < 0: stream i reported nothing
 * (it failed; its exit was printed). */
static void print_result(const struct opts *o, const struct result *rs, uint32_t n)
{
	struct result t = { .t0 = 1e300, .t1 = -1e300 };
	uint32_t lost = 0;
	bool ok = true;

	for (uint32_t i = 0; i < n; i++) {
		ok &= rs[i].ok > 0;
		if (rs[i].ok < 0) {
			lost++;
			continue;
		}
		t.bytes += rs[i].bytes;
		t.chunks += rs[i].chunks;
		t.chunks_ok += rs[i].chunks_ok;
		t.chunks_bad += rs[i].chunks_bad;
		t.failed += rs[i].failed;
		t.ops += rs[i].ops;
		if (!t.first_err)
			t.first_err = rs[i].first_err;
		t.p50 = rs[i].p50;
		t.p99 = rs[i].p99;
		t.t0 = rs[i].t0 < t.t0 ? rs[i].t0 : t.t0;
		t.t1 = rs[i].t1 > t.t1 ? rs[i].t1 : t.t1;
	}
	double secs = lost == n ? 0 : t.t1 - t.t0;
	double gbs = rate(t.bytes, secs);

	if (o->json) {
		printf("{\"bytes\":%" PRIu64 ",\"seconds\":%.6f,", t.bytes, secs);
		/* a rate of a run that failed is no figure to quote: null */
		if (ok)
			printf("\"gbytes_per_s\":%.3f,", gbs);
		else
			printf("\"gbytes_per_s\":null,");
		printf("\"chunks\":%" PRIu64 ",\"chunk_bytes\":%" PRIu64 ",\"verified_chunks\":%" PRIu64
		       ",\"bad_chunks\":%" PRIu64 ",\"failed_ops\":%" PRIu64 ",", t.chunks, o->slot_size,
		       t.chunks_ok, t.chunks_bad, t.failed);
		if (t.first_err)
			printf("\"first_error\":\"%s\",", uccl_strerror(t.first_err));
		else
			printf("\"first_error\":null,");
		/* not measured with streams: null, not a figure */
		if (o->streams)
			printf("\"put64_rtt_p50_us\":null,\"put64_rtt_p99_us\":null,");
		else
			printf("\"put64_rtt_p50_us\":%.2f,\"put64_rtt_p99_us\":%.2f,", t.p50, t.p99);
		printf("\"streams\":%u,\"failed_streams\":%u,\"stream_gbytes_per_s\":[", n, lost);
		for (uint32_t i = 0; i < n; i++) {
			if (rs[i].ok < 0)
				printf("%snull", i ? "," : "");
			else
				printf("%s%.3f", i ? "," : "", rate(rs[i].bytes, rs[i].t1 - rs[i].t0));
		}
		printf("],\"ok\":%s}\n", ok ? "true" : "false");
		return;
	}
	char sz[32], csz[32], rt[64], tm[32], how[80] = ": FAILED";

	/* a rate of a run that failed is no figure to quote */
	if (ok)
		snprintf(how, sizeof(how), " = %s", rate_str(rt, sizeof(rt), gbs));
	printf("transfer:  %s in %s%s, %" PRIu64 " chunk%s of %s\n"
	       "           (includes the sender generating and the receiver checking every byte)\n",
	       units_size_str(sz, sizeof(sz), t.bytes), secs_str(tm, sizeof(tm), secs),
	       how, t.chunks, t.chunks == 1 ? "" : "s",
	       units_size_str(csz, sizeof(csz), o->slot_size));
	if (o->streams)
		for (uint32_t i = 0; i < n; i++) {
			if (rs[i].ok < 0)
				printf("stream %2u: FAILED (reported nothing)\n", i);
			else
				printf("stream %2u: %s in %s%s%s, engine thread %d\n", i,
				       units_size_str(sz, sizeof(sz), rs[i].bytes),
				       secs_str(tm, sizeof(tm), rs[i].t1 - rs[i].t0),
				       rs[i].ok ? " = " : ": ",
				       rs[i].ok ? rate_str(rt, sizeof(rt), rate(rs[i].bytes, rs[i].t1 - rs[i].t0))
						: "FAILED",
				       rs[i].thread);
		}
	/* a failed put's signal still reaches the receiver (its number is
	 * settled by a void), which then finds the slot's old bytes: that is
	 * the failure, not corruption */
	printf("verified:  %" PRIu64 "/%" PRIu64 " chunks intact at the receiver%s\n", t.chunks_ok,
	       t.chunks, !t.chunks_bad ? "" : t.failed ? " (the failed puts' chunks never arrived)"
			 : " (CORRUPTION DETECTED)");
	if (o->streams)
		printf("latency:   not measured with --streams\n");
	else
		printf("latency:   64 B put round trip p50 %.2f us, p99 %.2f us (%d samples)\n", t.p50,
		       t.p99, 2000);
	printf("errors:    %" PRIu64 " failed operations of %" PRIu64 "%s", t.failed, t.ops,
	       lost ? " (and the failed streams')" : "");
	if (t.first_err)
		printf("; the first: %s", uccl_strerror(t.first_err));
	printf("\n");
	if (strchr(o->name, '/'))
		printf("transport: host-to-host, to the daemon of '%.*s' over UDP (per-channel RTT and\n"
		       "           retransmissions: ucclctl channels)\n",
		       (int)(strchr(o->name, '/') - o->name), o->name);
	else
		printf("transport: same-host (one daemon); no retransmissions on this path\n");
}

/* demo: the receiver forked beside the sender; if the sender fails and
 * exits first, the receiver would wait for it in accept for its whole
 * timeout, reparented, after the command returned. It leads a process
 * group of its own (its streams are in it too), which the sender's exit
 * ends. */
static pid_t demo_child;

static void end_demo_child(void)
{
	if (demo_child > 0) {
		kill(-demo_child, SIGTERM);
		waitpid(demo_child, NULL, 0);
		demo_child = 0;
	}
}

/* --streams K: K processes, stream i on "NAME.i" with total/K bytes (the
 * last takes the rest; main checked that every share is at least 8 bytes);
 * senders report through a pipe and the parent prints the sum, with the
 * streams that failed named. */
static int run_streams(const struct opts *base, bool send)
{
	struct result rs[MAX_STREAMS];
	pid_t pids[MAX_STREAMS];
	int fds[2], rc = 0;
	uint64_t share = base->total / base->streams / 8 * 8;
	uint32_t started = 0;

	if (pipe(fds) < 0) {
		perror("uccl_xfer: pipe");
		return 1;
	}
	for (uint32_t i = 0; i < base->streams; i++, started++) {
		struct opts o = *base;

		o.stream = i;
		o.total = i + 1 < base->streams ? share : base->total - share * (base->streams - 1);
		snprintf(o.stream_name, sizeof(o.stream_name), "%s.%u", base->name, i);
		o.name = o.stream_name;
		fflush(NULL);
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("uccl_xfer: fork");
			for (uint32_t k = 0; k < started; k++)
				kill(pids[k], SIGTERM);
			rc = 1;
			break;
		}
		if (pids[i] == 0) {
			struct result r = { 0 };
			int c;

			close(fds[0]);
			this_stream = (int)i;
			demo_child = 0;        /* the demo's parent ends the receiver, not a stream */
			c = send ? do_send(&o, &r) : do_recv(&o);
			r.slot = i;
			if (send && write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
				c = 1;
			_exit(c);
		}
	}
	close(fds[1]);
	for (uint32_t i = 0; i < started; i++) {
		int st;

		if (waitpid(pids[i], &st, 0) < 0)
			st = -1;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			continue;
		rc = 1;
		if (st != -1 && WIFSIGNALED(st))
			fprintf(stderr, "uccl_xfer: stream %u: killed by signal %d\n", i, WTERMSIG(st));
		else if (st != -1)
			fprintf(stderr, "uccl_xfer: stream %u: exit %d\n", i, WEXITSTATUS(st));
	}
	if (send && started == base->streams) {
		struct result r;

		for (uint32_t i = 0; i < base->streams; i++)
			rs[i] = (struct result){ .ok = -1 };
		while (read(fds[0], &r, sizeof(r)) == (ssize_t)sizeof(r))
			if (r.slot < base->streams)
				rs[r.slot] = r;
		print_result(base, rs, base->streams);
		for (uint32_t i = 0; i < base->streams; i++)
			if (rs[i].ok <= 0)
				rc = 1;
	}
	close(fds[0]);
	return rc;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	int shift = 0;

	if (end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 0: break;
	default: return -1;
	}
	if (*end || v == 0 || v > (1ull << 50) >> shift)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: uccl_xfer [options] recv NAME\n"
		   "       uccl_xfer [options] send NAME\n"
		   "       uccl_xfer [options] demo\n"
		   "options: --socket PATH  --bytes N[K|M|G] (default 1G)  --chunk N[K|M] (default 1M)\n"
		   "         --slots N (default 16)  --streams K (1..%u: split over K endpoint pairs,\n"
		   "         stream i on engine thread i, named NAME.i)  --vmem (register this\n"
		   "         process's memory, uccl_mem_reg, instead of uccl_mem_alloc)  --json  --quiet\n",
		MAX_STREAMS);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' }, { "bytes", required_argument, NULL, 'b' },
		{ "chunk", required_argument, NULL, 'c' },  { "slots", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },         { "quiet", no_argument, NULL, 'q' },
		{ "streams", required_argument, NULL, 'k' }, { "vmem", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
	};
	struct result res;
	struct opts o = { .total = 1ull << 30, .slot_size = 1u << 20, .slots = 16 };
	char demo_name[64];
	int c;

	while ((c = getopt_long(argc, argv, "s:b:c:n:k:jqvh", lo, NULL)) != -1) {
		switch (c) {
		case 's': o.sock = optarg; break;
		case 'v': o.vmem = true; break;
		case 'b':
			if (parse_size(optarg, &o.total) < 0) {
				fprintf(stderr, "uccl_xfer: bad --bytes '%s'\n", optarg);
				return 2;
			}
			break;
		case 'c':
			if (parse_size(optarg, &o.slot_size) < 0 || o.slot_size % 8 || o.slot_size > (256u << 20)) {
				fprintf(stderr, "uccl_xfer: bad --chunk '%s' (multiple of 8, at most 256M)\n", optarg);
				return 2;
			}
			break;
		case 'n': {
			char *end;

			errno = 0;
			o.slots = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || o.slots == 0 ||
			    o.slots > 1024) {
				fprintf(stderr, "uccl_xfer: --slots must be 1..1024\n");
				return 2;
			}
			break;
		}
		case 'k': {
			char *end;
			unsigned long k = strtoul(optarg, &end, 10);

			if (*end || k == 0 || k > MAX_STREAMS) {
				fprintf(stderr, "uccl_xfer: --streams must be 1..%u\n", MAX_STREAMS);
				return 2;
			}
			o.streams = (uint32_t)k;
			break;
		}
		case 'j': o.json = true; break;
		case 'q': o.quiet = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	/* before any fork: a usage error is reported once, with status 2 */
	if (o.streams && o.total / o.streams / 8 == 0) {
		fprintf(stderr, "uccl_xfer: --bytes must give each of the %u streams at least 8 bytes\n",
			o.streams);
		return 2;
	}
	if (optind < argc && strcmp(argv[optind], "demo") == 0) {
		pid_t pid;
		int st, rc;

		if (optind + 1 != argc) {        /* demo takes no NAME */
			usage(stderr);
			return 2;
		}
		snprintf(demo_name, sizeof(demo_name), "uccl-xfer-%d", (int)getpid());
		o.name = demo_name;
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			setpgid(0, 0);
			_exit(o.streams ? run_streams(&o, false) : do_recv(&o));
		}
		setpgid(pid, pid);             /* whichever runs first */
		demo_child = pid;
		atexit(end_demo_child);        /* the sender's failures exit() */
		rc = o.streams ? run_streams(&o, true) : do_send(&o, &res);
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			rc = 1;
		demo_child = 0;
		return rc;
	}
	if (optind + 2 != argc) {
		usage(stderr);
		return 2;
	}
	o.name = argv[optind + 1];
	if (strcmp(argv[optind], "recv") == 0)
		return o.streams ? run_streams(&o, false) : do_recv(&o);
	if (strcmp(argv[optind], "send") == 0)
		return o.streams ? run_streams(&o, true) : do_send(&o, &res);
	usage(stderr);
	return 2;
}
