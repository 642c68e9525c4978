/* SPDX-License-Identifier: MIT */
/*
 * engthr: engine threads of ucclsvcd. The loop: commands, NIC receive,
 * engine_poll (application rings), NIC transmit; then either spin (work was
 * found recently) or arm the rings' wake-up flags and sleep in epoll on the
 * doorbells, the NIC and a timer set to the engine's next deadline.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/cmdq.h"
#include "daemon/conf.h"
#include "daemon/engthr.h"
#include "daemon/lanebus.h"
#include "daemon/log.h"
#include "daemon/memory.h"
#include "engine/nic/txrun.h"

#define ENGTHR_QUEUE 4096
#define TX_BATCH     64          /* packets per engine_tx / nic tx call */
#define RX_BATCH     64
#define TX_BUF_LEN   9216        /* >= the largest MTU (9000) */
_Static_assert(TX_BUF_LEN >= TPCHAN_MTU_MAX, "a channel's packet fits a TX buffer");
#define IO_ROUNDS    8           /* rx/tx batches per loop pass */
#define EV_CMDQ      UINT32_MAX  /* epoll tags that are not endpoint ids */
#define EV_NIC       (UINT32_MAX - 1)
#define EV_TIMER     (UINT32_MAX - 2)
#define EV_LANE      (UINT32_MAX - 3)
#define NO_CHAN      UINT32_MAX

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
	uint32_t index;
	int stop;                    /* atomic */
	uint64_t heartbeat;          /* atomic: bumped every loop */
	uint64_t seen_heartbeat;     /* main thread */
	int sleeping;                /* atomic */
	/* host-to-host (engine thread only) */
	const struct nic_ops *nic_ops;
	struct nic *nic;
	uint32_t max_chans;
	uint32_t *nic_peer_of;       /* by channel: NIC peer id, or NIC_PEER_UNKNOWN */
	uint32_t *chan_of;           /* by NIC peer id: channel, or NO_CHAN */
	int timer_fd;
	uint8_t *txbuf;              /* TX_BATCH buffers of TX_BUF_LEN */
	struct engine_txpkt tx[TX_BATCH];
	struct nic_pkt ntx[TX_BATCH];
	int tx_n, tx_done;           /* built by engine_tx, handed to the NIC so far */
	struct nic_pkt rx[RX_BATCH];
	uint64_t rx_unknown_chan, tx_dropped;
	struct lanethr lt;           /* our end of the lane bus (engine thread only) */
	/* channels that gave up, engine -> main (struct chanfail items) */
	uint64_t *chan_tag;          /* by channel: its ENGCMD_CHAN_ADD's tag */
	struct cmdq *fails;
	struct chanfail *fail_spare; /* the next one's memory, taken before the engine's report */
	struct event *fails_ev;
	void (*chan_failed)(void *arg, uint32_t thread, uint32_t chan, uint64_t tag);
	void *chan_failed_arg;
};

struct chanfail {
	uint32_t chan;
	uint64_t tag;
};

#define FAILS_QUEUE 64u              /* more at once wait in the engine for room */

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

/* ---- lanes: parts and reports between engine threads (daemon/lanebus.h) ---- */

static int lane_submit(void *arg, const struct engine_lane_part *p)
{
	struct engthr *t = arg;

	return lanethr_submit(&t->lt, p);
}

static void lane_done(void *arg, uint32_t origin, uint64_t cookie, int res)
{
	struct engthr *t = arg;

	if (lanethr_report(&t->lt, origin, cookie, res) < 0)
		log_err("engine %u: lane report without a spare message", t->index);
}

static int lane_put(void *arg, const struct engine_lane_part *p)
{
	struct engthr *t = arg;

	return engine_lane_start(t->eng, p);
}

static void lane_back(void *arg, uint64_t cookie, int res)
{
	struct engthr *t = arg;

	engine_lane_done(t->eng, cookie, res);
}

static int lane_pass(struct engthr *t)
{
	const struct lanethr_ops ops = { .put = lane_put, .done = lane_back, .arg = t };

	return t->lt.bus ? lanethr_pass(&t->lt, &ops) : 0;
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
	/* RDHUP: a client that shut its socket doorbell down for writing
	 * leaves it readable (EOF) for ever, without HUP */
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
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

static int exec_chan_add(struct engthr *t, struct engcmd *c)
{
	uint32_t chan = c->u.chan.chan, peer;
	int r;

	if (!t->nic || chan >= t->max_chans || t->nic_peer_of[chan] != NIC_PEER_UNKNOWN)
		return -EINVAL;
	/* the channel's paths are the fewer of both daemons': the peer's NIC
	 * knows us by that many of our sockets at least */
	r = t->nic_ops->add_peer(t->nic, (const struct sockaddr *)&c->u.chan.addr, c->u.chan.addrlen,
				 c->u.chan.p.npaths, &peer);
	if (r < 0)
		return r;
	if (peer >= NIC_MAX_PEERS) {
		t->nic_ops->remove_peer(t->nic, peer);
		return -ENOSPC;
	}
	r = engine_chan_add(t->eng, chan, &c->u.chan.p);
	if (r < 0) {
		t->nic_ops->remove_peer(t->nic, peer);
		return r;
	}
	t->nic_peer_of[chan] = peer;
	t->chan_of[peer] = chan;
	t->chan_tag[chan] = c->u.chan.tag;
	return 0;
}

static int exec_chan_remove(struct engthr *t, uint32_t chan, int err)
{
	int r;

	if (!t->nic || chan >= t->max_chans || t->nic_peer_of[chan] == NIC_PEER_UNKNOWN)
		return -ENOENT;
	r = engine_chan_remove(t->eng, chan, err);
	/* packets built for it and not yet sent go nowhere now (txrun.h) */
	for (int i = t->tx_done; i < t->tx_n; i++) {
		if (t->tx[i].chan == chan && t->ntx[i].len) {
			t->ntx[i] = (struct nic_pkt){ .buf = t->ntx[i].buf, .peer = NIC_PEER_UNKNOWN };
			t->tx_dropped++;
		}
	}
	t->chan_of[t->nic_peer_of[chan]] = NO_CHAN;
	t->nic_ops->remove_peer(t->nic, t->nic_peer_of[chan]);
	t->nic_peer_of[chan] = NIC_PEER_UNKNOWN;
	return r;
}

static void exec_chan_stats(struct engthr *t, struct engcmd *c)
{
	for (uint32_t i = 0; i < c->u.chst.n; i++)
		c->u.chst.res[i] = engine_chan_stats(t->eng, c->u.chst.chans[i], &c->u.chst.out[i]);
	memset(&c->u.chst.nic, 0, sizeof(c->u.chst.nic));
	if (t->nic)
		t->nic_ops->get_stats(t->nic, &c->u.chst.nic);
	c->u.chst.nic_rx_unknown_chan = t->rx_unknown_chan;
	c->u.chst.nic_tx_dropped = t->tx_dropped;
	if (!c->u.chst.paths)
		return;
	c->u.chst.now_ns = now_ns();
	for (uint32_t i = 0; i < c->u.chst.n; i++) {
		int r = engine_chan_paths(t->eng, c->u.chst.chans[i],
					  c->u.chst.paths + (size_t)i * c->u.chst.paths_per,
					  c->u.chst.paths_per);

		c->u.chst.npaths[i] = r > 0 ? (uint32_t)r : 0;
	}
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
	case ENGCMD_CHAN_ADD:
		c->result = exec_chan_add(t, c);
		break;
	case ENGCMD_CHAN_REMOVE:
		c->result = exec_chan_remove(t, c->u.chan_rm.chan, c->u.chan_rm.err);
		break;
	case ENGCMD_RCONN_ADD:
		c->result = engine_rconn_add(t->eng, c->u.rconn.ep, c->u.rconn.conn, c->u.rconn.wire,
					     c->u.rconn.chan);
		break;
	case ENGCMD_RCONN_CONNECT:
		c->result = engine_rconn_connect(t->eng, c->u.rconn_c.ep, c->u.rconn_c.conn,
						 c->u.rconn_c.rep, c->u.rconn_c.rwire);
		break;
	case ENGCMD_CONN_RESET:
		c->result = engine_conn_reset(t->eng, c->u.conn_rm.ep, c->u.conn_rm.conn);
		break;
	case ENGCMD_CHAN_STATS:
		exec_chan_stats(t, c);
		c->result = 0;
		break;
	case ENGCMD_CHAN_SET_CC:
		c->result = engine_chan_set_cc(t->eng, c->u.chan_cc.chan, c->u.chan_cc.ops);
		break;
	case ENGCMD_SHADOW_ADD:
		c->result = engine_shadow_add(t->eng, c->u.shadow.ep, c->u.shadow.client_id,
					      c->u.shadow.max_conns, c->u.shadow.max_outstanding);
		break;
	case ENGCMD_RCONN_LANES:
		c->result = engine_rconn_lanes(t->eng, c->u.lanes.ep, c->u.lanes.conn, c->u.lanes.n);
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

/* ---- NIC ---- */

/* Receive up to IO_ROUNDS batches and feed them to their channels. */
static int nic_rx_pass(struct engthr *t, uint64_t now)
{
	int total = 0;

	for (int round = 0; round < IO_ROUNDS; round++) {
		int n = t->nic_ops->rx(t->nic, t->rx, RX_BATCH);

		if (n <= 0)
			break;
		for (int i = 0; i < n; i++) {
			uint32_t peer = t->rx[i].peer;
			uint32_t chan = peer < NIC_MAX_PEERS ? t->chan_of[peer] : NO_CHAN;

			if (chan == NO_CHAN) {
				t->rx_unknown_chan++;
				continue;
			}
			/* CE is both ECN bits set */
			engine_rx_ce(t->eng, chan, t->rx[i].buf, t->rx[i].len, now,
				     (t->rx[i].tos & 0x03) == 0x03);
		}
		total += n;
		if (n < RX_BATCH)
			break;
	}
	return total;
}

/* Packets left for a later pass must not point into application memory:
 * the engine's next input may complete their operation and let the region
 * go. Their payloads move behind their headers in our own buffers. */
static void materialize(struct engthr *t)
{
	for (int i = t->tx_done; i < t->tx_n; i++) {
		struct nic_pkt *p = &t->ntx[i];

		if (!p->payload || !p->len)
			continue;
		memcpy(p->buf + p->hdr_len, p->payload, p->len - p->hdr_len);
		p->payload = NULL;
		p->hdr_len = 0;
	}
}

/* Hand built packets to the NIC; build more while it takes them all. A
 * full socket buffer leaves the rest for the next pass (the packets stay
 * built: their sequence numbers are taken). */
static int nic_tx_pass(struct engthr *t, uint64_t now)
{
	int total = 0;

	for (int round = 0; round < IO_ROUNDS; round++) {
		int end, r;

		if (t->tx_done == t->tx_n) {
			t->tx_n = engine_tx(t->eng, now, t->tx, TX_BATCH);
			t->tx_done = 0;
			if (t->tx_n <= 0) {
				t->tx_n = 0;
				break;
			}
			for (int i = 0; i < t->tx_n; i++) {
				uint32_t chan = t->tx[i].chan;

				t->ntx[i] = (struct nic_pkt){
					.buf = t->tx[i].buf,
					.len = t->tx[i].len,
					.path = t->tx[i].path,
					.peer = chan < t->max_chans ? t->nic_peer_of[chan] : NIC_PEER_UNKNOWN,
					.payload = t->tx[i].payload,
					.hdr_len = t->tx[i].hdr_len,
					.any_path = t->tx[i].any_path,
					.pack_max = t->tx[i].dgram_max,
				};
			}
		}
		/* skip packets whose channel went away, and send up to the
		 * next such (txrun.h) */
		while (t->tx_done < t->tx_n && t->ntx[t->tx_done].len == 0)
			t->tx_done++;
		if (t->tx_done == t->tx_n)
			continue;
		end = t->tx_done + txrun_len(t->ntx + t->tx_done, t->tx_n - t->tx_done);
		r = t->nic_ops->tx(t->nic, t->ntx + t->tx_done, end - t->tx_done);
		if (r < 0) {
			/* not a full buffer: the first packet's peer refused
			 * it; its packets are lost (the transport resends
			 * them), the other peers' go on */
			t->tx_dropped += (uint64_t)txrun_drop_peer(t->ntx + t->tx_done,
								   t->tx_n - t->tx_done);
			continue;
		}
		t->tx_done += r;
		total += r;
		if (t->tx_done < end)
			break;             /* socket buffer full */
	}
	materialize(t);                /* what waits must not point at clients' memory */
	return total;
}

/* Arm the timer for the engine's next deadline (0: none). */
static void arm_timer(struct engthr *t)
{
	struct itimerspec its = { 0 };
	uint64_t d = engine_next_deadline(t->eng);

	if (d != UINT64_MAX) {
		if (d == 0)
			d = 1;
		its.it_value.tv_sec = (time_t)(d / 1000000000ull);
		its.it_value.tv_nsec = (long)(d % 1000000000ull);
	}
	timerfd_settime(t->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* An epoll tag of the lane bus: EV_LANE - j for thread j's queue to us. */
static bool lane_tag(uint32_t tag)
{
	return tag >= EV_LANE - CONF_MAX_ENGINE_THREADS && tag <= EV_LANE;
}

static void sleep_until_work(struct engthr *t)
{
	struct epoll_event evs[64];
	int n;

	__atomic_store_n(&t->sleeping, 1, __ATOMIC_RELEASE);
	if (t->nic)
		arm_timer(t);
	if (engine_sleep_arm(t->eng) == 0 && cmdq_empty(t->in) && t->tx_done == t->tx_n &&
	    lanethr_idle(&t->lt)) {
		n = epoll_wait(t->epfd, evs, 64, -1);
		for (int i = 0; i < n; i++) {
			char buf[256];
			uint32_t tag = evs[i].data.u32;
			int fd = tag == EV_CMDQ ? cmdq_fd(t->in) : tag == EV_TIMER ? t->timer_fd
				 : tag == EV_NIC ? -1
				 : lane_tag(tag) ? lanebus_fd(t->lt.bus, EV_LANE - tag, t->index)
				 : t->doorbell_fds[tag];

			if (tag != EV_CMDQ && tag != EV_TIMER && tag != EV_NIC && !lane_tag(tag) && fd >= 0 &&
			    (evs[i].events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))) {
				/* the client closed its end: the pipe would report
				 * HUP on every wait and the thread never sleep
				 * again. Its ring is still polled while there is
				 * other work; it just cannot wake us any more. */
				epoll_ctl(t->epfd, EPOLL_CTL_DEL, fd, NULL);
				t->doorbell_fds[tag] = -1;
				continue;
			}
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

/* Channels that gave up since the last pass go to the main thread (a load
 * while none did). The engine marks a channel told once it hands it over,
 * so one is taken only with memory and room for it: dropped here, it was
 * never told, the daemon never rebuilt that peer's channels, and the
 * peer's side of a get could wait for ever. Nonzero while the queue is
 * full: the thread keeps going (the main thread is woken to drain it). */
static int tell_failures(struct engthr *t)
{
	uint32_t chan;

	for (;;) {
		struct chanfail *f = t->fail_spare;

		if (!f && !(f = t->fail_spare = malloc(sizeof(*f))))
			return 0;              /* the next pass tries again */
		if (cmdq_full(t->fails))
			return 1;
		if (engine_chan_failures(t->eng, &chan, 1) != 1)
			return 0;
		f->chan = chan;
		f->tag = chan < t->max_chans ? t->chan_tag[chan] : 0;
		cmdq_push(t->fails, f);        /* room checked: we alone push */
		t->fail_spare = NULL;
	}
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
			log_warn("engine %u: cannot pin to cpu %d: %s", t->index, t->cpu, strerror(r));
	}
	for (;;) {
		int work = drain_cmds(t);
		uint64_t now = 0;

		work += lane_pass(t);

		if (__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE) && cmdq_empty(t->in))
			break;
		__atomic_add_fetch(&t->heartbeat, 1, __ATOMIC_RELAXED);
		if (t->nic) {
			/* the transport's timers need the time on every pass */
			now = now_ns();
			work += nic_rx_pass(t, now);
			work += engine_poll(t->eng, now);
			work += nic_tx_pass(t, now);
			if (t->tx_done < t->tx_n)
				work++;            /* the NIC owes us room: keep going */
			work += tell_failures(t);
		} else {
			work += engine_poll(t->eng, 0);
		}
		if (work) {
			idle_iters = 0;
			last_work = 0;
			continue;
		}
		/* read the clock only every few idle passes: it is the hot loop */
		if (++idle_iters < 64)
			continue;
		idle_iters = 0;
		now = now_ns();
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

static void fails_cb(evutil_socket_t fd, short what, void *arg)
{
	struct engthr *t = arg;
	struct chanfail *f;

	(void)fd;
	(void)what;
	cmdq_clear_fd(t->fails);
	while ((f = cmdq_pop(t->fails))) {
		if (t->chan_failed)
			t->chan_failed(t->chan_failed_arg, t->index, f->chan, f->tag);
		free(f);
	}
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

static int nic_setup(struct engthr *t, const struct engthr_params *p)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fds[8], n;

	t->max_chans = p->max_chans;
	t->nic_peer_of = malloc(sizeof(uint32_t) * p->max_chans);
	t->chan_of = malloc(sizeof(uint32_t) * NIC_MAX_PEERS);
	t->chan_tag = calloc(p->max_chans, sizeof(uint64_t));
	t->txbuf = malloc((size_t)TX_BATCH * TX_BUF_LEN);
	t->fails = cmdq_new(FAILS_QUEUE);
	if (!t->nic_peer_of || !t->chan_of || !t->chan_tag || !t->txbuf || !t->fails)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->max_chans; i++)
		t->nic_peer_of[i] = NIC_PEER_UNKNOWN;
	for (uint32_t i = 0; i < NIC_MAX_PEERS; i++)
		t->chan_of[i] = NO_CHAN;
	for (int i = 0; i < TX_BATCH; i++)
		t->tx[i].buf = t->txbuf + (size_t)i * TX_BUF_LEN;
	t->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (t->timer_fd < 0)
		return -errno;
	ev.data.u32 = EV_TIMER;
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->timer_fd, &ev) < 0)
		return -errno;
	n = t->nic_ops->wait_fds(t->nic, fds, 8);
	for (int i = 0; i < n; i++) {
		ev.data.u32 = EV_NIC;
		if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fds[i], &ev) < 0)
			return -errno;
	}
	return 0;
}

/* Close the NIC (the engine thread owned it) and free its buffers. Must run
 * after engine_free when the engine is gone, or before it is created. */
static void nic_teardown(struct engthr *t)
{
	if (t->nic_ops && t->nic)
		t->nic_ops->close(t->nic);
	t->nic = NULL;
	if (t->timer_fd >= 0)
		close(t->timer_fd);
	t->timer_fd = -1;
	free(t->nic_peer_of);
	free(t->chan_of);
	free(t->chan_tag);
	free(t->txbuf);
	t->nic_peer_of = t->chan_of = NULL;
	t->chan_tag = NULL;
	t->txbuf = NULL;
	free(t->fail_spare);
	t->fail_spare = NULL;
	if (t->fails) {
		struct chanfail *f;

		while ((f = cmdq_pop(t->fails)))
			free(f);
		cmdq_free(t->fails);
		t->fails = NULL;
	}
}

int engthr_start(const struct engthr_params *p, struct event_base *base, struct engthr **out)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = EV_CMDQ };
	struct engine_params ep = {
		.max_endpoints = p->max_endpoints,
		.max_mrs = p->max_mrs,
		.poll_batch = p->poll_batch,
		.max_op_bytes = p->max_op_bytes,
		.mem = &mem_copy_ops,
		.notify = notify_client,
		.max_chans = p->nic ? p->max_chans : 0,
		.max_unexpected_bytes = p->max_unexpected_bytes,
		.max_ep_inflight_bytes = p->max_ep_inflight_bytes,
		.pull_rate_bps = p->pull_rate_bps,
		.lane_min_bytes = p->lane_min_bytes,
		.lane_submit = lane_submit,
		.lane_done = lane_done,
	};
	struct engthr *t;
	int r = -ENOMEM;

	t = calloc(1, sizeof(*t));
	if (!t) {
		if (p->nic)
			p->nic_ops->close(p->nic);
		return -ENOMEM;
	}
	/* the NIC is ours from here on, also when starting fails */
	t->nic_ops = p->nic_ops;
	t->nic = p->nic;
	t->max_endpoints = p->max_endpoints;
	t->idle_spin_us = p->idle_spin_us;
	t->cpu = p->cpu;
	t->index = p->index;
	t->chan_failed = p->chan_failed;
	t->chan_failed_arg = p->chan_failed_arg;
	t->epfd = -1;
	t->timer_fd = -1;
	t->notify_fds = malloc(sizeof(int) * p->max_endpoints);
	t->doorbell_fds = malloc(sizeof(int) * p->max_endpoints);
	if (!t->notify_fds || !t->doorbell_fds)
		goto out_free;
	for (uint32_t i = 0; i < p->max_endpoints; i++)
		t->notify_fds[i] = t->doorbell_fds[i] = -1;
	ep.notify_arg = t;
	ep.lane_arg = t;
	lanethr_init(&t->lt, p->bus, p->index);
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
	if (p->nic) {
		r = nic_setup(t, p);
		if (r < 0)
			goto out_engine;
	}
	for (uint32_t j = 0; t->lt.bus && j < t->lt.nthr; j++) {
		struct epoll_event lev = { .events = EPOLLIN, .data.u32 = EV_LANE - j };

		if (j != t->index &&
		    epoll_ctl(t->epfd, EPOLL_CTL_ADD, lanebus_fd(t->lt.bus, j, t->index), &lev) < 0) {
			r = -errno;
			goto out_engine;
		}
	}
	t->out_ev = event_new(base, cmdq_fd(t->out), EV_READ | EV_PERSIST, out_cb, t);
	if (!t->out_ev || event_add(t->out_ev, NULL) < 0)
		goto out_engine;
	if (t->fails) {
		t->fails_ev = event_new(base, cmdq_fd(t->fails), EV_READ | EV_PERSIST, fails_cb, t);
		if (!t->fails_ev || event_add(t->fails_ev, NULL) < 0)
			goto out_event;
	}
	r = pthread_create(&t->thread, NULL, engthr_main, t);
	if (r) {
		r = -r;
		goto out_event;
	}
	if (t->index == 0) {
		pthread_setname_np(t->thread, "uccl-engine");
	} else {
		char name[16];

		snprintf(name, sizeof(name), "uccl-engine%u", t->index % 100u);
		pthread_setname_np(t->thread, name);
	}
	*out = t;
	return 0;

out_event:
	if (t->fails_ev)
		event_free(t->fails_ev);
	event_free(t->out_ev);
out_engine:
	if (t->epfd >= 0)
		close(t->epfd);
	cmdq_free(t->in);
	cmdq_free(t->out);
	engine_free(t->eng);
out_free:
	nic_teardown(t);
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
	/* commands waiting for room in the queue go in as the running thread
	 * frees it: the thread leaves once its queue is empty, and what was
	 * still waiting then would never run nor be told done */
	while (t->ovf_head) {
		struct pollfd pfd = { .fd = cmdq_fd(t->out), .events = POLLIN };

		out_cb(-1, 0, t);
		if (t->ovf_head)
			(void)poll(&pfd, 1, 100);
	}
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	if (write(cmdq_fd(t->in), &one, sizeof(one)) < 0) {
		/* saturated counter still wakes it */
	}
	pthread_join(t->thread, NULL);
	out_cb(-1, 0, t);           /* run the last done callbacks */
	event_free(t->out_ev);
	if (t->fails_ev)
		event_free(t->fails_ev);   /* failures untold now: the daemon is stopping */
	/* the engine's channels go first: nothing may send after the NIC closes */
	engine_free(t->eng);
	t->eng = NULL;
	lanethr_clear(&t->lt);
	nic_teardown(t);
	close(t->epfd);
	cmdq_free(t->in);
	cmdq_free(t->out);
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

static void owned_done(struct engcmd *c)
{
	/* nobody waits for it: a channel that did not come up must be said */
	if (c->type == ENGCMD_CHAN_ADD && c->result < 0)
		log_err("data channel %u could not be added to its engine thread: %s",
			c->u.chan.chan, strerror(-c->result));
	free(c);
}

void engthr_submit_owned(struct engthr *t, struct engcmd *c)
{
	c->done = owned_done;
	engthr_submit(t, c);
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
