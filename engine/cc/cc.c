/* SPDX-License-Identifier: MIT */
/*
 * cc: the registry of congestion controllers, so that configuration can name
 * one ("window", "swift", ...) and the daemon can list the choices
 * when a name is unknown. A new module adds its ops table to cc_table and its
 * name to CC_NAMES; the unit test checks that the two agree.
 */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "engine/cc/cc.h"

static const struct cc_ops *const cc_table[] = {
	&cc_window_ops,
	&cc_swift_ops,
	&cc_timely_ops,
	&cc_dcqcn_ops,
	&cc_hint_ops,
	&cc_eqds_ops,
	&cc_none_ops,
};

/* A literal rather than a string built at run time: no allocation and no
 * first-call race between engine threads. */
#define CC_NAMES "window,swift,timely,dcqcn,hint,eqds,none"

const struct cc_ops *cc_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof(cc_table) / sizeof(cc_table[0]); i++)
		if (strcmp(cc_table[i]->name, name) == 0)
			return cc_table[i];
	return NULL;
}

const char *cc_names(void)
{
	return CC_NAMES;
}
