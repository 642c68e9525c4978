/* SPDX-License-Identifier: MIT */
/*
 * admin: control calls that change how the daemon runs rather than this
 * application's own objects. They need the daemon's admin role (uid 0, the
 * daemon's own user, or admin_gid); the daemon decides and says why.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "client/ctx.h"

/* Longer names cannot be a peer or a controller: refused here rather than
 * sent (the daemon checks them again). */
#define PEER_NAME_MAX 32
#define CC_NAME_MAX   15

UCCL_EXPORT int uccl_set_channel_cc(struct uccl_ctx *ctx, const char *peer, const char *cc)
{
	UcclCtl__Request req = UCCL_CTL__REQUEST__INIT;
	UcclCtl__SetCcReq q = UCCL_CTL__SET_CC_REQ__INIT;
	UcclCtl__Reply *rep = NULL;
	int r;

	if (!ctx)
		return -EINVAL;
	if (!peer || !*peer || strlen(peer) > PEER_NAME_MAX)
		return ctx_fail(ctx, -EINVAL, "uccl_set_channel_cc: a peer name is 1..%d characters",
				PEER_NAME_MAX);
	if (!cc || !*cc || strlen(cc) > CC_NAME_MAX)
		return ctx_fail(ctx, -EINVAL,
				"uccl_set_channel_cc: a controller name is 1..%d characters",
				CC_NAME_MAX);
	ctx_lock(ctx);
	q.peer = (char *)peer;
	q.cc = (char *)cc;
	req.body_case = UCCL_CTL__REQUEST__BODY_SET_CC;
	req.set_cc = &q;
	r = ctx_call(ctx, &req, NULL, 0, 0, UCCL_CTL__REPLY__BODY_SET_CC, 0, NULL, &rep);
	if (r == 0) {
		/* 1: remembered until the peer's channel comes up */
		r = rep->set_cc->applied ? 0 : 1;
		uccl_ctl__reply__free_unpacked(rep, NULL);
	}
	ctx_unlock(ctx);
	return r;
}
