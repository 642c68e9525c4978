/* SPDX-License-Identifier: MIT */
/*
 * status: answers ucclctl's queries (status, clients, endpoints, regions,
 * counters, peer daemons, data channels). Everything but status, peers and
 * channels needs the admin role, because it shows other users' processes;
 * so does a remote endpoint lookup through peers.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/engthr.h"
#include "daemon/peer.h"
#include "daemon/rconn.h"
#include "daemon/session.h"
#include "engine/mr.h"
#include "proto/peerframe.h"

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
	st.engine_threads = d->n_thr;
	st.proto_version = UCCL_PROTO_VERSION;
	st.max_clients = d->conf.max_clients;
	st.has_lanes = 1;
	st.lanes = d->bus ? d->conf.lanes : 0;
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

/* Rows a reply lists at most, so that it stays under FRAME_MAX_HARD (1 MiB)
 * whatever max_clients and the per-client limits allow: an endpoint's row
 * is at most about 160 bytes (its name 64), a region's about 30. */
#define ENDPOINTS_REPLY_MAX 4096u
#define MRS_REPLY_MAX 16384u

static void reply_mrs(struct session *s)
{
	struct daemon *d = s->d;
	UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
	UcclCtl__MrsRep mr = UCCL_CTL__MRS_REP__INIT;
	UcclCtl__MrInfo *infos, **ptrs;
	size_t n = 0, cap = d->n_mrs < MRS_REPLY_MAX ? d->n_mrs : MRS_REPLY_MAX;

	/* room for what the reply lists, not for every region */
	infos = calloc(cap + 1, sizeof(*infos));
	ptrs = calloc(cap + 1, sizeof(*ptrs));
	if (!infos || !ptrs) {
		free(infos);
		free(ptrs);
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	for (struct session *o = d->sessions; o; o = o->next) {
		for (struct smr *m = o->mrs; m && n < d->n_mrs; m = m->next) {
			UcclCtl__MrInfo *mi = &infos[n];

			if (n == MRS_REPLY_MAX) {
				mr.has_mrs_left_out = 1;
				mr.mrs_left_out++;
				continue;
			}
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

static void free_stats_arrays(struct engcmd *c)
{
	free(c->u.stats.ep_ids);
	free(c->u.stats.ep_serials);
	free(c->u.stats.eps);
	free(c->u.stats.ep_res);
}

static void free_stats_cmd(struct engcmd *c)
{
	free_stats_arrays(c);
	session_unref(c->arg);
	free(c);
}

static void endpoints_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct daemon *d = s->d;
	UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
	UcclCtl__EndpointsRep er = UCCL_CTL__ENDPOINTS_REP__INIT;
	uint32_t n = c->u.stats.n_eps, k = 0, cap = n < ENDPOINTS_REPLY_MAX ? n : ENDPOINTS_REPLY_MAX;
	/* room for what the reply lists, not for every endpoint */
	UcclCtl__EndpointInfo *infos = calloc(cap + 1, sizeof(*infos));
	UcclCtl__EndpointInfo **ptrs = calloc(cap + 1, sizeof(*ptrs));

	if (!infos || !ptrs) {
		session_reply_err(s, -ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct dep *ep = d->eps[c->u.stats.ep_ids[i]];
		UcclCtl__EndpointInfo *ei = &infos[k];
		struct engine_ep_stats *st = &c->u.stats.eps[i];

		/* gone or replaced while the engine was answering */
		if (!ep || !ep->live || ep->serial != c->u.stats.ep_serials[i] ||
		    c->u.stats.ep_res[i] < 0)
			continue;
		if (k == ENDPOINTS_REPLY_MAX) {
			er.has_endpoints_left_out = 1;
			er.endpoints_left_out++;
			continue;
		}
		uccl_ctl__endpoint_info__init(ei);
		ei->client_id = ep->s->id;
		ei->ep_id = ep->id;
		ei->name = ep->name;
		ei->sq_entries = ep->hdr.sq_entries;
		ei->cq_entries = ep->hdr.cq_entries;
		ei->conns = ep->n_conns;
		if (d->n_thr > 1) {
			ei->has_thread = 1;
			ei->thread = ep->thr;
		}
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

/* Stats from several engine threads: the same command goes to each in
 * turn; counters add up, each endpoint's figures come from its thread. */
struct stats_acc {
	uint32_t thr;
	void (*final)(struct engcmd *c);
	struct engcmd_stat counters[64];
	uint32_t n_counters;
	struct engine_ep_stats *eps;
	int *res;
};

static void stats_step(struct engcmd *c)
{
	struct stats_acc *a = c->ctx;
	struct session *s = c->arg;
	uint32_t n = c->u.stats.n_eps;

	for (uint32_t i = 0; i < c->u.stats.n_counters; i++) {
		uint32_t k;

		for (k = 0; k < a->n_counters; k++)
			if (a->counters[k].name == c->u.stats.counters[i].name ||
			    strcmp(a->counters[k].name, c->u.stats.counters[i].name) == 0)
				break;
		if (k == a->n_counters) {
			if (k == sizeof(a->counters) / sizeof(a->counters[0]))
				continue;
			a->counters[k] = c->u.stats.counters[i];
			a->n_counters++;
		} else {
			a->counters[k].value += c->u.stats.counters[i].value;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		if (c->u.stats.ep_res[i] >= 0) {
			a->res[i] = c->u.stats.ep_res[i];
			a->eps[i] = c->u.stats.eps[i];
		}
	}
	if (++a->thr < s->d->n_thr) {
		engthr_submit(s->d->thr[a->thr], c);
		return;
	}
	memcpy(c->u.stats.counters, a->counters, sizeof(a->counters));
	c->u.stats.n_counters = a->n_counters;
	if (n) {   /* stats asks for no endpoint: its arrays are NULL */
		memcpy(c->u.stats.ep_res, a->res, sizeof(int) * n);
		memcpy(c->u.stats.eps, a->eps, sizeof(*a->eps) * n);
	}
	c->ctx = NULL;
	c->done = a->final;
	free(a->eps);
	free(a->res);
	free(a);
	c->done(c);
}

static void ask_engine(struct session *s, bool with_eps)
{
	struct daemon *d = s->d;
	struct engcmd *c = calloc(1, sizeof(*c));
	struct stats_acc *a = NULL;
	uint32_t n = 0;

	if (!c)
		goto out_nomem;
	c->type = ENGCMD_STATS;
	c->done = with_eps ? endpoints_done : stats_done;
	c->arg = s;
	if (with_eps) {
		c->u.stats.ep_ids = calloc(d->n_eps + 1, sizeof(uint32_t));
		c->u.stats.ep_serials = calloc(d->n_eps + 1, sizeof(uint64_t));
		c->u.stats.eps = calloc(d->n_eps + 1, sizeof(struct engine_ep_stats));
		c->u.stats.ep_res = calloc(d->n_eps + 1, sizeof(int));
		if (!c->u.stats.ep_ids || !c->u.stats.ep_serials || !c->u.stats.eps ||
		    !c->u.stats.ep_res)
			goto out_free;
		for (struct session *o = d->sessions; o; o = o->next) {
			for (struct dep *ep = o->eps; ep && n < d->n_eps; ep = ep->next) {
				if (!ep->live)
					continue;
				c->u.stats.ep_ids[n] = ep->id;
				c->u.stats.ep_serials[n++] = ep->serial;
			}
		}
	}
	c->u.stats.n_eps = n;
	if (d->n_thr > 1) {
		a = calloc(1, sizeof(*a));
		if (!a || !(a->eps = calloc(n + 1, sizeof(*a->eps))) ||
		    !(a->res = calloc(n + 1, sizeof(*a->res))))
			goto out_free;
		for (uint32_t i = 0; i < n; i++)
			a->res[i] = -ENOENT;
		a->final = c->done;
		c->done = stats_step;
		c->ctx = a;
	}
	session_ref(s);
	engthr_submit(d->thr[0], c);
	return;

out_free:
	if (a) {
		free(a->eps);
		free(a->res);
		free(a);
	}
	free_stats_arrays(c);
	free(c);
out_nomem:
	session_reply_err(s, -ENOMEM, "out of memory");
}

/* A channels query in flight: what rconn listed, and the engine's answer. */
struct chan_query {
	size_t n;
	size_t left_out;               /* rows past RCONN_MAX_ROWS, not listed */
	uint32_t thr;                  /* the engine thread being asked */
	size_t first[CONF_MAX_ENGINE_THREADS + 1];   /* its rows: first[thr]..first[thr+1] */
	struct nic_stats nic;          /* every thread's data plane, added up */
	uint64_t rx_unknown_chan, tx_dropped;
	struct rconn_chan_info info[RCONN_MAX_ROWS];
	uint32_t ids[RCONN_MAX_ROWS];
	struct engine_chan_stats out[RCONN_MAX_ROWS];
	int res[RCONN_MAX_ROWS];
	UcclCtl__ChannelInfo rows[RCONN_MAX_ROWS];
	UcclCtl__ChannelInfo *ptrs[RCONN_MAX_ROWS];
	UcclCtl__CcVar vars[RCONN_MAX_ROWS][ENGINE_CC_VARS];
	UcclCtl__CcVar *var_ptrs[RCONN_MAX_ROWS][ENGINE_CC_VARS];
	/* a paths query: one peer's rows, each with its paths (rows * per) */
	struct paths_stat *paths;
	uint32_t paths_per;
	uint32_t npaths[RCONN_MAX_ROWS];
	uint64_t paths_now_ns;
	UcclCtl__PathInfo *pinfo;      /* filled when the reply is built */
	UcclCtl__PathInfo **pptrs;
};

/* Path entries in one reply at most (about 30 bytes each): a peer with
 * many engine threads on both sides has up to 256 sub-channels */
#define PATHS_REPLY_MAX 16384u

static void fill_channel(UcclCtl__ChannelInfo *ci, const struct rconn_chan_info *in,
			 const struct engine_chan_stats *st, uint64_t now, UcclCtl__CcVar *vars,
			 UcclCtl__CcVar **var_ptrs)
{
	const struct tpchan_stats *tp = &st->tp;
	int nv = st->n_cc < ENGINE_CC_VARS ? st->n_cc : ENGINE_CC_VARS;

	uccl_ctl__channel_info__init(ci);
	ci->chan = in->chan;
	ci->peer = (char *)in->peer;
	ci->up_ms = now > in->up_ms ? now - in->up_ms : 0;
	ci->paths = in->paths;
	ci->mtu = in->mtu;
	ci->has_crc = 1;
	ci->crc = in->crc;
	ci->conns = st->conns;
	ci->queued_ops = st->queued_ops;
	ci->srtt_us = tp->srtt_ns / 1000;
	ci->rto_us = tp->rto_ns / 1000;
	ci->cwnd_bytes = tp->cwnd_bytes;
	ci->inflight_pkts = tp->inflight_pkts;
	ci->inflight_bytes = tp->inflight_bytes;
	ci->queued_msgs = tp->queued_msgs;
	ci->msgs_submitted = tp->msgs_submitted;
	ci->msgs_completed = tp->msgs_completed;
	ci->msgs_failed = tp->msgs_failed;
	ci->data_pkts_tx = tp->data_pkts_tx;
	ci->data_bytes_tx = tp->data_bytes_tx;
	ci->retx_pkts = tp->retx_pkts;
	ci->retx_timeouts = tp->retx_timeouts;
	ci->fast_retx = tp->fast_retx;
	ci->acks_tx = tp->acks_tx;
	ci->acks_rx = tp->acks_rx;
	ci->nacks_tx = tp->nacks_tx;
	ci->nacks_rx = tp->nacks_rx;
	ci->data_pkts_rx = tp->data_pkts_rx;
	ci->data_bytes_rx = tp->data_bytes_rx;
	ci->dup_pkts_rx = tp->dup_pkts_rx;
	ci->sack_holes = tp->sack_holes;
	ci->drop_malformed = tp->drop_malformed;
	ci->drop_version = tp->drop_version;
	ci->drop_token = tp->drop_token;
	ci->drop_crc = tp->drop_crc;
	ci->drop_window = tp->drop_window;
	ci->drop_refused = tp->drop_refused;
	ci->cc = (char *)(st->cc ? st->cc : "");
	ci->has_thread = ci->has_remote_thread = 1;
	ci->thread = in->thread;
	ci->remote_thread = in->rthread;
	ci->has_tlp_probes = ci->has_credits_tx = ci->has_credits_rx = 1;
	ci->has_credit_granted_pkts = ci->has_small_chunks = ci->has_loss_ppm = 1;
	ci->has_state_bytes = ci->has_state_releases = ci->has_drop_nomem = ci->has_failed = 1;
	ci->has_rto_spurious = 1;
	ci->failed = st->failed;
	ci->rto_spurious = tp->rto_spurious;
	ci->has_acks_held = ci->has_acks_with_data = ci->has_ack_holds_expired = 1;
	ci->acks_held = tp->acks_held;
	ci->acks_with_data = tp->acks_with_data;
	ci->ack_holds_expired = tp->ack_holds_expired;
	ci->tlp_probes = tp->tlp_probes;
	ci->credits_tx = tp->credits_tx;
	ci->credits_rx = tp->credits_rx;
	ci->credit_granted_pkts = tp->credit_granted_pkts;
	ci->small_chunks = tp->small_chunks;
	ci->loss_ppm = tp->loss_ppm;
	ci->state_bytes = tp->state_bytes;
	ci->state_releases = tp->state_releases;
	ci->drop_nomem = tp->drop_nomem;
	for (int i = 0; i < nv; i++) {
		uccl_ctl__cc_var__init(&vars[i]);
		vars[i].name = (char *)st->cc_names[i];
		vars[i].value = st->cc_values[i];
		var_ptrs[i] = &vars[i];
	}
	ci->n_cc_state = (size_t)nv;
	ci->cc_state = var_ptrs;
}

/* Row i's paths into the reply row, from *used on in q's arrays; false
 * (none given) once PATHS_REPLY_MAX are used. */
static bool fill_paths(UcclCtl__ChannelInfo *ci, struct chan_query *q, size_t i, size_t *used)
{
	const struct paths_stat *ps = q->paths + i * q->paths_per;
	uint32_t n = q->npaths[i];

	if (*used + n > PATHS_REPLY_MAX)
		return false;
	for (uint32_t k = 0; k < n; k++) {
		UcclCtl__PathInfo *pi = &q->pinfo[*used + k];

		uccl_ctl__path_info__init(pi);
		pi->path = k;
		pi->srtt_us = ps[k].srtt_ns / 1000;
		pi->inflight_pkts = ps[k].inflight;
		pi->sent_chunks = ps[k].sent_chunks;
		pi->losses = ps[k].losses;
		if (ps[k].last_loss_ns && ps[k].last_loss_ns <= q->paths_now_ns) {
			pi->has_last_loss_ms_ago = 1;
			pi->last_loss_ms_ago = (q->paths_now_ns - ps[k].last_loss_ns) / 1000000;
		}
		q->pptrs[*used + k] = pi;
	}
	ci->n_path_stats = n;
	ci->path_stats = n ? q->pptrs + *used : NULL;
	*used += n;
	return true;
}

/* The channels reply: q and c are NULL without a data plane (no peering
 * and one engine thread: no rows). */
static void send_channels(struct session *s, struct chan_query *q, const struct engcmd *c)
{
	struct daemon *d = s->d;
	UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
	UcclCtl__ChannelsRep cr = UCCL_CTL__CHANNELS_REP__INIT;
	UcclCtl__NicStats nic = UCCL_CTL__NIC_STATS__INIT;
	uint64_t now = daemon_now_ms();
	size_t k = 0;

	nic.data_address = c ? d->data_text : (char *)"";
	if (c) {
		const struct nic_stats *ns = &q->nic;
		size_t used = 0;

		for (size_t i = 0; i < q->n; i++) {
			/* < 0: the channel went away while the engine answered */
			if (q->res[i] < 0)
				continue;
			fill_channel(&q->rows[k], &q->info[i], &q->out[i], now, q->vars[k], q->var_ptrs[k]);
			/* past the first row that does not fit, none: the
			 * reply says where its paths stop */
			if (q->paths && !cr.paths_truncated && !fill_paths(&q->rows[k], q, i, &used)) {
				cr.has_paths_truncated = 1;
				cr.paths_truncated = 1;
			}
			q->ptrs[k] = &q->rows[k];
			k++;
		}
		if (q->left_out) {
			cr.has_channels_left_out = 1;
			cr.channels_left_out = (uint32_t)q->left_out;
		}
		nic.tx_pkts = ns->tx_pkts;
		nic.tx_bytes = ns->tx_bytes;
		nic.tx_calls = ns->tx_calls;
		nic.tx_gso_calls = ns->tx_gso_calls;
		nic.has_tx_dgrams = 1;
		nic.tx_dgrams = ns->tx_dgrams;
		nic.has_tx_gso_refused = 1;
		nic.tx_gso_refused = ns->tx_gso_refused;
		nic.has_rx_overflow = 1;
		nic.rx_overflow = ns->rx_overflow;
		nic.has_rx_hint = 1;
		nic.rx_hint = ns->rx_hint;
		nic.has_rx_skipped = 1;
		nic.rx_skipped = ns->rx_skipped;
		nic.has_rx_hint_written_off = 1;
		nic.rx_hint_written_off = ns->rx_hint_written_off;
		nic.tx_eagain = ns->tx_eagain;
		nic.tx_errors = ns->tx_errors;
		nic.rx_pkts = ns->rx_pkts;
		nic.rx_bytes = ns->rx_bytes;
		nic.rx_calls = ns->rx_calls;
		nic.rx_gro_segs = ns->rx_gro_segs;
		nic.rx_truncated = ns->rx_truncated;
		nic.rx_unknown_peer = ns->rx_unknown_peer;
		nic.rx_unknown_chan = q->rx_unknown_chan;
		nic.tx_dropped = q->tx_dropped;
	}
	cr.n_channels = k;
	cr.channels = k ? q->ptrs : NULL;
	cr.nic = &nic;
	rep.body_case = UCCL_CTL__REPLY__BODY_CHANNELS;
	rep.channels = &cr;
	session_reply(s, 0, NULL, &rep, NULL, 0);
}

static void free_chan_cmd(struct engcmd *c)
{
	struct chan_query *q = c->ctx;

	if (q) {
		free(q->paths);
		free(q->pinfo);
		free(q->pptrs);
	}
	free(q);
	session_cmd_finish(c);
}

/* The command's rows for thread q->thr. */
static void chan_cmd_aim(struct engcmd *c, struct chan_query *q)
{
	size_t a = q->first[q->thr], b = q->first[q->thr + 1];

	c->u.chst.n = (uint32_t)(b - a);
	c->u.chst.chans = q->ids + a;
	c->u.chst.out = q->out + a;
	c->u.chst.res = q->res + a;
	c->u.chst.paths = q->paths ? q->paths + a * q->paths_per : NULL;
	c->u.chst.paths_per = q->paths_per;
	c->u.chst.npaths = q->npaths + a;
}

static void channels_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct chan_query *q = c->ctx;
	const struct nic_stats *ns = &c->u.chst.nic;

	if (c->result < 0) {
		session_reply_err(s, c->result, "channel stats: %s", strerror(-c->result));
		free_chan_cmd(c);
		return;
	}
	q->nic.tx_pkts += ns->tx_pkts;
	q->nic.tx_bytes += ns->tx_bytes;
	q->nic.tx_calls += ns->tx_calls;
	q->nic.tx_gso_calls += ns->tx_gso_calls;
	q->nic.tx_dgrams += ns->tx_dgrams;
	q->nic.tx_gso_refused += ns->tx_gso_refused;
	q->nic.rx_overflow += ns->rx_overflow;
	q->nic.rx_hint += ns->rx_hint;
	q->nic.rx_skipped += ns->rx_skipped;
	q->nic.rx_hint_written_off += ns->rx_hint_written_off;
	q->nic.tx_eagain += ns->tx_eagain;
	q->nic.tx_errors += ns->tx_errors;
	q->nic.rx_pkts += ns->rx_pkts;
	q->nic.rx_bytes += ns->rx_bytes;
	q->nic.rx_calls += ns->rx_calls;
	q->nic.rx_gro_segs += ns->rx_gro_segs;
	q->nic.rx_truncated += ns->rx_truncated;
	q->nic.rx_unknown_peer += ns->rx_unknown_peer;
	q->rx_unknown_chan += c->u.chst.nic_rx_unknown_chan;
	q->tx_dropped += c->u.chst.nic_tx_dropped;
	/* the threads read one clock; the last answer's time is the latest */
	q->paths_now_ns = c->u.chst.now_ns;
	if (++q->thr < s->d->n_thr) {
		chan_cmd_aim(c, q);
		engthr_submit(s->d->thr[q->thr], c);
		return;
	}
	send_channels(s, q, c);
	free_chan_cmd(c);
}

/* A paths query (rconn_chans listed peer's rows only): room for their
 * paths; false (the reply sent) if there are none or no memory. */
static bool paths_room(struct session *s, struct chan_query *q, const char *peer)
{
	size_t entries;

	q->paths_per = 1;              /* calloc(0) may be NULL */
	for (size_t i = 0; i < q->n; i++)
		if (q->info[i].paths > q->paths_per)
			q->paths_per = q->info[i].paths;
	if (!q->n) {
		session_reply_err(s, -ENOENT, "no data channel to '%s' (not a peer, or not up)", peer);
		return false;
	}
	entries = q->n * q->paths_per < PATHS_REPLY_MAX ? q->n * q->paths_per : PATHS_REPLY_MAX;
	q->paths = calloc(q->n * q->paths_per, sizeof(*q->paths));
	q->pinfo = calloc(entries, sizeof(*q->pinfo));
	q->pptrs = calloc(entries, sizeof(*q->pptrs));
	if (!q->paths || !q->pinfo || !q->pptrs) {
		session_reply_err(s, -ENOMEM, "out of memory");
		return false;
	}
	return true;
}

static void reply_channels(struct session *s, const UcclCtl__ChannelsReq *req)
{
	struct daemon *d = s->d;
	const char *peer = req && req->paths_peer ? req->paths_peer : NULL;
	struct chan_query *q;
	struct engcmd *c;

	/* no data plane: no rows (a paths query finds none below) */
	if (!peer && !d->peers && !d->xconn) {
		send_channels(s, NULL, NULL);
		return;
	}
	q = calloc(1, sizeof(*q));
	c = q ? session_cmd_new(s, ENGCMD_CHAN_STATS, channels_done) : NULL;
	if (!c) {
		free(q);
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	c->ctx = q;
	q->n = rconn_chans(d, peer, q->info, RCONN_MAX_ROWS);
	if (q->n > RCONN_MAX_ROWS) {
		q->left_out = q->n - RCONN_MAX_ROWS;
		q->n = RCONN_MAX_ROWS;
	}
	if (peer && !paths_room(s, q, peer)) {
		free_chan_cmd(c);
		return;
	}
	for (size_t i = 0; i < q->n; i++)
		q->ids[i] = q->info[i].chan;
	/* rconn_chans lists them grouped by thread */
	for (uint32_t t = 0, i = 0; t <= d->n_thr; t++) {
		while (i < q->n && q->info[i].thread < t)
			i++;
		q->first[t] = i;
	}
	q->first[d->n_thr] = q->n;
	chan_cmd_aim(c, q);
	engthr_submit(d->thr[0], c);
}

static UcclCtl__PeerState peer_state_of(enum peer_state st)
{
	switch (st) {
	case PEER_UP: return UCCL_CTL__PEER_STATE__PEER_UP;
	case PEER_DOWN: return UCCL_CTL__PEER_STATE__PEER_DOWN;
	default: return UCCL_CTL__PEER_STATE__PEER_CONNECTING;
	}
}

/* The peers table, with a lookup's answer when there is one. */
static void send_peers(struct session *s, UcclCtl__PeerLookup *lookup)
{
	struct daemon *d = s->d;
	UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
	UcclCtl__PeersRep pr = UCCL_CTL__PEERS_REP__INIT;
	size_t n = d->peers ? peermgr_count(d->peers) : 0;
	struct peer_status *st = calloc(n + 1, sizeof(*st));
	UcclCtl__PeerInfo *infos = calloc(n + 1, sizeof(*infos));
	UcclCtl__PeerInfo **ptrs = calloc(n + 1, sizeof(*ptrs));
	char listen[64];

	if (!st || !infos || !ptrs) {
		session_reply_err(s, -ENOMEM, "out of memory");
		goto out;
	}
	n = d->peers ? peermgr_status(d->peers, st, n) : 0;
	for (size_t i = 0; i < n; i++) {
		UcclCtl__PeerInfo *pi = &infos[i];

		uccl_ctl__peer_info__init(pi);
		pi->name = st[i].name;
		pi->address = st[i].address;
		pi->state = peer_state_of(st[i].state);
		pi->since_ms = st[i].since_ms;
		pi->dials = st[i].dials;
		pi->has_dynamic = 1;
		pi->dynamic = st[i].dynamic;
		pi->has_authenticated = 1;
		pi->authenticated = st[i].authenticated;
		pi->has_rtt_us = st[i].has_rtt;
		pi->rtt_us = st[i].rtt_us;
		pi->tx_token_set = st[i].tx_token_set;
		pi->rx_token_set = st[i].rx_token_set;
		if (st[i].announced) {
			pi->host_name = st[i].host_name;
			pi->data_address = st[i].data_address;
			pi->has_data_port = pi->has_data_paths = pi->has_mtu = 1;
			pi->data_port = st[i].data_port;
			pi->data_paths = st[i].data_paths;
			pi->mtu = st[i].mtu;
			pi->has_max_inflight_bytes = st[i].max_inflight_bytes != 0;
			pi->max_inflight_bytes = st[i].max_inflight_bytes;
		}
		pi->reconnects = st[i].reconnects;
		pi->last_error = st[i].last_error[0] ? st[i].last_error : NULL;
		ptrs[i] = pi;
	}
	pr.enabled = d->peers != NULL;
	if (d->peers) {
		pr.host_name = (char *)peermgr_host_name(d->peers);
		peermgr_listen_text(d->peers, listen, sizeof(listen));
		pr.listen = listen;
		pr.has_key = 1;
		pr.key = peermgr_has_key(d->peers);
	}
	pr.n_peers = n;
	pr.peers = ptrs;
	pr.lookup = lookup;
	rep.body_case = UCCL_CTL__REPLY__BODY_PEERS;
	rep.peers = &pr;
	session_reply(s, 0, NULL, &rep, NULL, 0);
out:
	free(st);
	free(infos);
	free(ptrs);
}

struct peers_lookup {
	struct session *s;
	char peer[CONF_PEER_NAME_MAX + 1];
	uint32_t timeout_ms;
};

static void lookup_done(void *arg, int status, uint32_t ep_id, uint32_t thread)
{
	(void)thread;
	struct peers_lookup *pl = arg;
	struct session *s = pl->s;
	UcclCtl__PeerLookup lk = UCCL_CTL__PEER_LOOKUP__INIT;

	switch (status) {
	case 0:
	case -ENOENT:
		lk.found = status == 0;
		lk.has_ep_id = status == 0;
		lk.ep_id = ep_id;
		send_peers(s, &lk);
		break;
	case -ETIMEDOUT:
		session_reply_err(s, status, "peer %s did not answer the lookup within %u ms", pl->peer,
				  pl->timeout_ms);
		break;
	case -ENOTCONN:
		session_reply_err(s, status, "the connection to peer %s went down during the lookup",
				  pl->peer);
		break;
	default:
		session_reply_err(s, status, "lookup at peer %s: %s", pl->peer, strerror(-status));
		break;
	}
	free(pl);
	session_unref(s);
}

static void reply_peers(struct session *s, const UcclCtl__PeersReq *q)
{
	struct daemon *d = s->d;
	struct peers_lookup *pl;
	int r;

	if (!q->lookup_peer && !q->lookup_name) {
		send_peers(s, NULL);
		return;
	}
	if (!q->lookup_peer || !q->lookup_name) {
		session_reply_err(s, -EINVAL, "a lookup needs both lookup_peer and lookup_name");
		return;
	}
	if (!s->admin) {
		session_reply_err(s, -EPERM, "a peer lookup needs the admin role (uid 0, the daemon's "
				  "own user, or admin_gid in uccl.conf)");
		return;
	}
	if (!d->peers) {
		session_reply_err(s, -ENOTCONN, "peering is off (peer_listen = none)");
		return;
	}
	pl = calloc(1, sizeof(*pl));
	if (!pl) {
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	pl->s = s;
	snprintf(pl->peer, sizeof(pl->peer), "%s", q->lookup_peer);
	pl->timeout_ms = d->conf.peer_timeout_ms;
	session_ref(s);
	r = peer_lookup(d->peers, q->lookup_peer, q->lookup_name, pl->timeout_ms, lookup_done, pl,
			NULL);
	if (r == 0)
		return;
	session_unref(s);
	free(pl);
	/* the client's words go into the reply and the debug log: printable only */
	char peer[CONF_PEER_NAME_MAX + 1], name[PEER_LISTEN_NAME_MAX + 1];

	peerframe_sanitize(peer, sizeof(peer), q->lookup_peer);
	peerframe_sanitize(name, sizeof(name), q->lookup_name);
	switch (r) {
	case -ESRCH:
		/* the shared peers line names this host too: it is skipped there */
		if (strcmp(q->lookup_peer, peermgr_host_name(d->peers)) == 0)
			session_reply_err(s, r, "'%s' is this host: ucclctl endpoints lists its names",
					  peer);
		else
			session_reply_err(s, r, "no peer named '%s' in uccl.conf", peer);
		break;
	case -ENOTCONN:
		session_reply_err(s, r, "peer %s is not up", peer);
		break;
	case -EINVAL:
		session_reply_err(s, r, "'%s' is not a listen name (1..64 of A-Z a-z 0-9 . _ : -)", name);
		break;
	default:
		session_reply_err(s, r, "lookup at peer %s: %s", peer, strerror(-r));
		break;
	}
}

void status_reply(struct session *s, UcclCtl__Request *req)
{
	if (req->body_case == UCCL_CTL__REQUEST__BODY_STATUS) {
		reply_status(s);
		return;
	}
	if (req->body_case == UCCL_CTL__REQUEST__BODY_PEERS) {
		reply_peers(s, req->peers);
		return;
	}
	if (req->body_case == UCCL_CTL__REQUEST__BODY_CHANNELS) {
		reply_channels(s, req->channels);
		return;
	}
	if (!s->admin) {
		session_reply_err(s, -EPERM, "%s needs the admin role (uid 0, the daemon's own user, "
				  "or admin_gid in uccl.conf)", frame_request_name(req));
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
