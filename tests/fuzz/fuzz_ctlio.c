/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ctlio: the daemon's incremental frame reader (ctlio_rx_read) on a
 * real non-blocking Unix stream socket, the bytes arriving in pieces the
 * input chooses, some carrying file descriptors (SCM_RIGHTS) as a client's
 * may. Checked against a plain parse of the same byte stream: the same
 * frames with the same bytes in the same order, the same refusal of a bad
 * length, end of stream only where no whole frame is left, at most
 * CTLIO_MAX_FDS descriptors kept for a frame, and no descriptor left open
 * once the reader is reset. fuzz_ctl decodes the payloads; this is the
 * reading of them.
 *
 * Input: [max selector] then records [piece length][fds][piece bytes].
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/ctlio.h"
#include "proto/frame.h"

#define MAX_FDS_SENT 48          /* descriptors in flight at once stay below FD_SPAN */
#define FD_SPAN      128

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Send piece with nf fresh descriptors attached (to /dev/null). */
static void send_piece(int fd, const uint8_t *p, size_t n, int nf)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} cm;
	struct iovec iov = { .iov_base = (void *)p, .iov_len = n };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[8], k = 0;

	for (; k < nf && k < 8; k++) {
		fds[k] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fds[k] < 0)
			abort();
	}
	if (k) {
		struct cmsghdr *c;

		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)k);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)k);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)k);
	}
	/* pieces are small and read at once: the buffer never fills */
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)n)
		abort();
	for (int i = 0; i < k; i++)
		close(fds[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t maxes[4] = { 1, 16, 300, 65536 };
	uint8_t *stream = malloc(size ? size : 1);
	size_t slen = 0, ref = 0;      /* ref: where the next frame starts in stream */
	struct ctlio_rx rx;
	uint32_t max;
	int sv[2], sent_fds = 0, r;
	bool stopped = false;          /* the reader refused a length */
	bool open_before[FD_SPAN];     /* the runtime's own (libFuzzer keeps some) */

	if (!stream)
		abort();
	if (size < 1 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
		free(stream);
		return 0;
	}
	for (int i = 0; i < FD_SPAN; i++)
		open_before[i] = fcntl(sv[0] + i, F_GETFD) >= 0;
	max = maxes[data[0] & 3];
	data++;
	size--;
	ctlio_rx_init(&rx, max);
	while (size >= 2 && !stopped) {
		size_t n = data[0] < size - 2 ? data[0] : size - 2;
		int nf = n ? data[1] % 7 : 0;

		if (sent_fds + nf > MAX_FDS_SENT)
			nf = 0;
		sent_fds += nf;
		if (n)
			send_piece(sv[1], data + 2, n, nf);
		memcpy(stream + slen, data + 2, n);
		slen += n;
		data += 2 + n;
		size -= 2 + n;
		/* take every frame the bytes so far complete */
		while ((r = ctlio_rx_read(&rx, sv[0])) == 1) {
			uint32_t len = 0;

			if (slen - ref < FRAME_HDR_LEN || frame_hdr_parse(stream + ref, max, &len) < 0 ||
			    len != rx.need || slen - ref - FRAME_HDR_LEN < len ||
			    memcmp(stream + ref + FRAME_HDR_LEN, rx.buf, len) != 0)
				abort();
			if (rx.nfds < 0 || rx.nfds > CTLIO_MAX_FDS || rx.extra_fds < 0)
				abort();
			ref += FRAME_HDR_LEN + len;
			ctlio_rx_reset(&rx);
		}
		if (r < 0) {
			uint32_t len;

			/* only a length the plain parse refuses too */
			if (r != -EMSGSIZE || slen - ref < FRAME_HDR_LEN ||
			    frame_hdr_parse(stream + ref, max, &len) == 0)
				abort();
			stopped = true;
		} else if (slen - ref >= FRAME_HDR_LEN) {
			uint32_t len;

			/* need more: the plain parse must not have a whole frame */
			if (frame_hdr_parse(stream + ref, max, &len) < 0 ||
			    slen - ref - FRAME_HDR_LEN >= len)
				abort();
		}
	}
	if (!stopped) {
		shutdown(sv[1], SHUT_WR);
		if (ctlio_rx_read(&rx, sv[0]) != -ECONNRESET)
			abort();
	}
	ctlio_rx_fini(&rx);
	close(sv[0]);
	close(sv[1]);
	/* everything opened here came at or above sv[0], the lowest free
	 * number when the run began; all of it must be closed again */
	for (int i = 2; i < FD_SPAN; i++)
		if (!open_before[i] && fcntl(sv[0] + i, F_GETFD) >= 0)
			abort();
	free(stream);
	return 0;
}
