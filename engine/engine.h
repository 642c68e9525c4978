/* SPDX-License-Identifier: MIT */
/*
 * engine: the transport core that executes applications' operations. It is
 * sans-I/O: the caller (an engine thread in ucclsvcd, or a unit test) hands it
 * endpoint regions that are already mapped, memory regions, connections and
 * the current time; engine_poll() drains submission rings, validates every
 * descriptor as untrusted input, executes it and posts completions. Memory is
 * reached through the caller's struct engine_mem_ops (memcpy for mapped
 * regions, process_vm_* for registered ones); waking a sleeping client goes
 * through a callback. It never opens a socket, starts a thread or reads a
 * clock.
 *
 * Same-host connections join two endpoints of this engine directly.
 * Connections to endpoints on other hosts are bound to a channel (one per
 * remote host, engine/tpchan.h): the caller feeds received packets in with
 * engine_rx, takes packets to send from engine_tx, and calls engine_poll or
 * engine_tx again by engine_next_deadline. Across hosts: put, signal
 * (delivered after every earlier put on the connection was written), flush,
 * send/recv (bounded unexpected-message buffer, then backpressure) and get
 * (the region's host snapshots the range and sends it back).
 */
#ifndef UCCL_ENGINE_ENGINE_H
#define UCCL_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/mr.h"
#include "engine/tpchan.h"

struct engine;

/* One part of a put or get split over lanes (see "lanes" below). */
struct engine_lane_part {
	uint8_t opcode;                /* UCCL_OP_PUT or UCCL_OP_GET */
	uint32_t lane;                 /* 1 .. nlanes: the caller maps it to an engine */
	uint32_t ep, conn;             /* the owner side's ids; its lane sides have the same */
	uint32_t wire;                 /* ... and its wire id, generation included: a part
					* for an earlier connection under the same conn id
					* is refused (-ECONNRESET), not run on the new one */
	uint32_t client_id, lmr;       /* local region: a put's source, a get's target */
	uint64_t loff, len;
	uint64_t rkey, roff;           /* remote region */
	uint64_t cookie;               /* the owner engine's: back to engine_lane_done */
	uint32_t origin;               /* the caller's: passed back to lane_done */
};

struct engine_mem_ops {
	/* Copy len bytes from src+src_off to dst+dst_off; ranges were checked.
	 * Returns 0 or a negative errno (-EFAULT if a process went away). */
	int (*copy)(void *arg, const struct mr *dst, uint64_t dst_off,
		    const struct mr *src, uint64_t src_off, uint64_t len);
	void *arg;
};

struct engine_params {
	uint32_t max_endpoints;        /* ep ids are 0 .. max_endpoints-1 */
	uint32_t max_mrs;              /* across all clients */
	uint32_t poll_batch;           /* descriptors taken per endpoint per pass */
	uint64_t max_op_bytes;         /* longest single operation (-EMSGSIZE); 0 = no cap.
					* Copies run inline, so this bounds one op's stall. */
	/* bytes of same-host copies (descriptors' len on same-host
	 * connections) taken from one endpoint in one pass, the first
	 * always (0: ENGINE_DEFAULT_PASS_BYTES): one client's batch of large
	 * copies then holds up the others for about this much, not
	 * poll_batch x max_op_bytes */
	uint64_t pass_bytes;
	const struct engine_mem_ops *mem;
	/* Called (at most once per endpoint per engine_poll) when an endpoint
	 * whose client sleeps got completions or a semaphore increment. */
	void (*notify)(void *arg, uint32_t ep_id);
	void *notify_arg;
	/* host-to-host; max_chans 0: same-host only */
	uint32_t max_chans;            /* channel ids are 0 .. max_chans-1 */
	uint32_t max_remote_msgs;      /* messages in flight over all channels (default 65536) */
	uint64_t max_unexpected_bytes; /* buffered incoming sends nobody has received (default 64 MiB;
					* each connection its share, rrecv.c room_for) */
	uint32_t max_unexpected_msgs;  /* incoming-send records and get snapshots (default 16384) */
	uint64_t max_ep_inflight_bytes;/* one endpoint's bytes in channels; more wait (0: no limit) */
	/* credit for peers running a receiver-driven cc (eqds): the rate
	 * this host's pull pacer grants at, in bit/s (0: unpaced, grant on
	 * request up to tpchan's limit), and bytes per grant (0: 16 KiB) */
	uint64_t pull_rate_bps;
	uint32_t pull_quantum;
	/* lanes (below): a put of at least lane_min_bytes on a side with
	 * lanes is split over them (0: never split). The owner's engine
	 * hands each part to lane_submit (0, or a negative errno: that part
	 * failed); a lane's engine reports each part it finished through
	 * lane_done. Both run inside engine calls, on the calling thread. */
	uint64_t lane_min_bytes;
	int (*lane_submit)(void *arg, const struct engine_lane_part *p);
	void (*lane_done)(void *arg, uint32_t origin, uint64_t cookie, int res);
	void *lane_arg;
};

struct engine_ep_params {
	uint32_t ep_id;                /* < max_endpoints, unused */
	uint32_t client_id;
	void *region;                  /* mapped endpoint region */
	size_t region_len;
	const struct uccl_shm_hdr *hdr;/* layout, from ring_region_layout (private copy) */
	uint32_t max_conns;            /* conn ids are 0 .. max_conns-1 (<= hdr->sem_count) */
	uint32_t max_outstanding;      /* consumed but not yet completed descriptors */
};

struct engine_ep_stats {
	uint64_t submitted;            /* descriptors consumed */
	uint64_t completed;            /* completions posted */
	uint64_t errors;               /* completions with res < 0 */
	uint64_t bytes;                /* payload bytes moved for this endpoint's ops */
	uint32_t outstanding;
	uint32_t conns;
};

/* Engine-wide counters; names/values also listed by engine_stats_foreach. */
struct engine_stats {
	uint64_t polls;                /* engine_poll calls */
	uint64_t busy_polls;           /* calls that found work */
	uint64_t sqes;                 /* descriptors consumed */
	uint64_t cqes;                 /* completions posted */
	uint64_t ops[8];               /* by opcode (index = enum uccl_opcode) */
	uint64_t bytes;                /* payload bytes copied */
	uint64_t err_inval;            /* malformed descriptor */
	uint64_t err_badconn;          /* unknown or closed connection */
	uint64_t err_access;           /* key, owner or bounds check failed */
	uint64_t err_fault;            /* any other error: a copy failed, no memory, ... */
	uint64_t err_msgsize;          /* send longer than its receive, op over max_op_bytes */
	uint64_t err_reset;            /* peer endpoint went away */
	uint64_t err_canceled;         /* region deregistered or endpoint closed under an op */
	uint64_t corrupt_rings;        /* rings whose indices were corrupt (endpoint stopped) */
	uint64_t notifies;             /* wake-ups requested */
	/* host-to-host */
	uint64_t remote_msgs;          /* messages handed to channels */
	uint64_t remote_queued;        /* submissions that waited for channel space */
	uint64_t send_retries;         /* sends resent after the receiver had no buffer */
	uint64_t rx_delivered;         /* DATA payloads accepted */
	uint64_t rx_refused_conn;      /* no such connection, or not bound to that channel */
	uint64_t rx_refused_access;    /* remote key not the connection owner's */
	uint64_t rx_refused_range;     /* outside the target region */
	uint64_t rx_refused_nobuf;     /* unexpected-message buffer full (sender retries) */
	uint64_t rx_refused_other;     /* bad opcode, stale message, receive too small */
	uint64_t rx_no_chan;           /* engine_rx for a channel that does not exist */
	uint64_t unexpected_bytes;     /* buffered now (sends, get snapshots) */
	uint64_t unexpected_msgs;      /* now: incoming-send records and get snapshots */
	uint64_t rx_signals_held;      /* signals (and puts carrying one) in before earlier puts settled */
	uint64_t put_records;          /* now: connection sides keeping a record of their
					* peer's puts (partial, out of order, signals held) */
	uint64_t lane_splits;          /* puts split over lanes */
	uint64_t lane_parts;           /* parts handed to lanes */
	uint64_t shadow_eps;           /* now: shadow endpoints (lane sides' owners here) */
};

struct engine *engine_new(const struct engine_params *p);
struct engine *engine_free(struct engine *e);          /* accepts NULL, returns NULL */

/* Endpoints. engine_ep_remove fails the endpoint's own pending operations
 * silently (its rings are about to be unmapped) and resets every connection
 * to it: the peers' pending and later operations on those connections
 * complete with -ECONNRESET. After it returns the engine holds no pointer into
 * the region. */
int engine_ep_add(struct engine *e, const struct engine_ep_params *p);
int engine_ep_remove(struct engine *e, uint32_t ep_id);

/* Join conn_a of ep_a with conn_b of ep_b (both sides become usable). */
int engine_conn_add(struct engine *e, uint32_t ep_a, uint32_t conn_a, uint32_t ep_b, uint32_t conn_b);
/* Close one side: its pending ops complete with -ECANCELED, the peer side is
 * reset (-ECONNRESET for its pending and later ops). The conn id may be reused
 * after this returns. */
int engine_conn_remove(struct engine *e, uint32_t ep_id, uint32_t conn);

/* Memory regions (copied in). Removing one completes pending operations that
 * reference it with -ECANCELED. */
int engine_mr_add(struct engine *e, const struct mr *m);
int engine_mr_remove(struct engine *e, uint32_t client_id, uint32_t mr_id);

/* One pass over every endpoint. Returns the number of descriptors consumed
 * plus completions posted (0 = idle). */
int engine_poll(struct engine *e, uint64_t now_ns);

/* Going to sleep: arm NEED_WAKEUP on every submission ring, then re-check.
 * Returns 0 if it is safe to sleep, >0 if work arrived meanwhile. */
int engine_sleep_arm(struct engine *e);
void engine_sleep_disarm(struct engine *e);

/* ---- host-to-host (engine/remote.c) ---- */

/* A channel to one remote host. p->cb and p->cb_arg are the engine's; the
 * rest as tpchan.h. -EBUSY if chan exists, -EINVAL, -ENOMEM. */
int engine_chan_add(struct engine *e, uint32_t chan, const struct tpchan_params *p);
/* The host is gone (or came back with new tokens: remove, then add): every
 * connection bound to chan is reset, its pending operations complete with
 * err (negative errno). */
int engine_chan_remove(struct engine *e, uint32_t chan, int err);
/* Bind conn of ep to chan. wire_id (conn | generation << 16) is what
 * packets to this side carry in dst_conn, so that a late packet of an
 * earlier connection on the same conn id is refused. The side receives at
 * once; it sends once engine_rconn_connect named the remote side. */
int engine_rconn_add(struct engine *e, uint32_t ep, uint32_t conn, uint32_t wire_id, uint32_t chan);
int engine_rconn_connect(struct engine *e, uint32_t ep, uint32_t conn, uint32_t rep,
			 uint32_t rconn_wire);
/* The remote side closed: pending and later operations fail with
 * -ECONNRESET until engine_conn_remove. */
int engine_conn_reset(struct engine *e, uint32_t ep, uint32_t conn);

/* One received datagram from chan's host: one or more packets back to back
 * (wire_first_len cuts them), each taken on its own. 0 or why the first
 * one dropped was (each drop is counted). engine_rx_ce: the datagram's IP
 * header carried a CE mark (ECN). */
int engine_rx(struct engine *e, uint32_t chan, const void *pkt, size_t len, uint64_t now_ns);
int engine_rx_ce(struct engine *e, uint32_t chan, const void *pkt, size_t len, uint64_t now_ns,
		 bool ce);

struct engine_txpkt {
	uint8_t *buf;                  /* caller's buffer of at least the channel's mtu */
	uint32_t len;                  /* set by engine_tx */
	uint16_t path;
	uint32_t chan;
	/* set by engine_tx for a channel with tpchan_params.tx_gather: the
	 * packet is buf[0, hdr_len) then payload[0, len - hdr_len), the payload
	 * in a registered region or a get's snapshot, valid until the engine
	 * next takes input (engine_rx, engine_poll, any other call); NULL:
	 * the whole packet is in buf */
	const uint8_t *payload;
	uint32_t hdr_len;
	bool any_path;                 /* tpchan_txpkt.any_path */
	/* the channel's mtu: a datagram to its peer may carry packets back to
	 * back up to this many bytes (nic_pkt.pack_max, if the caller packs) */
	uint32_t dgram_max;
};
/* Up to max packets to send now, across channels in turn. */
int engine_tx(struct engine *e, uint64_t now_ns, struct engine_txpkt *out, int max);
/* When engine_tx must run again without new input; UINT64_MAX if never. */
uint64_t engine_next_deadline(const struct engine *e);

#define ENGINE_CC_VARS 16            /* >= what any cc module describes (test_cc_modules) */
struct engine_chan_stats {
	struct tpchan_stats tp;
	uint32_t conns;                /* connection sides bound to it */
	uint32_t queued_ops;           /* waiting for channel space or a retry */
	bool failed;                   /* gave up on the peer (max_retx): connections reset */
	const char *cc;                /* congestion controller (a static string) */
	int n_cc;                      /* its state: n_cc (name, value) pairs */
	const char *cc_names[ENGINE_CC_VARS];
	uint64_t cc_values[ENGINE_CC_VARS];
};
int engine_chan_stats(const struct engine *e, uint32_t chan, struct engine_chan_stats *out);
/* Channels that gave up on their peer (engine_chan_stats.failed) since the
 * last call, each told once: up to max ids into chans; returns how many.
 * Costs a load while none failed. The peer may not know: its side of a
 * connection can wait for data that will not come (a get's response)
 * until its daemon is told. */
int engine_chan_failures(struct engine *e, uint32_t *chans, int max);
/* chan's per-path state into out[0..max) (tpchan_path_stats): the number
 * written (0: none held now, the channel is idle), or -ENOENT. */
int engine_chan_paths(const struct engine *e, uint32_t chan, struct paths_stat *out, uint32_t max);
/* Switch chan's congestion controller (tpchan_set_cc: it starts from the
 * current window). 0, -ENOENT (no such channel), -EINVAL, -ENOMEM. */
int engine_chan_set_cc(struct engine *e, uint32_t chan, const struct cc_ops *ops);

/* ---- lanes: one connection's large puts and gets over several engines ----
 *
 * An engine thread is the bound of one endpoint pair's throughput. Lanes
 * let one connection use several: lane k of a connection side is a side
 * with the same endpoint and connection ids in another engine (on a
 * "shadow" endpoint: no rings, the owner's client), bound to that engine's
 * channel to the peer host, whose lane k the peer's daemon binds the same
 * way. The owner cuts a put or get of at least lane_min_bytes into
 * nlanes + 1 parts, runs the first itself and hands the others to the
 * lanes (lane_submit); the op completes once every part did, with the
 * first error. A signal waits at the sender until every part of the puts
 * before it is done: the receiver orders a signal only behind the puts of
 * its own connection side. Sends are not split (their matching is per
 * side). The daemon binds lanes with `lanes` in uccl.conf (daemon/lanes.h). */

/* A ringless endpoint for lane sides: its sides bind to channels like any
 * other; its finished ops go to lane_done instead of a completion ring.
 * -EBUSY: this endpoint's shadow is there already (client and max_conns
 * alike); -EEXIST: something else holds the id. */
int engine_shadow_add(struct engine *e, uint32_t ep_id, uint32_t client_id, uint32_t max_conns,
		      uint32_t max_outstanding);
/* The remote side ep/conn (bound, owner) has nlanes lanes (0: none; at
 * most ENGINE_MAX_LANES). Puts and gets issued later split over them. */
#define ENGINE_MAX_LANES 15u
int engine_rconn_lanes(struct engine *e, uint32_t ep, uint32_t conn, uint32_t nlanes);
/* A lane's engine: start part p (a put or a get) on the shadow side
 * p->ep/p->conn. 0 (it reports through lane_done), -EAGAIN (its endpoint
 * has no room for another op now: again later), or another negative errno
 * (not started, nothing reported: the caller reports it failed). */
int engine_lane_start(struct engine *e, const struct engine_lane_part *p);
/* The owner's engine: the part with this cookie finished with res. 0, or
 * -ENOENT when its put or get is gone (its endpoint was removed or broke
 * meanwhile; a reset or closed connection's op waits for its parts). */
int engine_lane_done(struct engine *e, uint64_t cookie, int res);

const struct engine_stats *engine_stats(const struct engine *e);
/* 0; -EPIPE (stopped, figures valid); -ENOENT: none here (a lane shadow
 * counts as none: its endpoint's own engine has the figures). */
int engine_ep_stats(const struct engine *e, uint32_t ep_id, struct engine_ep_stats *out);
/* Calls fn(name, value) for every engine counter, for ucclctl stats. */
void engine_stats_foreach(const struct engine *e, void (*fn)(void *arg, const char *name, uint64_t v),
			  void *arg);

#endif
