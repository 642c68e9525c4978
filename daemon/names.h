/* SPDX-License-Identifier: MIT */
/*
 * names: the registry of endpoint listen names on this daemon. A name is
 * 1..64 characters of [A-Za-z0-9._:-] ('/' is kept for "host/endpoint" once
 * daemons meet each other).
 */
#ifndef UCCL_DAEMON_NAMES_H
#define UCCL_DAEMON_NAMES_H

#include <stdbool.h>
#include <stdint.h>

#define NAME_MAX_LEN 64

struct names;

struct names *names_new(uint32_t buckets);
struct names *names_free(struct names *n);    /* accepts NULL */
bool names_valid(const char *name);
/* -EADDRINUSE if taken, -EINVAL if invalid. */
int names_add(struct names *n, const char *name, void *val);
void names_del(struct names *n, const char *name);
void *names_find(const struct names *n, const char *name);

#endif
