/* SPDX-License-Identifier: MIT */
/*
 * none: no congestion control. The window is max_window (the flow-control
 * cap) whatever happens, for experiments that need the transport without a
 * controller: the baseline that shows what the others buy, or a fabric
 * whose own flow control (credits, a lossless link) does the job. Losses
 * are still recovered by the transport; they just do not slow it down.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/cc/cc.h"
#include "engine/cc/cc_int.h"

struct none {
	uint64_t window;
	uint64_t losses, timeouts;     /* seen, for ucclctl: they change nothing */
};

static void none_init(void *st, const struct cc_params *p)
{
	struct none *s = st;
	struct cc_bounds b;

	cc_bounds_init(&b, p);
	*s = (struct none){ .window = b.max_w };
}

static void none_on_ack(void *st, const struct cc_ack *a)
{
}

static void none_on_loss(void *st, uint64_t now_ns, bool timeout)
{
	struct none *s = st;

	if (timeout)
		s->timeouts++;
	else
		s->losses++;
}

static uint64_t none_window(const void *st)
{
	const struct none *s = st;

	return s->window;
}

static int none_describe(const void *st, const char **names, uint64_t *values, int n)
{
	const struct none *s = st;
	const char *const k[] = { "cwnd", "losses", "timeouts" };
	const uint64_t v[] = { s->window, s->losses, s->timeouts };

	return cc_describe_pairs(names, values, n, k, v, (int)(sizeof(k) / sizeof(k[0])));
}

const struct cc_ops cc_none_ops = {
	.name       = "none",
	.state_size = sizeof(struct none),
	.init       = none_init,
	.on_ack     = none_on_ack,
	.on_loss    = none_on_loss,
	.window     = none_window,
	.describe   = none_describe,
};
