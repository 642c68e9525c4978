/* SPDX-License-Identifier: MIT */
/*
 * ctlio: moving control frames over a Unix stream socket, with file
 * descriptors attached through SCM_RIGHTS. The receiver is incremental (the
 * daemon's sockets are non-blocking) and reads a frame's header and payload
 * exactly, so that fds sent with frame N are collected with frame N.
 */
#ifndef UCCL_PROTO_CTLIO_H
#define UCCL_PROTO_CTLIO_H

#include <stddef.h>
#include <stdint.h>

#define CTLIO_MAX_FDS 4

struct ctlio_rx {
	uint8_t hdr[4];
	uint8_t *buf;                /* payload, malloc'd once the header is in */
	uint32_t need;               /* payload length; 0 while reading the header */
	uint32_t have;               /* bytes of header or payload read so far */
	uint32_t max;                /* largest payload accepted */
	int fds[CTLIO_MAX_FDS];
	int nfds;
	int extra_fds;               /* fds beyond CTLIO_MAX_FDS, closed on arrival */
	int fds_cut;                 /* the kernel dropped fds past the control buffer
				      * (how many is not told; each cut counts one in
				      * extra_fds too) */
};

void ctlio_rx_init(struct ctlio_rx *rx, uint32_t max);
/* Read what is available. 1: a frame is complete in rx->buf/rx->need;
 * 0: need more (EAGAIN); -ECONNRESET on EOF; -EMSGSIZE on a bad length;
 * other negative errno on socket errors. */
int ctlio_rx_read(struct ctlio_rx *rx, int fd);
/* Drop the current frame (closes fds not taken) and start the next. */
void ctlio_rx_reset(struct ctlio_rx *rx);
void ctlio_rx_fini(struct ctlio_rx *rx);

/* Send a whole buffer with fds on the first byte. Blocking or non-blocking
 * sockets; on a non-blocking one, waits with poll() up to timeout_ms. */
int ctlio_send(int fd, const void *buf, size_t len, const int *fds, int nfds, int timeout_ms);
/* The same, and *sent says how many bytes went, on failure too (0: the
 * stream is still at a frame boundary). */
int ctlio_send_part(int fd, const void *buf, size_t len, const int *fds, int nfds, int timeout_ms,
		    size_t *sent);

/* Blocking receive of one frame with a deadline (client side). On success
 * *payload is malloc'd and fds[] holds up to CTLIO_MAX_FDS received fds. */
int ctlio_recv_frame(int fd, uint32_t max, int timeout_ms, uint8_t **payload, uint32_t *len,
		     int *fds, int *nfds);

#endif
