/* SPDX-License-Identifier: MIT */
/*
 * conf: ucclsvcd's configuration (/etc/uccl.conf). Every option is one row of
 * a table (name, type, default, bounds, reloadable, help); the parser, the
 * defaults, --check-config, SIGHUP reload and uccl.conf(5) all follow that
 * table. Errors name FILE:LINE.
 */
#ifndef UCCL_DAEMON_CONF_H
#define UCCL_DAEMON_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CONF_MAX_IDS 32

enum conf_log_level { LOG_LVL_ERROR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

struct conf {
	/* who may attach: uid 0 always; then these uids/gids. Empty lists with
	 * allow_all = true (the default) admit every local user. */
	bool allow_all;
	uint32_t allow_uids[CONF_MAX_IDS];
	uint32_t n_allow_uids;
	uint32_t allow_gids[CONF_MAX_IDS];
	uint32_t n_allow_gids;
	int64_t admin_gid;                /* -1: only uid 0 is admin */

	/* limits on client-controllable resources */
	uint32_t max_clients;
	uint32_t max_endpoints_per_client;
	uint32_t max_mrs_per_client;
	uint64_t max_registered_bytes;    /* per client */
	uint32_t max_conns_per_endpoint;
	uint32_t max_outstanding;         /* per endpoint */
	uint32_t ring_depth;              /* default ring entries (power of two) */
	uint32_t max_ring_depth;          /* largest a client may ask for */
	uint32_t max_ctl_msg;             /* bytes */
	uint64_t max_op_bytes;            /* longest single put/get/send/recv */
	uint32_t ctl_timeout_ms;          /* longest a connect/accept may wait */
	uint32_t max_listen_backlog;      /* queued connections per listener */

	/* engine */
	uint32_t engine_idle_spin_us;     /* busy-poll this long before sleeping */
	uint32_t engine_poll_batch;
	int32_t engine_cpu;               /* -1: no pinning */

	enum conf_log_level log_level;
};

/* Built-in defaults (what the daemon runs with when no file is given). */
void conf_defaults(struct conf *c);

/* Parse path into *c (starting from defaults). On error returns a negative
 * errno and writes "FILE:LINE: message" into err (errlen bytes). */
int conf_load(const char *path, struct conf *c, char *err, size_t errlen);
/* Same, from a buffer; name is used in messages. (The fuzz target's entry.) */
int conf_parse(const char *name, const char *buf, size_t len, struct conf *c, char *err,
	       size_t errlen);

/* Apply a reload: copy reloadable options from next into cur, and call
 * report(arg, line) with one human line per change ("log_level: info -> debug")
 * and per non-reloadable change that was ignored ("... needs a restart").
 * Returns the number of options changed. */
int conf_reload(struct conf *cur, const struct conf *next,
		void (*report)(void *arg, const char *line), void *arg);

/* Write every option with its current value, one per line (debug/ucclctl). */
void conf_dump(const struct conf *c, void (*emit)(void *arg, const char *line), void *arg);

const char *conf_log_level_name(enum conf_log_level l);

#endif
