/* SPDX-License-Identifier: MIT */
/*
 * sim_net: a simulated fabric that drives the real transport channels
 * (engine/tpchan) in virtual time. Hosts have one NIC with a line rate;
 * links have a rate and a one-way delay; switches have per-output-port
 * drop-tail queues bounded in bytes, ECN marking (step or RED-like on the
 * instantaneous queue) and ECMP over equal-cost next hops, hashed on
 * (source host, destination host, the packet's path field). Links can lose
 * packets at random or in bursts (Gilbert-Elliott). Every pair of hosts
 * that exchanges a flow gets one tpchan on each side; a flow is one message
 * submitted at its start time and its completion time is the sender's
 * complete() callback. Sans-I/O like the rest of engine/: no clock, no
 * files; deterministic from the seed. The caller builds a topology, adds
 * flows, runs, then reads the records (FCT, throughput per flow per
 * sampling interval, queue depth per switch port per sampling interval).
 *
 * With PFC on (sim_pfc) the fabric is lossless: switches pause the
 * transmitter upstream of an ingress port instead of dropping.
 */
#ifndef UCCL_ENGINE_SIM_SIM_NET_H
#define UCCL_ENGINE_SIM_SIM_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/cc/cc.h"

#define SIM_MAX_NODES 65536u
#define SIM_MAX_FLOWS 1048576u

enum sim_ecn_mode { SIM_ECN_NONE, SIM_ECN_STEP, SIM_ECN_RED };
enum sim_loss_mode { SIM_LOSS_NONE, SIM_LOSS_RANDOM, SIM_LOSS_BURSTY };

struct sim_ecn {
	enum sim_ecn_mode mode;
	uint64_t k_bytes;              /* step: mark when the queue holds >= k */
	uint64_t min_bytes, max_bytes; /* red: 0 below min, pmax at max, 1 above */
	uint32_t pmax_ppm;
};

struct sim_loss {
	enum sim_loss_mode mode;
	uint32_t ppm;                  /* random: per packet per link */
	/* bursty (Gilbert-Elliott), per link direction: the chance per packet
	 * of moving good -> bad and bad -> good, and the loss in each state */
	uint32_t p_gb_ppm, p_bg_ppm, bad_ppm, good_ppm;
};

/* Lossless link-level flow control, single priority (PFC, or InfiniBand's
 * link credits in effect). A switch counts per ingress port the bytes it
 * holds that came in through that port (queued or being sent out of any
 * output port); at xoff it sends PAUSE to the transmitter at the other end
 * of the link, at xon RESUME, each taking effect after the link's delay.
 * A paused port finishes the packet it is sending and starts no other; a
 * paused host NIC sends nothing at all (every channel of the host waits).
 * Buffering moves from the output to the ingress: queue_bytes is then each
 * ingress port's buffer (the switch's total stays ports x queue_bytes),
 * output queues are not bounded by it and nothing is dropped; a packet
 * arriving when its ingress already holds more than queue_bytes minus its
 * length is still taken and counted in pfc_overflow (headroom too small
 * for the link: a result that should not be trusted). */
struct sim_pfc {
	bool on;
	uint64_t xoff_bytes, xon_bytes;   /* xon < xoff, xoff + mtu <= queue_bytes */
};

struct sim_net_params {
	uint64_t seed;
	uint32_t mtu;                  /* largest packet, headers included */
	uint64_t queue_bytes;          /* per switch output port */
	struct sim_ecn ecn;
	struct sim_loss loss;          /* on every link, both directions */
	uint64_t sample_ns;            /* throughput and queue records; 0: none */
	uint64_t time_limit_ns;        /* stop (-ETIME) past this virtual time */
	/* every channel */
	const struct cc_ops *cc;       /* NULL: the transport's default */
	bool go_back_n;
	uint32_t npaths;
	uint32_t chunk_bytes;          /* 0: the transport's default */
	uint64_t max_inflight_bytes;   /* 0: the transport's default */
	uint64_t cc_delay_slack_ns;    /* 0: the CC module's default */
	uint64_t cc_base_rtt_ns;       /* tpchan_params.cc_base_rtt_ns; 0: learned */
	uint64_t rto_min_ns;           /* 0: the transport's default */
	uint32_t dupthresh;            /* 0: the transport's default */
	bool rack_off;                 /* tpchan_params.rack_off (scenario `rack = off`) */
	bool adaptive_chunk;           /* tpchan_params.adaptive_chunk */
	bool path_per_packet;          /* tpchan_params.path_per_packet */
	uint32_t path_run_bytes;       /* tpchan_params.path_run_bytes (`spray = run SIZE`) */
	/* in-band queue reports: each switch stamps on a DATA packet the queue
	 * it finds at its output port, in ppm of the depth at which ECN marks
	 * every packet (k for step, max for red, the port's queue size with ECN
	 * off), capped at 1000000; the packet keeps the maximum over the
	 * switches it crosses, and the receiving tpchan echoes it in its ACKs
	 * (tpchan_rx_ext, cc_ack.hint_ppm). Out of band of the wire bytes, as
	 * a switch would put it in a header the transport does not own. */
	bool inband;
	struct sim_pfc pfc;
};

struct sim_flow_info {
	uint32_t src, dst;             /* host indices */
	uint64_t bytes, start_ns;
	uint64_t end_ns;               /* sender's completion; valid when done */
	uint64_t delivered;            /* distinct payload bytes the receiver got */
	int res;                       /* completion result, 0 = success */
	bool done;
};

struct sim_port_info {
	const char *name;              /* "leaf0>spine1", "sw0>h3", "h2>nic" */
	bool is_switch;                /* has a queue (and a column in the samples) */
	uint64_t tx_pkts, tx_bytes;
	uint64_t drops;                /* queue full */
	uint64_t marks;                /* ECN CE set */
	uint64_t lost;                 /* the link's loss model */
	uint64_t max_queue;            /* bytes */
	/* pfc: PAUSE frames this port's node sent over this port's link, the
	 * time this port was held paused by its peer, and packets taken in
	 * through this port past its buffer (sim_pfc) */
	uint64_t pauses, paused_ns, pfc_overflow;
};

struct sim_net_stats {
	uint64_t now_ns, events;
	uint64_t drops, marks, lost;   /* sums over ports */
	uint64_t data_pkts, retx_pkts, fast_retx, timeouts, acks;  /* sums over channels */
	uint64_t spurious_retx;        /* tpchan_stats.spurious_retx, summed */
	uint64_t small_chunks;         /* chunks adaptive_chunk cut small, summed */
	uint64_t rx_refused;           /* packets tpchan_rx refused */
	uint64_t bad_payload;          /* delivered bytes that did not match what was sent */
	uint64_t stray;                /* packets that reached the wrong host */
	uint32_t flows_done, flows_failed;
	uint64_t pauses, paused_ns, pfc_overflow;   /* sums over ports */
};

struct sim_net;

struct sim_net *sim_net_new(const struct sim_net_params *p);   /* NULL on bad params */
struct sim_net *sim_net_free(struct sim_net *n);               /* accepts NULL */

/* Topology. Host and switch indices count from 0 in order of creation;
 * a host has exactly one link. rate in Mbit/s. Return the index, or a
 * negative errno. */
int sim_net_add_host(struct sim_net *n, const char *name);
int sim_net_add_switch(struct sim_net *n, const char *name);
int sim_net_link_host(struct sim_net *n, uint32_t host, uint32_t sw, uint64_t rate_mbps,
		      uint64_t delay_ns);
int sim_net_link_switches(struct sim_net *n, uint32_t a, uint32_t b, uint64_t rate_mbps,
			  uint64_t delay_ns);
/* Two hosts on one cable, no switch. */
int sim_net_link_hosts(struct sim_net *n, uint32_t a, uint32_t b, uint64_t rate_mbps,
		       uint64_t delay_ns);
uint32_t sim_net_hosts(const struct sim_net *n);

/* A flow of bytes (> 0) from host src to host dst (!= src) at start_ns.
 * Returns its index, or a negative errno. */
int sim_net_add_flow(struct sim_net *n, uint32_t src, uint32_t dst, uint64_t bytes,
		     uint64_t start_ns);

/* Run until every flow has completed (0), virtual time passes the limit
 * (-ETIME), nothing is left to happen (-ENODATA), or an error: -EINVAL
 * when the transport refuses a channel's parameters (tpchan_params_ok). */
int sim_net_run(struct sim_net *n);

void sim_net_get_stats(const struct sim_net *n, struct sim_net_stats *out);
size_t sim_net_nflows(const struct sim_net *n);
void sim_net_flow(const struct sim_net *n, size_t i, struct sim_flow_info *out);
size_t sim_net_nports(const struct sim_net *n);
void sim_net_port(const struct sim_net *n, size_t i, struct sim_port_info *out);

/* Records, one row per sampling interval: row r covers
 * [r * sample_ns, (r + 1) * sample_ns). */
size_t sim_net_nsamples(const struct sim_net *n);
/* Payload bytes delivered to the flow's receiver during row r. */
uint64_t sim_net_flow_bytes(const struct sim_net *n, size_t flow, size_t row);
/* Queue depth in bytes of switch port `port` (an index for sim_net_port
 * with is_switch) sampled at the start of row r. */
uint64_t sim_net_queue(const struct sim_net *n, size_t port, size_t row);

#endif
