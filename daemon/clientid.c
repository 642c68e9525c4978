/* SPDX-License-Identifier: MIT */
/* clientid: the next client id no one holds (clientid.h). */
#include "config.h"

#include "daemon/clientid.h"

uint32_t clientid_next(uint32_t *last, clientid_taken_fn taken, void *arg)
{
	/* a full turn at most: holders are bounded far below 2^32 */
	for (uint64_t n = 0; n < UINT32_MAX; n++) {
		uint32_t id = ++*last;

		if (id != 0 && !taken(arg, id))
			return id;
	}
	return 0;
}
