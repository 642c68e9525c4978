/* SPDX-License-Identifier: MIT */
/*
 * fanout: one command on several engine threads. Memory regions go to every
 * engine: an endpoint's operations and remote accesses to a region are
 * checked by the engine that runs the endpoint, and a client's endpoints may
 * sit on different threads. A channel setting (congestion control) goes to
 * every sub-channel of the peer, on every thread.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/engthr.h"
#include "daemon/nthr.h"
#include "daemon/rconn.h"

#define FAN_MAX (CONF_MAX_ENGINE_THREADS * CONF_MAX_ENGINE_THREADS)

struct fan {
	struct daemon *d;
	struct engcmd *orig;
	uint32_t left;
	uint32_t ok;                   /* threads where it worked (bit per thread) */
	int result;
	bool undoing;
};

static void fan_done(struct engcmd *c);

/* tmpl on thread thr[k] (with chan[k] for channel commands), k < n */
static void fan_send(struct fan *f, const struct engcmd *tmpl, const uint32_t *thr,
		     const uint32_t *chan, uint32_t n)
{
	struct engcmd *cs[FAN_MAX];

	/* all or nothing: a region half-added or half-removed must not be
	 * left behind (the callers abort on cleanup failures alike) */
	for (uint32_t k = 0; k < n; k++) {
		cs[k] = malloc(sizeof(*cs[k]));
		if (!cs[k])
			abort();
		*cs[k] = *tmpl;
		cs[k]->done = fan_done;
		cs[k]->arg = f;
		cs[k]->ctx = (void *)(uintptr_t)thr[k];
		if (chan)
			cs[k]->u.chan_cc.chan = chan[k];
	}
	f->left = n;
	for (uint32_t k = 0; k < n; k++)
		engthr_submit(f->d->thr[thr[k]], cs[k]);
}

static void fan_done(struct engcmd *c)
{
	struct fan *f = c->arg;
	uint32_t i = (uint32_t)(uintptr_t)c->ctx;

	if (c->result < 0 && f->result >= 0 && !f->undoing)
		f->result = c->result;
	else if (c->result >= 0)
		f->ok |= 1u << i;
	free(c);
	if (--f->left)
		return;
	if (f->orig->type == ENGCMD_MR_ADD && f->result < 0 && f->ok && !f->undoing) {
		struct engcmd rm = { .type = ENGCMD_MR_REMOVE };
		uint32_t thr[CONF_MAX_ENGINE_THREADS], n = 0;

		for (uint32_t t = 0; t < f->d->n_thr; t++)
			if (f->ok & (1u << t))
				thr[n++] = t;
		rm.u.mr_rm.client_id = f->orig->u.mr.client_id;
		rm.u.mr_rm.mr_id = f->orig->u.mr.id;
		f->undoing = true;
		fan_send(f, &rm, thr, NULL, n);
		return;
	}
	f->orig->result = f->result;
	f->orig->done(f->orig);
	free(f);
}

static struct fan *fan_new(struct daemon *d, struct engcmd *c)
{
	struct fan *f = calloc(1, sizeof(*f));

	if (!f)
		abort();
	f->d = d;
	f->orig = c;
	return f;
}

void daemon_submit_all(struct daemon *d, struct engcmd *c)
{
	uint32_t thr[CONF_MAX_ENGINE_THREADS];

	if (d->n_thr == 1) {
		engthr_submit(d->thr[0], c);
		return;
	}
	for (uint32_t i = 0; i < d->n_thr; i++)
		thr[i] = i;
	fan_send(fan_new(d, c), c, thr, NULL, d->n_thr);
}

void daemon_submit_chans(struct daemon *d, struct engcmd *c, uint32_t slot, uint32_t rthreads)
{
	uint32_t thr[FAN_MAX], chan[FAN_MAX], n = 0;

	if (d->n_thr == 1 && rthreads <= 1) {
		c->u.chan_cc.chan = slot;
		engthr_submit(d->thr[0], c);
		return;
	}
	for (uint32_t i = 0; i < d->n_thr; i++) {
		for (uint32_t j = 0; j < rthreads; j++) {
			thr[n] = i;
			chan[n] = nthr_chan(slot, j, RCONN_MAX_CHANS);
			n++;
		}
	}
	fan_send(fan_new(d, c), c, thr, chan, n);
}
