/* SPDX-License-Identifier: MIT */
/*
 * engthr: engine threads of ucclsvcd. The loop is the one that will later
 * also poll NIC queues: commands, engine_poll, then either spin (work was
 * found recently) or arm the rings' wake-up flags and sleep in epoll.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/cmdq.h"
#include "daemon/engthr.h"
#include "daemon/log.h"
#include "daemon/memory.h"

#define ENGTHR_QUEUE 4096

struct engthr {
	pthread_t thread;
	struct engine *eng;
	struct cmdq *in;             /* main -> engine */
	struct cmdq *out;            /* engine -> main (never fuller than in) */
	struct event *out_ev;
	int epfd;
	int *notify_fds;             /* by ep id, engine thread only */
	int *doorbell_fds;
	uint32_t max_endpoints;
	uint32_t idle_spin_us;       /* atomic */
	uint32_t inflight;           /* commands submitted and not yet done (main thread) */
	uint32_t queued;             /* in `in`, executing or in `out`: at most ENGTHR_QUEUE,
				      * so `out` can never overflow (main thread) */
	struct engcmd *ovf_head, *ovf_tail;  /* waiting for queue space (main thread) */
	int cpu;
	int stop;                    /* atomic */
	uint64_t heartbeat;          /* atomic: bumped every loop */
	uint64_t seen_heartbeat;     /* main thread */
	int sleeping;                /* atomic */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void notify_client(void *arg, uint32_t ep_id)
{
	struct engthr *t = arg;
	char one = 1;

	/* our end is non-blocking: a full pipe is still readable */
	if (ep_id < t->max_endpoints && t->notify_fds[ep_id] >= 0) {
		if (write(t->notify_fds[ep_id], &one, 1) < 0) {
			/* EAGAIN: the client has wake-ups pending anyway */
		}
	}
}

static void stat_cb(void *arg, const char *name, uint64_t v)
{
	struct engcmd *c = arg;

	if (c->u.stats.n_counters < sizeof(c->u.stats.counters) / sizeof(c->u.stats.counters[0])) {
		c->u.stats.counters[c->u.stats.n_counters].name = name;
		c->u.stats.counters[c->u.stats.n_counters].value = v;
		c->u.stats.n_counters++;
	}
}

static int exec_ep_add(struct engthr *t, struct engcmd *c)
{
	struct epoll_event ev = { .events = EPOLLIN };
	uint32_t id = c->u.ep.p.ep_id;
	int r;

	if (id >= t->max_endpoints)
		return -EINVAL;
	r = engine_ep_add(t->eng, &c->u.ep.p);
	if (r < 0)
		return r;
	ev.data.u32 = id;
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, c->u.ep.doorbell_fd, &ev) < 0) {
		r = -errno;
		engine_ep_remove(t->eng, id);
		return r;
	}
	t->notify_fds[id] = c->u.ep.notify_fd;
	t->doorbell_fds[id] = c->u.ep.doorbell_fd;
	return 0;
}

static int exec_ep_remove(struct engthr *t, uint32_t id)
{
	int r;

	if (id >= t->max_endpoints)
		return -EINVAL;
	r = engine_ep_remove(t->eng, id);
	if (t->doorbell_fds[id] >= 0)
		epoll_ctl(t->epfd, EPOLL_CTL_DEL, t->doorbell_fds[id], NULL);
	t->doorbell_fds[id] = -1;
	t->notify_fds[id] = -1;
	return r;
}

static void exec_stats(struct engthr *t, struct engcmd *c)
{
	c->u.stats.n_counters = 0;
	engine_stats_foreach(t->eng, stat_cb, c);
	for (uint32_t i = 0; i < c->u.stats.n_eps; i++)
		c->u.stats.ep_res[i] = engine_ep_stats(t->eng, c->u.stats.ep_ids[i], &c->u.stats.eps[i]);
}

static void exec(struct engthr *t, struct engcmd *c)
{
	switch (c->type) {
	case ENGCMD_EP_ADD:
		c->result = exec_ep_add(t, c);
		break;
	case ENGCMD_EP_REMOVE:
		c->result = exec_ep_remove(t, c->u.ep_id);
		break;
	case ENGCMD_CONN_ADD:
		c->result = engine_conn_add(t->eng, c->u.conn.ep_a, c->u.conn.conn_a, c->u.conn.ep_b,
					    c->u.conn.conn_b);
		break;
	case ENGCMD_CONN_REMOVE:
		c->result = engine_conn_remove(t->eng, c->u.conn_rm.ep, c->u.conn_rm.conn);
		break;
	case ENGCMD_MR_ADD:
		c->result = engine_mr_add(t->eng, &c->u.mr);
		break;
	case ENGCMD_MR_REMOVE:
		c->result = engine_mr_remove(t->eng, c->u.mr_rm.client_id, c->u.mr_rm.mr_id);
		break;
	case ENGCMD_STATS:
		exec_stats(t, c);
		c->result = 0;
		break;
	default:
		c->result = -EINVAL;
	}
	/* cannot fail: out has the same capacity as in and every command
	 * leaves in at most once */
	cmdq_push(t->out, c);
}

static int drain_cmds(struct engthr *t)
{
	struct engcmd *c;
	int n = 0;

	while ((c = cmdq_pop(t->in))) {
		exec(t, c);
		n++;
	}
	return n;
}

static void sleep_until_work(struct engthr *t)
{
	struct epoll_event evs[64];
	int n;

	__atomic_store_n(&t->sleeping, 1, __ATOMIC_RELEASE);
	if (engine_sleep_arm(t->eng) == 0 && cmdq_empty(t->in)) {
		n = epoll_wait(t->epfd, evs, 64, -1);
		for (int i = 0; i < n; i++) {
			char buf[256];
			int fd = evs[i].data.u32 == UINT32_MAX ? cmdq_fd(t->in)
							       : t->doorbell_fds[evs[i].data.u32];
			/* eventfd (commands) or a non-blocking doorbell pipe:
			 * one read clears it or leaves it readable for next time */
			if (fd >= 0 && read(fd, buf, sizeof(buf)) < 0) {
				/* already drained */
			}
		}
	}
	engine_sleep_disarm(t->eng);
	__atomic_store_n(&t->sleeping, 0, __ATOMIC_RELEASE);
}

static void *engthr_main(void *arg)
{
	struct engthr *t = arg;
	uint64_t last_work = now_ns();
	unsigned idle_iters = 0;

	if (t->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(t->cpu, &set);
		int r = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
		if (r)
			log_warn("engine: cannot pin to cpu %d: %s", t->cpu, strerror(r));
	}
	for (;;) {
		int work = drain_cmds(t);

		if (__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE) && cmdq_empty(t->in))
			break;
		__atomic_add_fetch(&t->heartbeat, 1, __ATOMIC_RELAXED);
		work += engine_poll(t->eng, 0);
		if (work) {
			idle_iters = 0;
			last_work = 0;
			continue;
		}
		/* read the clock only every few idle passes: it is the hot loop */
		if (++idle_iters < 64)
			continue;
		idle_iters = 0;
		uint64_t now = now_ns();
		if (last_work == 0)
			last_work = now;
		uint64_t spin = (uint64_t)__atomic_load_n(&t->idle_spin_us, __ATOMIC_RELAXED) * 1000;
		if (now - last_work < spin)
			continue;
		sleep_until_work(t);
		last_work = 0;
	}
	return NULL;
}

static void out_cb(evutil_socket_t fd, short what, void *arg)
{
	struct engthr *t = arg;
	struct engcmd *c;

	(void)fd;
	(void)what;
	cmdq_clear_fd(t->out);
	while ((c = cmdq_pop(t->out))) {
		t->inflight--;
		t->queued--;
		c->done(c);
	}
	while (t->ovf_head && t->queued < ENGTHR_QUEUE && cmdq_push(t->in, t->ovf_head) == 0) {
		t->queued++;
		t->ovf_head = t->ovf_head->next;
		if (!t->ovf_head)
			t->ovf_tail = NULL;
	}
}

int engthr_start(const struct engthr_params *p, struct event_base *base, struct engthr **out)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
	struct engine_params ep = {
		.max_endpoints = p->max_endpoints,
		.max_mrs = p->max_mrs,
		.poll_batch = p->poll_batch,
		.max_op_bytes = p->max_op_bytes,
		.mem = &mem_copy_ops,
		.notify = notify_client,
	};
	struct engthr *t;
	int r = -ENOMEM;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->max_endpoints = p->max_endpoints;
	t->idle_spin_us = p->idle_spin_us;
	t->cpu = p->cpu;
	t->epfd = -1;
	t->notify_fds = malloc(sizeof(int) * p->max_endpoints);
	t->doorbell_fds = malloc(sizeof(int) * p->max_endpoints);
	if (!t->notify_fds || !t->doorbell_fds)
		goto out_free;
	for (uint32_t i = 0; i < p->max_endpoints; i++)
		t->notify_fds[i] = t->doorbell_fds[i] = -1;
	ep.notify_arg = t;
	t->eng = engine_new(&ep);
	if (!t->eng)
		goto out_free;
	t->in = cmdq_new(ENGTHR_QUEUE);
	t->out = cmdq_new(ENGTHR_QUEUE);
	if (!t->in || !t->out)
		goto out_engine;
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->epfd < 0 || epoll_ctl(t->epfd, EPOLL_CTL_ADD, cmdq_fd(t->in), &ev) < 0) {
		r = -errno;
		goto out_engine;
	}
	t->out_ev = event_new(base, cmdq_fd(t->out), EV_READ | EV_PERSIST, out_cb, t);
	if (!t->out_ev || event_add(t->out_ev, NULL) < 0)
		goto out_engine;
	r = pthread_create(&t->thread, NULL, engthr_main, t);
	if (r) {
		r = -r;
		goto out_event;
	}
	pthread_setname_np(t->thread, "uccl-engine");
	*out = t;
	return 0;

out_event:
	event_free(t->out_ev);
out_engine:
	if (t->epfd >= 0)
		close(t->epfd);
	cmdq_free(t->in);
	cmdq_free(t->out);
	engine_free(t->eng);
out_free:
	free(t->notify_fds);
	free(t->doorbell_fds);
	free(t);
	return r;
}

void engthr_stop(struct engthr *t)
{
	uint64_t one = 1;

	if (!t)
		return;
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	if (write(cmdq_fd(t->in), &one, sizeof(one)) < 0) {
		/* saturated counter still wakes it */
	}
	pthread_join(t->thread, NULL);
	out_cb(-1, 0, t);           /* run the last done callbacks */
	event_free(t->out_ev);
	close(t->epfd);
	cmdq_free(t->in);
	cmdq_free(t->out);
	engine_free(t->eng);
	free(t->notify_fds);
	free(t->doorbell_fds);
	free(t);
}

void engthr_submit(struct engthr *t, struct engcmd *c)
{
	t->inflight++;
	c->next = NULL;
	/* keep FIFO order: nothing may overtake what already waits */
	if (!t->ovf_head && t->queued < ENGTHR_QUEUE && cmdq_push(t->in, c) == 0) {
		t->queued++;
		return;
	}
	if (t->ovf_tail)
		t->ovf_tail->next = c;
	else
		t->ovf_head = c;
	t->ovf_tail = c;
}

void engthr_set_idle_spin(struct engthr *t, uint32_t us)
{
	__atomic_store_n(&t->idle_spin_us, us, __ATOMIC_RELAXED);
}

int engthr_alive(struct engthr *t)
{
	uint64_t hb = __atomic_load_n(&t->heartbeat, __ATOMIC_RELAXED);
	int alive = hb != t->seen_heartbeat || __atomic_load_n(&t->sleeping, __ATOMIC_ACQUIRE);

	t->seen_heartbeat = hb;
	return alive;
}

uint32_t engthr_inflight(const struct engthr *t)
{
	return t->inflight;
}
