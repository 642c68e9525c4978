/* SPDX-License-Identifier: MIT */
/*
 * errstr: text for the negative errnos the library returns. The codes this
 * API gives a specific meaning get wording in its terms; every other code
 * gets the C library's description. Thread-safe: only constant strings, or
 * a per-thread buffer where the C library has no constant table.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "client/ctx.h"

static const struct {
	int err;
	const char *text;
} uccl_errs[] = {
	{ EAGAIN,          "try again: submission ring full (backpressure) or nothing queued yet" },
	{ ECONNRESET,      "peer endpoint or daemon went away" },
	{ EPIPE,           "control connection to the daemon is closed" },
	{ EACCES,          "permission denied: remote key refused, or not allowed by the daemon" },
	{ ERANGE,          "offset/length outside the region" },
	{ EPROTONOSUPPORT, "client and daemon protocol versions differ" },
	{ EPROTO,          "protocol error between client and daemon" },
	{ EBADMSG,         "corrupt ring or undecodable message" },
	{ ETIMEDOUT,       "timed out" },
	{ ECONNREFUSED,    "connection refused: no listener by that name, or its backlog is full" },
	{ EADDRINUSE,      "name already has a listener" },
	{ EALREADY,        "endpoint already listens" },
	{ ECANCELED,       "canceled: its region, connection or endpoint was closed" },
	{ EMSGSIZE,        "message too long (for the receive buffer, or the daemon's max_op_bytes)" },
	{ ENOTCONN,        "no such connection on this endpoint" },
	{ EBADF,           "local region not registered" },
	{ ENOSPC,          "daemon limit reached" },
	{ EUSERS,          "daemon limit reached: too many clients, or peers added at run time" },
	{ EOPNOTSUPP,      "not supported by this daemon" },
};

UCCL_EXPORT const char *uccl_strerror(int err)
{
	if (err == 0)
		return "success";
	if (err == INT_MIN)
		return "unknown error";
	if (err < 0)
		err = -err;
	for (size_t i = 0; i < sizeof(uccl_errs) / sizeof(uccl_errs[0]); i++)
		if (uccl_errs[i].err == err)
			return uccl_errs[i].text;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	{
		const char *s = strerrordesc_np(err);

		return s ? s : "unknown error";
	}
#else
	{
		/* strerror(3) may share one buffer among threads. */
		static __thread char buf[64];

#if defined(__GLIBC__)
		return strerror_r(err, buf, sizeof(buf));      /* GNU variant */
#else
		if (strerror_r(err, buf, sizeof(buf)) != 0)     /* XSI variant */
			snprintf(buf, sizeof(buf), "error %d", err);
		return buf;
#endif
	}
#endif
}

UCCL_EXPORT const char *uccl_version(void)
{
	return PACKAGE_VERSION;
}
