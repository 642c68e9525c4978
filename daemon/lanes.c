/* SPDX-License-Identifier: MIT */
/*
 * lanes: binding and forgetting the lane sides of connections to peers
 * (daemon/lanes.h), as engine commands on the lane threads. The parts and
 * reports between threads go over the lane bus (daemon/lanebus.c).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "daemon/daemon.h"
#include "daemon/engthr.h"
#include "daemon/lanes.h"
#include "daemon/nthr.h"
#include "daemon/rconn.h"
#include "daemon/session.h"

struct lanes_job {
	uint32_t pending;
	int err;
	lanes_done_fn done;
	void *arg;
};

uint32_t lanes_count(const struct daemon *d, uint32_t rlanes, uint32_t rthreads)
{
	return d->bus ? nthr_lanes(d->conf.lanes, d->n_thr, rlanes, rthreads) : 0;
}

static uint32_t lane_thr(const struct daemon *d, const struct dep *ep, uint32_t k)
{
	return nthr_lane_thr(ep->thr, k, d->n_thr);
}

static void job_cmd_done(struct engcmd *c)
{
	struct lanes_job *j = c->ctx;

	/* a shadow endpoint made by an earlier connection is fine */
	if (c->result < 0 && !(c->type == ENGCMD_SHADOW_ADD && c->result == -EBUSY) && !j->err)
		j->err = c->result;
	/* done before the command lets its session go: done may use it */
	if (--j->pending == 0) {
		j->done(j->arg, j->err);
		free(j);
	}
	session_cmd_finish(c);
}

/* Up to 4 commands per lane and one for the owner. */
#define JOB_MAX (4 * CONF_MAX_ENGINE_THREADS + 1)

struct job_cmd {
	uint32_t thr;
	struct engcmd *c;
};

static int job_run(struct session *s, struct job_cmd *cmds, uint32_t n, lanes_done_fn done,
		   void *arg)
{
	struct lanes_job *j = calloc(1, sizeof(*j));

	for (uint32_t i = 0; i < n; i++) {
		if (!cmds[i].c || !j) {
			for (uint32_t k = 0; k < n; k++)
				if (cmds[k].c)
					session_cmd_finish(cmds[k].c);
			free(j);
			return -ENOMEM;
		}
	}
	*j = (struct lanes_job){ .pending = n, .done = done, .arg = arg };
	for (uint32_t i = 0; i < n; i++) {
		cmds[i].c->ctx = j;
		engthr_submit(s->d->thr[cmds[i].thr], cmds[i].c);
	}
	return 0;
}

static void add_connect(struct session *s, struct job_cmd *cmd, uint32_t thr, uint32_t ep,
			uint32_t conn, uint32_t rep, uint32_t rwire)
{
	cmd->thr = thr;
	cmd->c = session_cmd_new(s, ENGCMD_RCONN_CONNECT, job_cmd_done);
	if (cmd->c) {
		cmd->c->u.rconn_c.ep = ep;
		cmd->c->u.rconn_c.conn = conn;
		cmd->c->u.rconn_c.rep = rep;
		cmd->c->u.rconn_c.rwire = rwire;
	}
}

static void add_owner(struct session *s, struct job_cmd *cmd, const struct dep *ep, uint32_t conn,
		      uint32_t n)
{
	cmd->thr = ep->thr;
	cmd->c = session_cmd_new(s, ENGCMD_RCONN_LANES, job_cmd_done);
	if (cmd->c) {
		cmd->c->u.lanes.ep = ep->id;
		cmd->c->u.lanes.conn = conn;
		cmd->c->u.lanes.n = n;
	}
}

int lanes_bind(struct session *s, struct dep *ep, uint32_t conn, uint32_t n, uint32_t slot,
	       uint32_t rthr, uint32_t rthreads, uint32_t wire, uint32_t rep, uint32_t rwire,
	       lanes_done_fn done, void *arg)
{
	struct daemon *d = s->d;
	struct job_cmd cmds[JOB_MAX];
	uint32_t m = 0;

	for (uint32_t k = 1; k <= n; k++) {
		uint32_t thr = lane_thr(d, ep, k);
		struct engcmd *c = session_cmd_new(s, ENGCMD_SHADOW_ADD, job_cmd_done);

		if (c) {
			c->u.shadow.ep = ep->id;
			c->u.shadow.client_id = s->id;
			c->u.shadow.max_conns = ep->max_conns;
			c->u.shadow.max_outstanding = d->conf.max_outstanding;
		}
		cmds[m++] = (struct job_cmd){ thr, c };
		c = session_cmd_new(s, ENGCMD_RCONN_ADD, job_cmd_done);
		if (c) {
			c->u.rconn.ep = ep->id;
			c->u.rconn.conn = conn;
			c->u.rconn.wire = wire;
			c->u.rconn.chan = nthr_chan(slot, nthr_lane_thr(rthr, k, rthreads), RCONN_MAX_CHANS);
		}
		cmds[m++] = (struct job_cmd){ thr, c };
		if (rep != UINT32_MAX)
			add_connect(s, &cmds[m++], thr, ep->id, conn, rep, rwire);
	}
	if (rep != UINT32_MAX)
		add_owner(s, &cmds[m++], ep, conn, n);
	return job_run(s, cmds, m, done, arg);
}

int lanes_connect(struct session *s, struct dep *ep, uint32_t conn, uint32_t n, uint32_t rep,
		  uint32_t rwire, lanes_done_fn done, void *arg)
{
	struct job_cmd cmds[JOB_MAX];
	uint32_t m = 0;

	for (uint32_t k = 1; k <= n; k++)
		add_connect(s, &cmds[m++], lane_thr(s->d, ep, k), ep->id, conn, rep, rwire);
	add_owner(s, &cmds[m++], ep, conn, n);
	return job_run(s, cmds, m, done, arg);
}

/* A command no session waits for. Never lost: a lane side or shadow the
 * engine kept would refuse the next endpoint or connection with its id. */
static void submit_plain(struct daemon *d, uint32_t thr, enum engcmd_type type, uint32_t ep,
			 uint32_t conn)
{
	struct engcmd *c = calloc(1, sizeof(*c));

	if (!c)
		abort();               /* as rcon_unbind: the engine must forget it */
	c->type = type;
	if (type == ENGCMD_EP_REMOVE) {
		c->u.ep_id = ep;
	} else {
		c->u.conn_rm.ep = ep;
		c->u.conn_rm.conn = conn;
	}
	engthr_submit_owned(d->thr[thr], c);
}

void lanes_unbind(struct daemon *d, const struct dep *ep, uint32_t conn, uint32_t n)
{
	for (uint32_t k = 1; k <= n; k++)
		submit_plain(d, lane_thr(d, ep, k), ENGCMD_CONN_REMOVE, ep->id, conn);
}

void lanes_reset(struct daemon *d, const struct dep *ep, uint32_t conn, uint32_t n)
{
	for (uint32_t k = 1; k <= n; k++)
		submit_plain(d, lane_thr(d, ep, k), ENGCMD_CONN_RESET, ep->id, conn);
}

void lanes_ep_gone(struct daemon *d, const struct dep *ep)
{
	if (!d->bus)
		return;
	for (uint32_t t = 0; t < d->n_thr; t++)
		if (t != ep->thr)
			submit_plain(d, t, ENGCMD_EP_REMOVE, ep->id, 0);
}
