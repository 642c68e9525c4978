/* SPDX-License-Identifier: MIT */
/*
 * ctlsrv: the daemon's control socket. Adopts a socket-activated listener or
 * creates DIR/ucclsvcd.sock (refusing to steal one a live daemon answers on),
 * and turns each accepted connection into a session.
 */
#ifndef UCCL_DAEMON_CTLSRV_H
#define UCCL_DAEMON_CTLSRV_H

struct daemon;

int ctlsrv_open(struct daemon *d, const char *runtime_dir);
void ctlsrv_close(struct daemon *d);

#endif
