/* SPDX-License-Identifier: MIT */
/*
 * listener: accept loop shared by the control socket and peer_listen.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "daemon/listener.h"
#include "daemon/log.h"

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct listener *l = arg;

	(void)fd;
	(void)what;
	event_add(l->ev, NULL);
}

static void accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct listener *l = arg;

	(void)what;
	for (int i = 0; i < 64; i++) {   /* bounded per wakeup */
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				struct timeval tv = { .tv_sec = l->pause_ms / 1000,
						      .tv_usec = (l->pause_ms % 1000) * 1000 };

				if (!l->paused)
					log_warn("%s: accept: %s; pausing %u ms at a time until one "
						 "succeeds", l->what, strerror(errno), l->pause_ms);
				l->paused = true;
				event_del(l->ev);
				event_add(l->resume_ev, &tv);
			} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
				   errno != ECONNABORTED) {
				log_warn("%s: accept: %s", l->what, strerror(errno));
			}
			return;
		}
		if (l->paused)
			log_info("%s: accepting again", l->what);
		l->paused = false;
		l->cb(l->arg, fd, &ss);
	}
}

int listener_open(struct listener *l, struct event_base *base, int fd, const char *what,
		  uint32_t pause_ms, listener_cb cb, void *arg)
{
	*l = (struct listener){ .what = what, .pause_ms = pause_ms, .cb = cb, .arg = arg };
	l->ev = event_new(base, fd, EV_READ | EV_PERSIST, accept_cb, l);
	l->resume_ev = evtimer_new(base, resume_cb, l);
	if (!l->ev || !l->resume_ev || event_add(l->ev, NULL) < 0) {
		listener_close(l);
		return -ENOMEM;
	}
	return 0;
}

void listener_close(struct listener *l)
{
	if (l->ev)
		event_free(l->ev);
	if (l->resume_ev)
		event_free(l->resume_ev);
	l->ev = l->resume_ev = NULL;
}
