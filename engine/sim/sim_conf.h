/* SPDX-License-Identifier: MIT */
/*
 * sim_conf: scenario files for the simulated fabric (format in docs/sim.md).
 * sim_conf_parse() turns the text of one file into a struct sim_conf, or
 * says "FILE:LINE: what is wrong" and fails: every key is known, given at
 * most once (traffic keys may repeat), every value has its unit and lies
 * within its limit, and host numbers exist in the chosen topology.
 * sim_conf_build() then makes the fabric and its flows. No I/O: the caller
 * reads the file. Deterministic: traffic patterns draw from the seed.
 */
#ifndef UCCL_ENGINE_SIM_SIM_CONF_H
#define UCCL_ENGINE_SIM_SIM_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "engine/sim/sim_net.h"

#define SIM_CONF_MAX_BYTES   (1u << 20)    /* whole file */
#define SIM_CONF_MAX_LINE    1024u
#define SIM_CONF_MAX_HOSTS   4096u
#define SIM_CONF_MAX_FLOWS   65536u
#define SIM_CONF_MAX_TRAFFIC 1024u         /* traffic lines */

enum sim_topo { SIM_TOPO_PAIR, SIM_TOPO_STAR, SIM_TOPO_LEAFSPINE };
enum sim_traffic_kind { SIM_TR_FLOW, SIM_TR_INCAST, SIM_TR_PERMUTATION, SIM_TR_STAGGER };

struct sim_traffic {
	enum sim_traffic_kind kind;
	uint32_t line;
	uint32_t src, dst;             /* flow: both; incast, stagger: dst */
	uint32_t n;                    /* incast, stagger: senders */
	uint64_t bytes, at_ns, every_ns;
};

struct sim_conf {
	enum sim_topo topo;
	uint32_t hosts;                /* all hosts, whatever the topology */
	uint32_t leaves, spines, hosts_per_leaf;
	uint64_t host_rate_mbps, uplink_rate_mbps, delay_ns;
	char cc_name[32];
	struct sim_net_params net;     /* seed, queue, ecn, loss, transport settings */
	struct sim_traffic tr[SIM_CONF_MAX_TRAFFIC];
	uint32_t ntr;
	uint32_t nflows;               /* after expansion */
};

/* 0, or -EINVAL with a message "fname:LINE: ..." in err. */
int sim_conf_parse(const char *text, size_t len, const char *fname, struct sim_conf *out,
		   char *err, size_t errlen);

/* The fabric and flows of a parsed scenario, with seed as the seed. NULL
 * with a message in err on failure (out of memory). */
struct sim_net *sim_conf_build(const struct sim_conf *c, uint64_t seed, char *err,
			       size_t errlen);

/* "pair", "star", "leafspine". */
const char *sim_topo_name(enum sim_topo t);

#endif
