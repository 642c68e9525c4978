/* SPDX-License-Identifier: MIT */
/*
 * txrun: what of a batch of built packets to hand the NIC next, and what to
 * give up when it refuses. A packet whose channel went away stays in the
 * batch with length 0 (its place is taken) and must never reach the NIC: a
 * send covers the packets up to it. A send that fails outright (not a full
 * buffer) failed on its first packet's peer (unreachable, filtered): that
 * peer's packets in the batch would fail the same way and are given up (the
 * transport resends them), while the other peers' go on, so one bad peer
 * costs the others nothing.
 */
#ifndef UCCL_ENGINE_NIC_TXRUN_H
#define UCCL_ENGINE_NIC_TXRUN_H

#include "engine/nic/nic.h"

/* How many packets from pkts[0] (of n, pkts[0] not given up) one send may
 * take: up to the first given-up one. */
int txrun_len(const struct nic_pkt *pkts, int n);
/* Gives up (length 0, nothing to gather) every packet of pkts[0..n) to
 * pkts[0]'s peer; returns how many. */
int txrun_drop_peer(struct nic_pkt *pkts, int n);

#endif
