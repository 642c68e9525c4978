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
};

struct cc_ack {
	uint64_t now_ns;
	uint64_t acked_bytes;          /* newly acknowledged in this batch */
	uint64_t rtt_ns;               /* a sample from this batch, 0 if none */
	uint64_t inflight_bytes;       /* after removing the acked bytes */
	bool ecn;                      /* a CE mark was echoed in this batch */
};

struct cc_ops {
	const char *name;
	size_t state_size;
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

/* Lookup by name ("window", later "swift", "eqds", ...); NULL if unknown. */
const struct cc_ops *cc_find(const char *name);
/* Comma-separated list of known names, for error messages. */
const char *cc_names(void);

#endif
