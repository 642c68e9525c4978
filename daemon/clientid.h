/* SPDX-License-Identifier: MIT */
/*
 * clientid: client ids that no live session shares. The engines know a
 * client's regions by (client id, region id), so an id that came round
 * again while its first holder still had regions would let the second
 * holder's descriptors name the first's memory. Ids run 1..UINT32_MAX and
 * wrap (any local user can open 2^32 control connections in a day); one
 * still held, by a live session or one whose regions are not yet gone
 * from every engine, is skipped.
 */
#ifndef UCCL_DAEMON_CLIENTID_H
#define UCCL_DAEMON_CLIENTID_H

#include <stdbool.h>
#include <stdint.h>

/* Whether someone holds id. */
typedef bool (*clientid_taken_fn)(void *arg, uint32_t id);

/* The first id after *last that taken() says is free, never 0; *last
 * becomes it. 0 when every id is taken. */
uint32_t clientid_next(uint32_t *last, clientid_taken_fn taken, void *arg);

#endif
