/* SPDX-License-Identifier: MIT */
/*
 * chancc: which congestion controller each peer's data channel runs. The
 * choice is, most recent first: one set at run time (SetCc request, ucclctl
 * set-cc), the peer's peer_cc entry in uccl.conf, uccl.conf's cc. Main
 * thread only; a live channel is switched by an engine command, so the
 * engine thread, which owns the channels, makes the change.
 */
#ifndef UCCL_DAEMON_CHANCC_H
#define UCCL_DAEMON_CHANCC_H

#include "daemon/conf.h"
#include "engine/cc/cc.h"
#include "proto/frame.h"

struct daemon;
struct session;
struct chancc;

struct chancc *chancc_new(void);               /* NULL: out of memory */
struct chancc *chancc_free(struct chancc *cc); /* accepts NULL */

/* The controller peer's channel is to run (never NULL: the names were
 * checked when they were set). */
const struct cc_ops *chancc_for(const struct daemon *d, const char *peer);

/* SetCc: -EPERM without the admin role, -EINVAL for an unknown controller
 * (the reply lists the known ones), -ENOENT for a name not in peers. A
 * peer that is up is switched before the reply; one that is not is
 * remembered for when its channel comes up. */
void chancc_request(struct session *s, const UcclCtl__SetCcReq *q);

/* After conf_reload (old: the configuration before it): peers whose
 * peer_cc entry changed forget their run-time setting, and every live
 * channel whose controller changed is switched. */
void chancc_reload(struct daemon *d, const struct conf *old);

#endif
