/* SPDX-License-Identifier: MIT */
/*
 * rconn: connections between endpoints on different hosts, on the main
 * thread. Keeps one engine channel per peer daemon that is up (its tokens,
 * data address and paths come from the peering hello; a peer that goes down
 * or comes back with new tokens resets every connection over it), carries
 * out "connect to host/name" (bind our side in the engine, ask the peer's
 * daemon to create and queue its side, then complete ours), answers the
 * peers' connect requests, and tells a peer when one of our sides closes.
 */
#ifndef UCCL_DAEMON_RCONN_H
#define UCCL_DAEMON_RCONN_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/peer.h"
#include "engine/engine.h"

struct daemon;
struct dep;
struct dconn;
struct session;

/* one channel (slot) per peer the peer table holds, configured and dynamic */
#define RCONN_MAX_CHANS  ((uint32_t)PEERMGR_MAX)
#define RCONN_MAX_ROWS   256u         /* sub-channels listed by rconn_chans at most */
#define RCONN_RETRY_MS   50u          /* connect: retry while the peer or name is not there yet */

/* After peermgr_start: follow the peers, answer their requests. 0 or
 * -ENOMEM. */
int rconn_start(struct daemon *d);

/* Connect ep to "host/name" (parked: the session's reply comes later). A
 * peer that is not up, or no listener under name there, is retried every
 * RCONN_RETRY_MS until timeout_ms (capped by ctl_timeout_ms). */
void rconn_connect(struct session *s, struct dep *ep, const char *target, uint32_t timeout_ms);

/* engthr_params.chan_failed (arg: the daemon): an engine's sub-channel to
 * a peer gave up while the peer's control connection may stay up. Its
 * connections were reset here, but the peer's sides may wait for data
 * that will not come (a get's response): the peer is restarted, which
 * rebuilds the channels on both sides and resets its sides too. A report
 * about a channel that has been replaced since (tag) is ignored. */
void rconn_chan_gave_up(void *arg, uint32_t thread, uint32_t chan, uint64_t tag);

/* Our side of remote connection conn of ep closes: tell the peer's daemon
 * (its side is reset). */
void rconn_tell_closed(struct daemon *d, struct dep *ep, uint32_t conn);

/* A data channel's transport parameters from the configuration (shared
 * with daemon/xconn.c's channels between our own threads). peer_inflight:
 * the other end's max_inflight_bytes, which sizes its receive window (0:
 * a daemon that does not announce it, whose window is the default). */
struct tpchan_params;
struct cc_ops;
void rconn_chan_params(const struct daemon *d, uint32_t payload_mtu, uint32_t npaths,
		       uint64_t peer_inflight, const struct cc_ops *cc, uint64_t tx_token,
		       uint64_t rx_token, uint64_t seed, struct tpchan_params *out);

/* "host h endpoint N" for ucclctl and accept replies. */
void rconn_peer_label(const struct daemon *d, const struct dconn *dc, char *buf, size_t len);

/* Channels for ucclctl: fill up to max entries with the ids and peer names
 * of channels that are up (only peer's if not NULL; "(self)": those between
 * our threads); returns how many. */
struct rconn_chan_info {
	uint32_t chan;                 /* the engine's id: nthr_chan(peer slot, rthread) */
	uint32_t thread, rthread;      /* our engine thread, the peer's */
	char peer[33];
	uint64_t up_ms;                /* daemon_now_ms() when it came up */
	uint32_t paths, mtu;
	bool crc;                      /* DATA packets carry crc32c */
};
/* Lists at most max rows into out; returns how many there are, also past max. */
size_t rconn_chans(const struct daemon *d, const char *peer, struct rconn_chan_info *out, size_t max);

/* The channel slot of peer and its engine threads (sub-channels per thread
 * of ours) if it is up (0), else -ENOTCONN. */
int rconn_chan_of(const struct daemon *d, const char *peer, uint32_t *chan, uint32_t *rthreads);

#endif
