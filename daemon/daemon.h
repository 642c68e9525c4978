/* SPDX-License-Identifier: MIT */
/*
 * daemon: ucclsvcd's main-thread state: configuration, the control socket,
 * client sessions, the endpoint id space, listen names, the engine thread and
 * the peer daemons.
 * Only the main thread touches it.
 */
#ifndef UCCL_DAEMON_DAEMON_H
#define UCCL_DAEMON_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/un.h>

#include "daemon/conf.h"
#include "daemon/listener.h"
#include "daemon/log.h"

struct event_base;
struct event;
struct engthr;
struct names;
struct session;
struct dep;
struct peermgr;
struct rconn_chans;
struct chancc;
struct engcmd;

/* Daemon-wide counters shown by ucclctl stats. */
struct daemon_stats {
	uint64_t attaches;
	uint64_t detaches;
	uint64_t disconnects;          /* sessions that ended without detach */
	uint64_t bad_input;            /* sessions closed for bad control input */
	uint64_t refused;              /* attach refused (permission, version, limit) */
	uint64_t requests;
	uint64_t request_errors;       /* replies with status < 0 */
	uint64_t reloads;
};

#define DAEMON_MAX_ENDPOINTS 65536u
#define DAEMON_MAX_OBSERVERS 16u
/* Observers never time out and the slots are few: a uid without the admin
 * role holds at most this many (ucclctl takes one at a time), and such
 * uids together leave DAEMON_ADMIN_OBSERVERS for admins, so that no user
 * can lock the admins out of ucclctl. */
#define DAEMON_OBSERVERS_PER_UID 2u
#define DAEMON_ADMIN_OBSERVERS 4u
/* Control connections one allowed uid may have open before they attach
 * (a burst of its processes starting at once); the accept bound leaves
 * room for one such burst beside max_clients and the observers, so that
 * one user's burst never keeps another user from attaching. */
#define DAEMON_MAX_UNATTACHED_PER_UID 32u
/* Control connections at once: max_clients, the observers and one
 * uid's burst; past that only admins get in, DAEMON_ADMIN_OBSERVERS more,
 * so that users holding connections cannot lock them out of ucclctl. */
#define DAEMON_CONNS(d) ((d)->conf.max_clients + DAEMON_MAX_OBSERVERS + DAEMON_MAX_UNATTACHED_PER_UID)

struct daemon {
	struct conf conf;
	const char *config_path;       /* NULL: built-in defaults */
	struct event_base *base;
	struct engthr *thr[CONF_MAX_ENGINE_THREADS];   /* engine threads, n_thr of them */
	uint32_t n_thr;
	uint32_t thr_eps[CONF_MAX_ENGINE_THREADS];     /* endpoints placed on each */
	uint32_t thr_port[CONF_MAX_ENGINE_THREADS];    /* each one's base data port */
	bool xconn;                    /* channels between our threads are up (daemon/xconn.c) */
	struct lanebus *bus;           /* lanes between our threads (conf lanes > 0), or NULL */
	/* when the channels between threads i < k were last made again */
	uint64_t xrebuilt_ms[CONF_MAX_ENGINE_THREADS][CONF_MAX_ENGINE_THREADS];
	bool xrebuild_owed[CONF_MAX_ENGINE_THREADS][CONF_MAX_ENGINE_THREADS];
	/* the token (and tag) of the channels between two threads now, by
	 * pair, lower index first: a give-up reported for an earlier pair of
	 * channels is no reason to make them again */
	uint64_t xtoken[CONF_MAX_ENGINE_THREADS][CONF_MAX_ENGINE_THREADS];
	uint64_t ep_serial;            /* last struct dep serial */
	struct names *names;           /* listen name -> struct dep */
	struct peermgr *peers;         /* NULL: peering off (no peer_listen) */
	struct rconn_chans *rchans;    /* data channels to peers (daemon/rconn.c) */
	struct chancc *chancc;         /* their congestion controllers (daemon/chancc.c) */
	char data_text[64];            /* the data plane's address:port, "" if off */

	int listen_fd;
	struct listener listener;
	struct log_limit refusal_log;  /* refused connections and attaches */
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	bool own_socket;               /* we created it (unlink on exit) */

	struct session *sessions;      /* live sessions (closing ones are unlinked) */
	uint32_t n_clients;            /* attached, not observers */
	uint32_t n_observers;
	uint32_t n_sessions;           /* every open control connection */
	uint32_t next_client_id;
	uint32_t closing_sessions;     /* unlinked, waiting for engine commands */
	struct session *closing;       /* those, through cnext/cprev: their ids are held */

	struct dep **eps;              /* by endpoint id */
	uint32_t n_eps;
	uint32_t ep_hint;
	uint32_t n_mrs;
	uint64_t reg_bytes;

	uint64_t start_ms;
	bool stopping;
	struct daemon_stats stats;
};

uint64_t daemon_now_ms(void);

/* daemon/fanout.c: a command for every engine thread (memory regions, which
 * every engine must know). c runs on each thread (copies); c->done runs once
 * when all are done, with the first error. A region added on some threads
 * and refused on others is removed from those that took it before c->done
 * runs. With one thread: engthr_submit. */
void daemon_submit_all(struct daemon *d, struct engcmd *c);
/* A channel command (ENGCMD_CHAN_SET_CC) for every sub-channel of the peer
 * channel slot: on every thread, towards each of its rthreads threads. */
void daemon_submit_chans(struct daemon *d, struct engcmd *c, uint32_t slot, uint32_t rthreads);
/* Called when a closing session finished its cleanup (for shutdown). */
void daemon_session_gone(struct daemon *d);

#endif
