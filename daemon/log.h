/* SPDX-License-Identifier: MIT */
/*
 * log: the daemon's leveled logging to stderr. Under systemd (JOURNAL_STREAM
 * set) each line carries a <N> syslog priority prefix so journald keeps the
 * level; otherwise lines read "ucclsvcd[pid]: level: message". One write per
 * line, so engine and main thread lines do not interleave.
 */
#ifndef UCCL_DAEMON_LOG_H
#define UCCL_DAEMON_LOG_H

#include <stdint.h>

#include "daemon/conf.h"

void log_init(void);
void log_set_level(enum conf_log_level l);
enum conf_log_level log_get_level(void);
void log_msg(enum conf_log_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* At most LOG_LIMIT_BURST messages through one limit per
 * LOG_LIMIT_INTERVAL_S seconds; the next one let through says how many
 * were held back. For what others can cause at will (refused connections). */
#define LOG_LIMIT_BURST      10u
#define LOG_LIMIT_INTERVAL_S 10u
struct log_limit {
	uint64_t since_ns;             /* this interval began then */
	uint32_t shown, held;
};
void log_limited(struct log_limit *ll, enum conf_log_level l, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_err(...)   log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
