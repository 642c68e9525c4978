/* SPDX-License-Identifier: MIT */
/*
 * tpchan_bench: control-path capacity of the transport channel on one core.
 * Two channels joined by the in-memory wire (tests/unit/wirelink) move
 * 32 KiB messages with no loss; read() and deliver() do nothing, so what is
 * timed is the transport's own work: chunking, packet headers, scoreboards,
 * ACKs, congestion control and path choice. Reports chunks per CPU second
 * (process CPU time), median over the runs. Not a test.
 *
 * Each run first moves an untimed eighth of MESSAGES (at least 1024) over
 * the same two channels, so that what is timed is the steady state a
 * daemon's long-lived channel is in: memory touched, window grown. The
 * page faults left in the timed part are printed, since a machine where
 * faults are dear would otherwise read as a slow transport.
 *
 *   tpchan_bench [MESSAGES (32768)] [RUNS (5)] [RATE_GBPS (0 = no
 *   serialisation delay) ] [ACK_EVERY (8)]
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>

#include "bench/benchutil.h"
#include "engine/tpchan.h"
#include "tests/unit/wirelink.h"

static uint64_t nmsgs, next, done;
static struct tpchan *tx;

static int nop_read(void *a, uint64_t c, uint64_t o, void *d, uint32_t l)
{
	(void)a; (void)c; (void)o; (void)d; (void)l;
	return 0;
}

static int nop_deliver(void *a, const struct wire_data *d)
{
	(void)a; (void)d;
	return 0;
}

static void complete(void *a, uint64_t c, int r)
{
	(void)a; (void)c;
	if (r) {
		fprintf(stderr, "tpchan_bench: message failed: %d\n", r);
		exit(1);
	}
	done++;
}

static const struct tpchan_cb cb = { .read = nop_read, .deliver = nop_deliver, .complete = complete };

static bool pump(void *arg)
{
	(void)arg;
	while (next < nmsgs) {
		struct tpchan_msg m = { .cookie = next, .opcode = 2, .dst_ep = 1, .len = 32768,
					.roff = next * 32768 };
		if (tpchan_submit(tx, &m) == -EAGAIN)
			break;
		next++;
	}
	return done == nmsgs;
}

static long minflt(void)
{
	struct rusage u;

	return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_minflt : 0;
}

int main(int argc, char **argv)
{
	uint64_t msgs = argc > 1 ? strtoull(argv[1], NULL, 0) : 32768;
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	uint32_t rate = argc > 3 ? (uint32_t)atoi(argv[3]) : 0;
	uint32_t ack_every = argc > 4 ? (uint32_t)atoi(argv[4]) : 8;
	double rates[64], refs[64], norm[64];

	if (msgs == 0 || runs < 1 || runs > 64) {
		fprintf(stderr, "usage: tpchan_bench [MESSAGES] [RUNS 1..64] [RATE_GBPS] [ACK_EVERY]\n");
		return 2;
	}
	for (int i = 0; i < runs; i++) {
		struct tpchan_params p = {
			.mtu = 9000, .chunk_bytes = 32768, .npaths = 16, .max_inflight_pkts = 4096,
			.max_inflight_bytes = 16 << 20, .max_msgs = 1024, .ack_every = ack_every,
			.ack_delay_ns = 10000, .cb = &cb, .tx_token = 1, .rx_token = 2,
		};
		struct wirelink_params lp = { .seed = 1, .mtu = 9000, .rate_gbps = rate, .delay_ns = 5000 };
		struct tpchan *rx;
		struct wirelink *l;
		uint64_t warm = msgs / 8 > 1024 ? msgs / 8 : 1024;
		double t0, t1;
		long f0;

		nmsgs = warm;
		next = done = 0;
		tx = tpchan_new(&p);
		p.tx_token = 2;
		p.rx_token = 1;
		p.seed = 5;
		rx = tpchan_new(&p);
		l = tx && rx ? wirelink_new(&lp, tx, rx, 1000) : NULL;
		if (!l) {
			fprintf(stderr, "tpchan_bench: setup failed\n");
			return 1;
		}
		int r = wirelink_run(l, pump, NULL, UINT64_MAX - 1);
		if (r < 0 || done != warm) {
			fprintf(stderr, "tpchan_bench: warm-up %d did not finish (%d)\n", i, r);
			return 1;
		}
		nmsgs = warm + msgs;
		refs[i] = bench_core_ref(BENCH_REF_ROUNDS);
		f0 = minflt();
		t0 = bench_cpu_s();
		r = wirelink_run(l, pump, NULL, UINT64_MAX - 1);
		t1 = bench_cpu_s();
		f0 = minflt() - f0;
		/* the core's speed on both sides of the run */
		refs[i] = (refs[i] + bench_core_ref(BENCH_REF_ROUNDS)) / 2;
		if (r < 0 || done != nmsgs) {
			fprintf(stderr, "tpchan_bench: run %d did not finish (%d, %" PRIu64 "/%" PRIu64 ")\n", i, r,
				done - warm, msgs);
			return 1;
		}
		rates[i] = (double)msgs / (t1 - t0);
		norm[i] = refs[i] > 0 ? rates[i] / refs[i] * 1000 : 0;
		fprintf(stderr, "run %d: %.2f M chunks/s (%.3f s CPU, %ld page faults, after %" PRIu64
			" untimed; core reference %.0f M rounds/s)\n", i + 1, rates[i] / 1e6, t1 - t0, f0,
			warm, refs[i] / 1e6);
		wirelink_free(l);
		tpchan_free(tx);
		tpchan_free(rx);
	}
	qsort(rates, (size_t)runs, sizeof(rates[0]), bench_cmp_double);
	qsort(refs, (size_t)runs, sizeof(refs[0]), bench_cmp_double);
	qsort(norm, (size_t)runs, sizeof(norm[0]), bench_cmp_double);
	printf("tpchan control path: median %.2f M chunks/s of 32 KiB (min %.2f, max %.2f, %d runs; "
	       "MTU 9000, %s, ack every %u packets) = %.0f Gbit/s-equivalent\n",
	       rates[runs / 2] / 1e6, rates[0] / 1e6, rates[runs - 1] / 1e6, runs,
	       rate ? "serialised at the given rate" : "no serialisation delay", ack_every,
	       rates[runs / 2] * 32768 * 8 / 1e9);
	printf("core reference: median %.0f M rounds/s (min %.0f, max %.0f); %.2f chunks per 1000 "
	       "rounds (median of runs; a figure of the code, not of how much core it got)\n",
	       refs[runs / 2] / 1e6, refs[0] / 1e6, refs[runs - 1] / 1e6, norm[runs / 2]);
	return 0;
}
