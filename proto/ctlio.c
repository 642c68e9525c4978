/* SPDX-License-Identifier: MIT */
/*
 * ctlio: control frames over Unix stream sockets with SCM_RIGHTS fds.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ctlio.h"
#include "frame.h"

void ctlio_rx_init(struct ctlio_rx *rx, uint32_t max)
{
	memset(rx, 0, sizeof(*rx));
	rx->max = max;
}

void ctlio_rx_reset(struct ctlio_rx *rx)
{
	for (int i = 0; i < rx->nfds; i++)
		if (rx->fds[i] >= 0)
			close(rx->fds[i]);
	free(rx->buf);
	rx->buf = NULL;
	rx->need = rx->have = 0;
	rx->nfds = rx->extra_fds = rx->fds_cut = 0;
}

void ctlio_rx_fini(struct ctlio_rx *rx)
{
	ctlio_rx_reset(rx);
}

/* Collect fds from a received control message; extras are closed at once so
 * that a client cannot make the daemon hold descriptors it did not ask for. */
static void take_fds(struct msghdr *mh, int *fds, int *nfds, int *extra)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *p = (int *)CMSG_DATA(c);
		for (size_t i = 0; i < n; i++) {
			int f;
			memcpy(&f, p + i, sizeof(f));
			if (*nfds < CTLIO_MAX_FDS) {
				fds[(*nfds)++] = f;
			} else {
				close(f);
				(*extra)++;
			}
		}
	}
}

static ssize_t recv_some(int fd, void *buf, size_t len, struct ctlio_rx *rx)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * CTLIO_MAX_FDS)];
		struct cmsghdr align;
	} cm;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cm.b, .msg_controllen = sizeof(cm.b),
	};
	ssize_t n;

	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	take_fds(&mh, rx->fds, &rx->nfds, &rx->extra_fds);
	if (mh.msg_flags & MSG_CTRUNC) {
		rx->extra_fds++;
		rx->fds_cut++;
	}
	return n;
}

int ctlio_rx_read(struct ctlio_rx *rx, int fd)
{
	for (;;) {
		uint8_t *dst;
		uint32_t want;
		ssize_t n;

		if (rx->need == 0) {
			dst = rx->hdr + rx->have;
			want = FRAME_HDR_LEN - rx->have;
		} else {
			dst = rx->buf + rx->have;
			want = rx->need - rx->have;
		}
		n = recv_some(fd, dst, want, rx);
		if (n == -EAGAIN || n == -EWOULDBLOCK)
			return 0;
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -ECONNRESET;
		rx->have += (uint32_t)n;
		if (rx->need == 0) {
			uint32_t len;
			int r;

			if (rx->have < FRAME_HDR_LEN)
				continue;
			r = frame_hdr_parse(rx->hdr, rx->max, &len);
			if (r < 0)
				return r;
			rx->buf = malloc(len);
			if (!rx->buf)
				return -ENOMEM;
			rx->need = len;
			rx->have = 0;
		} else if (rx->have == rx->need) {
			return 1;
		}
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for fd to become ready for events; -ETIMEDOUT past the deadline.
 * deadline < 0 means no deadline. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int t = -1, r;

		if (deadline >= 0) {
			int64_t left = deadline - now_ms();
			if (left <= 0)
				return -ETIMEDOUT;
			t = left > 1000000 ? 1000000 : (int)left;
		}
		r = poll(&p, 1, t);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

int ctlio_send(int fd, const void *buf, size_t len, const int *fds, int nfds, int timeout_ms)
{
	size_t sent;

	return ctlio_send_part(fd, buf, len, fds, nfds, timeout_ms, &sent);
}

int ctlio_send_part(int fd, const void *buf, size_t len, const int *fds, int nfds, int timeout_ms,
		    size_t *sent)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	size_t off = 0;

	*sent = 0;
	if (nfds < 0 || nfds > CTLIO_MAX_FDS)
		return -EINVAL;
	while (off < len) {
		union {
			char b[CMSG_SPACE(sizeof(int) * CTLIO_MAX_FDS)];
			struct cmsghdr align;
		} cm;
		struct iovec iov = { .iov_base = (char *)buf + off, .iov_len = len - off };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;

		if (off == 0 && nfds > 0) {
			memset(&cm, 0, sizeof(cm));
			mh.msg_control = cm.b;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
			struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
		}
		n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				int r = wait_fd(fd, POLLOUT, deadline);
				if (r < 0)
					return r;
				continue;
			}
			return -errno;
		}
		off += (size_t)n;
		*sent = off;
	}
	return 0;
}

int ctlio_recv_frame(int fd, uint32_t max, int timeout_ms, uint8_t **payload, uint32_t *len,
		     int *fds, int *nfds)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	struct ctlio_rx rx;
	int r;

	ctlio_rx_init(&rx, max);
	for (;;) {
		r = ctlio_rx_read(&rx, fd);
		if (r == 1)
			break;
		if (r < 0)
			goto out_fail;
		r = wait_fd(fd, POLLIN, deadline);
		if (r < 0)
			goto out_fail;
	}
	*payload = rx.buf;
	*len = rx.need;
	memcpy(fds, rx.fds, sizeof(int) * rx.nfds);
	*nfds = rx.nfds;
	return 0;

out_fail:
	ctlio_rx_fini(&rx);
	return r;
}
