/* SPDX-License-Identifier: MIT */
/*
 * sdnotify: the daemon's systemd glue (readiness, stopping, watchdog, socket
 * activation). Built without libsystemd these report "not under systemd":
 * no notifications are sent and no sockets are inherited.
 */
#ifndef UCCL_DAEMON_SDNOTIFY_H
#define UCCL_DAEMON_SDNOTIFY_H

#include <stdint.h>

void sdn_ready(void);
void sdn_stopping(void);
void sdn_reloading(int done);
void sdn_status(const char *text);
void sdn_watchdog_ping(void);
/* Watchdog interval in microseconds, 0 if disabled. */
uint64_t sdn_watchdog_usec(void);
/* A socket passed by systemd socket activation, or -1. */
int sdn_listen_fd(void);

#endif
