/* SPDX-License-Identifier: MIT */
/*
 * conf: ucclsvcd's configuration file. One static table describes every
 * option (name, type, place in struct conf, default, bounds, whether SIGHUP
 * may change it, help); defaults, parsing, reload and dump all walk that
 * table, so adding an option is adding a row. The parser is fed hostile bytes
 * by a fuzzer: lines are bounded, numbers are checked for overflow, nothing is
 * allocated per line, and the first error stops the parse.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf.h"
#include "engine/cc/cc.h"
#include "engine/tpchan.h"

#define CONF_LINE_MAX 4096           /* characters, not counting the newline */
#define CONF_FILE_MAX (1u << 20)     /* conf_load refuses larger files */
#define CONF_ID_MAX   4294967294u    /* (uid_t)-1 means "no id" to the kernel */
#define CONF_NAME_MAX 255            /* longest user/group name we look up (LOGIN_NAME_MAX less the NUL) */

enum opt_type {
	OT_BOOL, OT_U32, OT_U64, OT_I32, OT_I64, OT_LOGLEVEL, OT_UIDS, OT_GIDS,
	OT_LISTEN,      /* address:port, or none */
	OT_ADDR,        /* numeric address, or auto */
	OT_HOSTNAME,    /* a peer name, or auto */
	OT_CC,          /* a congestion controller's name (engine/cc/cc.c) */
	OT_PEERS,       /* name=address:port,... or none */
	OT_PEER_CC,     /* name=controller,... or none */
	OT_CPUS,        /* comma-separated CPU numbers, or none */
	OT_PATH,        /* an absolute file name, or none */
};

#define OF_RELOAD 0x1u  /* SIGHUP may change it */
#define OF_SIZE   0x2u  /* takes K/M/G/T (x1024) suffixes; dumped with one */
#define OF_POW2   0x4u  /* must be a power of two */
#define OF_GROUP  0x8u  /* a group name is accepted in place of a number */
#define OF_APPEND 0x10u /* may be given on several lines; the entries add up */

struct opt {
	const char *name;
	enum opt_type type;
	unsigned flags;
	size_t off;                  /* the value in struct conf */
	size_t n_off;                /* lists: the count in struct conf */
	int64_t def, min, max;       /* every bound in the table fits in int64_t */
	const char *help;
};

#define O(f) offsetof(struct conf, f)
#define KiB (INT64_C(1) << 10)
#define MiB (INT64_C(1) << 20)
#define GiB (INT64_C(1) << 30)
#define TiB (INT64_C(1) << 40)

static const struct opt opts[] = {
	{ "allow_all", OT_BOOL, OF_RELOAD, O(allow_all), 0, 1, 0, 1,
	  "admit every local user; when false only uid 0 and the allow lists" },
	{ "allow_uids", OT_UIDS, OF_RELOAD, O(allow_uids), O(n_allow_uids), 0, 0, CONF_ID_MAX,
	  "users (uids or names) admitted when allow_all is false" },
	{ "allow_gids", OT_GIDS, OF_RELOAD, O(allow_gids), O(n_allow_gids), 0, 0, CONF_ID_MAX,
	  "groups (gids or names) admitted when allow_all is false" },
	{ "admin_gid", OT_I64, OF_RELOAD | OF_GROUP, O(admin_gid), 0, -1, -1, INT32_MAX,
	  "group whose members may use admin queries; -1: none" },
	{ "connect_same_user", OT_BOOL, OF_RELOAD, O(connect_same_user), 0, 0, 0, 1,
	  "a local connect reaches only listeners of the connecting user (uid 0: any)" },
	{ "max_clients", OT_U32, OF_RELOAD, O(max_clients), 0, 64, 1, 4096,
	  "attached clients at once" },
	{ "max_clients_per_uid", OT_U32, OF_RELOAD, O(max_clients_per_uid), 0, 0, 0, 4096,
	  "attached clients of one user at once; 0: only max_clients" },
	{ "max_endpoints_per_client", OT_U32, 0, O(max_endpoints_per_client), 0, 16, 1, 1024,
	  "endpoints one client may create" },
	{ "max_mrs_per_client", OT_U32, 0, O(max_mrs_per_client), 0, 256, 1, 65536,
	  "memory regions one client may register" },
	{ "max_registered_bytes", OT_U64, OF_SIZE, O(max_registered_bytes), 0, 4 * GiB, 4 * KiB,
	  TiB, "bytes one client may register" },
	{ "max_conns_per_endpoint", OT_U32, 0, O(max_conns_per_endpoint), 0, 256, 1, 65536,
	  "connections on one endpoint" },
	{ "max_outstanding", OT_U32, 0, O(max_outstanding), 0, 1024, 1, 65536,
	  "operations in flight on one endpoint" },
	{ "ring_depth", OT_U32, OF_POW2, O(ring_depth), 0, 1024, 16, 65536,
	  "ring entries when a client asks for the default" },
	{ "max_ring_depth", OT_U32, OF_POW2, O(max_ring_depth), 0, 16384, 16, 65536,
	  "largest ring a client may ask for" },
	{ "max_ctl_msg", OT_U32, OF_SIZE, O(max_ctl_msg), 0, 65536, 1024, 1048576,
	  "largest control message in bytes" },
	{ "max_op_bytes", OT_U64, OF_SIZE, O(max_op_bytes), 0, 64 * MiB, 4 * KiB, GiB,
	  "longest single put, get, send or recv (the engine copies it in one go)" },
	{ "ctl_timeout_ms", OT_U32, OF_RELOAD, O(ctl_timeout_ms), 0, 30000, 10, 600000,
	  "longest a connect or accept may wait" },
	{ "max_listen_backlog", OT_U32, OF_RELOAD, O(max_listen_backlog), 0, 64, 1, 4096,
	  "connections queued on one listener" },
	{ "engine_idle_spin_us", OT_U32, OF_RELOAD, O(engine_idle_spin_us), 0, 50, 0, 1000000,
	  "busy-poll this long before an idle engine sleeps" },
	{ "engine_poll_batch", OT_U32, 0, O(engine_poll_batch), 0, 64, 1, 1024,
	  "descriptors taken from one endpoint's ring per pass" },
	{ "engine_cpu", OT_I32, 0, O(engine_cpu), 0, -1, -1, 4095,
	  "CPU the engine thread is pinned to; -1: no pinning" },
	{ "engine_threads", OT_U32, 0, O(engine_threads), 0, 1, 1, CONF_MAX_ENGINE_THREADS,
	  "engine threads, each with its own engine and data-plane ports" },
	{ "engine_cpus", OT_CPUS, 0, O(engine_cpus), O(n_engine_cpus), 0, 0, 4095,
	  "CPU of each engine thread, comma-separated, one per thread; none: no pinning" },
	{ "lanes", OT_U32, 0, O(lanes), 0, 0, 0, CONF_MAX_ENGINE_THREADS - 1,
	  "other engine threads that one connection's large puts and gets are split over (both peers "
	  "must set it; below engine_threads); 0: each connection on its own thread" },
	{ "lane_min_bytes", OT_U64, OF_SIZE, O(lane_min_bytes), 0, 64 * KiB, 64 * KiB, GiB,
	  "shortest put that lanes split" },
	{ "log_level", OT_LOGLEVEL, OF_RELOAD, O(log_level), 0, LOG_LVL_INFO, LOG_LVL_ERROR,
	  LOG_LVL_DEBUG, "error, warn, info or debug" },
	{ "peer_listen", OT_LISTEN, 0, O(peer_listen), 0, 0, 0, 0,
	  "address:port of the TCP listener for peer daemons; none: peering off" },
	{ "peers", OT_PEERS, OF_RELOAD | OF_APPEND, O(peers), O(n_peers), 0, 0, CONF_MAX_PEERS,
	  "peer daemons, name=address:port, comma-separated; none" },
	{ "dynamic_peers", OT_U32, OF_RELOAD, O(dynamic_peers), 0, 0, 0, CONF_MAX_PEERS,
	  "peers added at run time: dialed for a connect to ADDRESS:PORT/name, accepted from "
	  "unlisted daemons; 0: only the peers listed" },
	{ "peer_key_file", OT_PATH, OF_RELOAD, O(peer_key_file), 0, 0, 0, 0,
	  "file holding the secret every peer daemon must prove it shares (mode 600); none: "
	  "peers are not authenticated" },
	{ "host_name", OT_HOSTNAME, 0, O(host_name), 0, 0, 0, 0,
	  "this daemon's name towards its peers; auto: gethostname()" },
	{ "data_address", OT_ADDR, 0, O(data_address), 0, 0, 0, 0,
	  "numeric address announced for the UDP data plane; auto: the peer_listen address" },
	{ "data_port", OT_U32, 0, O(data_port), 0, 0, 0, 65535,
	  "base UDP port announced for the data plane; 0: not set yet" },
	{ "data_paths", OT_U32, 0, O(data_paths), 0, 64, 1, 256,
	  "data-plane paths (UDP ports from data_port on) announced" },
	{ "mtu", OT_U32, 0, O(mtu), 0, 1500, 576, 9000, "data-plane MTU announced" },
	{ "peer_timeout_ms", OT_U32, OF_RELOAD, O(peer_timeout_ms), 0, 3000, 200, 60000,
	  "a peer silent this long is declared down" },
	{ "chunk_bytes", OT_U32, OF_SIZE, O(chunk_bytes), 0, 32768, 1024, 1048576,
	  "transport chunk: the unit of congestion-control and path decisions" },
	{ "go_back_n", OT_BOOL, 0, O(go_back_n), 0, 0, 0, 1,
	  "Go-Back-N loss recovery (a benchmark baseline) instead of selective retransmission" },
	{ "adaptive_chunk", OT_BOOL, 0, O(adaptive_chunk), 0, 0, 0, 1,
	  "cut smaller chunks while the congestion window is under 4 chunks or loss is above 1%" },
	{ "path_run_bytes", OT_U32, OF_SIZE, O(path_run_bytes), 0, 0, 0, TPCHAN_MAX_PATH_RUN,
	  "bytes a path carries before the next chunk picks another (0: a path per chunk)" },
	{ "path_per_packet", OT_BOOL, 0, O(path_per_packet), 0, 0, 0, 1,
	  "pick a data path for every packet instead of once per chunk (finer spraying, less GSO)" },
	{ "data_crc", OT_BOOL, 0, O(data_crc), 0, 0, 0, 1,
	  "crc32c over every data packet's payload both ways (either peer may ask), "
	  "required on arrival" },
	{ "max_inflight_bytes", OT_U64, OF_SIZE, O(max_inflight_bytes), 0, 16 * MiB, 64 * KiB, GiB,
	  "bytes in flight on one channel (cap on its congestion window)" },
	{ "max_inflight_msgs", OT_U32, 0, O(max_inflight_msgs), 0, 1024, 16, 65536,
	  "messages queued or in flight on one channel; more wait in the engine" },
	{ "max_endpoint_inflight_bytes", OT_U64, OF_SIZE, O(max_ep_inflight_bytes), 0, 32 * MiB,
	  64 * KiB, 16 * GiB, "bytes of one endpoint's operations in flight to other hosts; more wait" },
	{ "max_unexpected_bytes", OT_U64, OF_SIZE, O(max_unexpected_bytes), 0, 64 * MiB, 64 * KiB,
	  16 * GiB, "incoming sends buffered before a receive is posted; then senders wait" },
	{ "udp_buffer_bytes", OT_U64, OF_SIZE, O(udp_buffer_bytes), 0, 8 * MiB, 64 * KiB, GiB,
	  "UDP socket send and receive buffer of the data plane" },
	{ "cc_delay_slack_us", OT_U32, 0, O(cc_delay_slack_us), 0, 500, 1, 1000000,
	  "RTT rise over twice the lowest RTT that the window CC takes as noise, not congestion" },
	{ "dupthresh", OT_U32, 0, O(dupthresh), 0, 3, 1, 1024,
	  "SACKed packets above a hole that make it lost (raise it when paths reorder)" },
	{ "reorder_window", OT_BOOL, 0, O(reorder_window), 0, 1, 0, 1,
	  "a hole is lost only once a packet sent well after it arrived (RACK-like reordering window)" },
	{ "cc_base_rtt_us", OT_U32, 0, O(cc_base_rtt_us), 0, 0, 0, 1000000,
	  "the fabric's unloaded RTT, the congestion controllers' base delay (0: each learns its lowest)" },
	{ "rto_min_us", OT_U32, 0, O(rto_min_us), 0, 1000, 50, 100000,
	  "floor of the retransmission timeout; the first one is 4x this" },
	{ "ack_hold_us", OT_U32, 0, O(ack_hold_us), 0, 5, 0, 10,
	  "while messages get replies, how long the ACK of one's end waits to ride with the reply (0: never)" },
	{ "cc", OT_CC, 0, O(cc), 0, 0, 0, 0,
	  "congestion controller of every channel: window, swift, timely, dcqcn, hint, eqds or none" },
	{ "pull_rate_mbps", OT_U64, 0, O(pull_rate_mbps), 0, 0, 0, 100000000,
	  "rate at which this host grants credit to eqds senders, in Mbit/s (0: unpaced)" },
	{ "peer_cc", OT_PEER_CC, OF_RELOAD | OF_APPEND, O(peer_cc), O(n_peer_cc), 0, 0,
	  CONF_MAX_PEERS, "per-peer congestion controller, name=controller, comma-separated; none" },
	{ "udp_gso", OT_BOOL, 0, O(udp_gso), 0, 1, 0, 1, "batch sends with UDP GSO" },
	{ "udp_gro", OT_BOOL, 0, O(udp_gro), 0, 1, 0, 1, "batch receives with UDP GRO" },
	{ "udp_pack", OT_BOOL, 0, O(udp_pack), 0, 1, 0, 1,
	  "let short packets to one peer (an ACK and a reply) share a UDP datagram" },
	{ "udp_rx_hint", OT_BOOL, 0, O(udp_rx_hint), 0, 1, 0, 1,
	  "count queued datagrams with a socket filter and skip receives that would find none" },
	{ "udp_tx_gather", OT_BOOL, 0, O(udp_tx_gather), 0, 1, 0, 1,
	  "send payloads from the registered region (header and payload gathered) instead of a copy" },
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static int scan_u64(const char **sp, uint64_t *v);

static const char *const level_names[] = {
	[LOG_LVL_ERROR] = "error",
	[LOG_LVL_WARN] = "warn",
	[LOG_LVL_INFO] = "info",
	[LOG_LVL_DEBUG] = "debug",
};

const char *conf_log_level_name(enum conf_log_level l)
{
	if ((unsigned)l >= sizeof(level_names) / sizeof(level_names[0]))
		return "unknown";
	return level_names[l];
}

/* ---- reading and writing one value ---------------------------------- */

static void *field(struct conf *c, const struct opt *o)
{
	return (char *)c + o->off;
}

static const void *cfield(const struct conf *c, const struct opt *o)
{
	return (const char *)c + o->off;
}

static uint32_t *list_count(struct conf *c, const struct opt *o)
{
	return (uint32_t *)((char *)c + o->n_off);
}

static const uint32_t *clist_count(const struct conf *c, const struct opt *o)
{
	return (const uint32_t *)((const char *)c + o->n_off);
}

static void set_int(struct conf *c, const struct opt *o, int64_t v)
{
	void *p = field(c, o);

	switch (o->type) {
	case OT_BOOL: *(bool *)p = v != 0; break;
	case OT_U32: *(uint32_t *)p = (uint32_t)v; break;
	case OT_U64: *(uint64_t *)p = (uint64_t)v; break;
	case OT_I32: *(int32_t *)p = (int32_t)v; break;
	case OT_I64: *(int64_t *)p = v; break;
	case OT_LOGLEVEL: *(enum conf_log_level *)p = (enum conf_log_level)v; break;
	case OT_UIDS:
	case OT_GIDS:
	case OT_CPUS:
	case OT_PEERS:
	case OT_PEER_CC: *list_count(c, o) = 0; break;
	case OT_LISTEN:
	case OT_ADDR: memset(p, 0, sizeof(struct conf_addr)); break;
	case OT_HOSTNAME:
	case OT_PATH: *(char *)p = '\0'; break;
	case OT_CC: snprintf(p, CONF_CC_NAME_MAX + 1, "window"); break;
	}
}

static bool is_signed(const struct opt *o)
{
	return o->type == OT_I32 || o->type == OT_I64;
}

/* Copy one option's value; lists copy their count and their entries. */
static void copy_value(struct conf *dst, const struct conf *src, const struct opt *o)
{
	size_t sz = 0;

	switch (o->type) {
	case OT_BOOL: sz = sizeof(bool); break;
	case OT_U32: sz = sizeof(uint32_t); break;
	case OT_U64: sz = sizeof(uint64_t); break;
	case OT_I32: sz = sizeof(int32_t); break;
	case OT_I64: sz = sizeof(int64_t); break;
	case OT_LOGLEVEL: sz = sizeof(enum conf_log_level); break;
	case OT_UIDS:
	case OT_GIDS:
	case OT_CPUS:
		*list_count(dst, o) = *clist_count(src, o);
		sz = sizeof(uint32_t) * CONF_MAX_IDS;
		break;
	case OT_PEERS:
		*list_count(dst, o) = *clist_count(src, o);
		sz = sizeof(struct conf_peer) * CONF_MAX_PEERS;
		break;
	case OT_PEER_CC:
		*list_count(dst, o) = *clist_count(src, o);
		sz = sizeof(struct conf_peer_cc) * CONF_MAX_PEERS;
		break;
	case OT_LISTEN:
	case OT_ADDR: sz = sizeof(struct conf_addr); break;
	case OT_HOSTNAME: sz = CONF_PEER_NAME_MAX + 1; break;
	case OT_PATH: sz = CONF_PATH_MAX + 1; break;
	case OT_CC: sz = CONF_CC_NAME_MAX + 1; break;
	}
	memcpy(field(dst, o), cfield(src, o), sz);
}

/* ---- addresses and names ------------------------------------------------ */

void conf_addr_fmt(const struct conf_addr *a, bool with_port, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (!a->family || !inet_ntop(a->family, a->addr, host, sizeof(host))) {
		snprintf(buf, len, "none");
		return;
	}
	if (!with_port)
		snprintf(buf, len, "%s", host);
	else if (a->family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", host, (unsigned)a->port);
	else
		snprintf(buf, len, "%s:%u", host, (unsigned)a->port);
}

void conf_addr_unmap(struct conf_addr *a)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (a->family != AF_INET6 || memcmp(a->addr, mapped, sizeof(mapped)) != 0)
		return;
	memmove(a->addr, a->addr + 12, 4);
	memset(a->addr + 4, 0, 12);
	a->family = AF_INET;
}

bool conf_addr_is_any(const struct conf_addr *a)
{
	static const uint8_t zero[16];

	return a->family && memcmp(a->addr, zero, a->family == AF_INET6 ? 16 : 4) == 0;
}

const struct conf_addr *conf_data_addr(const struct conf *c)
{
	static const struct conf_addr loopback = { .family = AF_INET, .addr = { 127, 0, 0, 1 } };

	if (c->data_address.family)
		return &c->data_address;
	return c->peer_listen.family ? &c->peer_listen : &loopback;
}

bool conf_has_data_plane(const struct conf *c)
{
	return c->peer_listen.family || c->engine_threads > 1;
}

bool conf_addr_same_host(const struct conf_addr *a, const struct conf_addr *b)
{
	return a->family && a->family == b->family &&
	       memcmp(a->addr, b->addr, a->family == AF_INET6 ? 16 : 4) == 0;
}

int conf_host_name(const struct conf *c, char *out, size_t len)
{
	char hn[256], *dot;

	if (!len)
		return -EINVAL;
	if (c->host_name[0]) {
		snprintf(out, len, "%s", c->host_name);
		return 0;
	}
	if (gethostname(hn, sizeof(hn)) < 0)
		hn[0] = '\0';
	hn[sizeof(hn) - 1] = '\0';
	snprintf(out, len, "%s", hn);
	if (conf_peer_name_valid(hn))
		return 0;
	dot = strchr(hn, '.');
	if (dot && dot != hn) {
		*dot = '\0';
		if (conf_peer_name_valid(hn)) {
			snprintf(out, len, "%s", hn);
			return 0;
		}
	}
	return -EINVAL;
}

bool conf_peer_name_valid(const char *s)
{
	size_t n = strnlen(s, CONF_PEER_NAME_MAX + 1);

	if (n == 0 || n > CONF_PEER_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!(ch >= 'a' && ch <= 'z') && !(ch >= 'A' && ch <= 'Z') && !(ch >= '0' && ch <= '9') &&
		    ch != '.' && ch != '_' && ch != '-')
			return false;
	}
	return true;
}

/* A numeric address, "[v6]" allowed; no port. 0 or -EINVAL. */
static int scan_addr(const char *s, struct conf_addr *a)
{
	char buf[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(s);

	memset(a, 0, sizeof(*a));
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		s++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, a->addr) == 1) {
		a->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, buf, a->addr) == 1) {
		a->family = AF_INET6;
		conf_addr_unmap(a);    /* as accepted sockets' addresses are taken */
		return 0;
	}
	return -EINVAL;
}

/* "a.b.c.d:port" or "[v6]:port", port 1..65535. 0, -EINVAL (syntax) or
 * -ERANGE (port). */
int conf_scan_addr_port(const char *s, struct conf_addr *a)
{
	char host[INET6_ADDRSTRLEN + 4];
	const char *colon, *p;
	uint64_t port;
	size_t n;
	int r;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		colon = close + 1;
	} else {
		colon = strchr(s, ':');
		if (!colon || strchr(colon + 1, ':'))
			return -EINVAL;   /* a bare IPv6 address needs brackets */
	}
	n = (size_t)(colon - s);
	if (n == 0 || n >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = '\0';
	if (scan_addr(host, a) < 0 || (s[0] == '[' && !strchr(host, ':')))
		return -EINVAL;
	p = colon + 1;
	r = scan_u64(&p, &port);
	if (r == -EINVAL || *p)
		return -EINVAL;
	if (r < 0 || port == 0 || port > 65535)
		return -ERANGE;
	a->port = (uint16_t)port;
	return 0;
}

/* Sizes print with the largest suffix that divides them exactly, so a dump
 * shows "4G" rather than 4294967296 and still parses back to the same value. */
static void fmt_u64(char *buf, size_t len, uint64_t v, bool size)
{
	static const char suffix[] = "TGMK";

	if (size && v) {
		for (int i = 0; i < 4; i++) {
			unsigned shift = 40 - 10 * (unsigned)i;

			if ((v & ((UINT64_C(1) << shift) - 1)) == 0) {
				snprintf(buf, len, "%" PRIu64 "%c", v >> shift, suffix[i]);
				return;
			}
		}
	}
	snprintf(buf, len, "%" PRIu64, v);
}

/* "name=address:port,..." for n entries of peers, or "none". */
static void fmt_peers(const struct conf_peer *peers, uint32_t n, char *buf, size_t len)
{
	size_t at = 0;

	if (n == 0) {
		snprintf(buf, len, "none");
		return;
	}
	buf[0] = '\0';
	for (uint32_t i = 0; i < n && i < CONF_MAX_PEERS && at < len; i++) {
		char addr[INET6_ADDRSTRLEN + 8];
		int w;

		conf_addr_fmt(&peers[i].addr, true, addr, sizeof(addr));
		w = snprintf(buf + at, len - at, "%s%s=%s", i ? "," : "", peers[i].name, addr);
		if (w < 0)
			break;
		at += (size_t)w;
	}
}

/* "name=controller,..." for n entries of peer_cc, or "none". */
static void fmt_peer_cc(const struct conf_peer_cc *pc, uint32_t n, char *buf, size_t len)
{
	size_t at = 0;

	if (n == 0) {
		snprintf(buf, len, "none");
		return;
	}
	buf[0] = '\0';
	for (uint32_t i = 0; i < n && i < CONF_MAX_PEERS && at < len; i++) {
		int w = snprintf(buf + at, len - at, "%s%s=%s", i ? "," : "", pc[i].name, pc[i].cc);

		if (w < 0)
			break;
		at += (size_t)w;
	}
}

/* The canonical text of a value: what conf_dump writes, what conf_parse
 * reads back, and what conf_reload compares. */
static void fmt_value(const struct conf *c, const struct opt *o, char *buf, size_t len)
{
	const void *p = cfield(c, o);

	switch (o->type) {
	case OT_BOOL:
		snprintf(buf, len, "%s", *(const bool *)p ? "true" : "false");
		break;
	case OT_U32:
		fmt_u64(buf, len, *(const uint32_t *)p, o->flags & OF_SIZE);
		break;
	case OT_U64:
		fmt_u64(buf, len, *(const uint64_t *)p, o->flags & OF_SIZE);
		break;
	case OT_I32:
		snprintf(buf, len, "%" PRId32, *(const int32_t *)p);
		break;
	case OT_I64:
		snprintf(buf, len, "%" PRId64, *(const int64_t *)p);
		break;
	case OT_LOGLEVEL:
		snprintf(buf, len, "%s", conf_log_level_name(*(const enum conf_log_level *)p));
		break;
	case OT_LISTEN:
		conf_addr_fmt(p, true, buf, len);
		break;
	case OT_ADDR: {
		const struct conf_addr *a = p;

		if (a->family)
			conf_addr_fmt(a, false, buf, len);
		else
			snprintf(buf, len, "auto");
		break;
	}
	case OT_HOSTNAME:
		snprintf(buf, len, "%s", *(const char *)p ? (const char *)p : "auto");
		break;
	case OT_CC:
		snprintf(buf, len, "%s", (const char *)p);
		break;
	case OT_PATH:
		snprintf(buf, len, "%s", *(const char *)p ? (const char *)p : "none");
		break;
	case OT_PEERS:
		fmt_peers(p, *clist_count(c, o), buf, len);
		break;
	case OT_PEER_CC:
		fmt_peer_cc(p, *clist_count(c, o), buf, len);
		break;
	case OT_UIDS:
	case OT_GIDS:
	case OT_CPUS: {
		const uint32_t *ids = p;
		uint32_t n = *clist_count(c, o);
		size_t at = 0;

		if (n == 0) {
			snprintf(buf, len, "none");
			break;
		}
		buf[0] = '\0';
		for (uint32_t i = 0; i < n && i < CONF_MAX_IDS && at < len; i++) {
			int w = snprintf(buf + at, len - at, "%s%" PRIu32, i ? "," : "", ids[i]);

			if (w < 0)
				break;
			at += (size_t)w;
		}
		break;
	}
	}
}

void conf_defaults(struct conf *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NOPTS; i++)
		set_int(c, &opts[i], opts[i].def);
}

/* ---- parsing ---------------------------------------------------------- */

struct parser {
	const char *name;
	size_t lineno;
	size_t line_of[NOPTS];       /* where each option was set; 0: not set */
	size_t peer_cc_line[CONF_MAX_PEERS];   /* each entry's line, for check_conf */
	size_t peer_line[CONF_MAX_PEERS];      /* each peers entry's line, likewise */
	char *err;
	size_t errlen;
};

static void fail_msg(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail_msg(struct parser *p, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (!p->err || p->errlen == 0)
		return;
	/* line 0: a check of the whole configuration (a reload's result) */
	w = p->lineno ? snprintf(p->err, p->errlen, "%s:%zu: ", p->name, p->lineno)
		      : snprintf(p->err, p->errlen, "%s: ", p->name);
	if (w < 0 || (size_t)w >= p->errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(p->err + w, p->errlen - (size_t)w, fmt, ap);
	va_end(ap);
}

/* Text from the file, made safe to print: hostile input must not put
 * control characters or kilobytes of junk into the daemon's log. */
#define SHOW_MAX 64
struct shown {
	char s[SHOW_MAX + 4];
};

static struct shown show(const char *s)
{
	struct shown out;
	size_t i;

	for (i = 0; s[i] && i < SHOW_MAX; i++) {
		unsigned char ch = (unsigned char)s[i];

		out.s[i] = ch < 0x20 || ch >= 0x7f ? '?' : (char)ch;
	}
	if (s[i]) {
		memcpy(out.s + i, "...", 3);
		i += 3;
	}
	out.s[i] = '\0';
	return out;
}

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f' || ch == '\v';
}

static char *trim(char *s)
{
	char *e;

	while (is_blank(*s))
		s++;
	e = s + strlen(s);
	while (e > s && is_blank(e[-1]))
		*--e = '\0';
	return s;
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

/* Decimal digits only. strtoull would accept leading blanks and a sign, and
 * turn "-1" into 2^64-1; none of that belongs in a config value. Digits past
 * an overflow are still consumed so that the caller reports a range error,
 * not trailing junk. */
static int scan_u64(const char **sp, uint64_t *v)
{
	const char *s = *sp;
	uint64_t x = 0;
	bool over = false;

	if (!is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++) {
		unsigned d = (unsigned)(*s - '0');

		if (x > (UINT64_MAX - d) / 10)
			over = true;
		else
			x = x * 10 + d;
	}
	*sp = s;
	*v = x;
	return over ? -ERANGE : 0;
}

static void fmt_bound(const struct opt *o, int64_t b, char *buf, size_t len)
{
	if (is_signed(o))
		snprintf(buf, len, "%" PRId64, b);
	else
		fmt_u64(buf, len, (uint64_t)b, o->flags & OF_SIZE);
}

static int range_error(struct parser *p, const struct opt *o, const char *val)
{
	char lo[32], hi[32];

	fmt_bound(o, o->min, lo, sizeof(lo));
	fmt_bound(o, o->max, hi, sizeof(hi));
	fail_msg(p, "%s: %s is out of range (%s..%s)", o->name, show(val).s, lo, hi);
	return -ERANGE;
}

/* Names as useradd(8) allows them, and '@' as directory services (SSSD)
 * add a domain; anything else is not worth an NSS query. */
static bool is_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > CONF_NAME_MAX || is_digit(s[0]) || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (ch == '$' && i == n - 1)
			break;
		if (!(ch >= 'a' && ch <= 'z') && !(ch >= 'A' && ch <= 'Z') && !is_digit(ch) &&
		    ch != '_' && ch != '-' && ch != '.' && ch != '@')
			return false;
	}
	return true;
}

/* getpwnam/getgrnam are not reentrant; the daemon only parses its
 * configuration on the main thread. */
static int lookup_id(const char *s, bool group, uint32_t *id)
{
	if (group) {
		struct group *g = getgrnam(s);

		if (!g)
			return -ENOENT;
		*id = (uint32_t)g->gr_gid;
	} else {
		struct passwd *pw = getpwnam(s);

		if (!pw)
			return -ENOENT;
		*id = (uint32_t)pw->pw_uid;
	}
	return 0;
}

static int parse_number(struct parser *p, const struct opt *o, const char *val, int64_t *out)
{
	const char *s = val;
	bool neg = false;
	uint64_t mag;
	int64_t v;
	int r;

	if (*s == '-') {
		neg = true;
		s++;
	}
	r = scan_u64(&s, &mag);
	if (r == -EINVAL) {
		fail_msg(p, "%s: '%s' is not a number", o->name, show(val).s);
		return -EINVAL;
	}
	if (r == -ERANGE)
		return range_error(p, o, val);
	if ((o->flags & OF_SIZE) && *s) {
		unsigned shift = 0;

		switch (*s) {
		case 'K': case 'k': shift = 10; break;
		case 'M': case 'm': shift = 20; break;
		case 'G': case 'g': shift = 30; break;
		case 'T': case 't': shift = 40; break;
		}
		if (shift) {
			if (mag > (UINT64_MAX >> shift))
				return range_error(p, o, val);
			mag <<= shift;
			s++;
		}
	}
	if (*s) {
		fail_msg(p, "%s: trailing characters in '%s'", o->name, show(val).s);
		return -EINVAL;
	}
	/* Every bound fits in int64_t, so anything that does not is out of range. */
	if (mag > (uint64_t)INT64_MAX)
		return range_error(p, o, val);
	v = neg ? -(int64_t)mag : (int64_t)mag;
	if (v < o->min || v > o->max)
		return range_error(p, o, val);
	if ((o->flags & OF_POW2) && (v & (v - 1))) {
		fail_msg(p, "%s: %s is not a power of two", o->name, show(val).s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_bool(struct parser *p, const struct opt *o, const char *val, int64_t *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(val, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(val, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	fail_msg(p, "%s: '%s' is not a boolean (true or false)", o->name, show(val).s);
	return -EINVAL;
}

static int parse_level(struct parser *p, const struct opt *o, const char *val, int64_t *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcasecmp(val, level_names[i]) == 0) {
			*out = (int64_t)i;
			return 0;
		}
	}
	if (strcasecmp(val, "warning") == 0) {
		*out = LOG_LVL_WARN;
		return 0;
	}
	fail_msg(p, "%s: '%s' is not one of error, warn, info, debug", o->name, show(val).s);
	return -EINVAL;
}

/* admin_gid takes a group name as well as a number. */
static int parse_signed_or_group(struct parser *p, const struct opt *o, const char *val,
				 int64_t *out)
{
	uint32_t id;

	if (!(o->flags & OF_GROUP) || is_digit(val[0]) || val[0] == '-')
		return parse_number(p, o, val, out);
	if (!is_name(val)) {
		fail_msg(p, "%s: '%s' is neither a number nor a group name", o->name,
			 show(val).s);
		return -EINVAL;
	}
	if (lookup_id(val, true, &id) < 0) {
		fail_msg(p, "%s: unknown group '%s'", o->name, show(val).s);
		return -EINVAL;
	}
	if ((int64_t)id > o->max) {
		fail_msg(p, "%s: group '%s' has gid %" PRIu32 ", out of range (%" PRId64
			 "..%" PRId64 ")", o->name, show(val).s, id, o->min, o->max);
		return -ERANGE;
	}
	*out = id;
	return 0;
}

/* "none", or comma-separated ids and names. Parsed into a scratch array so
 * that a bad entry leaves the option untouched. */
static int parse_list(struct parser *p, struct conf *c, const struct opt *o, char *val)
{
	bool group = o->type == OT_GIDS;
	uint32_t ids[CONF_MAX_IDS];
	uint32_t n = 0;
	char *item = val;

	if (strcasecmp(val, "none") == 0)
		goto out_store;
	for (;;) {
		char *comma = strchr(item, ',');
		char *s;

		if (comma)
			*comma = '\0';
		s = trim(item);
		if (*s == '\0') {
			fail_msg(p, "%s: empty entry in list", o->name);
			return -EINVAL;
		}
		if (n == CONF_MAX_IDS) {
			fail_msg(p, "%s: more than %d entries", o->name, CONF_MAX_IDS);
			return -E2BIG;
		}
		if (is_digit(*s) || *s == '-') {
			const char *e = s;
			uint64_t v = 0;
			int r = *s == '-' ? -ERANGE : scan_u64(&e, &v);

			if (r == 0 && *e) {
				fail_msg(p, "%s: trailing characters in '%s'", o->name, show(s).s);
				return -EINVAL;
			}
			if (r < 0 || v > (uint64_t)o->max)
				return range_error(p, o, s);
			ids[n++] = (uint32_t)v;
		} else if (is_name(s) && o->type != OT_CPUS) {
			if (lookup_id(s, group, &ids[n]) < 0) {
				fail_msg(p, "%s: unknown %s '%s'", o->name, group ? "group" : "user",
					 show(s).s);
				return -EINVAL;
			}
			n++;
		} else {
			if (o->type == OT_CPUS)
				fail_msg(p, "%s: '%s' is not a CPU number", o->name, show(s).s);
			else
				fail_msg(p, "%s: '%s' is neither a number nor a %s name", o->name,
					 show(s).s, group ? "group" : "user");
			return -EINVAL;
		}
		if (!comma)
			break;
		item = comma + 1;
	}
out_store:
	memset(field(c, o), 0, sizeof(uint32_t) * CONF_MAX_IDS);
	memcpy(field(c, o), ids, sizeof(uint32_t) * n);
	*list_count(c, o) = n;
	return 0;
}

static int parse_listen(struct parser *p, struct conf *c, const struct opt *o, const char *val)
{
	struct conf_addr a;
	int r;

	if (strcasecmp(val, "none") == 0) {
		memset(field(c, o), 0, sizeof(a));
		return 0;
	}
	r = conf_scan_addr_port(val, &a);
	if (r == -ERANGE) {
		fail_msg(p, "%s: port in '%s' is out of range (1..65535)", o->name, show(val).s);
		return r;
	}
	if (r < 0) {
		fail_msg(p, "%s: '%s' is not a numeric address:port (IPv6 as [addr]:port) or none",
			 o->name, show(val).s);
		return r;
	}
	memcpy(field(c, o), &a, sizeof(a));
	return 0;
}

static int parse_addr(struct parser *p, struct conf *c, const struct opt *o, const char *val)
{
	struct conf_addr a;

	if (strcasecmp(val, "auto") == 0) {
		memset(field(c, o), 0, sizeof(a));
		return 0;
	}
	if (scan_addr(val, &a) < 0) {
		fail_msg(p, "%s: '%s' is not a numeric IPv4 or IPv6 address or auto", o->name,
			 show(val).s);
		return -EINVAL;
	}
	memcpy(field(c, o), &a, sizeof(a));
	return 0;
}

static int parse_hostname(struct parser *p, struct conf *c, const struct opt *o, const char *val)
{
	if (strcasecmp(val, "auto") == 0) {
		*(char *)field(c, o) = '\0';
		return 0;
	}
	if (!conf_peer_name_valid(val)) {
		fail_msg(p, "%s: '%s' is not a name of 1..%d characters of A-Z a-z 0-9 . _ -",
			 o->name, show(val).s, CONF_PEER_NAME_MAX);
		return -EINVAL;
	}
	snprintf(field(c, o), CONF_PEER_NAME_MAX + 1, "%s", val);
	return 0;
}

static int parse_path(struct parser *p, struct conf *c, const struct opt *o, const char *val)
{
	if (strcasecmp(val, "none") == 0) {
		*(char *)field(c, o) = '\0';
		return 0;
	}
	/* absolute: the daemon's working directory is nobody's business */
	if (val[0] != '/' || strlen(val) > CONF_PATH_MAX) {
		fail_msg(p, "%s: '%s' is not an absolute file name of at most %d characters, or none",
			 o->name, show(val).s, CONF_PATH_MAX);
		return -EINVAL;
	}
	snprintf(field(c, o), CONF_PATH_MAX + 1, "%s", val);
	return 0;
}

static int parse_cc(struct parser *p, struct conf *c, const struct opt *o, const char *val)
{
	if (strlen(val) > CONF_CC_NAME_MAX || !cc_find(val)) {
		fail_msg(p, "%s: unknown congestion controller '%s' (known: %s)", o->name, show(val).s,
			 cc_names());
		return -EINVAL;
	}
	snprintf(field(c, o), CONF_CC_NAME_MAX + 1, "%s", val);
	return 0;
}

/* The next name=VALUE entry of the comma-separated list at *item, which it
 * advances (NULL after the last entry); the name is checked as a peer name.
 * 1 with *name and *value set, 0 at the end, or a negative errno (already
 * reported). form names VALUE in messages ("address:port", ...). Shared by
 * the lists keyed by peer name (peers, peer_cc). */
static int next_named_entry(struct parser *p, const struct opt *o, char **item, const char *form,
			    char **name, char **value)
{
	char *comma, *s, *eq;

	if (!*item)
		return 0;
	comma = strchr(*item, ',');
	if (comma)
		*comma = '\0';
	s = trim(*item);
	*item = comma ? comma + 1 : NULL;
	if (*s == '\0') {
		fail_msg(p, "%s: empty entry in list", o->name);
		return -EINVAL;
	}
	eq = strchr(s, '=');
	if (!eq) {
		fail_msg(p, "%s: '%s' is not name=%s", o->name, show(s).s, form);
		return -EINVAL;
	}
	*eq = '\0';
	*name = trim(s);
	*value = trim(eq + 1);
	if (!conf_peer_name_valid(*name)) {
		fail_msg(p, "%s: '%s' is not a name of 1..%d characters of A-Z a-z 0-9 . _ -",
			 o->name, show(*name).s, CONF_PEER_NAME_MAX);
		return -EINVAL;
	}
	return 1;
}

/* "none" (the empty list) of an option whose lines add up: after entries
 * it would look like clearing them, and does not. */
static int none_first(struct parser *p, const struct opt *o, uint32_t n_have)
{
	if (n_have == 0)
		return 0;
	fail_msg(p, "%s: none after entries on an earlier line (lines add up; remove those)",
		 o->name);
	return -EINVAL;
}

/* "none", or comma-separated name=address:port. The entries add to those
 * of earlier "peers" lines; parsed into a scratch array first so that a bad
 * entry leaves the option as it was. */
static int parse_peers(struct parser *p, struct conf *c, const struct opt *o, char *val)
{
	struct conf_peer *have = field(c, o);
	uint32_t *n_have = list_count(c, o);
	struct conf_peer add[CONF_MAX_PEERS];
	uint32_t n = 0;
	char *item = val, *name, *addr;
	int r;

	if (strcasecmp(val, "none") == 0)
		return none_first(p, o, *n_have);
	while ((r = next_named_entry(p, o, &item, "address:port", &name, &addr)) > 0) {
		if (*n_have + n == CONF_MAX_PEERS) {
			fail_msg(p, "%s: more than %d entries", o->name, CONF_MAX_PEERS);
			return -E2BIG;
		}
		memset(&add[n], 0, sizeof(add[n]));
		snprintf(add[n].name, sizeof(add[n].name), "%s", name);
		r = conf_scan_addr_port(addr, &add[n].addr);
		if (r == -ERANGE) {
			fail_msg(p, "%s: %s: port in '%s' is out of range (1..65535)", o->name, name,
				 show(addr).s);
			return r;
		}
		if (r < 0) {
			fail_msg(p, "%s: %s: '%s' is not a numeric address:port (IPv6 as "
				 "[addr]:port)", o->name, name, show(addr).s);
			return r;
		}
		/* against the earlier lines' entries and this line's */
		for (uint32_t i = 0; i < *n_have + n; i++) {
			const struct conf_peer *q = i < *n_have ? &have[i] : &add[i - *n_have];

			if (strcmp(q->name, add[n].name) == 0) {
				fail_msg(p, "%s: duplicate name '%s'", o->name, name);
				return -EINVAL;
			}
			if (conf_addr_same_host(&q->addr, &add[n].addr) &&
			    q->addr.port == add[n].addr.port) {
				char a[INET6_ADDRSTRLEN + 8];

				conf_addr_fmt(&add[n].addr, true, a, sizeof(a));
				fail_msg(p, "%s: %s and %s have the same address %s", o->name, q->name,
					 name, a);
				return -EINVAL;
			}
		}
		n++;
	}
	if (r < 0)
		return r;
	memcpy(have + *n_have, add, sizeof(add[0]) * n);
	for (uint32_t i = 0; i < n; i++)
		p->peer_line[*n_have + i] = p->lineno;
	*n_have += n;
	return 0;
}

/* "none", or comma-separated name=controller; entries add to earlier
 * lines' like peers. Whether each name is in peers is checked once every
 * line is read (check_conf): the two options may come in either order. */
static int parse_peer_cc(struct parser *p, struct conf *c, const struct opt *o, char *val)
{
	struct conf_peer_cc *have = field(c, o);
	uint32_t *n_have = list_count(c, o);
	struct conf_peer_cc add[CONF_MAX_PEERS];
	uint32_t n = 0;
	char *item = val, *name, *cc;
	int r;

	if (strcasecmp(val, "none") == 0)
		return none_first(p, o, *n_have);
	while ((r = next_named_entry(p, o, &item, "controller", &name, &cc)) > 0) {
		if (strlen(cc) > CONF_CC_NAME_MAX || !cc_find(cc)) {
			fail_msg(p, "%s: %s: unknown congestion controller '%s' (known: %s)", o->name,
				 name, show(cc).s, cc_names());
			return -EINVAL;
		}
		if (*n_have + n == CONF_MAX_PEERS) {
			fail_msg(p, "%s: more than %d entries", o->name, CONF_MAX_PEERS);
			return -E2BIG;
		}
		for (uint32_t i = 0; i < *n_have + n; i++) {
			const struct conf_peer_cc *q = i < *n_have ? &have[i] : &add[i - *n_have];

			if (strcmp(q->name, name) == 0) {
				fail_msg(p, "%s: duplicate name '%s'", o->name, name);
				return -EINVAL;
			}
		}
		memset(&add[n], 0, sizeof(add[n]));
		snprintf(add[n].name, sizeof(add[n].name), "%s", name);
		snprintf(add[n].cc, sizeof(add[n].cc), "%s", cc);
		n++;
	}
	if (r < 0)
		return r;
	memcpy(have + *n_have, add, sizeof(add[0]) * n);
	for (uint32_t i = 0; i < n; i++)
		p->peer_cc_line[*n_have + i] = p->lineno;
	*n_have += n;
	return 0;
}

static int parse_value(struct parser *p, struct conf *c, const struct opt *o, char *val)
{
	int64_t v = 0;
	int r = 0;

	switch (o->type) {
	case OT_BOOL: r = parse_bool(p, o, val, &v); break;
	case OT_U32:
	case OT_U64:
	case OT_I32: r = parse_number(p, o, val, &v); break;
	case OT_I64: r = parse_signed_or_group(p, o, val, &v); break;
	case OT_LOGLEVEL: r = parse_level(p, o, val, &v); break;
	case OT_UIDS:
	case OT_GIDS:
	case OT_CPUS: return parse_list(p, c, o, val);
	case OT_LISTEN: return parse_listen(p, c, o, val);
	case OT_ADDR: return parse_addr(p, c, o, val);
	case OT_HOSTNAME: return parse_hostname(p, c, o, val);
	case OT_CC: return parse_cc(p, c, o, val);
	case OT_PATH: return parse_path(p, c, o, val);
	case OT_PEERS: return parse_peers(p, c, o, val);
	case OT_PEER_CC: return parse_peer_cc(p, c, o, val);
	}
	if (r < 0)
		return r;
	set_int(c, o, v);
	return 0;
}

static const struct opt *find_opt(const char *key, size_t *idx)
{
	for (size_t i = 0; i < NOPTS; i++) {
		if (strcmp(opts[i].name, key) == 0) {
			*idx = i;
			return &opts[i];
		}
	}
	return NULL;
}

/* One line, not NUL-terminated, without its newline. */
static int parse_line(struct parser *p, struct conf *c, const char *line, size_t len)
{
	char buf[CONF_LINE_MAX + 1];
	const struct opt *o;
	char *s, *eq, *key, *val;
	size_t idx;
	int r;

	if (len > 0 && line[len - 1] == '\r')
		len--;                 /* a CRLF line's CR is not one of its characters */
	if (len > CONF_LINE_MAX) {
		fail_msg(p, "line too long (over %d characters)", CONF_LINE_MAX);
		return -E2BIG;
	}
	if (memchr(line, '\0', len)) {
		fail_msg(p, "NUL byte in line");
		return -EINVAL;
	}
	memcpy(buf, line, len);
	buf[len] = '\0';
	s = strchr(buf, '#');
	if (s)
		*s = '\0';
	s = trim(buf);
	if (*s == '\0')
		return 0;
	eq = strchr(s, '=');
	if (!eq) {
		fail_msg(p, "missing '=' in '%s'", show(s).s);
		return -EINVAL;
	}
	*eq = '\0';
	key = trim(s);
	val = trim(eq + 1);
	if (*key == '\0') {
		fail_msg(p, "missing option name before '='");
		return -EINVAL;
	}
	o = find_opt(key, &idx);
	if (!o) {
		fail_msg(p, "unknown option '%s'", show(key).s);
		return -EINVAL;
	}
	if (p->line_of[idx] && !(o->flags & OF_APPEND)) {
		fail_msg(p, "duplicate option '%s' (first set on line %zu)", o->name,
			 p->line_of[idx]);
		return -EINVAL;
	}
	if (*val == '\0') {
		fail_msg(p, "empty value for '%s'", o->name);
		return -EINVAL;
	}
	r = parse_value(p, c, o, val);
	if (r < 0)
		return r;
	p->line_of[idx] = p->lineno;   /* OF_APPEND: the last line */
	return 0;
}

static size_t line_of(const struct parser *p, const char *name)
{
	size_t idx;

	return find_opt(name, &idx) ? p->line_of[idx] : 0;
}

static size_t later(size_t a, size_t b)
{
	return a > b ? a : b;
}

/* Is id (of option name) the overflow uid or gid? Then that is the error. */
static bool overflow_id(struct parser *p, const char *name, int64_t id, bool uid)
{
	uint32_t overflow = uid ? CONF_OVERFLOW_UID : CONF_OVERFLOW_GID;

	if (id != overflow)
		return false;
	p->lineno = line_of(p, name);
	fail_msg(p, "%s: %u is the overflow %s (processes in other user namespaces show their "
		 "unmapped %s as it)", name, overflow, uid ? "uid" : "gid", uid ? "users" : "groups");
	return true;
}

/* Checks between options, blamed on the later of the lines involved. */
static int check_conf(struct parser *p, const struct conf *c)
{
	/* a process in another user namespace shows every user and group
	 * that is not mapped into ours as the overflow uid and gid: admitting
	 * those admits them all */
	for (uint32_t i = 0; i < c->n_allow_uids; i++)
		if (overflow_id(p, "allow_uids", c->allow_uids[i], true))
			return -EINVAL;
	for (uint32_t i = 0; i < c->n_allow_gids; i++)
		if (overflow_id(p, "allow_gids", c->allow_gids[i], false))
			return -EINVAL;
	if (overflow_id(p, "admin_gid", c->admin_gid, false))
		return -EINVAL;
	if (c->ring_depth > c->max_ring_depth) {
		p->lineno = later(line_of(p, "ring_depth"), line_of(p, "max_ring_depth"));
		fail_msg(p, "ring_depth %" PRIu32 " is larger than max_ring_depth %" PRIu32,
			 c->ring_depth, c->max_ring_depth);
		return -EINVAL;
	}
	/* the transport moves a chunk at a time within its window */
	if (c->chunk_bytes > c->max_inflight_bytes) {
		p->lineno = later(line_of(p, "chunk_bytes"), line_of(p, "max_inflight_bytes"));
		fail_msg(p, "chunk_bytes %" PRIu32 " is larger than max_inflight_bytes %" PRIu64,
			 c->chunk_bytes, c->max_inflight_bytes);
		return -EINVAL;
	}
	if (c->data_port && c->data_port + c->data_paths - 1 > 65535) {
		p->lineno = later(line_of(p, "data_port"), line_of(p, "data_paths"));
		fail_msg(p, "data_port %" PRIu32 " + data_paths %" PRIu32 " runs past port 65535",
			 c->data_port, c->data_paths);
		return -EINVAL;
	}
	/* thread i's ports follow thread i-1's: data_port + i * data_paths */
	if (c->data_port &&
	    c->data_port + (uint64_t)c->engine_threads * c->data_paths - 1 > 65535) {
		p->lineno = later(line_of(p, "data_port"),
				  later(line_of(p, "engine_threads"), line_of(p, "data_paths")));
		fail_msg(p, "data_port %" PRIu32 " + engine_threads %" PRIu32 " x data_paths %" PRIu32
			 " runs past port 65535", c->data_port, c->engine_threads, c->data_paths);
		return -EINVAL;
	}
	if (c->n_engine_cpus && c->n_engine_cpus != c->engine_threads) {
		p->lineno = later(line_of(p, "engine_cpus"), line_of(p, "engine_threads"));
		fail_msg(p, "engine_cpus: %" PRIu32 " CPUs for engine_threads = %" PRIu32
			 " (one per thread)", c->n_engine_cpus, c->engine_threads);
		return -EINVAL;
	}
	if (c->lanes >= c->engine_threads) {
		p->lineno = later(line_of(p, "lanes"), line_of(p, "engine_threads"));
		fail_msg(p, "lanes = %" PRIu32 " needs engine_threads >= %" PRIu32
			 " (a lane is another engine thread)", c->lanes, c->lanes + 1);
		return -EINVAL;
	}
	if (c->engine_cpu >= 0 && (c->n_engine_cpus || c->engine_threads > 1)) {
		p->lineno = later(line_of(p, "engine_cpu"),
				  later(line_of(p, "engine_cpus"), line_of(p, "engine_threads")));
		fail_msg(p, "engine_cpu: pins the only engine thread; with engine_threads or "
			 "engine_cpus use engine_cpus");
		return -EINVAL;
	}
	if (c->n_peers && !c->peer_listen.family) {
		p->lineno = line_of(p, "peers");
		fail_msg(p, "peers: needs peer_listen (peering is off without it)");
		return -EINVAL;
	}
	if (conf_addr_is_any(&c->peer_listen) && !c->data_address.family) {
		p->lineno = later(line_of(p, "peer_listen"), line_of(p, "data_address"));
		fail_msg(p, "data_address: must be set when peer_listen is a wildcard address");
		return -EINVAL;
	}
	/* the address is where packets are sent: peers, and this daemon's
	 * own engine threads to each other */
	if (conf_has_data_plane(c) && conf_addr_is_any(&c->data_address)) {
		if (c->peer_listen.family) {
			p->lineno = line_of(p, "data_address");
			fail_msg(p, "data_address: a wildcard address cannot be announced to peers");
		} else {
			p->lineno = later(line_of(p, "data_address"), line_of(p, "engine_threads"));
			fail_msg(p, "data_address: a wildcard address cannot be sent to (with "
				 "engine_threads = %" PRIu32 " the threads send to each other at it)",
				 c->engine_threads);
		}
		return -EINVAL;
	}
	/* peers of peer_listen's family send to it from sockets of that
	 * family; "[::]" takes peers of both, and leaves the choice */
	if (c->peer_listen.family && c->data_address.family &&
	    c->data_address.family != c->peer_listen.family &&
	    !(c->peer_listen.family == AF_INET6 && conf_addr_is_any(&c->peer_listen))) {
		p->lineno = later(line_of(p, "peer_listen"), line_of(p, "data_address"));
		fail_msg(p, "data_address: %s but peer_listen is %s (peers could not reach it)",
			 c->data_address.family == AF_INET6 ? "IPv6" : "IPv4",
			 c->peer_listen.family == AF_INET6 ? "IPv6" : "IPv4");
		return -EINVAL;
	}
	/* outgoing connections leave from the peer_listen address, so that
	 * peers recognise us by it; "[::]" listens for both families */
	for (uint32_t i = 0; i < c->n_peers && c->peer_listen.family; i++) {
		const struct conf_peer *q = &c->peers[i];

		if (q->addr.family == c->peer_listen.family ||
		    (c->peer_listen.family == AF_INET6 && conf_addr_is_any(&c->peer_listen)))
			continue;
		p->lineno = later(line_of(p, "peer_listen"), p->peer_line[i]);
		fail_msg(p, "peers: %s is %s but peer_listen is %s", q->name,
			 q->addr.family == AF_INET6 ? "IPv6" : "IPv4",
			 c->peer_listen.family == AF_INET6 ? "IPv6" : "IPv4");
		return -EINVAL;
	}
	for (uint32_t i = 0; i < c->n_peer_cc; i++) {
		bool known = false;

		for (uint32_t k = 0; k < c->n_peers && !known; k++)
			known = strcmp(c->peers[k].name, c->peer_cc[i].name) == 0;
		if (known)
			continue;
		p->lineno = later(line_of(p, "peers"), p->peer_cc_line[i]);
		fail_msg(p, "peer_cc: no peer named '%s' in peers", c->peer_cc[i].name);
		return -EINVAL;
	}
	return 0;
}

int conf_parse(const char *name, const char *buf, size_t len, struct conf *out, char *err,
	       size_t errlen)
{
	struct parser p = { .name = name ? name : "(config)", .err = err, .errlen = errlen };
	struct conf c;
	size_t pos = 0;
	int r;

	if (err && errlen)
		err[0] = '\0';
	conf_defaults(&c);
	while (pos < len) {
		const char *line = buf + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;

		pos += n + (nl ? 1 : 0);
		p.lineno++;
		r = parse_line(&p, &c, line, n);
		if (r < 0)
			return r;
	}
	r = check_conf(&p, &c);
	if (r < 0)
		return r;
	*out = c;
	return 0;
}

int conf_load(const char *path, struct conf *c, char *err, size_t errlen)
{
	size_t len = 0;
	char *buf;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	/* One byte more than the limit, to tell "exactly the limit" from "over". */
	buf = malloc(CONF_FILE_MAX + 1);
	if (!buf) {
		r = -ENOMEM;
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(-r));
		goto out_close;
	}
	while (len <= CONF_FILE_MAX) {
		ssize_t n = read(fd, buf + len, CONF_FILE_MAX + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			if (err && errlen)
				snprintf(err, errlen, "%s: %s", path, strerror(-r));
			goto out_free;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > CONF_FILE_MAX) {
		r = -EFBIG;
		if (err && errlen)
			snprintf(err, errlen, "%s: larger than %u bytes", path, CONF_FILE_MAX);
		goto out_free;
	}
	r = conf_parse(path, buf, len, c, err, errlen);
out_free:
	free(buf);
out_close:
	close(fd);
	return r;
}

const char *conf_cc_of(const struct conf *c, const char *peer)
{
	for (uint32_t i = 0; i < c->n_peer_cc; i++)
		if (strcmp(c->peer_cc[i].name, peer) == 0)
			return c->peer_cc[i].cc;
	return c->cc;
}

/* ---- reload and dump -------------------------------------------------- */

/* A full peers list is the longest value: name, '=', [IPv6]:port, ',' */
#define VAL_MAX (CONF_MAX_PEERS * (CONF_PEER_NAME_MAX + INET6_ADDRSTRLEN + 10) + 8)
#define DUMP_PEERS_PER_LINE 16   /* keeps a dumped line under the 4096 limit */

static bool same_value(const struct conf *a, const struct conf *b, const struct opt *o)
{
	char x[VAL_MAX], y[VAL_MAX];

	fmt_value(a, o, x, sizeof(x));
	fmt_value(b, o, y, sizeof(y));
	return strcmp(x, y) == 0;
}

/* Few of next's changed reloadable options (one, else two, else all of
 * them: cur passed the checks) that, kept at cur's values in *merged, let
 * it pass the checks: marked in held, *merged updated. -EINVAL only
 * without memory. */
static int hold_with_restart(const struct conf *cur, const struct conf *next, struct conf *merged,
			     bool held[NOPTS])
{
	struct parser quiet = { .name = "" };
	size_t ch[NOPTS], n = 0;
	struct conf *t = malloc(sizeof(*t));
	int r = -EINVAL;

	if (!t)
		return -EINVAL;
	for (size_t i = 0; i < NOPTS; i++)
		if ((opts[i].flags & OF_RELOAD) && !same_value(cur, next, &opts[i]))
			ch[n++] = i;
	/* each alone first, then pairs */
	for (size_t pair = 0; pair < 2 && r < 0; pair++) {
		for (size_t a = 0; a < n && r < 0; a++) {
			for (size_t b = a + pair; b < (pair ? n : a + 1) && r < 0; b++) {
				*t = *merged;
				copy_value(t, cur, &opts[ch[a]]);
				copy_value(t, cur, &opts[ch[b]]);
				if (check_conf(&quiet, t) == 0) {
					held[ch[a]] = held[ch[b]] = true;
					*merged = *t;
					r = 0;
				}
			}
		}
	}
	for (size_t a = 0; a < n && r < 0; a++) {
		copy_value(merged, cur, &opts[ch[a]]);
		held[ch[a]] = true;
	}
	free(t);
	return 0;
}

int conf_reload(struct conf *cur, const struct conf *next,
		void (*report)(void *arg, const char *line), void *arg, char *err, size_t errlen)
{
	struct parser p = { .name = "with the options that need a restart kept", .err = err,
			    .errlen = errlen };
	struct conf merged = *cur;
	int changed = 0;
	bool held[NOPTS] = { false };

	if (err && errlen)
		err[0] = '\0';
	/* next passed the checks between options as a whole; what is applied
	 * (its reloadable options beside the running restart-only ones) must
	 * pass them too */
	for (size_t i = 0; i < NOPTS; i++)
		if (opts[i].flags & OF_RELOAD)
			copy_value(&merged, next, &opts[i]);
	if (check_conf(&p, &merged) < 0) {
		/* reloadable options may go with restart-only ones that change
		 * too (peers, and peer_cc naming them, with a new peer_listen):
		 * they keep their running values like those, and the rest is
		 * applied */
		if (hold_with_restart(cur, next, &merged, held) < 0) {
			if (err && errlen)
				snprintf(err, errlen, "out of memory");
			return -EINVAL;
		}
		if (err && errlen)
			err[0] = '\0';
	}
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt *o = &opts[i];
		char old[VAL_MAX], new[VAL_MAX], line[3 * VAL_MAX + 128];

		fmt_value(cur, o, old, sizeof(old));
		fmt_value(next, o, new, sizeof(new));
		if (strcmp(old, new) == 0)
			continue;
		if (held[i]) {
			snprintf(line, sizeof(line), "%s: %s -> %s goes with options that need a restart; "
				 "kept %s", o->name, old, new, old);
		} else if (o->flags & OF_RELOAD) {
			copy_value(cur, next, o);
			changed++;
			snprintf(line, sizeof(line), "%s: %s -> %s", o->name, old, new);
		} else {
			snprintf(line, sizeof(line), "%s: %s -> %s needs a restart; kept %s", o->name,
				 old, new, old);
		}
		if (report)
			report(arg, line);
	}
	return changed;
}

void conf_dump(const struct conf *c, void (*emit)(void *arg, const char *line), void *arg)
{
	for (size_t i = 0; i < NOPTS; i++) {
		char val[VAL_MAX], line[VAL_MAX + 64];

		if (opts[i].type == OT_PEERS && c->n_peers > DUMP_PEERS_PER_LINE) {
			/* several lines; they add up when parsed back */
			for (uint32_t at = 0; at < c->n_peers && at < CONF_MAX_PEERS;
			     at += DUMP_PEERS_PER_LINE) {
				uint32_t n = c->n_peers - at;

				fmt_peers(c->peers + at, n < DUMP_PEERS_PER_LINE ? n : DUMP_PEERS_PER_LINE,
					  val, sizeof(val));
				snprintf(line, sizeof(line), "%s = %s", opts[i].name, val);
				emit(arg, line);
			}
			continue;
		}
		fmt_value(c, &opts[i], val, sizeof(val));
		snprintf(line, sizeof(line), "%s = %s", opts[i].name, val);
		emit(arg, line);
	}
}
