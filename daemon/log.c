/* SPDX-License-Identifier: MIT */
/*
 * log: leveled stderr logging for ucclsvcd (journald-aware).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/log.h"

static int level = LOG_LVL_INFO;
static int journal;

void log_init(void)
{
	journal = getenv("JOURNAL_STREAM") != NULL;
}

void log_set_level(enum conf_log_level l)
{
	__atomic_store_n(&level, (int)l, __ATOMIC_RELAXED);
}

enum conf_log_level log_get_level(void)
{
	return (enum conf_log_level)__atomic_load_n(&level, __ATOMIC_RELAXED);
}

void log_msg(enum conf_log_level l, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	static const int prio[] = { 3, 4, 6, 7 };
	char line[1024];
	va_list ap;
	int n, start;

	if ((int)l > __atomic_load_n(&level, __ATOMIC_RELAXED))
		return;
	if (journal)
		n = snprintf(line, sizeof(line), "<%d>", prio[l]);
	else
		n = snprintf(line, sizeof(line), "ucclsvcd[%d]: %s: ", (int)getpid(), names[l]);
	start = n;
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	/* one message, one line: names and texts that clients and peers
	 * chose must not start lines of their own */
	for (int i = start; i < n; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			line[i] = '?';
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere left to report it */
	}
}

void log_limited(struct log_limit *ll, enum conf_log_level l, const char *fmt, ...)
{
	struct timespec ts;
	uint64_t now;
	char msg[900];
	va_list ap;

	if ((int)l > __atomic_load_n(&level, __ATOMIC_RELAXED))
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (!ll->since_ns || now - ll->since_ns >= (uint64_t)LOG_LIMIT_INTERVAL_S * 1000000000u) {
		ll->since_ns = now;
		ll->shown = 0;
	}
	if (ll->shown >= LOG_LIMIT_BURST) {
		ll->held++;
		return;
	}
	ll->shown++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ll->held)
		log_msg(l, "%s (%u more before it not logged, at most %u in %u s)", msg, ll->held,
			LOG_LIMIT_BURST, LOG_LIMIT_INTERVAL_S);
	else
		log_msg(l, "%s", msg);
	ll->held = 0;
}
