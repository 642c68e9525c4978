/* SPDX-License-Identifier: MIT */
/*
 * ctlsrv: control socket listener for ucclsvcd.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/ctlsrv.h"
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/sdnotify.h"
#include "daemon/session.h"

static void accepted(void *arg, int fd, const struct sockaddr_storage *ss)
{
	struct daemon *d = arg;
	int r;

	(void)ss;
	if (d->stopping || d->n_sessions >= DAEMON_CONNS(d) + DAEMON_ADMIN_OBSERVERS) {
		/* bound unattached connections too (session_open: the last
		 * DAEMON_ADMIN_OBSERVERS for admins) */
		log_limited(&d->refusal_log, LOG_LVL_WARN, "control socket: refusing connection: %s",
			    d->stopping ? "shutting down" : "too many connections");
		close(fd);
		return;
	}
	r = session_open(d, fd);
	if (r < 0) {
		log_limited(&d->refusal_log, LOG_LVL_WARN, "control socket: refusing connection: %s",
			    r == -EUSERS ? "too many unattached connections from that uid" :
			    r == -ENFILE ? "too many connections (the rest are kept for admins)" :
					   strerror(-r));
		close(fd);
	}
}

/* held while this daemon owns DIR/ucclsvcd.sock: makes check, unlink and
 * bind atomic against a second daemon starting on the same runtime dir */
static int lock_fd = -1;

/* The runtime dir holds the lock and the socket, which a root daemon
 * creates and opens by path: a directory that another user owns or may
 * write (a --runtime-dir under /tmp made beforehand) would let that user
 * put a symbolic link there, and make the daemon create or chmod any file.
 * It must be a real directory of ours, writable by no one else. */
static int runtime_dir_ok(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st) < 0) {
		int r = -errno;        /* before logging may change errno */

		log_err("runtime dir %s: %s", dir, strerror(-r));
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		log_err("runtime dir %s: not a directory (a symbolic link is not followed)", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		log_err("runtime dir %s: owned by uid %u, not by this daemon's uid %u: its owner could "
			"replace the daemon's files there", dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		log_err("runtime dir %s: writable by group or others (mode %03o): they could replace "
			"the daemon's files there", dir, (unsigned)(st.st_mode & 0777));
		return -EPERM;
	}
	return 0;
}

/* Is a daemon answering on path? */
static int socket_alive(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int r;

	if (fd < 0)
		return 0;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return r;
}

int ctlsrv_open(struct daemon *d, const char *runtime_dir)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = sdn_listen_fd(), r;
	mode_t old_mask;

	if (fd == -EBADF) {
		log_err("socket activation: expected one listening unix stream socket (LISTEN_FDS)");
		return -EBADF;
	}
	if (fd >= 0) {
		int fl = fcntl(fd, F_GETFL);
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
		d->own_socket = false;
		snprintf(d->sock_path, sizeof(d->sock_path), "(socket activation)");
		log_info("control socket: using the socket passed by systemd");
	} else {
		if (snprintf(d->sock_path, sizeof(d->sock_path), "%s/ucclsvcd.sock", runtime_dir) >=
		    (int)sizeof(d->sock_path)) {
			log_err("runtime dir %s: socket path too long", runtime_dir);
			return -ENAMETOOLONG;
		}
		if (mkdir(runtime_dir, 0755) == 0) {
			/* as documented whatever the umask: under 077 the dir
			 * was 0700, and the socket's 0666 let no other user in */
			chmod(runtime_dir, 0755);
		} else if (errno != EEXIST) {
			log_err("cannot create runtime dir %s: %s", runtime_dir, strerror(errno));
			return -errno;
		}
		r = runtime_dir_ok(runtime_dir);
		if (r < 0)
			return r;
		char lock_path[sizeof(d->sock_path) + 8];

		snprintf(lock_path, sizeof(lock_path), "%s/ucclsvcd.lock", runtime_dir);
		/* others cannot hold it; never through a link */
		lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (lock_fd < 0) {
			r = -errno;
			log_err("%s: %s", lock_path, strerror(-r));
			return r;
		}
		if (flock(lock_fd, LOCK_EX | LOCK_NB) < 0 || socket_alive(d->sock_path)) {
			log_err("%s: another ucclsvcd is running there", d->sock_path);
			return -EADDRINUSE;
		}
		unlink(d->sock_path);   /* stale socket from a dead daemon */
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		memcpy(sa.sun_path, d->sock_path, sizeof(sa.sun_path));
		/* 0666 as bind makes it, not by a chmod of the path afterwards:
		 * access is decided by SO_PEERCRED and the allow-lists */
		old_mask = umask(0111);
		r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
		umask(old_mask);
		if (r == 0 && listen(fd, 128) < 0)
			r = -errno;
		if (r < 0) {
			log_err("%s: %s", d->sock_path, strerror(-r));
			close(fd);
			return r;
		}
		d->own_socket = true;
	}
	d->listen_fd = fd;
	/* out of descriptors: a client may be waiting, try again soon */
	return listener_open(&d->listener, d->base, fd, "control socket", 100, accepted, d);
}

void ctlsrv_close(struct daemon *d)
{
	listener_close(&d->listener);
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		d->listen_fd = -1;
	}
	if (d->own_socket)
		unlink(d->sock_path);
	d->own_socket = false;   /* the path may be another daemon's now */
	if (lock_fd >= 0) {
		close(lock_fd);
		lock_fd = -1;
	}
}
