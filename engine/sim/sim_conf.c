/* SPDX-License-Identifier: MIT */
/*
 * sim_conf: the scenario parser and builder. Lines are "key = value";
 * '#' starts a comment; values are words separated by blanks. Numbers are
 * decimals with an optional fraction and a unit; the scaled result must be
 * a whole number (no floating point anywhere, so a scenario means the same
 * thing on every machine). Checks that depend on several keys (topology
 * versus its shape keys, host numbers versus the host count) run after the
 * last line and name the line of the offending key.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cc/cc.h"
#include "engine/sim/sim_conf.h"
#include "engine/sim/sim_core.h"
#include "engine/tpchan.h"
#include "engine/wire.h"

#define MAX_WORDS 12
#define NS_PER_S  1000000000ull

struct unit {
	const char *suffix;
	uint64_t mult;
};

static const struct unit size_units[] = {
	{ "", 1 }, { "B", 1 }, { "KB", 1000 }, { "MB", 1000000 }, { "GB", 1000000000 },
	{ "KiB", 1024 }, { "MiB", 1 << 20 }, { "GiB", 1 << 30 }, { NULL, 0 },
};
static const struct unit time_units[] = {
	{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", NS_PER_S }, { NULL, 0 },
};
static const struct unit rate_units[] = {      /* to Mbit/s */
	{ "M", 1 }, { "Mbps", 1 }, { "G", 1000 }, { "Gbps", 1000 },
	{ "T", 1000000 }, { "Tbps", 1000000 }, { NULL, 0 },
};
static const struct unit prob_units[] = {      /* to ppm */
	{ "%", 10000 }, { "ppm", 1 }, { NULL, 0 },
};
static const struct unit count_units[] = { { "", 1 }, { NULL, 0 } };

enum key {
	K_TOPOLOGY, K_HOSTS, K_LEAVES, K_SPINES, K_HOSTS_PER_LEAF, K_HOST_RATE, K_UPLINK_RATE,
	K_DELAY, K_QUEUE, K_ECN, K_LOSS, K_MTU, K_CHUNK, K_CC, K_RECOVERY, K_PATHS, K_SPRAY,
	K_MAX_INFLIGHT, K_CC_DELAY_SLACK, K_CC_BASE_RTT, K_RTO_MIN, K_DUPTHRESH, K_RACK, K_ADAPTIVE_CHUNK, K_INBAND,
	K_SAMPLE, K_TIME_LIMIT, K_SEED, K_PFC,
	K_FLOW, K_INCAST, K_PERMUTATION, K_STAGGER, K_COUNT
};

static const char *const key_names[K_COUNT] = {
	"topology", "hosts", "leaves", "spines", "hosts_per_leaf", "host_rate", "uplink_rate",
	"delay", "queue", "ecn", "loss", "mtu", "chunk", "cc", "recovery", "paths", "spray",
	"max_inflight", "cc_delay_slack", "cc_base_rtt", "rto_min", "dupthresh", "rack", "adaptive_chunk", "inband",
	"sample", "time_limit", "seed", "pfc",
	"flow", "incast", "permutation", "stagger",
};

struct parser {
	const char *fname;
	uint32_t line;
	uint32_t seen[K_COUNT];        /* line of the last occurrence, 0 = never */
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 3, 4)))
static int fail(struct parser *ps, uint32_t line, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (!ps->errlen)
		return -EINVAL;
	k = snprintf(ps->err, ps->errlen, "%s:%u: ", ps->fname, line);
	if (k < 0 || (size_t)k >= ps->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(ps->err + k, ps->errlen - (size_t)k, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* "12.5us" -> 12500 with time_units. 0, or -EINVAL (syntax, unknown
 * unit, not a whole number) or -ERANGE (> max). */
static int parse_num(const char *s, const struct unit *units, uint64_t max, uint64_t *out)
{
	unsigned __int128 m = 0, scale = 1, v;
	const char *p = s;
	int digits = 0, frac = 0;

	while (*p >= '0' && *p <= '9') {
		m = m * 10 + (unsigned)(*p++ - '0');
		if (m > UINT64_MAX)
			return -ERANGE;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			if (++frac > 9)
				return -EINVAL;
			m = m * 10 + (unsigned)(*p++ - '0');
			scale *= 10;
			digits++;
		}
		if (!frac)
			return -EINVAL;
	}
	if (!digits)
		return -EINVAL;
	for (const struct unit *u = units; u->suffix; u++) {
		if (strcmp(p, u->suffix) != 0)
			continue;
		v = m * u->mult;
		if (v % scale)
			return -EINVAL;
		v /= scale;
		if (v > max)
			return -ERANGE;
		*out = (uint64_t)v;
		return 0;
	}
	return -EINVAL;
}

static int num(struct parser *ps, const char *what, const char *s, const struct unit *units,
	       uint64_t min, uint64_t max, uint64_t *out)
{
	const char *hint = units == size_units ? " (bytes, or with B, KB, MB, GB, KiB, MiB, GiB)" :
			   units == time_units ? " (with ns, us, ms or s)" :
			   units == rate_units ? " (bits/s with M, G or T, e.g. 100G)" :
			   units == prob_units ? " (with % or ppm)" : "";
	int r = parse_num(s, units, UINT64_MAX, out);

	if (r == -EINVAL)
		return fail(ps, ps->line, "%s: bad value '%s'%s", what, s, hint);
	if (r < 0 || *out < min || *out > max)
		return fail(ps, ps->line, "%s: '%s' out of range", what, s);
	return 0;
}

#define SIZE_MAX_FLOW (64ull << 30)
#define TIME_MAX      (1000 * NS_PER_S)
#define ROWS_MAX      1000000ull   /* sampling rows: each holds every port and flow */
#define DELAY_MAX     (10 * 1000000ull)
#define ROUTES_MAX    (1ull << 25) /* leaf-spine route entries, about hosts x leaves x spines */

static int words_expect(struct parser *ps, const char *key, int nw, int lo, int hi)
{
	if (nw < lo || nw > hi)
		return fail(ps, ps->line, "%s: expected %d to %d words, got %d", key, lo, hi, nw);
	return 0;
}

/* A switch: "on" or "off". */
static int on_off(struct parser *ps, const char *key, char **w, int nw, bool *out)
{
	int r = words_expect(ps, key, nw, 1, 1);

	if (r < 0)
		return r;
	if (strcmp(w[0], "on") == 0)
		*out = true;
	else if (strcmp(w[0], "off") == 0)
		*out = false;
	else
		return fail(ps, ps->line, "%s: '%s' is not on or off", key, w[0]);
	return 0;
}

/* Optional trailing "to H", "at T", "every T" words of traffic lines. */
static int traffic_opts(struct parser *ps, const char *key, char **w, int nw, int from,
			struct sim_traffic *t, bool allow_to, bool need_every)
{
	bool got_to = false, got_at = false, got_every = false;
	uint64_t v;
	int r;

	for (int i = from; i < nw; i += 2) {
		if (i + 1 >= nw)
			return fail(ps, ps->line, "%s: '%s' needs a value", key, w[i]);
		if (strcmp(w[i], "to") == 0 && allow_to && !got_to) {
			r = num(ps, key, w[i + 1], count_units, 0, SIM_CONF_MAX_HOSTS - 1, &v);
			t->dst = (uint32_t)v;
			got_to = true;
		} else if (strcmp(w[i], "at") == 0 && !got_at) {
			r = num(ps, key, w[i + 1], time_units, 0, TIME_MAX, &t->at_ns);
			got_at = true;
		} else if (strcmp(w[i], "every") == 0 && need_every && !got_every) {
			r = num(ps, key, w[i + 1], time_units, 0, TIME_MAX, &t->every_ns);
			got_every = true;
		} else {
			return fail(ps, ps->line, "%s: unexpected '%s'", key, w[i]);
		}
		if (r < 0)
			return r;
	}
	if (need_every && !got_every)
		return fail(ps, ps->line, "%s: 'every TIME' is required", key);
	return 0;
}

static int parse_traffic(struct parser *ps, struct sim_conf *c, enum key k, char **w, int nw)
{
	const char *key = key_names[k];
	struct sim_traffic *t;
	uint64_t v;
	int r;

	if (c->ntr >= SIM_CONF_MAX_TRAFFIC)
		return fail(ps, ps->line, "more than %u traffic lines", SIM_CONF_MAX_TRAFFIC);
	t = &c->tr[c->ntr];
	*t = (struct sim_traffic){ .line = ps->line };
	switch (k) {
	case K_FLOW:   /* SRC DST SIZE [at T] */
		t->kind = SIM_TR_FLOW;
		if (nw < 3)
			return fail(ps, ps->line, "flow: expected SRC DST SIZE [at TIME]");
		if ((r = num(ps, key, w[0], count_units, 0, SIM_CONF_MAX_HOSTS - 1, &v)) < 0)
			return r;
		t->src = (uint32_t)v;
		if ((r = num(ps, key, w[1], count_units, 0, SIM_CONF_MAX_HOSTS - 1, &v)) < 0)
			return r;
		t->dst = (uint32_t)v;
		if (t->src == t->dst)
			return fail(ps, ps->line, "flow: source and destination are the same host");
		if ((r = num(ps, key, w[2], size_units, 1, SIZE_MAX_FLOW, &t->bytes)) < 0)
			return r;
		r = traffic_opts(ps, key, w, nw, 3, t, false, false);
		t->n = 1;
		break;
	case K_INCAST:   /* N SIZE [to H] [at T] */
	case K_STAGGER:  /* N SIZE every T [to H] [at T] */
		t->kind = k == K_INCAST ? SIM_TR_INCAST : SIM_TR_STAGGER;
		if (nw < 2)
			return fail(ps, ps->line, "%s: expected N SIZE ...", key);
		if ((r = num(ps, key, w[0], count_units, 1, SIM_CONF_MAX_HOSTS - 1, &v)) < 0)
			return r;
		t->n = (uint32_t)v;
		if ((r = num(ps, key, w[1], size_units, 1, SIZE_MAX_FLOW, &t->bytes)) < 0)
			return r;
		r = traffic_opts(ps, key, w, nw, 2, t, true, k == K_STAGGER);
		break;
	case K_PERMUTATION:   /* SIZE [at T] */
		t->kind = SIM_TR_PERMUTATION;
		if (nw < 1)
			return fail(ps, ps->line, "permutation: expected SIZE [at TIME]");
		if ((r = num(ps, key, w[0], size_units, 1, SIZE_MAX_FLOW, &t->bytes)) < 0)
			return r;
		r = traffic_opts(ps, key, w, nw, 1, t, false, false);
		break;
	default:
		return -EINVAL;
	}
	if (r < 0)
		return r;
	c->ntr++;
	return 0;
}

static int parse_key(struct parser *ps, struct sim_conf *c, enum key k, char **w, int nw)
{
	struct sim_net_params *np = &c->net;
	uint64_t v;
	int r = 0;

	if (nw < 1)
		return fail(ps, ps->line, "%s: missing value", key_names[k]);
	switch (k) {
	case K_TOPOLOGY:
		if ((r = words_expect(ps, key_names[k], nw, 1, 1)) < 0)
			return r;
		if (strcmp(w[0], "pair") == 0)
			c->topo = SIM_TOPO_PAIR;
		else if (strcmp(w[0], "star") == 0)
			c->topo = SIM_TOPO_STAR;
		else if (strcmp(w[0], "leafspine") == 0)
			c->topo = SIM_TOPO_LEAFSPINE;
		else
			return fail(ps, ps->line, "topology: '%s' is not pair, star or leafspine", w[0]);
		return 0;
	case K_HOSTS:
	case K_LEAVES:
	case K_SPINES:
	case K_HOSTS_PER_LEAF:
		if ((r = words_expect(ps, key_names[k], nw, 1, 1)) < 0)
			return r;
		if ((r = num(ps, key_names[k], w[0], count_units, k == K_HOSTS ? 2 : 1,
			     SIM_CONF_MAX_HOSTS, &v)) < 0)
			return r;
		if (k == K_HOSTS)
			c->hosts = (uint32_t)v;
		else if (k == K_LEAVES)
			c->leaves = (uint32_t)v;
		else if (k == K_SPINES)
			c->spines = (uint32_t)v;
		else
			c->hosts_per_leaf = (uint32_t)v;
		return 0;
	case K_HOST_RATE:
	case K_UPLINK_RATE:
		if ((r = words_expect(ps, key_names[k], nw, 1, 1)) < 0)
			return r;
		return num(ps, key_names[k], w[0], rate_units, 1, 1600000,
			   k == K_HOST_RATE ? &c->host_rate_mbps : &c->uplink_rate_mbps);
	case K_DELAY:
		if ((r = words_expect(ps, key_names[k], nw, 1, 1)) < 0)
			return r;
		/* a leaf-spine round trip crosses 8 links and must stay under the
		 * transport's rto_max (100 ms), or every packet times out and is
		 * resent until the flow fails */
		return num(ps, "delay", w[0], time_units, 0, DELAY_MAX, &c->delay_ns);
	case K_QUEUE:
		if ((r = words_expect(ps, key_names[k], nw, 1, 1)) < 0)
			return r;
		return num(ps, "queue", w[0], size_units, 1024, 1ull << 30, &np->queue_bytes);
	case K_ECN:
		if (strcmp(w[0], "none") == 0) {
			np->ecn.mode = SIM_ECN_NONE;
			return words_expect(ps, "ecn", nw, 1, 1);
		}
		if (strcmp(w[0], "step") == 0) {
			np->ecn.mode = SIM_ECN_STEP;
			if ((r = words_expect(ps, "ecn step", nw, 2, 2)) < 0)
				return r;
			return num(ps, "ecn step", w[1], size_units, 0, 1ull << 30, &np->ecn.k_bytes);
		}
		if (strcmp(w[0], "red") == 0) {
			np->ecn.mode = SIM_ECN_RED;
			if ((r = words_expect(ps, "ecn red", nw, 4, 4)) < 0)
				return r;
			if ((r = num(ps, "ecn red min", w[1], size_units, 0, 1ull << 30,
				     &np->ecn.min_bytes)) < 0 ||
			    (r = num(ps, "ecn red max", w[2], size_units, 1, 1ull << 30,
				     &np->ecn.max_bytes)) < 0 ||
			    (r = num(ps, "ecn red pmax", w[3], prob_units, 0, 1000000, &v)) < 0)
				return r;
			np->ecn.pmax_ppm = (uint32_t)v;
			if (np->ecn.min_bytes >= np->ecn.max_bytes)
				return fail(ps, ps->line, "ecn red: min must be below max");
			return 0;
		}
		return fail(ps, ps->line, "ecn: '%s' is not none, step or red", w[0]);
	case K_LOSS:
		if (strcmp(w[0], "none") == 0) {
			np->loss.mode = SIM_LOSS_NONE;
			return words_expect(ps, "loss", nw, 1, 1);
		}
		if (strcmp(w[0], "random") == 0) {
			np->loss.mode = SIM_LOSS_RANDOM;
			if ((r = words_expect(ps, "loss random", nw, 2, 2)) < 0 ||
			    (r = num(ps, "loss random", w[1], prob_units, 0, 1000000, &v)) < 0)
				return r;
			np->loss.ppm = (uint32_t)v;
			return 0;
		}
		if (strcmp(w[0], "bursty") == 0) {
			uint64_t p[4] = { 0, 0, 0, 0 };

			np->loss.mode = SIM_LOSS_BURSTY;
			if ((r = words_expect(ps, "loss bursty", nw, 4, 5)) < 0)
				return r;
			for (int i = 1; i < nw; i++)
				if ((r = num(ps, "loss bursty", w[i], prob_units, 0, 1000000,
					     &p[i - 1])) < 0)
					return r;
			np->loss.p_gb_ppm = (uint32_t)p[0];
			np->loss.p_bg_ppm = (uint32_t)p[1];
			np->loss.bad_ppm = (uint32_t)p[2];
			np->loss.good_ppm = (uint32_t)p[3];
			return 0;
		}
		return fail(ps, ps->line, "loss: '%s' is not none, random or bursty", w[0]);
	case K_MTU:
		if ((r = words_expect(ps, "mtu", nw, 1, 1)) < 0 ||
		    (r = num(ps, "mtu", w[0], count_units, 256, TPCHAN_MTU_MAX, &v)) < 0)
			return r;
		np->mtu = (uint32_t)v;
		return 0;
	case K_CHUNK:
		if ((r = words_expect(ps, "chunk", nw, 1, 1)) < 0 ||
		    (r = num(ps, "chunk", w[0], size_units, 1024, 16u << 20, &v)) < 0)
			return r;
		np->chunk_bytes = (uint32_t)v;
		return 0;
	case K_CC:
		if ((r = words_expect(ps, "cc", nw, 1, 1)) < 0)
			return r;
		np->cc = cc_find(w[0]);
		if (!np->cc)
			return fail(ps, ps->line, "cc: unknown '%s' (known: %s)", w[0], cc_names());
		snprintf(c->cc_name, sizeof(c->cc_name), "%s", w[0]);
		return 0;
	case K_RECOVERY:
		if ((r = words_expect(ps, "recovery", nw, 1, 1)) < 0)
			return r;
		if (strcmp(w[0], "sack") == 0)
			np->go_back_n = false;
		else if (strcmp(w[0], "gbn") == 0)
			np->go_back_n = true;
		else
			return fail(ps, ps->line, "recovery: '%s' is not sack or gbn", w[0]);
		return 0;
	case K_PATHS:
		if ((r = words_expect(ps, "paths", nw, 1, 1)) < 0 ||
		    (r = num(ps, "paths", w[0], count_units, 1, 256, &v)) < 0)
			return r;
		np->npaths = (uint32_t)v;
		return 0;
	case K_SPRAY:
		if ((r = words_expect(ps, "spray", nw, 1, 2)) < 0)
			return r;
		np->path_per_packet = false;
		np->path_run_bytes = 0;
		if (strcmp(w[0], "run") == 0) {
			/* chunks keep a path for SIZE bytes (the daemon's
			 * path_run_bytes) */
			if (nw != 2)
				return fail(ps, ps->line, "spray: run needs a SIZE (spray = run 128KiB)");
			if ((r = num(ps, "spray run", w[1], size_units, 1, TPCHAN_MAX_PATH_RUN, &v)) < 0)
				return r;
			np->path_run_bytes = (uint32_t)v;
			return 0;
		}
		if (nw != 1)
			return fail(ps, ps->line, "spray: '%s' takes no SIZE", w[0]);
		if (strcmp(w[0], "packet") == 0)
			np->path_per_packet = true;
		else if (strcmp(w[0], "chunk") != 0)
			return fail(ps, ps->line, "spray: '%s' is not chunk, packet or run SIZE", w[0]);
		return 0;
	case K_MAX_INFLIGHT:
		if ((r = words_expect(ps, "max_inflight", nw, 1, 1)) < 0)
			return r;
		return num(ps, "max_inflight", w[0], size_units, 16384, 1ull << 30,
			   &np->max_inflight_bytes);
	case K_CC_DELAY_SLACK:
		if ((r = words_expect(ps, "cc_delay_slack", nw, 1, 1)) < 0)
			return r;
		return num(ps, "cc_delay_slack", w[0], time_units, 1, NS_PER_S,
			   &np->cc_delay_slack_ns);
	case K_CC_BASE_RTT:
		if ((r = words_expect(ps, "cc_base_rtt", nw, 1, 1)) < 0)
			return r;
		return num(ps, "cc_base_rtt", w[0], time_units, 1, NS_PER_S, &np->cc_base_rtt_ns);
	case K_RTO_MIN:
		if ((r = words_expect(ps, "rto_min", nw, 1, 1)) < 0)
			return r;
		return num(ps, "rto_min", w[0], time_units, 1000, 100000000, &np->rto_min_ns);
	case K_DUPTHRESH:
		if ((r = words_expect(ps, "dupthresh", nw, 1, 1)) < 0 ||
		    (r = num(ps, "dupthresh", w[0], count_units, 1, 1000, &v)) < 0)
			return r;
		np->dupthresh = (uint32_t)v;
		return 0;
	case K_RACK: {
		bool on;

		if ((r = on_off(ps, "rack", w, nw, &on)) < 0)
			return r;
		np->rack_off = !on;
		return 0;
	}
	case K_ADAPTIVE_CHUNK:
		return on_off(ps, "adaptive_chunk", w, nw, &np->adaptive_chunk);
	case K_INBAND:
		return on_off(ps, "inband", w, nw, &np->inband);
	case K_SAMPLE:
		if ((r = words_expect(ps, "sample", nw, 1, 1)) < 0)
			return r;
		return num(ps, "sample", w[0], time_units, 0, NS_PER_S, &np->sample_ns);
	case K_TIME_LIMIT:
		if ((r = words_expect(ps, "time_limit", nw, 1, 1)) < 0)
			return r;
		return num(ps, "time_limit", w[0], time_units, 1000, TIME_MAX, &np->time_limit_ns);
	case K_SEED:
		if ((r = words_expect(ps, "seed", nw, 1, 1)) < 0)
			return r;
		return num(ps, "seed", w[0], count_units, 0, UINT64_MAX, &np->seed);
	case K_PFC:   /* off | on XOFF XON */
		if (strcmp(w[0], "off") == 0) {
			np->pfc = (struct sim_pfc){ .on = false };
			return words_expect(ps, "pfc", nw, 1, 1);
		}
		if (strcmp(w[0], "on") != 0)
			return fail(ps, ps->line, "pfc: '%s' is not on or off", w[0]);
		if ((r = words_expect(ps, "pfc on", nw, 3, 3)) < 0 ||
		    (r = num(ps, "pfc xoff", w[1], size_units, 1, 1ull << 30,
			     &np->pfc.xoff_bytes)) < 0 ||
		    (r = num(ps, "pfc xon", w[2], size_units, 0, 1ull << 30,
			     &np->pfc.xon_bytes)) < 0)
			return r;
		if (np->pfc.xon_bytes >= np->pfc.xoff_bytes)
			return fail(ps, ps->line, "pfc: xon must be below xoff");
		np->pfc.on = true;
		return 0;
	default:
		return parse_traffic(ps, c, k, w, nw);
	}
}

static bool repeatable(enum key k)
{
	return k >= K_FLOW;
}

static int parse_line(struct parser *ps, struct sim_conf *c, char *s)
{
	char *w[MAX_WORDS + 1], *eq, *key, *p;
	int nw = 0, k;

	p = strchr(s, '#');
	if (p)
		*p = '\0';
	for (p = s; *p; p++)
		if ((unsigned char)*p < 0x20 && *p != '\t')
			return fail(ps, ps->line, "control character in line");
		else if ((unsigned char)*p >= 0x7f)
			return fail(ps, ps->line, "non-ASCII character in line");
	key = s + strspn(s, " \t");
	if (!*key)
		return 0;
	eq = strchr(key, '=');
	if (!eq)
		return fail(ps, ps->line, "expected 'key = value'");
	*eq = '\0';
	p = key + strcspn(key, " \t");
	if (*(p + strspn(p, " \t")))
		return fail(ps, ps->line, "a key is one word");
	*p = '\0';
	if (!*key)
		return fail(ps, ps->line, "missing key before '='");
	for (k = 0; k < K_COUNT; k++)
		if (strcmp(key, key_names[k]) == 0)
			break;
	if (k == K_COUNT)
		return fail(ps, ps->line, "unknown key '%s'", key);
	if (ps->seen[k] && !repeatable(k))
		return fail(ps, ps->line, "%s given twice (first on line %u)", key, ps->seen[k]);
	ps->seen[k] = ps->line;
	for (p = eq + 1;;) {
		p += strspn(p, " \t");
		if (!*p)
			break;
		if (nw == MAX_WORDS)
			return fail(ps, ps->line, "%s: too many words", key);
		w[nw++] = p;
		p += strcspn(p, " \t");
		if (*p)
			*p++ = '\0';
	}
	return parse_key(ps, c, (enum key)k, w, nw);
}

static void defaults(struct sim_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->topo = SIM_TOPO_PAIR;
	c->host_rate_mbps = 100000;
	c->delay_ns = 1000;
	snprintf(c->cc_name, sizeof(c->cc_name), "%s", "window");
	c->net = (struct sim_net_params){
		.seed = 1, .mtu = 4096, .queue_bytes = 512 << 10, .npaths = 1,
		.sample_ns = 10000, .time_limit_ns = NS_PER_S, .cc = cc_find("window"),
	};
}

/* Cross-key checks, after the last line. */
static int finish(struct parser *ps, struct sim_conf *c)
{
	static const enum key ls_only[] = { K_LEAVES, K_SPINES, K_HOSTS_PER_LEAF, K_UPLINK_RATE };
	uint64_t flows = 0;

	for (size_t i = 0; i < sizeof(ls_only) / sizeof(ls_only[0]); i++)
		if (c->topo != SIM_TOPO_LEAFSPINE && ps->seen[ls_only[i]])
			return fail(ps, ps->seen[ls_only[i]], "%s: only for topology = leafspine",
				    key_names[ls_only[i]]);
	switch (c->topo) {
	case SIM_TOPO_PAIR:
		if (ps->seen[K_HOSTS] && c->hosts != 2)
			return fail(ps, ps->seen[K_HOSTS], "hosts: a pair has 2 hosts");
		c->hosts = 2;
		break;
	case SIM_TOPO_STAR:
		if (!ps->seen[K_HOSTS])
			return fail(ps, ps->seen[K_TOPOLOGY], "topology star needs hosts = N");
		break;
	case SIM_TOPO_LEAFSPINE:
		if (ps->seen[K_HOSTS])
			return fail(ps, ps->seen[K_HOSTS],
				    "hosts: for leafspine give leaves and hosts_per_leaf");
		if (!ps->seen[K_LEAVES] || !ps->seen[K_SPINES] || !ps->seen[K_HOSTS_PER_LEAF])
			return fail(ps, ps->seen[K_TOPOLOGY],
				    "topology leafspine needs leaves, spines and hosts_per_leaf");
		if ((uint64_t)c->leaves * c->hosts_per_leaf > SIM_CONF_MAX_HOSTS ||
		    c->leaves * c->hosts_per_leaf < 2)
			return fail(ps, ps->seen[K_HOSTS_PER_LEAF],
				    "leaves x hosts_per_leaf must be 2 to %u", SIM_CONF_MAX_HOSTS);
		if (c->spines > 256)
			return fail(ps, ps->seen[K_SPINES], "spines: at most 256");
		c->hosts = c->leaves * c->hosts_per_leaf;
		/* every leaf reaches a host on another leaf through every spine:
		 * set-up time and the route table grow with this product (2^25 is
		 * a few seconds and a few hundred MB) */
		if ((uint64_t)c->hosts * c->leaves * c->spines > ROUTES_MAX)
			return fail(ps, ps->seen[K_SPINES],
				    "leafspine: hosts x leaves x spines is %llu, at most %llu",
				    (unsigned long long)c->hosts * c->leaves * c->spines, ROUTES_MAX);
		if (!c->uplink_rate_mbps)
			c->uplink_rate_mbps = c->host_rate_mbps;
		break;
	}
	if (c->net.max_inflight_bytes && c->net.max_inflight_bytes < (c->net.chunk_bytes ?
								     c->net.chunk_bytes : 32768))
		return fail(ps, ps->seen[K_MAX_INFLIGHT], "max_inflight: below one chunk");
	if (c->net.mtu <= WIRE_DATA_HDR_LEN)
		return fail(ps, ps->seen[K_MTU], "mtu: too small");
	/* a drop-tail queue shorter than a packet drops every full-size one */
	if (c->net.queue_bytes < c->net.mtu)
		return fail(ps, ps->seen[K_QUEUE], "queue: %llu bytes is below one mtu (%u)",
			    (unsigned long long)c->net.queue_bytes, c->net.mtu);
	/* PFC moves the buffer to the ingress: what lies above xoff is the
	 * headroom for bytes already on their way when PAUSE leaves */
	if (c->net.pfc.on && (c->net.pfc.xoff_bytes > c->net.queue_bytes ||
			      c->net.queue_bytes - c->net.pfc.xoff_bytes < c->net.mtu))
		return fail(ps, ps->seen[K_PFC],
			    "pfc: xoff must leave at least one mtu (%u) of the queue (%llu) as "
			    "headroom", c->net.mtu, (unsigned long long)c->net.queue_bytes);
	/* rows are kept from time 0 to the last event, up to the time limit */
	if (c->net.sample_ns && c->net.time_limit_ns / c->net.sample_ns > ROWS_MAX)
		return fail(ps, ps->seen[K_SAMPLE] > ps->seen[K_TIME_LIMIT] ? ps->seen[K_SAMPLE] :
				ps->seen[K_TIME_LIMIT],
			    "time_limit / sample: %llu sampling rows, at most %llu (raise sample, "
			    "or sample = 0ns for none)",
			    (unsigned long long)(c->net.time_limit_ns / c->net.sample_ns),
			    ROWS_MAX);
	if (!c->ntr)
		return fail(ps, ps->line, "no traffic (flow, incast, permutation or stagger)");
	for (uint32_t i = 0; i < c->ntr; i++) {
		const struct sim_traffic *t = &c->tr[i];
		uint64_t last = t->at_ns;     /* the line's last flow start */

		switch (t->kind) {
		case SIM_TR_FLOW:
			if (t->src >= c->hosts || t->dst >= c->hosts)
				return fail(ps, t->line, "flow: host out of range (%u hosts)", c->hosts);
			flows++;
			break;
		case SIM_TR_INCAST:
		case SIM_TR_STAGGER:
			if (t->dst >= c->hosts)
				return fail(ps, t->line, "to %u: host out of range (%u hosts)", t->dst,
					    c->hosts);
			if (t->n >= c->hosts)
				return fail(ps, t->line, "%u senders need more than %u hosts", t->n,
					    c->hosts);
			if (t->kind == SIM_TR_STAGGER &&
			    (unsigned __int128)t->every_ns * t->n + t->at_ns > TIME_MAX)
				return fail(ps, t->line, "stagger: last start past %llu s",
					    (unsigned long long)(TIME_MAX / NS_PER_S));
			if (t->kind == SIM_TR_STAGGER)
				last += (uint64_t)(t->n - 1) * t->every_ns;
			flows += t->n;
			break;
		case SIM_TR_PERMUTATION:
			flows += c->hosts;
			break;
		}
		if (flows > SIM_CONF_MAX_FLOWS)
			return fail(ps, t->line, "more than %u flows", SIM_CONF_MAX_FLOWS);
		/* the run stops at time_limit: such a flow could only be unfinished */
		if (last >= c->net.time_limit_ns)
			return fail(ps, t->line, "%s: %s at %llu ns, not before time_limit (%llu ns)",
				    key_names[K_FLOW + t->kind],   /* same order as the kinds */
				    t->kind == SIM_TR_STAGGER ? "the last flow starts" : "starts",
				    (unsigned long long)last,
				    (unsigned long long)c->net.time_limit_ns);
	}
	c->nflows = (uint32_t)flows;
	return 0;
}

int sim_conf_parse(const char *text, size_t len, const char *fname, struct sim_conf *out,
		   char *err, size_t errlen)
{
	struct parser ps = { .fname = fname ? fname : "scenario", .err = err, .errlen = errlen };
	char line[SIM_CONF_MAX_LINE + 1];
	size_t pos = 0;
	int r;

	if (errlen)
		err[0] = '\0';
	defaults(out);
	if (len > SIM_CONF_MAX_BYTES)
		return fail(&ps, 0, "file longer than %u bytes", SIM_CONF_MAX_BYTES);
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		size_t m = n && text[pos + n - 1] == '\r' ? n - 1 : n;   /* CRLF: not counted */

		ps.line++;
		if (m > SIM_CONF_MAX_LINE)
			return fail(&ps, ps.line, "line longer than %u characters", SIM_CONF_MAX_LINE);
		memcpy(line, text + pos, m);
		line[m] = '\0';
		if (memchr(line, '\0', m))
			return fail(&ps, ps.line, "NUL character in line");
		r = parse_line(&ps, out, line);
		if (r < 0)
			return r;
		pos += n + (nl ? 1 : 0);
	}
	return finish(&ps, out);
}

const char *sim_topo_name(enum sim_topo t)
{
	switch (t) {
	case SIM_TOPO_PAIR:
		return "pair";
	case SIM_TOPO_STAR:
		return "star";
	case SIM_TOPO_LEAFSPINE:
		return "leafspine";
	}
	return "?";
}

/* ---- building ---- */

static uint32_t leaf_of(const struct sim_conf *c, uint32_t h)
{
	return c->topo == SIM_TOPO_LEAFSPINE ? h / c->hosts_per_leaf : 0;
}

/* A random permutation with no fixed point; on a leaf-spine with more than
 * one leaf, every destination on another leaf. */
static int permutation(const struct sim_conf *c, uint64_t *rng, uint32_t *p)
{
	uint32_t n = c->hosts;
	bool cross = c->topo == SIM_TOPO_LEAFSPINE && c->leaves > 1;

	for (uint32_t i = 0; i < n; i++)
		p[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(sim_rand(rng) % (i + 1)), t = p[i];

		p[i] = p[j];
		p[j] = t;
	}
	/* repair: swap a bad slot with a random one when that fixes it and
	 * breaks nothing; bounded, then a plain derangement fallback */
	for (uint64_t iter = 0; iter < 1000ull * n; iter++) {
		uint32_t bad = n, j, t;

		for (uint32_t i = 0; i < n && bad == n; i++)
			if (p[i] == i || (cross && leaf_of(c, p[i]) == leaf_of(c, i)))
				bad = i;
		if (bad == n)
			return 0;
		j = (uint32_t)(sim_rand(rng) % n);
		if (p[j] == bad || p[bad] == j ||
		    (cross && (leaf_of(c, p[j]) == leaf_of(c, bad) ||
			       leaf_of(c, p[bad]) == leaf_of(c, j))))
			continue;
		t = p[bad];
		p[bad] = p[j];
		p[j] = t;
	}
	for (uint32_t i = 0; i < n; i++)
		p[i] = (i + 1) % n;
	return 0;
}

static int build_topology(const struct sim_conf *c, struct sim_net *n)
{
	char name[24];
	int r;

	for (uint32_t h = 0; h < c->hosts; h++) {
		snprintf(name, sizeof(name), "h%u", h);
		if ((r = sim_net_add_host(n, name)) < 0)
			return r;
	}
	switch (c->topo) {
	case SIM_TOPO_PAIR:
		return sim_net_link_hosts(n, 0, 1, c->host_rate_mbps, c->delay_ns);
	case SIM_TOPO_STAR:
		if ((r = sim_net_add_switch(n, "sw0")) < 0)
			return r;
		for (uint32_t h = 0; h < c->hosts; h++)
			if ((r = sim_net_link_host(n, h, 0, c->host_rate_mbps, c->delay_ns)) < 0)
				return r;
		return 0;
	case SIM_TOPO_LEAFSPINE:
		for (uint32_t l = 0; l < c->leaves; l++) {
			snprintf(name, sizeof(name), "leaf%u", l);
			if ((r = sim_net_add_switch(n, name)) < 0)
				return r;
		}
		for (uint32_t s = 0; s < c->spines; s++) {
			snprintf(name, sizeof(name), "spine%u", s);
			if ((r = sim_net_add_switch(n, name)) < 0)
				return r;
		}
		for (uint32_t h = 0; h < c->hosts; h++)
			if ((r = sim_net_link_host(n, h, leaf_of(c, h), c->host_rate_mbps,
						   c->delay_ns)) < 0)
				return r;
		for (uint32_t l = 0; l < c->leaves; l++)
			for (uint32_t s = 0; s < c->spines; s++)
				if ((r = sim_net_link_switches(n, l, c->leaves + s, c->uplink_rate_mbps,
							       c->delay_ns)) < 0)
					return r;
		return 0;
	}
	return -EINVAL;
}

static int build_traffic(const struct sim_conf *c, struct sim_net *n, uint64_t seed)
{
	uint64_t rng = sim_mix(seed ^ 0x7aff1cull);
	uint32_t *perm;
	int r;

	perm = malloc(c->hosts * sizeof(*perm));
	if (!perm)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->ntr; i++) {
		const struct sim_traffic *t = &c->tr[i];

		switch (t->kind) {
		case SIM_TR_FLOW:
			r = sim_net_add_flow(n, t->src, t->dst, t->bytes, t->at_ns);
			break;
		case SIM_TR_INCAST:
		case SIM_TR_STAGGER:
			r = 0;
			for (uint32_t k = 0; k < t->n && r >= 0; k++)
				r = sim_net_add_flow(n, (t->dst + 1 + k) % c->hosts, t->dst, t->bytes,
						     t->at_ns + (t->kind == SIM_TR_STAGGER ?
								 k * t->every_ns : 0));
			break;
		case SIM_TR_PERMUTATION:
			r = permutation(c, &rng, perm);
			for (uint32_t h = 0; h < c->hosts && r >= 0; h++)
				r = sim_net_add_flow(n, h, perm[h], t->bytes, t->at_ns);
			break;
		default:
			r = -EINVAL;
		}
		if (r < 0) {
			free(perm);
			return r;
		}
	}
	free(perm);
	return 0;
}

struct sim_net *sim_conf_build(const struct sim_conf *c, uint64_t seed, char *err,
			       size_t errlen)
{
	struct sim_net_params p = c->net;
	struct sim_net *n;
	int r;

	p.seed = seed;
	n = sim_net_new(&p);
	if (!n) {
		snprintf(err, errlen, "cannot create the fabric (bad parameters or no memory)");
		return NULL;
	}
	r = build_topology(c, n);
	if (r >= 0)
		r = build_traffic(c, n, seed);
	if (r < 0) {
		snprintf(err, errlen, "building the scenario: %s", strerror(-r));
		return sim_net_free(n);
	}
	return n;
}
