/* SPDX-License-Identifier: MIT */
/*
 * uccl-sim: run a scenario on the simulated fabric (engine/sim) and report.
 * Reads a scenario file (docs/sim.md), runs the real transport channels in
 * virtual time, writes fct.csv, throughput.csv, queue.csv and ports.csv to
 * the output directory and a summary to stdout (FCT percentiles, aggregate goodput,
 * Jain's index); with --plot, PNGs through gnuplot when it is installed.
 * Everything it prints on stdout and writes to the CSVs is a function of
 * the scenario and the seed: two runs with the same seed are bit-identical.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/sim/sim_conf.h"
#include "engine/sim/sim_net.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: uccl-sim SCENARIO [--out DIR] [--seed N] [--plot]\n"
		   "  --out DIR   write fct.csv, throughput.csv, queue.csv, ports.csv there (default .)\n"
		   "  --seed N    override the scenario's seed\n"
		   "  --plot      also draw PNGs with gnuplot, if installed\n");
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = malloc(SIM_CONF_MAX_BYTES + 1);
	if (!buf) {
		fclose(f);
		return NULL;
	}
	n = fread(buf, 1, SIM_CONF_MAX_BYTES + 1, f);
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = n;
	return buf;
}

static FILE *open_out(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "uccl-sim: %s: %s\n", path, strerror(errno));
	return f;
}

static int close_out(FILE *f, const char *name)
{
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, "uccl-sim: writing %s failed\n", name);
		return -EIO;
	}
	return 0;
}

static double gbps(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes * 8.0 / (double)ns : 0.0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double jain(const double *x, size_t n)
{
	double s = 0, s2 = 0;

	for (size_t i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	return s2 > 0 ? s * s / ((double)n * s2) : 1.0;
}

static int write_fct(const struct sim_net *n, const char *dir)
{
	FILE *f = open_out(dir, "fct.csv");

	if (!f)
		return -EIO;
	fprintf(f, "flow,src,dst,bytes,start_us,end_us,fct_us,gbps,status\n");
	for (size_t i = 0; i < sim_net_nflows(n); i++) {
		struct sim_flow_info fi;

		sim_net_flow(n, i, &fi);
		if (fi.done)
			fprintf(f, "%zu,%u,%u,%llu,%.3f,%.3f,%.3f,%.3f,%d\n", i, fi.src, fi.dst,
				(unsigned long long)fi.bytes, fi.start_ns / 1e3, fi.end_ns / 1e3,
				(fi.end_ns - fi.start_ns) / 1e3,
				gbps(fi.bytes, fi.end_ns - fi.start_ns), fi.res);
		else
			fprintf(f, "%zu,%u,%u,%llu,%.3f,,,,unfinished\n", i, fi.src, fi.dst,
				(unsigned long long)fi.bytes, fi.start_ns / 1e3);
	}
	return close_out(f, "fct.csv");
}

static int write_tput(const struct sim_net *n, const struct sim_conf *c, const char *dir)
{
	uint64_t dt = c->net.sample_ns;
	FILE *f = open_out(dir, "throughput.csv");

	if (!f)
		return -EIO;
	fprintf(f, "time_us,total_gbps");
	for (size_t i = 0; i < sim_net_nflows(n); i++)
		fprintf(f, ",f%zu", i);
	fprintf(f, "\n");
	for (size_t r = 0; dt && r < sim_net_nsamples(n); r++) {
		uint64_t tot = 0;

		for (size_t i = 0; i < sim_net_nflows(n); i++)
			tot += sim_net_flow_bytes(n, i, r);
		fprintf(f, "%.3f,%.3f", (double)(r * dt) / 1e3, gbps(tot, dt));
		for (size_t i = 0; i < sim_net_nflows(n); i++)
			fprintf(f, ",%.3f", gbps(sim_net_flow_bytes(n, i, r), dt));
		fprintf(f, "\n");
	}
	return close_out(f, "throughput.csv");
}

static int write_queue(const struct sim_net *n, const struct sim_conf *c, const char *dir)
{
	FILE *f = open_out(dir, "queue.csv");
	struct sim_port_info pi;

	if (!f)
		return -EIO;
	fprintf(f, "time_us");
	for (size_t p = 0; p < sim_net_nports(n); p++) {
		sim_net_port(n, p, &pi);
		if (pi.is_switch)
			fprintf(f, ",%s", pi.name);
	}
	fprintf(f, "\n");
	for (size_t r = 0; c->net.sample_ns && r < sim_net_nsamples(n); r++) {
		fprintf(f, "%.3f", (double)(r * c->net.sample_ns) / 1e3);
		for (size_t p = 0; p < sim_net_nports(n); p++) {
			sim_net_port(n, p, &pi);
			if (pi.is_switch)
				fprintf(f, ",%llu", (unsigned long long)sim_net_queue(n, p, r));
		}
		fprintf(f, "\n");
	}
	return close_out(f, "queue.csv");
}

/* One row per port (a link direction): what it sent and what happened to
 * it, PFC included. */
static int write_ports(const struct sim_net *n, const char *dir)
{
	FILE *f = open_out(dir, "ports.csv");
	struct sim_port_info pi;

	if (!f)
		return -EIO;
	fprintf(f, "port,tx_pkts,tx_bytes,drops,ecn_marks,link_lost,max_queue,pauses,paused_us,"
		   "pfc_overflow\n");
	for (size_t p = 0; p < sim_net_nports(n); p++) {
		sim_net_port(n, p, &pi);
		fprintf(f, "%s,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.3f,%llu\n", pi.name,
			(unsigned long long)pi.tx_pkts, (unsigned long long)pi.tx_bytes,
			(unsigned long long)pi.drops, (unsigned long long)pi.marks,
			(unsigned long long)pi.lost, (unsigned long long)pi.max_queue,
			(unsigned long long)pi.pauses, pi.paused_ns / 1e3,
			(unsigned long long)pi.pfc_overflow);
	}
	return close_out(f, "ports.csv");
}

/* Jain's index in steady state: over the sampling rows in which the most
 * flows are active for the whole row, the later half of them, averaged. */
static double jain_steady(const struct sim_net *n, const struct sim_conf *c)
{
	size_t nf = sim_net_nflows(n), rows = sim_net_nsamples(n), most = 0, cnt = 0, seen = 0;
	uint64_t dt = c->net.sample_ns;
	double *x, sum = 0;

	if (!dt || !rows || nf < 2)
		return 1.0;
	x = malloc(nf * sizeof(*x));
	if (!x)
		return 0.0;
	for (int pass = 0; pass < 3; pass++) {
		for (size_t r = 0; r < rows; r++) {
			size_t k = 0;

			for (size_t i = 0; i < nf; i++) {
				struct sim_flow_info fi;

				sim_net_flow(n, i, &fi);
				if (fi.start_ns <= r * dt && fi.done && fi.end_ns >= (r + 1) * dt)
					x[k++] = gbps(sim_net_flow_bytes(n, i, r), dt);
			}
			if (pass == 0 && k > most)
				most = k;
			else if (pass == 1 && k == most)
				cnt++;
			else if (pass == 2 && k == most && most >= 2 && ++seen > cnt / 2)
				sum += jain(x, k);
		}
	}
	free(x);
	if (most < 2 || cnt - cnt / 2 == 0)
		return 1.0;
	return sum / (double)(cnt - cnt / 2);
}

static int summary(const struct sim_net *n, const struct sim_conf *c, const char *scn,
		   uint64_t seed, int run)
{
	size_t nf = sim_net_nflows(n), done = 0, failed = 0;
	uint64_t *fct = calloc(nf ? nf : 1, sizeof(*fct)), lost = 0, bytes = 0;
	uint64_t t0 = UINT64_MAX, t1 = 0;
	double *tp = calloc(nf ? nf : 1, sizeof(*tp));
	struct sim_net_stats st;

	if (!fct || !tp) {
		free(fct);
		free(tp);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nf; i++) {
		struct sim_flow_info fi;

		sim_net_flow(n, i, &fi);
		lost += fi.bytes - (fi.delivered < fi.bytes ? fi.delivered : fi.bytes);
		if (!fi.done)
			continue;
		if (fi.res) {
			failed++;
			continue;
		}
		fct[done] = fi.end_ns - fi.start_ns;
		tp[done] = gbps(fi.bytes, fct[done]);
		done++;
		bytes += fi.delivered;
		if (fi.start_ns < t0)
			t0 = fi.start_ns;
		if (fi.end_ns > t1)
			t1 = fi.end_ns;
	}
	sim_net_get_stats(n, &st);
	printf("scenario       %s\n", scn);
	printf("seed           %llu\n", (unsigned long long)seed);
	printf("topology       %s, %u hosts", sim_topo_name(c->topo), c->hosts);
	if (c->topo == SIM_TOPO_LEAFSPINE)
		printf(", %u leaves, %u spines, oversubscription %.2f", c->leaves, c->spines,
		       (double)c->hosts_per_leaf * (double)c->host_rate_mbps /
		       ((double)c->spines * (double)c->uplink_rate_mbps));
	printf("\n");
	printf("transport      cc %s, %s, %u paths%s", c->cc_name,
	       c->net.go_back_n ? "gbn" : "sack", c->net.npaths,
	       c->net.path_per_packet ? " (a path per packet)" : "");
	if (c->net.path_run_bytes)
		printf(" (a path per %u-byte run)", c->net.path_run_bytes);
	printf("%s%s%s\n",
	       c->net.adaptive_chunk ? ", adaptive chunk" : "", c->net.inband ? ", inband" : "",
	       c->net.rack_off && !c->net.go_back_n ? ", rack off" : "");
	printf("result         %s\n", run == 0 ? "all flows done" : run == -ETIME ?
	       "time limit reached" : strerror(-run));
	printf("flows          %zu\n", nf);
	printf("completed      %zu\n", done);
	printf("failed         %zu\n", failed);
	printf("unfinished     %zu\n", nf - done - failed);
	printf("bytes_lost     %llu\n", (unsigned long long)(lost + st.bad_payload));
	qsort(fct, done, sizeof(*fct), cmp_u64);
	if (done) {
		printf("fct_p50_us     %.3f\n", fct[(done + 1) / 2 - 1] / 1e3);
		printf("fct_p99_us     %.3f\n", fct[(done * 99 + 99) / 100 - 1] / 1e3);
		printf("fct_max_us     %.3f\n", fct[done - 1] / 1e3);
		printf("goodput_gbps   %.3f\n", gbps(bytes, t1 - t0));
		printf("jain           %.4f\n", jain(tp, done));
		printf("jain_steady    %.4f\n", jain_steady(n, c));
	}
	printf("sim_time_us    %.3f\n", st.now_ns / 1e3);
	printf("events         %llu\n", (unsigned long long)st.events);
	printf("data_pkts      %llu\n", (unsigned long long)st.data_pkts);
	printf("retx_pkts      %llu\n", (unsigned long long)st.retx_pkts);
	printf("fast_retx      %llu\n", (unsigned long long)st.fast_retx);
	printf("spurious_retx  %llu\n", (unsigned long long)st.spurious_retx);
	printf("timeouts       %llu\n", (unsigned long long)st.timeouts);
	printf("small_chunks   %llu\n", (unsigned long long)st.small_chunks);
	printf("queue_drops    %llu\n", (unsigned long long)st.drops);
	printf("ecn_marks      %llu\n", (unsigned long long)st.marks);
	printf("link_lost      %llu\n", (unsigned long long)st.lost);
	if (c->net.pfc.on) {   /* only then: pfc-off summaries stay as they were */
		printf("pfc            xoff %llu xon %llu\n",
		       (unsigned long long)c->net.pfc.xoff_bytes,
		       (unsigned long long)c->net.pfc.xon_bytes);
		printf("pfc_pauses     %llu\n", (unsigned long long)st.pauses);
		printf("pfc_paused_us  %.3f\n", st.paused_ns / 1e3);
		printf("pfc_overflow   %llu\n", (unsigned long long)st.pfc_overflow);
	}
	free(fct);
	free(tp);
	return done == nf && lost == 0 && st.bad_payload == 0 && run == 0 ? 0 : 1;
}

static bool have_gnuplot(void)
{
	const char *path = getenv("PATH");
	char buf[4096];

	while (path && *path) {
		size_t k = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/gnuplot", (int)k, path);
		if (k && access(buf, X_OK) == 0)
			return true;
		path += k + (path[k] == ':');
	}
	return false;
}

static int plot(const struct sim_net *n, const char *dir)
{
	size_t nf = sim_net_nflows(n), nsw = 0;
	struct sim_port_info pi;
	FILE *f;
	pid_t pid;
	int status;

	if (!have_gnuplot()) {
		fprintf(stderr, "uccl-sim: gnuplot not found; no plots drawn\n");
		return 0;
	}
	f = open_out(dir, "plot.gp");
	if (!f)
		return -EIO;
	fprintf(f, "set datafile separator ','\nset terminal pngcairo size 1000,600\nset key off\n"
		   "set output 'fct_cdf.png'\nset xlabel 'FCT (us)'\nset ylabel 'CDF'\n"
		   "plot 'fct.csv' every ::1 using 7:(1.0/%zu) smooth cumulative with lines\n"
		   "set output 'throughput.png'\nset xlabel 'time (us)'\nset ylabel 'Gbit/s'\n"
		   "plot for [i=3:%zu] 'throughput.csv' every ::1 using 1:i with lines\n",
		nf ? nf : 1, nf + 2);
	/* queue.csv has a column per switch port: with no switch it has only
	 * the time, and gnuplot fails on an empty plot */
	for (size_t p = 0; p < sim_net_nports(n); p++) {
		sim_net_port(n, p, &pi);
		nsw += pi.is_switch;
	}
	if (nsw)
		fprintf(f, "set output 'queue.png'\nset ylabel 'queue (bytes)'\n"
			   "plot for [i=2:%zu] 'queue.csv' every ::1 using 1:i with lines\n", nsw + 1);
	if (close_out(f, "plot.gp") < 0)
		return -EIO;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (chdir(dir) == 0)
			execlp("gnuplot", "gnuplot", "plot.gp", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "uccl-sim: gnuplot failed\n");
		return -EIO;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, 's' },
		{ "plot", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = ".", *scn;
	bool do_plot = false, have_seed = false;
	unsigned long long seed = 0;
	struct sim_conf *c;
	struct sim_net *n;
	char err[512], *text, *end;
	size_t len;
	int o, r, rc;

	while ((o = getopt_long(argc, argv, "o:s:ph", opts, NULL)) != -1) {
		switch (o) {
		case 'o':
			out = optarg;
			break;
		case 's':
			errno = 0;
			seed = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || *optarg == '-') {
				fprintf(stderr, "uccl-sim: --seed: bad number '%s'\n", optarg);
				return 2;
			}
			have_seed = true;
			break;
		case 'p':
			do_plot = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	scn = argv[optind];
	text = read_file(scn, &len);
	if (!text) {
		fprintf(stderr, "uccl-sim: %s: %s\n", scn, strerror(errno));
		return 2;
	}
	c = malloc(sizeof(*c));
	if (!c) {
		free(text);
		return 2;
	}
	r = sim_conf_parse(text, len, scn, c, err, sizeof(err));
	free(text);
	if (r < 0) {
		fprintf(stderr, "uccl-sim: %s\n", err);
		free(c);
		return 2;
	}
	if (!have_seed)
		seed = c->net.seed;
	if (mkdir(out, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, "uccl-sim: %s: %s\n", out, strerror(errno));
		free(c);
		return 2;
	}
	n = sim_conf_build(c, seed, err, sizeof(err));
	if (!n) {
		fprintf(stderr, "uccl-sim: %s: %s\n", scn, err);
		free(c);
		return 2;
	}
	r = sim_net_run(n);
	if (r < 0 && r != -ETIME && r != -ENODATA)
		fprintf(stderr, "uccl-sim: simulation stopped: %s\n", strerror(-r));
	rc = summary(n, c, scn, seed, r);
	if (write_fct(n, out) < 0 || write_tput(n, c, out) < 0 || write_queue(n, c, out) < 0 ||
	    write_ports(n, out) < 0)
		rc = 2;
	else if (do_plot && plot(n, out) < 0)
		rc = 2;
	if (fflush(stdout) != 0)
		rc = 2;
	sim_net_free(n);
	free(c);
	return rc;
}
