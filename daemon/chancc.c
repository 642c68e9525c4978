/* SPDX-License-Identifier: MIT */
/*
 * chancc: per-channel congestion control on the main thread. Keeps the
 * controllers set at run time (by peer name, so that one set while a peer is
 * down applies when it comes up), answers SetCc, and on reload switches the
 * live channels whose peer_cc entry changed. The switch itself is an engine
 * command (ENGCMD_CHAN_SET_CC): the engine thread owns the channels, and
 * commands run in order, so a switch queued after a channel's creation
 * finds it.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/chancc.h"
#include "daemon/daemon.h"
#include "daemon/engthr.h"
#include "daemon/log.h"
#include "daemon/peer.h"
#include "daemon/rconn.h"
#include "daemon/session.h"
#include "proto/peerframe.h"

struct chancc_set {
	char peer[CONF_PEER_NAME_MAX + 1];
	const struct cc_ops *ops;      /* static */
};

struct chancc {
	struct chancc_set set[CONF_MAX_PEERS];
	uint32_t n;
};

/* A SetCc waiting for the engine thread. */
struct setcc {
	char peer[CONF_PEER_NAME_MAX + 1];
	const struct cc_ops *ops;
	const struct cc_ops *prev;     /* the run-time setting it replaced, or NULL */
};

struct chancc *chancc_new(void)
{
	return calloc(1, sizeof(struct chancc));
}

struct chancc *chancc_free(struct chancc *cc)
{
	free(cc);
	return NULL;
}

static struct chancc_set *find_set(const struct chancc *cc, const char *peer)
{
	for (uint32_t i = 0; cc && i < cc->n; i++)
		if (strcmp(cc->set[i].peer, peer) == 0)
			return (struct chancc_set *)&cc->set[i];
	return NULL;
}

/* NULL ops: forget the peer's setting. Room is certain: only peers of the
 * configuration (at most CONF_MAX_PEERS) get one. */
static void put_set(struct chancc *cc, const char *peer, const struct cc_ops *ops)
{
	struct chancc_set *e = find_set(cc, peer);

	if (!ops) {
		if (e)
			*e = cc->set[--cc->n];
		return;
	}
	if (!e) {
		if (cc->n == CONF_MAX_PEERS)
			return;
		e = &cc->set[cc->n++];
		snprintf(e->peer, sizeof(e->peer), "%s", peer);
	}
	e->ops = ops;
}

static const struct cc_ops *effective(const struct chancc *cc, const struct conf *c,
				      const char *peer)
{
	const struct chancc_set *e = find_set(cc, peer);
	const struct cc_ops *ops;

	if (e)
		return e->ops;
	ops = cc_find(conf_cc_of(c, peer));
	return ops ? ops : &cc_window_ops;   /* cannot happen: conf checked the name */
}

const struct cc_ops *chancc_for(const struct daemon *d, const char *peer)
{
	return effective(d->chancc, &d->conf, peer);
}

static bool in_peers(const struct conf *c, const char *peer)
{
	for (uint32_t i = 0; i < c->n_peers; i++)
		if (strcmp(c->peers[i].name, peer) == 0)
			return true;
	return false;
}

static void cmd_free(struct engcmd *c)
{
	free(c);
}

/* Switch a live channel after a reload (no session waits for it). */
static void reload_done(struct engcmd *c)
{
	if (c->result < 0 && c->result != -ENOENT)
		log_warn("reload: data channel %u could not switch congestion control: %s",
			 c->u.chan_cc.chan, strerror(-c->result));
	cmd_free(c);
}

void chancc_reload(struct daemon *d, const struct conf *old)
{
	struct chancc *cc = d->chancc;
	const struct conf *now = &d->conf;

	if (!cc)
		return;
	/* settings of peers that are gone */
	for (uint32_t i = 0; i < cc->n;) {
		if (in_peers(now, cc->set[i].peer))
			i++;
		else
			cc->set[i] = cc->set[--cc->n];
	}
	for (uint32_t i = 0; i < now->n_peers; i++) {
		const char *peer = now->peers[i].name;
		const struct cc_ops *before = effective(cc, old, peer), *after;
		struct engcmd *c;
		uint32_t chan, rthr;

		/* the file changed for this peer: it wins over a run-time setting */
		if (strcmp(conf_cc_of(old, peer), conf_cc_of(now, peer)) != 0)
			put_set(cc, peer, NULL);
		after = effective(cc, now, peer);
		if (after == before || rconn_chan_of(d, peer, &chan, &rthr) < 0)
			continue;
		c = calloc(1, sizeof(*c));
		if (!c) {
			log_err("reload: peer %s: out of memory to switch congestion control", peer);
			continue;
		}
		c->type = ENGCMD_CHAN_SET_CC;
		c->done = reload_done;
		c->u.chan_cc.chan = chan;
		c->u.chan_cc.ops = after;
		daemon_submit_chans(d, c, chan, rthr);
		log_info("reload: peer %s: data channel %u congestion control %s -> %s", peer, chan,
			 before->name, after->name);
	}
}

static void setcc_done(struct engcmd *c)
{
	struct session *s = c->arg;
	struct setcc *sc = c->ctx;
	struct daemon *d = s->d;

	/* -ENOENT: the channel went down meanwhile; the setting waits for it */
	if (c->result < 0 && c->result != -ENOENT) {
		/* what the file or the earlier setting said still runs */
		if (find_set(d->chancc, sc->peer) && find_set(d->chancc, sc->peer)->ops == sc->ops)
			put_set(d->chancc, sc->peer, sc->prev);
		log_warn("peer %s: switching congestion control to %s failed: %s", sc->peer,
			 sc->ops->name, strerror(-c->result));
		session_reply_err(s, c->result, "peer %s: switching to %s failed: %s", sc->peer,
				  sc->ops->name, strerror(-c->result));
	} else {
		UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
		UcclCtl__SetCcRep sr = UCCL_CTL__SET_CC_REP__INIT;

		sr.applied = c->result == 0;
		rep.body_case = UCCL_CTL__REPLY__BODY_SET_CC;
		rep.set_cc = &sr;
		session_reply(s, 0, NULL, &rep, NULL, 0);
	}
	free(sc);
	session_cmd_finish(c);
}

static void reply_remembered(struct session *s)
{
	UcclCtl__Reply rep = UCCL_CTL__REPLY__INIT;
	UcclCtl__SetCcRep sr = UCCL_CTL__SET_CC_REP__INIT;

	sr.applied = false;
	rep.body_case = UCCL_CTL__REPLY__BODY_SET_CC;
	rep.set_cc = &sr;
	session_reply(s, 0, NULL, &rep, NULL, 0);
}

void chancc_request(struct session *s, const UcclCtl__SetCcReq *q)
{
	struct daemon *d = s->d;
	/* the client's words go into the reply and the log: printable only */
	char peer[CONF_PEER_NAME_MAX + 1], name[CONF_CC_NAME_MAX + 1];
	const struct cc_ops *ops, *prev;
	struct chancc_set *e;
	struct engcmd *c;
	struct setcc *sc;
	uint32_t chan, rthr;

	if (!s->admin) {
		session_reply_err(s, -EPERM, "set_cc needs the admin role (uid 0, the daemon's own "
				  "user, or admin_gid in uccl.conf)");
		return;
	}
	peerframe_sanitize(peer, sizeof(peer), q->peer);
	peerframe_sanitize(name, sizeof(name), q->cc);
	ops = strlen(q->cc) <= CONF_CC_NAME_MAX ? cc_find(q->cc) : NULL;
	if (!ops) {
		session_reply_err(s, -EINVAL, "unknown congestion controller '%s' (known: %s)", name,
				  cc_names());
		return;
	}
	/* before the peers check: with peering off no peer can be listed */
	if (!d->chancc) {
		session_reply_err(s, -ENOTCONN, "peering is off (peer_listen = none)");
		return;
	}
	if (!conf_peer_name_valid(q->peer) || !in_peers(&d->conf, q->peer)) {
		session_reply_err(s, -ENOENT, "no peer named '%s' in uccl.conf peers", peer);
		return;
	}
	if (d->peers && strcmp(q->peer, peermgr_host_name(d->peers)) == 0) {
		session_reply_err(s, -EINVAL, "'%s' is this host: it has no channel to itself", peer);
		return;
	}
	e = find_set(d->chancc, q->peer);
	prev = e ? e->ops : NULL;
	put_set(d->chancc, q->peer, ops);
	log_info("peer %s: congestion control %s, set by client %u (uid %u)", q->peer, ops->name,
		 s->id, (unsigned)s->uid);
	if (rconn_chan_of(d, q->peer, &chan, &rthr) < 0) {
		reply_remembered(s);
		return;
	}
	sc = calloc(1, sizeof(*sc));
	c = sc ? session_cmd_new(s, ENGCMD_CHAN_SET_CC, setcc_done) : NULL;
	if (!c) {
		free(sc);
		put_set(d->chancc, q->peer, prev);
		session_reply_err(s, -ENOMEM, "out of memory");
		return;
	}
	snprintf(sc->peer, sizeof(sc->peer), "%s", q->peer);
	sc->ops = ops;
	sc->prev = prev;
	c->ctx = sc;
	c->u.chan_cc.chan = chan;
	c->u.chan_cc.ops = ops;
	daemon_submit_chans(d, c, chan, rthr);
}
