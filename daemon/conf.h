/* SPDX-License-Identifier: MIT */
/*
 * conf: ucclsvcd's configuration (/etc/uccl.conf). Every option is one row of
 * a table (name, type, default, bounds, reloadable, help); the parser, the
 * defaults, --check-config, SIGHUP reload and uccl.conf(5) all follow that
 * table. Errors name FILE:LINE.
 */
#ifndef UCCL_DAEMON_CONF_H
#define UCCL_DAEMON_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CONF_MAX_IDS 32
#define CONF_MAX_PEERS 64
#define CONF_MAX_ENGINE_THREADS 16
#define CONF_OVERFLOW_GID 65534u          /* the kernel's default overflowgid */
#define CONF_OVERFLOW_UID 65534u          /* and overflowuid */
#define CONF_CC_NAME_MAX 15
#define CONF_PATH_MAX 255               /* file names in the configuration */
#define CONF_PEER_NAME_MAX 32          /* peer and host names: [A-Za-z0-9._-] */

enum conf_log_level { LOG_LVL_ERROR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

/* A numeric IPv4 or IPv6 address, with a port where the option has one. */
struct conf_addr {
	int family;                       /* 0: not set; AF_INET or AF_INET6 */
	uint8_t addr[16];                 /* network order; IPv4 in the first 4 bytes */
	uint16_t port;
};

/* One entry of "peer_cc": name=controller. */
struct conf_peer_cc {
	char name[CONF_PEER_NAME_MAX + 1];
	char cc[CONF_CC_NAME_MAX + 1];
};

/* One entry of "peers": name=address:port. */
struct conf_peer {
	char name[CONF_PEER_NAME_MAX + 1];
	struct conf_addr addr;
};

struct conf {
	/* who may attach: uid 0 always; then these uids/gids. Empty lists with
	 * allow_all = true (the default) admit every local user. */
	bool allow_all;
	uint32_t allow_uids[CONF_MAX_IDS];
	uint32_t n_allow_uids;
	uint32_t allow_gids[CONF_MAX_IDS];
	uint32_t n_allow_gids;
	int64_t admin_gid;                /* -1: only uid 0 is admin */
	bool connect_same_user;           /* local connects only to one's own uid's listeners */

	/* limits on client-controllable resources */
	uint32_t max_clients;
	uint32_t max_clients_per_uid;     /* 0: no cap below max_clients */
	uint32_t max_endpoints_per_client;
	uint32_t max_mrs_per_client;
	uint64_t max_registered_bytes;    /* per client */
	uint32_t max_conns_per_endpoint;
	uint32_t max_outstanding;         /* per endpoint */
	uint32_t ring_depth;              /* default ring entries (power of two) */
	uint32_t max_ring_depth;          /* largest a client may ask for */
	uint32_t max_ctl_msg;             /* bytes */
	uint64_t max_op_bytes;            /* longest single put/get/send/recv */
	uint32_t ctl_timeout_ms;          /* longest a connect/accept may wait */
	uint32_t max_listen_backlog;      /* queued connections per listener */

	/* engine */
	uint32_t engine_idle_spin_us;     /* busy-poll this long before sleeping */
	uint32_t engine_poll_batch;
	int32_t engine_cpu;               /* -1: no pinning (the 1-thread case) */
	uint32_t engine_threads;          /* 1..CONF_MAX_ENGINE_THREADS */
	uint32_t engine_cpus[CONF_MAX_IDS];   /* CPU of thread i; none: no pinning */
	uint32_t n_engine_cpus;
	uint32_t lanes;                   /* extra threads one connection's puts split over */
	uint64_t lane_min_bytes;          /* shortest put that is split */

	enum conf_log_level log_level;

	/* peering with other hosts' daemons (daemon/peer.c) */
	struct conf_addr peer_listen;     /* family 0: peering off */
	struct conf_peer peers[CONF_MAX_PEERS];
	uint32_t n_peers;
	uint32_t dynamic_peers;           /* peers added at run time, at most */
	char peer_key_file[CONF_PATH_MAX + 1];    /* "": peers are not authenticated */
	char host_name[CONF_PEER_NAME_MAX + 1];   /* "": gethostname() */
	struct conf_addr data_address;    /* family 0: the peer_listen address */
	uint32_t data_port;               /* base UDP port announced; 0: not set yet */
	uint32_t data_paths;
	uint32_t mtu;
	uint32_t peer_timeout_ms;

	/* host-to-host transport (engine/tpchan.c, engine/remote.c) */
	uint32_t chunk_bytes;             /* the unit of congestion-control and path decisions */
	bool go_back_n;                   /* loss recovery: Go-Back-N instead of selective */
	bool adaptive_chunk;              /* smaller chunks under a small window or heavy loss */
	bool path_per_packet;             /* a path per packet, not per chunk */
	uint32_t path_run_bytes;          /* 0: a path per chunk */
	bool data_crc;                    /* crc32c over every data payload */
	uint64_t max_inflight_bytes;      /* per channel */
	uint32_t max_inflight_msgs;       /* per channel: messages queued or in flight */
	uint64_t max_ep_inflight_bytes;   /* per endpoint, across channels */
	uint64_t max_unexpected_bytes;    /* incoming sends buffered before a receive */
	uint64_t udp_buffer_bytes;        /* UDP socket send and receive buffers */
	uint32_t rto_min_us;
	uint32_t ack_hold_us;              /* tpchan_params.ack_hold_ns / 1000 */
	uint32_t dupthresh;
	bool reorder_window;              /* tpchan: !rack_off */
	uint32_t cc_base_rtt_us;          /* tpchan_params.cc_base_rtt_ns / 1000; 0: learned */
	uint32_t cc_delay_slack_us;
	char cc[CONF_CC_NAME_MAX + 1];    /* congestion controller of every channel */
	uint64_t pull_rate_mbps;          /* credit pacing for eqds senders (0: unpaced) */
	struct conf_peer_cc peer_cc[CONF_MAX_PEERS];   /* per-peer overrides of cc */
	uint32_t n_peer_cc;
	bool udp_gso, udp_gro;
	bool udp_pack;                    /* nic_params.pack */
	bool udp_rx_hint;                 /* nic_params.rx_hint */
	bool udp_tx_gather;               /* tpchan_params.tx_gather (not with data_crc) */
};

/* Built-in defaults (what the daemon runs with when no file is given). */
void conf_defaults(struct conf *c);

/* Parse path into *c (starting from defaults). On error returns a negative
 * errno and writes "FILE:LINE: message" into err (errlen bytes). */
int conf_load(const char *path, struct conf *c, char *err, size_t errlen);
/* Same, from a buffer; name is used in messages. (The fuzz target's entry.) */
int conf_parse(const char *name, const char *buf, size_t len, struct conf *c, char *err,
	       size_t errlen);

/* Apply a reload: copy reloadable options from next into cur, and call
 * report(arg, line) with one human line per change ("log_level: info -> debug")
 * and per non-reloadable change that was ignored ("... needs a restart").
 * What is applied must pass the checks between options beside cur's
 * restart-only ones: a reloadable option that fits only with a changed
 * restart-only one (peers of another address family than the running
 * peer_listen, peers while peering is off, and peer_cc naming them) keeps
 * its running value too ("... goes with options that need a restart; kept
 * ..."), and the rest applies. Returns the number of options changed, or
 * -EINVAL without memory for that search (err says "out of memory", cur is
 * unchanged, nothing is reported). */
int conf_reload(struct conf *cur, const struct conf *next,
		void (*report)(void *arg, const char *line), void *arg, char *err, size_t errlen);

/* Write every option with its current value, one per line (debug/ucclctl). */
void conf_dump(const struct conf *c, void (*emit)(void *arg, const char *line), void *arg);

const char *conf_log_level_name(enum conf_log_level l);

/* Text of an address as uccl.conf writes it: "10.0.0.1:7000",
 * "[fd00::1]:7000", or without the port ("10.0.0.1", "fd00::1"). */
void conf_addr_fmt(const struct conf_addr *a, bool with_port, char *buf, size_t len);
/* Whether a is 0.0.0.0 or ::. */
bool conf_addr_is_any(const struct conf_addr *a);
/* An IPv6 ::ffff:a.b.c.d becomes the IPv4 a.b.c.d: one host, one form
 * (however it was written, or whichever socket it came on). */
void conf_addr_unmap(struct conf_addr *a);
/* Where the UDP data plane binds: data_address, else peer_listen, else
 * 127.0.0.1 (without peering only the channels between this daemon's own
 * engine threads use it). */
const struct conf_addr *conf_data_addr(const struct conf *c);
/* A data plane is opened with peering, or with more than one engine thread
 * (for the connections between them). */
bool conf_has_data_plane(const struct conf *c);
/* Whether a and b are the same address (ports not compared). */
bool conf_addr_same_host(const struct conf_addr *a, const struct conf_addr *b);
/* A numeric address:port (IPv6 as [addr]:port): 0, -ERANGE for the port,
 * or -EINVAL. */
int conf_scan_addr_port(const char *s, struct conf_addr *a);
/* The congestion controller configured for peer's channel: its peer_cc
 * entry, else cc. */
const char *conf_cc_of(const struct conf *c, const char *peer);
/* A peer or host name: 1..CONF_PEER_NAME_MAX characters of [A-Za-z0-9._-]. */
bool conf_peer_name_valid(const char *s);
/* This daemon's name towards its peers: host_name, or with auto the host
 * name from gethostname(), or its part before the first dot where the
 * whole is not a valid name (a long DNS name). 0, or -EINVAL with the
 * name in out anyway (for the error message). */
int conf_host_name(const struct conf *c, char *out, size_t len);

#endif
