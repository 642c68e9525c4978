/* SPDX-License-Identifier: MIT */
/*
 * test_engthr: an engine thread's command queue as its owner sees it:
 * what is submitted runs, and its done callback comes, before
 * engthr_stop returns, beyond the lock-free queue's room too.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>
#include <event2/event.h>

#include "daemon/engthr.h"

static int ndone;

static void done(struct engcmd *c)
{
	ndone++;
	free(c);
}

/* More commands than the queue holds (4096): the rest wait in the main
 * thread's overflow list. engthr_stop ran the ones in the queue and
 * dropped the others (4096 of 5000 callbacks, the rest leaked). */
static void test_stop_completes_every_command_submitted(void **state)
{
	struct event_base *base = event_base_new();
	struct engthr_params p = { .max_endpoints = 16, .max_mrs = 16, .cpu = -1 };
	struct engthr *t = NULL;
	const int n = 5000;

	(void)state;
	assert_non_null(base);
	assert_int_equal(engthr_start(&p, base, &t), 0);
	ndone = 0;
	for (int i = 0; i < n; i++) {
		struct engcmd *c = calloc(1, sizeof(*c));

		assert_non_null(c);
		c->type = ENGCMD_CONN_REMOVE;          /* no such endpoint: cheap */
		c->done = done;
		engthr_submit(t, c);
	}
	assert_int_equal(engthr_inflight(t), n);
	engthr_stop(t);
	assert_int_equal(ndone, n);
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stop_completes_every_command_submitted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
