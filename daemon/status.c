/* SPDX-License-Identifier: MIT */
/*
 * status: answers ucclctl's queries (status, clients, endpoints, regions,
 * counters). Everything but status needs the admin role, because it shows
 * other users' processes.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/engthr.h"
#include "daemon/session.h"
#include "engine/mr.h"

static void reply_status(struct session *s)
{
	struct daemon *d = s->d;
	UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
	UcclCtl__StatusRep st = UCCL_CTL__STATUS_REP__INIT;

	st.version = (char *)PACKAGE_VERSION;
	st.pid = (uint32_t)getpid();
	st.uptime_ms = daemon_now_ms() - d->start_ms;
	st.clients = d->n_clients;
	st.endpoints = d->n_eps;
	st.mrs = d->n_mrs;
	st.registered_bytes = d->reg_bytes;
	st.engine_threads = 1;
	st.proto_version = UCCL_PROTO_VERSION;
	st.max_clients = d->conf.max_clients;
	rep.body_case = UCCL_CTL__REPLY__BODY_STATUS_REP;
	rep.status_rep = &st;
	session_reply(s, 0, NULL, &rep, NULL, 0);
}

static void reply_clients(struct session *s)
{
	struct daemon *d = s->d;
	UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
	UcclCtl__ClientsRep cr = UCCL_CTL__CLIENTS_REP__INIT;
	UcclCtl__ClientInfo *infos, **ptrs;
	uint64_t now = daemon_now_ms();
	size_t n = 0;

	infos = calloc(d->n_sessions + 1, sizeof(*infos));
	ptrs = calloc(d->n_sessions + 1, sizeof(*ptrs));
	if (!infos || !ptrs) {
		free(infos);
		free(ptrs);
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	for (struct session *o = d->sessions; o && n < d->n_sessions; o = o->next) {
		UcclCtl__ClientInfo *ci = &infos[n];

		if (!o->attached)
			continue;
		uccl_ctl__client_info__init(ci);
		ci->id = o->id;
		ci->pid = (uint32_t)o->pid;
		ci->uid = o->uid;
		ci->gid = o->gid;
		ci->name = o->name;
		ci->observer = o->observer;
		ci->endpoints = o->n_eps;
		ci->mrs = o->n_mrs;
		ci->registered_bytes = o->reg_bytes;
		ci->attached_ms = now - o->attach_ms;
		ptrs[n++] = ci;
	}
	cr.n_clients = n;
	cr.clients = ptrs;
	rep.body_case = UCCL_CTL__REPLY__BODY_CLIENTS;
	rep.clients = &cr;
	session_reply(s, 0, NULL, &rep, NULL, 0);
	free(infos);
	free(ptrs);
}

static void reply_mrs(struct session *s)
{
	struct daemon *d = s->d;
	UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
	UcclCtl__MrsRep mr = UCCL_CTL__MRS_REP__INIT;
	UcclCtl__MrInfo *infos, **ptrs;
	size_t n = 0;

	infos = calloc(d->n_mrs + 1, sizeof(*infos));
	ptrs = calloc(d->n_mrs + 1, sizeof(*ptrs));
	if (!infos || !ptrs) {
		free(infos);
		free(ptrs);
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	for (struct session *o = d->sessions; o; o = o->next) {
		for (struct smr *m = o->mrs; m && n < d->n_mrs; m = m->next) {
			UcclCtl__MrInfo *mi = &infos[n];

			uccl_ctl__mr_info__init(mi);
			mi->client_id = o->id;
			mi->mr_id = m->id;
			mi->kind = m->kind == MR_MAPPED ? UCCL_CTL__MEM_KIND__MEM_MEMFD
							: UCCL_CTL__MEM_KIND__MEM_VADDR;
			mi->len = m->len;
			ptrs[n++] = mi;
		}
	}
	mr.n_mrs = n;
	mr.mrs = ptrs;
	rep.body_case = UCCL_CTL__REPLY__BODY_MRS;
	rep.mrs = &mr;
	session_reply(s, 0, NULL, &rep, NULL, 0);
	free(infos);
	free(ptrs);
}

static void free_stats_cmd(struct engcmd *c)
{
	free(c->u.stats.ep_ids);
	free(c->u.stats.eps);
	free(c->u.stats.ep_res);
	session_unref(c->arg);
	free(c);
}

static void endpoints_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct daemon *d = s->d;
	UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
	UcclCtl__EndpointsRep er = UCCL_CTL__ENDPOINTS_REP__INIT;
	uint32_t n = c->u.stats.n_eps, k = 0;
	UcclCtl__EndpointInfo *infos = calloc(n + 1, sizeof(*infos));
	UcclCtl__EndpointInfo **ptrs = calloc(n + 1, sizeof(*ptrs));

	if (!infos || !ptrs) {
		session_reply_err(s, -ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct dep *ep = d->eps[c->u.stats.ep_ids[i]];
		UcclCtl__EndpointInfo *ei = &infos[k];
		struct engine_ep_stats *st = &c->u.stats.eps[i];

		/* gone or replaced while the engine was answering */
		if (!ep || !ep->live || c->u.stats.ep_res[i] < 0)
			continue;
		uccl_ctl__endpoint_info__init(ei);
		ei->client_id = ep->s->id;
		ei->ep_id = ep->id;
		ei->name = ep->name;
		ei->sq_entries = ep->hdr.sq_entries;
		ei->cq_entries = ep->hdr.cq_entries;
		ei->conns = ep->n_conns;
		ei->submitted = st->submitted;
		ei->completed = st->completed;
		ei->errors = st->errors;
		ei->outstanding = st->outstanding;
		ei->bytes = st->bytes;
		ptrs[k++] = ei;
	}
	er.n_endpoints = k;
	er.endpoints = ptrs;
	rep.body_case = UCCL_CTL__REPLY__BODY_ENDPOINTS;
	rep.endpoints = &er;
	session_reply(s, 0, NULL, &rep, NULL, 0);
out:
	free(infos);
	free(ptrs);
	free_stats_cmd(c);
}

static void stats_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct daemon *d = s->d;
	UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
	UcclCtl__StatsRep sr = UCCL_CTL__STATS_REP__INIT;
	const struct { const char *name; uint64_t v; } dc[] = {
		{ "daemon_attaches", d->stats.attaches },
		{ "daemon_detaches", d->stats.detaches },
		{ "daemon_disconnects", d->stats.disconnects },
		{ "daemon_bad_input", d->stats.bad_input },
		{ "daemon_refused", d->stats.refused },
		{ "daemon_requests", d->stats.requests },
		{ "daemon_request_errors", d->stats.request_errors },
		{ "daemon_reloads", d->stats.reloads },
	};
	size_t ndc = sizeof(dc) / sizeof(dc[0]);
	size_t n = ndc + c->u.stats.n_counters;
	UcclCtl__Counter *cs = calloc(n, sizeof(*cs));
	UcclCtl__Counter **ptrs = calloc(n, sizeof(*ptrs));

	if (!cs || !ptrs) {
		session_reply_err(s, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		uccl_ctl__counter__init(&cs[i]);
		if (i < ndc) {
			cs[i].name = (char *)dc[i].name;
			cs[i].value = dc[i].v;
		} else {
			cs[i].name = (char *)c->u.stats.counters[i - ndc].name;
			cs[i].value = c->u.stats.counters[i - ndc].value;
		}
		ptrs[i] = &cs[i];
	}
	sr.n_counters = n;
	sr.counters = ptrs;
	rep.body_case = UCCL_CTL__REPLY__BODY_STATS;
	rep.stats = &sr;
	session_reply(s, 0, NULL, &rep, NULL, 0);
out:
	free(cs);
	free(ptrs);
	free_stats_cmd(c);
}

static void ask_engine(struct session *s, bool with_eps)
{
	struct daemon *d = s->d;
	struct engcmd *c = calloc(1, sizeof(*c));
	uint32_t n = 0;

	if (!c)
		goto out_nomem;
	c->type = ENGCMD_STATS;
	c->done = with_eps ? endpoints_done : stats_done;
	c->arg = s;
	if (with_eps) {
		c->u.stats.ep_ids = calloc(d->n_eps + 1, sizeof(uint32_t));
		c->u.stats.eps = calloc(d->n_eps + 1, sizeof(struct engine_ep_stats));
		c->u.stats.ep_res = calloc(d->n_eps + 1, sizeof(int));
		if (!c->u.stats.ep_ids || !c->u.stats.eps || !c->u.stats.ep_res) {
			free(c->u.stats.ep_ids);
			free(c->u.stats.eps);
			free(c->u.stats.ep_res);
			free(c);
			goto out_nomem;
		}
		for (struct session *o = d->sessions; o; o = o->next)
			for (struct dep *ep = o->eps; ep && n < d->n_eps; ep = ep->next)
				if (ep->live)
					c->u.stats.ep_ids[n++] = ep->id;
	}
	c->u.stats.n_eps = n;
	session_ref(s);
	engthr_submit(d->eng, c);
	return;

out_nomem:
	session_reply_err(s, -ENOMEM, "out of memory");
}

void status_reply(struct session *s, UcclCtl__Request *req)
{
	if (req->body_case == UCCL_CTL__REQUEST__BODY_STATUS) {
		reply_status(s);
		return;
	}
	if (!s->admin) {
		session_reply_err(s, -EPERM, "%s needs the admin role (uid 0 or admin_gid in uccl.conf)",
				  frame_request_name(req));
		return;
	}
	switch (req->body_case) {
	case UCCL_CTL__REQUEST__BODY_CLIENTS:
		reply_clients(s);
		break;
	case UCCL_CTL__REQUEST__BODY_MRS:
		reply_mrs(s);
		break;
	case UCCL_CTL__REQUEST__BODY_ENDPOINTS:
		ask_engine(s, true);
		break;
	default:
		ask_engine(s, false);
		break;
	}
}
