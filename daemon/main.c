/* SPDX-License-Identifier: MIT */
/*
 * ucclsvcd: the per-host transport daemon. Parses the command line and the
 * configuration, starts the engine thread, the control socket and peering
 * with other hosts' daemons, then runs the libevent loop (control, peers,
 * signals, systemd notify and watchdog) until SIGTERM, when it stops
 * accepting, closes the peer connections, releases every session and exits.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <event2/event.h>

#include "daemon/conf.h"
#include "daemon/ctlsrv.h"
#include "daemon/chancc.h"
#include "daemon/daemon.h"
#include "daemon/engthr.h"
#include "daemon/lanebus.h"
#include "daemon/log.h"
#include "daemon/names.h"
#include "daemon/nthr.h"
#include "daemon/peer.h"
#include "daemon/peerauth.h"
#include "daemon/rconn.h"
#include "daemon/sdnotify.h"
#include "daemon/session.h"
#include "daemon/xconn.h"
#include "proto/frame.h"

#define DEFAULT_RUNTIME_DIR "/run/uccl"
#define DEFAULT_CONFIG SYSCONFDIR "/uccl.conf"
#define DRAIN_TIMEOUT_S 5
#define LANEBUS_DEPTH 4096     /* parts or reports queued from one thread to another */

uint64_t daemon_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void daemon_session_gone(struct daemon *d)
{
	if (d->stopping && d->closing_sessions == 0)
		event_base_loopbreak(d->base);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ucclsvcd [--config FILE] [--runtime-dir DIR]\n"
		"       ucclsvcd --check-config FILE\n"
		"       ucclsvcd --version | --help\n"
		"\n"
		"  -c, --config FILE       configuration (default " DEFAULT_CONFIG " if it exists,\n"
		"                          else built-in defaults)\n"
		"  -r, --runtime-dir DIR   where the control socket lives (default " DEFAULT_RUNTIME_DIR ")\n"
		"  -C, --check-config FILE check FILE and exit: 0 if valid, else 1 with FILE:LINE: message\n"
		"  -V, --version           print the version and exit\n"
		"  -h, --help              print this help and exit\n"
		"\n"
		"Runs in the foreground; systemd (ucclsvcd.service) supervises it. See ucclsvcd(8).\n");
}

/* Peers ask whether an endpoint listens under a name here. */
static int resolve_name(void *arg, const char *name, uint32_t *ep_id, uint32_t *thread)
{
	struct daemon *d = arg;
	struct dep *ep;

	if (!names_valid(name))
		return -EINVAL;
	ep = names_find(d->names, name);
	if (!ep || !ep->live)
		return -ENOENT;
	*ep_id = ep->id;
	*thread = ep->thr;
	return 0;
}

/* Engine thread i's UDP data plane: bound to data_address (or the
 * peer_listen address) at data_port + i * data_paths (0: the kernel picks);
 * *port is the port it got. */
static int open_data_plane(struct daemon *d, uint32_t i, struct nic **out, uint16_t *port)
{
	const struct conf *c = &d->conf;
	const struct conf_addr *a = conf_data_addr(c);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char addr[64];
	struct nic_params np;
	struct nic_stats ns;
	int r;

	conf_addr_fmt(a, false, addr, sizeof(addr));
	if (addr[0] == '[') {          /* IPv6 is written in brackets */
		memmove(addr, addr + 1, strlen(addr));
		addr[strcspn(addr, "]")] = 0;
	}
	np = (struct nic_params){
		.bind_addr = addr,
		.base_port = (uint16_t)nthr_port(c->data_port, c->data_paths, i),
		.npaths = c->data_paths,
		.mtu = c->mtu,
		.rcvbuf = (uint32_t)c->udp_buffer_bytes,
		.sndbuf = (uint32_t)c->udp_buffer_bytes,
		.gso = c->udp_gso,
		.gro = c->udp_gro,
		.pack = c->udp_pack,
		.rx_hint = c->udp_rx_hint,
		.rx_batch = 64,
		.ecn = true,
	};
	r = nic_udp_ops.open(&np, out);
	if (r < 0) {
		log_err("data plane of engine thread %u: cannot open UDP ports %s:%u..+%u: %s", i, addr,
			nthr_port(c->data_port, c->data_paths, i), c->data_paths - 1, strerror(-r));
		return r;
	}
	r = nic_udp_ops.local_addr(*out, &ss, &sl);
	if (r < 0) {
		nic_udp_ops.close(*out);
		return r;
	}
	nic_udp_ops.get_stats(*out, &ns);
	/* the kernel holds at most INT_MAX, half of it usable */
	if (i == 0 && ns.rcvbuf_bytes && ns.rcvbuf_bytes < c->udp_buffer_bytes &&
	    ns.rcvbuf_bytes < INT_MAX / 2)
		log_warn("data plane: the kernel granted a %" PRIu64 "-byte receive buffer, not the "
			 "udp_buffer_bytes = %" PRIu64 " asked for (without CAP_NET_ADMIN "
			 "net.core.rmem_max caps it); bursts may be dropped (ucclctl channels: rx "
			 "dropped by the kernel)", ns.rcvbuf_bytes, c->udp_buffer_bytes);
	if (i == 0 && ns.rx_hint_error)
		log_warn("data plane: no receive hint (udp_rx_hint): the counting socket filter "
			 "was refused: %s (%s); every receive is a system call",
			 strerror(ns.rx_hint_error),
			 ns.rx_hint_error == EPERM ? "it needs CAP_BPF or CAP_SYS_ADMIN, and before "
						     "Linux 5.11 room under RLIMIT_MEMLOCK" :
			 ns.rx_hint_error == EOPNOTSUPP ? "built without BPF headers" :
			 "mappable BPF arrays need Linux 5.5");
	*port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
					 : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (i == 0)
		snprintf(d->data_text, sizeof(d->data_text), "%s%s%s:%u",
			 ss.ss_family == AF_INET6 ? "[" : "", addr, ss.ss_family == AF_INET6 ? "]" : "",
			 *port);
	if (i == 0)
		log_info("data plane on udp %s (%u paths, mtu %u%s%s%s%s%s)", d->data_text,
			 c->data_paths, c->mtu, c->udp_gso ? ", gso" : "", c->udp_gro ? ", gro" : "",
			 c->udp_pack ? ", packing" : "", ns.rx_hint ? ", rx hint" : "",
			 c->peer_listen.family ? "" : "; no peering: between this daemon's threads only");
	else
		log_info("data plane of engine thread %u on udp port %u (%u paths)", i, *port,
			 c->data_paths);
	return 0;
}

static void report_line(void *arg, const char *line)
{
	(void)arg;
	log_info("reload: %s", line);
}

static void on_sighup(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;
	struct peerauth_key *key = NULL;
	struct conf next, old;
	char err[512];
	int n;

	(void)sig;
	(void)what;
	if (!d->config_path) {
		log_info("SIGHUP: running on built-in defaults; nothing to reload");
		return;
	}
	sdn_reloading(0);
	if (conf_load(d->config_path, &next, err, sizeof(err)) < 0) {
		log_err("reload failed, keeping the running configuration: %s", err);
		sdn_reloading(1);
		return;
	}
	/* a key file that cannot be used refuses the whole reload, as a bad
	 * line does: taking the rest would leave the file named and peers
	 * unauthenticated, and the next start would fail on it. Read once,
	 * here: what is checked is what peering takes. */
	if (d->peers && next.peer_key_file[0]) {
		key = calloc(1, sizeof(*key));   /* up to 1 KiB: not on the stack */
		if (!key)
			snprintf(err, sizeof(err), "out of memory");
		if (!key || peerauth_key_load(next.peer_key_file, key, err, sizeof(err)) < 0)
			goto refused;
	}
	old = d->conf;
	n = conf_reload(&d->conf, &next, report_line, NULL, err, sizeof(err));
	if (n < 0)
		goto refused;
	log_set_level(d->conf.log_level);
	for (uint32_t i = 0; i < d->n_thr; i++)
		engthr_set_idle_spin(d->thr[i], d->conf.engine_idle_spin_us);
	/* (peers without peering are kept, as going with peer_listen) */
	if (d->peers) {
		peermgr_reload(d->peers, &d->conf, key);
		chancc_reload(d, &old);
	}
	d->stats.reloads++;
	log_info("reloaded %s: %d option(s) changed", d->config_path, n);
	goto out;
refused:
	log_err("reload refused, keeping the running configuration: %s: %s", d->config_path, err);
out:
	if (key) {
		peerauth_key_wipe(key);
		free(key);
	}
	sdn_reloading(1);
}

static void on_sigterm(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;
	struct timeval tv = { .tv_sec = DRAIN_TIMEOUT_S };

	(void)what;
	if (d->stopping)
		return;
	d->stopping = true;
	sdn_stopping();
	log_info("signal %d: stopping; releasing %u session(s)", (int)sig, d->n_sessions);
	ctlsrv_close(d);
	d->peers = peermgr_free(d->peers);   /* lookups in flight end with ECANCELED */
	while (d->sessions)
		session_close(d->sessions, NULL, false);
	if (d->closing_sessions == 0)
		event_base_loopbreak(d->base);
	else
		event_base_loopexit(d->base, &tv);   /* bounded drain */
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;

	(void)fd;
	(void)what;
	/* ping only while every engine thread makes progress (or sleeps) */
	for (uint32_t i = 0; i < d->n_thr; i++) {
		if (!engthr_alive(d->thr[i])) {
			log_warn("watchdog: engine thread %u made no progress; not pinging", i);
			return;
		}
	}
	sdn_watchdog_ping();
}

static int load_config(struct daemon *d, const char *path, bool explicit)
{
	char err[512];

	if (!explicit && access(path, F_OK) != 0) {
		conf_defaults(&d->conf);
		d->config_path = NULL;
		return 0;
	}
	if (conf_load(path, &d->conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "ucclsvcd: %s\n", err);
		return -1;
	}
	d->config_path = path;
	return 0;
}

/* --check-config FILE: parse it. Returns the exit status. */
static int check_config(const char *path)
{
	char err[512];
	struct conf tmp;

	if (conf_load(path, &tmp, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	/* what the start would stop on, with peering on: say so now */
	if (tmp.peer_listen.family && tmp.peer_key_file[0] &&
	    peerauth_key_check(tmp.peer_key_file, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", path, err);
		return 1;
	}
	if (tmp.peer_listen.family) {
		char hn[256];

		if (conf_host_name(&tmp, hn, sizeof(hn)) < 0) {
			fprintf(stderr, "%s: host_name auto: this host's name cannot name "
				"the daemon to its peers (1..%d of A-Z a-z 0-9 . _ -, whole or "
				"up to its first dot): set host_name\n", path, CONF_PEER_NAME_MAX);
			return 1;
		}
	}
	printf("%s: ok\n", path);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "runtime-dir", required_argument, NULL, 'r' },
		{ "check-config", required_argument, NULL, 'C' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct daemon dd;
	struct daemon *d = &dd;
	const char *config = DEFAULT_CONFIG, *rundir = DEFAULT_RUNTIME_DIR, *check = NULL;
	bool config_given = false;
	struct event *ev_hup = NULL, *ev_term = NULL, *ev_int = NULL, *ev_wd = NULL;
	struct engthr_params ep;
	struct conf peer_conf;
	uint64_t wd_us;
	int c, rc = 1;

	while ((c = getopt_long(argc, argv, "c:r:C:Vh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			config_given = true;
			break;
		case 'r':
			rundir = optarg;
			break;
		case 'C':
			check = optarg;
			break;
		case 'V':
			printf("ucclsvcd %s (control protocol %u, shm ABI %u)\nfeatures:%s%s%s\n",
			       PACKAGE_VERSION, UCCL_PROTO_VERSION, UCCL_SHM_ABI_VERSION,
#ifdef HAVE_SYSTEMD
			       " +systemd",
#else
			       " -systemd",
#endif
#ifdef HAVE_VERBS
			       " +verbs(detected)",
#else
			       " -verbs",
#endif
#ifdef HAVE_CUDA
			       " +cuda(detected)"
#else
			       " -cuda"
#endif
			       );
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ucclsvcd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	/* after the whole command line: extra arguments are a usage error here too */
	if (check)
		return check_config(check);

	log_init();
	signal(SIGPIPE, SIG_IGN);
	d->listen_fd = -1;
	if (load_config(d, config, config_given) < 0)
		return 1;
	log_set_level(d->conf.log_level);
	d->start_ms = daemon_now_ms();
	d->eps = calloc(DAEMON_MAX_ENDPOINTS, sizeof(*d->eps));
	d->names = names_new(1024);
	d->base = event_base_new();
	if (!d->eps || !d->names || !d->base) {
		log_err("out of memory");
		goto out;
	}
	/* before anything that leaves state behind: a SIGTERM during start-up
	 * then stops cleanly once the loop runs */
	ev_hup = evsignal_new(d->base, SIGHUP, on_sighup, d);
	ev_term = evsignal_new(d->base, SIGTERM, on_sigterm, d);
	ev_int = evsignal_new(d->base, SIGINT, on_sigterm, d);
	if (!ev_hup || !ev_term || !ev_int || evsignal_add(ev_hup, NULL) < 0 ||
	    evsignal_add(ev_term, NULL) < 0 || evsignal_add(ev_int, NULL) < 0) {
		log_err("cannot install signal handlers");
		goto out;
	}
	peer_conf = d->conf;
	d->n_thr = d->conf.engine_threads;
	/* lanes need a data plane: they are sides of connections to peers */
	if (d->conf.lanes && d->n_thr > 1 && conf_has_data_plane(&d->conf)) {
		d->bus = lanebus_new(d->n_thr, LANEBUS_DEPTH);
		if (!d->bus) {
			log_err("out of memory for the lanes between engine threads");
			goto out;
		}
	}
	for (uint32_t i = 0; i < d->n_thr; i++) {
		ep = (struct engthr_params){
			.max_endpoints = DAEMON_MAX_ENDPOINTS,
			.max_mrs = 1u << 20,
			.poll_batch = d->conf.engine_poll_batch,
			.max_op_bytes = d->conf.max_op_bytes,
			.idle_spin_us = d->conf.engine_idle_spin_us,
			.cpu = nthr_cpu(&d->conf, i),
			.index = i,
			.bus = d->bus,
			.lane_min_bytes = d->conf.lane_min_bytes,
		};
		if (conf_has_data_plane(&d->conf)) {
			uint16_t port;

			if (open_data_plane(d, i, &ep.nic, &port) < 0)
				goto out;
			ep.nic_ops = &nic_udp_ops;
			ep.chan_failed = rconn_chan_gave_up;
			ep.chan_failed_arg = d;
			/* one sub-channel per (peer, remote thread) */
			ep.max_chans = RCONN_MAX_CHANS * CONF_MAX_ENGINE_THREADS +
				       CONF_MAX_ENGINE_THREADS;    /* and one to each own thread */
			ep.max_unexpected_bytes = d->conf.max_unexpected_bytes;
			ep.max_ep_inflight_bytes = d->conf.max_ep_inflight_bytes;
			/* one host rate: each thread's pacer grants its share */
			ep.pull_rate_bps = d->conf.pull_rate_mbps * 1000000 / d->n_thr;
			d->thr_port[i] = port;
			if (i == 0)
				peer_conf.data_port = port;    /* what the peers are told */
		}
		c = engthr_start(&ep, d->base, &d->thr[i]);
		if (c < 0) {
			log_err("cannot start engine thread %u: %s", i, strerror(-c));
			goto out;
		}
	}
	if (conf_has_data_plane(&d->conf) && xconn_start(d) < 0) {
		log_err("out of memory for the channels between engine threads");
		goto out;
	}
	if (ctlsrv_open(d, rundir) < 0)
		goto out;
	if (d->conf.peer_listen.family) {
		if (peermgr_start(d->base, &peer_conf, resolve_name, d, &d->peers) < 0)
			goto out;
		/* before the loop runs: every hello announces them */
		peermgr_set_thread_ports(d->peers, d->thr_port, d->n_thr);
		peermgr_set_lanes(d->peers, d->bus ? d->conf.lanes : 0);
		if (rconn_start(d) < 0)
			goto out;
	}
	wd_us = sdn_watchdog_usec();
	if (wd_us) {
		struct timeval tv = { .tv_sec = (time_t)(wd_us / 2 / 1000000),
				      .tv_usec = (suseconds_t)(wd_us / 2 % 1000000) };
		ev_wd = event_new(d->base, -1, EV_PERSIST, on_watchdog, d);
		if (ev_wd)
			event_add(ev_wd, &tv);
	}
	log_info("ucclsvcd %s ready on %s (%s; %u engine thread%s)", PACKAGE_VERSION, d->sock_path,
		 d->config_path ? d->config_path : "built-in defaults", d->n_thr, d->n_thr == 1 ? "" : "s");
	sdn_ready();
	sdn_status("serving");
	event_base_dispatch(d->base);
	if (d->closing_sessions)
		log_warn("exiting with %u session(s) not fully released after %d s", d->closing_sessions,
			 DRAIN_TIMEOUT_S);
	log_info("stopped");
	rc = 0;
out:
	d->peers = peermgr_free(d->peers);
	ctlsrv_close(d);
	if (ev_wd)
		event_free(ev_wd);
	if (ev_hup)
		event_free(ev_hup);
	if (ev_term)
		event_free(ev_term);
	if (ev_int)
		event_free(ev_int);
	/* a clean stop leaves no session behind; after a timeout the
	 * process exit releases the rest */
	if (d->closing_sessions == 0) {
		for (uint32_t i = 0; i < d->n_thr; i++)
			engthr_stop(d->thr[i]);
		lanebus_free(d->bus);
		names_free(d->names);
		free(d->rchans);
		chancc_free(d->chancc);
		free(d->eps);
		if (d->base)
			event_base_free(d->base);
	}
	return rc;
}
