/* SPDX-License-Identifier: MIT */
/*
 * cc: congestion control behind one ops table. A channel (or sub-channel)
 * owns one instance; the transport calls it on every acknowledgement batch
 * and every loss, and asks it how many bytes may be in flight. Modules are
 * pure (no clock of their own: times come in the events).
 */
#ifndef UCCL_ENGINE_CC_CC_H
#define UCCL_ENGINE_CC_CC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cc_params {
	uint32_t mss;                  /* payload bytes per packet */
	uint32_t chunk;                /* bytes per CC decision (the transport's chunk) */
	uint64_t init_window;          /* bytes */
	uint64_t min_window;           /* never below this (>= one chunk) */
	uint64_t max_window;           /* never above this (flow-control cap) */
	uint64_t base_rtt_ns;          /* expected unloaded RTT; 0 = learn it */
	uint64_t delay_slack_ns;       /* delay noise the path adds without congestion
					* (0: the module's default) */
	uint64_t line_rate_bps;        /* the sender's link rate in bits/s; 0 = unknown.
					* Only dcqcn reads it: it starts a flow at line
					* rate and never goes above it, as the NIC does;
					* unknown, it starts at init_window per RTT. */
};

struct cc_ack {
	uint64_t now_ns;
	uint64_t acked_bytes;          /* newly acknowledged in this batch */
	uint64_t rtt_ns;               /* a sample from this batch, 0 if none */
	uint64_t inflight_bytes;       /* after removing the acked bytes */
	bool ecn;                      /* a CE mark was echoed in this batch */
	/*
	 * In-band congestion degree, for fabrics whose switches report more
	 * than one ECN bit (Unified Bus C-AQM style hints): how congested the
	 * worst queue on the path was, in parts per million of its marking
	 * range (1..1000000; larger values
	 * are read as 1000000). 0 means "no report", and a module falls back
	 * to the ecn bit. It sits in what was tail padding after ecn, so the
	 * struct keeps its size and every existing field its offset; callers
	 * that build the struct with designated initialisers leave it 0.
	 * Only "hint" reads it. tpchan fills it from the ACK's hint_ppm, the
	 * highest degree the receiver saw on the DATA the ACK acknowledges
	 * (tpchan_rx_ext); the simulator's switches stamp it (scenario key
	 * inband); the UDP backend has no such report, so there it is 0.
	 */
	uint32_t hint_ppm;
};

/* cc_ops.flags */
#define CC_F_CREDIT 0x1u   /* receiver-driven: new data also needs the peer's credit
			    * (tpchan's credit mode); window() is the speculative
			    * window a burst may send before any credit */

struct cc_ops {
	const char *name;
	size_t state_size;
	uint32_t flags;                /* CC_F_* */
	void (*init)(void *st, const struct cc_params *p);
	void (*on_ack)(void *st, const struct cc_ack *a);
	/* timeout: a retransmission timer fired (not a SACK-detected loss) */
	void (*on_loss)(void *st, uint64_t now_ns, bool timeout);
	uint64_t (*window)(const void *st);             /* bytes allowed in flight */
	/* Fill up to n (name, value) pairs describing the state, for ucclctl.
	 * Returns how many. */
	int (*describe)(const void *st, const char **names, uint64_t *values, int n);
};

/* The default: window-based AIMD that also backs off when the RTT inflates
 * well past the lowest RTT seen (delay signal), at most once per RTT. */
extern const struct cc_ops cc_window_ops;

/*
 * The other controllers, and what each needs from the fabric. RTT samples
 * come from the transport's timestamps on any backend; ECN needs the
 * backend to send ECT and read CE back (IP_RECVTOS on UDP) and the
 * receiver to echo it.
 *
 * swift: delay-based (Swift, SIGCOMM 2020): target delay with flow
 *   scaling, additive increase below it, decrease in proportion to the
 *   excess above it, at most once per RTT. Needs RTT samples; ignores ECN.
 * timely: RTT gradient (TIMELY, SIGCOMM 2015), a rate handed out as a
 *   window. Needs RTT samples; ignores ECN.
 * dcqcn: DCQCN-like rate control (SIGCOMM 2015), the hardware baseline:
 *   ECN cuts by alpha/2, time- and byte-driven recovery. Needs ECN (and
 *   RTT samples to turn the rate into a window).
 * hint: proportional control in the spirit of Unified Bus C-AQM: the
 *   window shrinks in proportion to the congestion degree. Needs ECN, or
 *   better an in-band degree in cc_ack.hint_ppm.
 * none: the window is max_window, whatever happens (experiments only).
 *
 * eqds: receiver-driven (EQDS, NSDI 2022; UCCL-Tran's incast answer). The
 *   module only sizes the speculative window a sender may use when it
 *   starts a burst with nothing in flight; after that every new packet
 *   needs credit that the receiver's pull pacer (engine/pull.h) grants at
 *   its line rate across all of its senders. Needs nothing from the
 *   fabric; needs the receiving host to run a pull pacer.
 */
extern const struct cc_ops cc_swift_ops;
extern const struct cc_ops cc_timely_ops;
extern const struct cc_ops cc_dcqcn_ops;
extern const struct cc_ops cc_hint_ops;
extern const struct cc_ops cc_none_ops;
extern const struct cc_ops cc_eqds_ops;

/* Lookup by name ("window", "swift", "timely", "dcqcn", "hint", "eqds", "none");
 * NULL if unknown. */
const struct cc_ops *cc_find(const char *name);
/* Comma-separated list of known names, for error messages. */
const char *cc_names(void);

#endif
