/* SPDX-License-Identifier: MIT */
/*
 * txrun: the runs of a batch of built packets a NIC send takes, and the
 * packets a refusing peer loses. See txrun.h.
 */
#include "config.h"

#include "engine/nic/txrun.h"

int txrun_len(const struct nic_pkt *pkts, int n)
{
	int k = 0;

	while (k < n && pkts[k].len > 0)
		k++;
	return k;
}

int txrun_drop_peer(struct nic_pkt *pkts, int n)
{
	uint32_t peer;
	int dropped = 0;

	if (n <= 0)
		return 0;
	peer = pkts[0].peer;
	for (int i = 0; i < n; i++) {
		if (pkts[i].len == 0 || pkts[i].peer != peer)
			continue;
		pkts[i].len = 0;
		pkts[i].payload = NULL;
		pkts[i].hdr_len = 0;
		dropped++;
	}
	return dropped;
}
