/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the simulator's scenario parser (engine/sim/
 * sim_conf.c). The input is a scenario file. One that parses must respect
 * the documented limits and build into a fabric; one that does not must
 * produce a printable "fuzz:LINE: ..." message.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sim/sim_conf.h"
#include "engine/sim/sim_net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct sim_conf conf;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	struct sim_net *n;

	if (sim_conf_parse((const char *)data, size, "fuzz", &conf, err, sizeof(err)) < 0) {
		if (strncmp(err, "fuzz:", 5) != 0)
			abort();
		for (const char *p = err; *p; p++)
			if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
				abort();
		return 0;
	}
	if (conf.hosts < 2 || conf.hosts > SIM_CONF_MAX_HOSTS || conf.ntr == 0 ||
	    conf.nflows > SIM_CONF_MAX_FLOWS || !conf.net.cc || conf.net.npaths < 1 ||
	    conf.net.npaths > 256)
		abort();
	n = sim_conf_build(&conf, conf.net.seed, err, sizeof(err));
	if (!n)
		abort();
	if (sim_net_hosts(n) != conf.hosts || sim_net_nflows(n) != conf.nflows)
		abort();
	sim_net_free(n);
	return 0;
}
