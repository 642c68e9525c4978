/* SPDX-License-Identifier: MIT */
/*
 * sdnotify: thin wrappers over libsystemd's sd_notify, sd_watchdog_enabled
 * and sd_listen_fds.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>

#include "daemon/sdnotify.h"

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>

void sdn_ready(void) { sd_notify(0, "READY=1"); }
void sdn_stopping(void) { sd_notify(0, "STOPPING=1"); }
void sdn_watchdog_ping(void) { sd_notify(0, "WATCHDOG=1"); }

void sdn_reloading(int done)
{
	sd_notify(0, done ? "READY=1" : "RELOADING=1");
}

void sdn_status(const char *text)
{
	sd_notifyf(0, "STATUS=%s", text);
}

uint64_t sdn_watchdog_usec(void)
{
	uint64_t us = 0;

	if (sd_watchdog_enabled(0, &us) <= 0)
		return 0;
	return us;
}

int sdn_listen_fd(void)
{
	int n = sd_listen_fds(1);

	if (n <= 0)
		return -1;     /* not socket-activated */
	if (n != 1 || sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) <= 0)
		return -EBADF; /* passed, but not what the unit promises */
	return SD_LISTEN_FDS_START;
}
#else
void sdn_ready(void) {}
void sdn_stopping(void) {}
void sdn_watchdog_ping(void) {}
void sdn_reloading(int done) { (void)done; }
void sdn_status(const char *text) { (void)text; }
uint64_t sdn_watchdog_usec(void) { return 0; }
int sdn_listen_fd(void) { return -1; }
#endif
