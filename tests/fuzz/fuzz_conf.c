/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the configuration parser. The input is a config file.
 * A file that parses must hold to the table's rules and survive a round
 * trip through conf_dump; a file that does not must produce a printable
 * "fuzz:LINE: ..." message.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/conf.h"
#include "engine/cc/cc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct text {
	char buf[16384];
	size_t len;
};

static void append(void *arg, const char *line)
{
	struct text *t = arg;
	size_t n = strlen(line);

	if (t->len + n + 2 > sizeof(t->buf))
		abort();  /* a dump is bounded by the table; this is plenty */
	memcpy(t->buf + t->len, line, n);
	t->len += n;
	t->buf[t->len++] = '\n';
	t->buf[t->len] = '\0';
}

static void count(void *arg, const char *line)
{
	(void)line;
	++*(int *)arg;
}

static bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static void check_invariants(const struct conf *c)
{
	if (c->n_allow_uids > CONF_MAX_IDS || c->n_allow_gids > CONF_MAX_IDS)
		abort();
	if (!pow2(c->ring_depth) || !pow2(c->max_ring_depth) || c->ring_depth > c->max_ring_depth)
		abort();
	if (c->max_ctl_msg < 1024 || c->max_ctl_msg > (1u << 20))
		abort();
	if (c->admin_gid < -1 || c->admin_gid > INT32_MAX || c->engine_cpu < -1)
		abort();
	if ((unsigned)c->log_level > LOG_LVL_DEBUG)
		abort();
	if (c->max_clients == 0 || c->max_registered_bytes < 4096)
		abort();
}

/* every peer_cc entry names a peer and a known controller */
static void check_peer_cc(const struct conf *c)
{
	if (c->n_peer_cc > CONF_MAX_PEERS)
		abort();
	for (uint32_t i = 0; i < c->n_peer_cc; i++) {
		bool known = false;

		for (uint32_t k = 0; k < c->n_peers && !known; k++)
			known = strcmp(c->peers[k].name, c->peer_cc[i].name) == 0;
		if (!known || !cc_find(c->peer_cc[i].cc) ||
		    strcmp(conf_cc_of(c, c->peer_cc[i].name), c->peer_cc[i].cc) != 0)
			abort();
	}
}

/* A message naming prefix ("fuzz:" for the parser, whose input is
 * named so; the reload's own for a reload) in printable ASCII. */
static void check_text(const char *err, const char *prefix)
{
	size_t n = strlen(err);

	if (n == 0 || strncmp(err, prefix, strlen(prefix)) != 0)
		abort();
	/* hostile bytes must not reach the log as they are */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)err[i] < 0x20 || (unsigned char)err[i] >= 0x7f)
			abort();
}

static void check_message(const char *err)
{
	check_text(err, "fuzz:");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct text t1, t2;
	struct conf c, again, cur;
	char err[512];
	int r, lines = 0, nopts = 0;

	r = conf_parse("fuzz", (const char *)data, size, &c, err, sizeof(err));
	if (r < 0) {
		check_message(err);
		return 0;
	}
	check_invariants(&c);
	check_peer_cc(&c);

	/* dump -> parse -> dump is a fixed point */
	t1.len = 0;
	conf_dump(&c, append, &t1);
	r = conf_parse("dump", t1.buf, t1.len, &again, err, sizeof(err));
	if (r < 0)
		abort();
	t2.len = 0;
	conf_dump(&again, append, &t2);
	if (t1.len != t2.len || memcmp(t1.buf, t2.buf, t1.len) != 0)
		abort();

	/* a reload from defaults changes at most every option, and a second
	 * identical reload applies nothing; one refused (without memory to
	 * find the reloadable options that go with kept restart-only ones)
	 * says why and changes nothing */
	conf_dump(&c, count, &nopts);
	conf_defaults(&cur);
	r = conf_reload(&cur, &c, count, &lines, err, sizeof(err));
	if (r == -EINVAL) {
		check_text(err, "with the options that need a restart kept: ");
		t1.len = 0;
		conf_dump(&cur, append, &t1);
		conf_defaults(&again);
		t2.len = 0;
		conf_dump(&again, append, &t2);
		if (lines || t1.len != t2.len || memcmp(t1.buf, t2.buf, t1.len) != 0)
			abort();
		return 0;
	}
	if (r < 0 || r > lines || lines > nopts)
		abort();
	if (conf_reload(&cur, &c, NULL, NULL, err, sizeof(err)) != 0)
		abort();
	return 0;
}
