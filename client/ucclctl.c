/* SPDX-License-Identifier: MIT */
/*
 * ucclctl: look inside a running ucclsvcd. Attaches to the control socket as
 * an observer (no rings, no memory), asks one question (status, clients,
 * endpoints, registered memory, counters, peer daemons, a lookup at a peer,
 * or the data channels to peers) and prints the answer as text or JSON; or
 * switches one channel's congestion controller (set-cc).
 * Everything but status, peers and channels needs the daemon's admin role;
 * the daemon decides and ucclctl prints its reason.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <uccl/uccl.h>

#include "proto/ctlio.h"
#include "proto/frame.h"
#include "table.h"

/* the same default as libucclclient, so both find the same daemon */
#define DEFAULT_SOCKET      UCCL_DEFAULT_SOCKET
#define DEFAULT_TIMEOUT_MS  5000
#define MAX_REPLY           FRAME_MAX_HARD

#define EXIT_FAIL  1
#define EXIT_USAGE 2

struct opts {
	const char *socket;
	bool json;
	int timeout_ms;
};

struct cmd {
	const char *name;
	UcclCtl__Request__BodyCase req;
	UcclCtl__Reply__BodyCase rep;
	int (*print)(const UcclCtl__Reply *r, bool json);
	int nargs;                       /* words after the command */
	const char *args;                /* their names, for usage errors */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before deadline, or -ETIMEDOUT. */
static int left_ms(int64_t deadline)
{
	int64_t left = deadline - now_ms();

	if (left <= 0)
		return -ETIMEDOUT;
	return left > INT_MAX ? INT_MAX : (int)left;
}

/* Connect to the daemon's socket. A full listen backlog makes a blocking
 * AF_UNIX connect wait, bounded by SO_SNDTIMEO; its expiry reads as EAGAIN,
 * reported here as -ETIMEDOUT. */
static int ctl_connect(const char *path, int64_t deadline, int *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv;
	int fd, left, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	left = left_ms(deadline);
	if (left < 0) {
		r = left;
		goto out_close;
	}
	tv.tv_sec = left / 1000;
	tv.tv_usec = (left % 1000) * 1000;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
		r = -errno;
		goto out_close;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
		goto out_close;
	}
	*out = fd;
	return 0;

out_close:
	close(fd);
	return r;
}

/* One request/reply exchange. Returns 0 with *rep set (its status may still
 * be negative: that is the daemon's answer, not a transport error), or
 * -ETIMEDOUT, -ECONNRESET, -EMSGSIZE, -EBADMSG (undecodable reply), -EPROTO
 * (a reply to some other request) or a socket errno. */
static int exchange(int fd, UcclCtl__Request *req, int64_t deadline, UcclCtl__Reply **rep)
{
	uint8_t *buf = NULL;
	size_t len;
	uint32_t plen = 0;
	int fds[CTLIO_MAX_FDS], nfds = 0, left, r;
	UcclCtl__Reply *rp;

	r = frame_pack_request(req, &buf, &len);
	if (r < 0)
		return r;
	left = left_ms(deadline);
	r = left < 0 ? left : ctlio_send(fd, buf, len, NULL, 0, left);
	free(buf);
	if (r < 0)
		return r;
	left = left_ms(deadline);
	if (left < 0)
		return left;
	r = ctlio_recv_frame(fd, MAX_REPLY, left, &buf, &plen, fds, &nfds);
	if (r < 0)
		return r;
	/* no query reply carries fds; do not keep any that arrived */
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	r = frame_unpack_reply(buf, plen, &rp);
	free(buf);
	if (r < 0)
		return r;
	if (rp->seq != req->seq) {
		uccl_ctl__reply__free_unpacked(rp, NULL);
		return -EPROTO;
	}
	*rep = rp;
	return 0;
}

/* Output */

static const char *opt_str(const char *s)
{
	return s && *s ? s : "-";
}

/* JSON: no name (absent, or sent empty) is null either way. */
static const char *opt_name(const char *s)
{
	return s && *s ? s : NULL;
}

static const char *kind_name(UcclCtl__MemKind k)
{
	switch (k) {
	case UCCL_CTL__MEM_KIND__MEM_MEMFD: return "memfd";
	case UCCL_CTL__MEM_KIND__MEM_VADDR: return "vaddr";
	default: return "unknown";
	}
}

static void kv(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void kv(const char *key, const char *fmt, ...)
{
	va_list ap;

	printf("%-18s", key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static int print_status(const UcclCtl__Reply *r, bool json)
{
	const UcclCtl__StatusRep *s = r->status_rep;
	uint64_t up = s->uptime_ms / 1000;
	char bytes[32], *version;

	if (json) {
		struct json j;

		json_init(&j, stdout, true);
		json_obj_begin(&j);
		json_key(&j, "status");
		json_obj_begin(&j);
		json_kv_str(&j, "version", s->version);
		json_kv_u64(&j, "pid", s->pid);
		json_kv_u64(&j, "uptime_ms", s->uptime_ms);
		json_kv_u64(&j, "clients", s->clients);
		json_kv_u64(&j, "endpoints", s->endpoints);
		json_kv_u64(&j, "mrs", s->mrs);
		json_kv_u64(&j, "registered_bytes", s->registered_bytes);
		json_kv_u64(&j, "engine_threads", s->engine_threads);
		if (s->has_lanes)
			json_kv_u64(&j, "lanes", s->lanes);
		json_kv_u64(&j, "proto_version", s->proto_version);
		json_kv_u64(&j, "max_clients", s->max_clients);
		json_obj_end(&j);
		json_obj_end(&j);
		return json_finish(&j);
	}
	version = table_sanitize(s->version);
	if (!version)
		return -ENOMEM;
	table_fmt_bytes(bytes, sizeof(bytes), s->registered_bytes);
	kv("version:", "%s", version);
	kv("pid:", "%" PRIu32, s->pid);
	kv("uptime:", "%" PRIu64 "d %02" PRIu64 ":%02" PRIu64 ":%02" PRIu64 " (%" PRIu64 ".%03"
	   PRIu64 " s)", up / 86400, up / 3600 % 24, up / 60 % 60, up % 60, up,
	   s->uptime_ms % 1000);
	kv("clients:", "%" PRIu32, s->clients);
	kv("endpoints:", "%" PRIu32, s->endpoints);
	kv("mrs:", "%" PRIu32, s->mrs);
	kv("registered bytes:", "%" PRIu64 " (%s)", s->registered_bytes, bytes);
	kv("engine threads:", "%" PRIu32, s->engine_threads);
	if (s->has_lanes)
		kv("lanes:", "%" PRIu32, s->lanes);
	kv("protocol version:", "%" PRIu32, s->proto_version);
	kv("max clients:", "%" PRIu32, s->max_clients);
	free(version);
	return ferror(stdout) ? -EIO : 0;
}

/* Prints t (text mode) and frees it; table_add errors are caught here once. */
static int finish_table(struct table *t, int add_err)
{
	int r = add_err < 0 ? add_err : table_print(t, stdout);

	table_free(t);
	return r;
}

static int print_clients(const UcclCtl__Reply *r, bool json)
{
	static const struct table_col cols[] = {
		{ "ID", TABLE_RIGHT }, { "PID", TABLE_RIGHT }, { "UID", TABLE_RIGHT },
		{ "GID", TABLE_RIGHT }, { "NAME", TABLE_LEFT }, { "ROLE", TABLE_LEFT },
		{ "EPS", TABLE_RIGHT }, { "MRS", TABLE_RIGHT }, { "REGISTERED", TABLE_RIGHT },
		{ "AGE", TABLE_RIGHT },
	};
	const UcclCtl__ClientsRep *rep = r->clients;
	struct table *t;
	int e = 0;

	if (json) {
		struct json j;

		json_list_begin(&j, stdout, "clients");
		for (size_t i = 0; i < rep->n_clients; i++) {
			const UcclCtl__ClientInfo *c = rep->clients[i];

			json_obj_begin(&j);
			json_kv_u64(&j, "id", c->id);
			json_kv_u64(&j, "pid", c->pid);
			json_kv_u64(&j, "uid", c->uid);
			json_kv_u64(&j, "gid", c->gid);
			json_kv_str(&j, "name", opt_name(c->name));
			json_kv_str(&j, "role", c->observer ? "observer" : "app");
			json_kv_u64(&j, "endpoints", c->endpoints);
			json_kv_u64(&j, "mrs", c->mrs);
			json_kv_u64(&j, "registered_bytes", c->registered_bytes);
			json_kv_u64(&j, "attached_ms", c->attached_ms);
			json_obj_end(&j);
		}
		return json_list_end(&j);
	}
	t = table_new(cols, sizeof(cols) / sizeof(cols[0]));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < rep->n_clients && e == 0; i++) {
		const UcclCtl__ClientInfo *c = rep->clients[i];
		char reg[32], age[32];

		table_fmt_bytes(reg, sizeof(reg), c->registered_bytes);
		table_fmt_ms(age, sizeof(age), c->attached_ms);
		e |= table_add(t, "%" PRIu32, c->id);
		e |= table_add(t, "%" PRIu32, c->pid);
		e |= table_add(t, "%" PRIu32, c->uid);
		e |= table_add(t, "%" PRIu32, c->gid);
		e |= table_add(t, "%s", opt_str(c->name));
		e |= table_add(t, "%s", c->observer ? "observer" : "app");
		e |= table_add(t, "%" PRIu32, c->endpoints);
		e |= table_add(t, "%" PRIu32, c->mrs);
		e |= table_add(t, "%s", reg);
		e |= table_add(t, "%s", age);
	}
	/* table_add only fails with -ENOMEM; or-ing keeps that value */
	return finish_table(t, e ? -ENOMEM : 0);
}

static int print_endpoints(const UcclCtl__Reply *r, bool json)
{
	static const struct table_col cols[] = {
		{ "CLIENT", TABLE_RIGHT }, { "EP", TABLE_RIGHT }, { "THR", TABLE_RIGHT },
		{ "NAME", TABLE_LEFT }, { "SQ", TABLE_RIGHT }, { "CQ", TABLE_RIGHT }, { "CONNS", TABLE_RIGHT },
		{ "SUBMITTED", TABLE_RIGHT }, { "COMPLETED", TABLE_RIGHT },
		{ "ERRORS", TABLE_RIGHT }, { "OUTSTANDING", TABLE_RIGHT }, { "BYTES", TABLE_RIGHT },
	};
	const UcclCtl__EndpointsRep *rep = r->endpoints;
	struct table *t;
	int e = 0;

	if (json) {
		struct json j;

		json_list_begin(&j, stdout, "endpoints");
		for (size_t i = 0; i < rep->n_endpoints; i++) {
			const UcclCtl__EndpointInfo *p = rep->endpoints[i];

			json_obj_begin(&j);
			json_kv_u64(&j, "client_id", p->client_id);
			json_kv_u64(&j, "ep_id", p->ep_id);
			json_kv_u64(&j, "thread", p->thread);
			json_kv_str(&j, "name", opt_name(p->name));
			json_kv_u64(&j, "sq_entries", p->sq_entries);
			json_kv_u64(&j, "cq_entries", p->cq_entries);
			json_kv_u64(&j, "conns", p->conns);
			json_kv_u64(&j, "submitted", p->submitted);
			json_kv_u64(&j, "completed", p->completed);
			json_kv_u64(&j, "errors", p->errors);
			json_kv_u64(&j, "outstanding", p->outstanding);
			json_kv_u64(&j, "bytes", p->bytes);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_kv_u64(&j, "left_out", rep->has_endpoints_left_out ? rep->endpoints_left_out : 0);
		json_obj_end(&j);
		return json_finish(&j);
	}
	t = table_new(cols, sizeof(cols) / sizeof(cols[0]));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < rep->n_endpoints && e == 0; i++) {
		const UcclCtl__EndpointInfo *p = rep->endpoints[i];
		char bytes[32];

		table_fmt_bytes(bytes, sizeof(bytes), p->bytes);
		e |= table_add(t, "%" PRIu32, p->client_id);
		e |= table_add(t, "%" PRIu32, p->ep_id);
		e |= table_add(t, "%" PRIu32, p->thread);
		e |= table_add(t, "%s", opt_str(p->name));
		e |= table_add(t, "%" PRIu32, p->sq_entries);
		e |= table_add(t, "%" PRIu32, p->cq_entries);
		e |= table_add(t, "%" PRIu32, p->conns);
		e |= table_add(t, "%" PRIu64, p->submitted);
		e |= table_add(t, "%" PRIu64, p->completed);
		e |= table_add(t, "%" PRIu64, p->errors);
		e |= table_add(t, "%" PRIu32, p->outstanding);
		e |= table_add(t, "%s", bytes);
	}
	e = finish_table(t, e ? -ENOMEM : 0);
	if (e == 0 && rep->has_endpoints_left_out && rep->endpoints_left_out)
		printf("(%" PRIu32 " more endpoints not listed: a reply holds 4096)\n",
		       rep->endpoints_left_out);
	return e;
}

static int print_mrs(const UcclCtl__Reply *r, bool json)
{
	static const struct table_col cols[] = {
		{ "CLIENT", TABLE_RIGHT }, { "MR", TABLE_RIGHT }, { "KIND", TABLE_LEFT },
		{ "LEN", TABLE_RIGHT },
	};
	const UcclCtl__MrsRep *rep = r->mrs;
	struct table *t;
	int e = 0;

	if (json) {
		struct json j;

		json_list_begin(&j, stdout, "mrs");
		for (size_t i = 0; i < rep->n_mrs; i++) {
			const UcclCtl__MrInfo *m = rep->mrs[i];

			json_obj_begin(&j);
			json_kv_u64(&j, "client_id", m->client_id);
			json_kv_u64(&j, "mr_id", m->mr_id);
			json_kv_str(&j, "kind", kind_name(m->kind));
			json_kv_u64(&j, "len", m->len);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_kv_u64(&j, "left_out", rep->has_mrs_left_out ? rep->mrs_left_out : 0);
		json_obj_end(&j);
		return json_finish(&j);
	}
	t = table_new(cols, sizeof(cols) / sizeof(cols[0]));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < rep->n_mrs && e == 0; i++) {
		const UcclCtl__MrInfo *m = rep->mrs[i];
		char len[32];

		table_fmt_bytes(len, sizeof(len), m->len);
		e |= table_add(t, "%" PRIu32, m->client_id);
		e |= table_add(t, "%" PRIu32, m->mr_id);
		if (m->kind == UCCL_CTL__MEM_KIND__MEM_MEMFD || m->kind == UCCL_CTL__MEM_KIND__MEM_VADDR)
			e |= table_add(t, "%s", kind_name(m->kind));
		else
			e |= table_add(t, "unknown(%d)", (int)m->kind);
		e |= table_add(t, "%s", len);
	}
	e = finish_table(t, e ? -ENOMEM : 0);
	if (e == 0 && rep->has_mrs_left_out && rep->mrs_left_out)
		printf("(%" PRIu32 " more regions not listed: a reply holds 16384)\n", rep->mrs_left_out);
	return e;
}

static int print_stats(const UcclCtl__Reply *r, bool json)
{
	static const struct table_col cols[] = {
		{ "NAME", TABLE_LEFT }, { "VALUE", TABLE_RIGHT },
	};
	const UcclCtl__StatsRep *rep = r->stats;
	struct table *t;
	int e = 0;

	if (json) {
		struct json j;

		json_list_begin(&j, stdout, "stats");
		for (size_t i = 0; i < rep->n_counters; i++) {
			json_obj_begin(&j);
			json_kv_str(&j, "name", rep->counters[i]->name);
			json_kv_u64(&j, "value", rep->counters[i]->value);
			json_obj_end(&j);
		}
		return json_list_end(&j);
	}
	t = table_new(cols, sizeof(cols) / sizeof(cols[0]));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < rep->n_counters && e == 0; i++) {
		e |= table_add(t, "%s", rep->counters[i]->name);
		e |= table_add(t, "%" PRIu64, rep->counters[i]->value);
	}
	return finish_table(t, e ? -ENOMEM : 0);
}

static const char *peer_state_name(UcclCtl__PeerState st)
{
	switch (st) {
	case UCCL_CTL__PEER_STATE__PEER_CONNECTING: return "connecting";
	case UCCL_CTL__PEER_STATE__PEER_UP: return "up";
	case UCCL_CTL__PEER_STATE__PEER_DOWN: return "down";
	default: return "unknown";
	}
}

/* A time in microseconds: "41us", "12.3ms" (from 10 ms on). */
static void fmt_us(char *buf, size_t len, uint64_t us)
{
	if (us < 10000)
		snprintf(buf, len, "%" PRIu64 "us", us);
	else
		snprintf(buf, len, "%" PRIu64 ".%01" PRIu64 "ms", us / 1000, us % 1000 / 100);
}

/* A smoothed RTT, "-" while there is no sample (0). */
static void fmt_srtt(char *buf, size_t len, uint64_t us)
{
	if (us)
		fmt_us(buf, len, us);
	else
		snprintf(buf, len, "-");
}

static void fmt_rtt(char *buf, size_t len, const UcclCtl__PeerInfo *p)
{
	if (!p->has_rtt_us)
		snprintf(buf, len, "-");
	else
		fmt_us(buf, len, p->rtt_us);
}

/* Tokens are secrets of the data path: only whether each is held is shown.
 * tx: the peer's token, which we put in what we send; rx: ours, which it
 * puts in what it sends. */
static const char *tokens_text(const UcclCtl__PeerInfo *p)
{
	if (p->tx_token_set && p->rx_token_set)
		return "tx,rx";
	if (p->tx_token_set)
		return "tx";
	if (p->rx_token_set)
		return "rx";
	return "-";
}

static void json_peer(struct json *j, const UcclCtl__PeerInfo *p)
{
	bool ann = p->host_name != NULL;

	json_obj_begin(j);
	json_kv_str(j, "name", p->name);
	json_kv_str(j, "address", p->address);
	json_kv_str(j, "state", peer_state_name(p->state));
	json_kv_u64(j, "since_ms", p->since_ms);
	json_kv_bool(j, "dials", p->dials);
	json_key(j, "rtt_us");
	if (p->has_rtt_us)
		json_u64(j, p->rtt_us);
	else
		json_null(j);
	json_kv_bool(j, "tx_token_set", p->tx_token_set);
	json_kv_bool(j, "rx_token_set", p->rx_token_set);
	json_kv_str(j, "host_name", p->host_name);
	json_kv_str(j, "data_address", p->data_address);
	json_key(j, "data_port");
	if (ann && p->has_data_port)
		json_u64(j, p->data_port);
	else
		json_null(j);
	json_key(j, "data_paths");
	if (ann && p->has_data_paths)
		json_u64(j, p->data_paths);
	else
		json_null(j);
	json_key(j, "mtu");
	if (ann && p->has_mtu)
		json_u64(j, p->mtu);
	else
		json_null(j);
	json_key(j, "max_inflight_bytes");
	if (ann && p->has_max_inflight_bytes)
		json_u64(j, p->max_inflight_bytes);
	else
		json_null(j);
	json_kv_u64(j, "reconnects", p->reconnects);
	json_kv_bool(j, "dynamic", p->has_dynamic && p->dynamic);
	json_kv_bool(j, "authenticated", p->has_authenticated && p->authenticated);
	json_kv_str(j, "last_error", opt_name(p->last_error));
	json_obj_end(j);
}

static int print_peers(const UcclCtl__Reply *r, bool json)
{
	static const struct table_col cols[] = {
		{ "NAME", TABLE_LEFT }, { "ADDRESS", TABLE_LEFT }, { "STATE", TABLE_LEFT },
		{ "SINCE", TABLE_RIGHT }, { "DIR", TABLE_LEFT }, { "AUTH", TABLE_LEFT }, { "RTT", TABLE_RIGHT },
		{ "TOKENS", TABLE_LEFT }, { "HOST", TABLE_LEFT }, { "DATA", TABLE_LEFT },
		{ "PATHS", TABLE_RIGHT }, { "MTU", TABLE_RIGHT }, { "RECONN", TABLE_RIGHT },
		{ "LAST ERROR", TABLE_LEFT },
	};
	const UcclCtl__PeersRep *rep = r->peers;
	struct table *t;
	int e = 0;

	if (json) {
		struct json j;

		json_init(&j, stdout, true);
		json_obj_begin(&j);
		json_kv_bool(&j, "enabled", rep->enabled);
		json_kv_str(&j, "host_name", rep->host_name);
		json_kv_str(&j, "listen", rep->listen);
		json_key(&j, "key");
		if (rep->has_key)
			json_bool(&j, rep->key);
		else
			json_null(&j);
		json_key(&j, "peers");
		json_arr_begin(&j);
		for (size_t i = 0; i < rep->n_peers; i++)
			json_peer(&j, rep->peers[i]);
		return json_list_end(&j);
	}
	if (!rep->enabled) {
		printf("peering is off (no peer_listen in uccl.conf)\n");
		return ferror(stdout) ? -EIO : 0;
	}
	{
		char *host = table_sanitize(opt_str(rep->host_name));
		char *listen = table_sanitize(opt_str(rep->listen));

		if (!host || !listen) {
			free(host);
			free(listen);
			return -ENOMEM;
		}
		printf("this daemon: %s, listening on %s; %s\n", host, listen,
		       !rep->has_key ? "whether peers must prove a key: unknown (older daemon)" :
		       rep->key ? "peers must prove the key of peer_key_file" :
		       "peers are not authenticated (no peer_key_file)");
		free(host);
		free(listen);
	}
	t = table_new(cols, sizeof(cols) / sizeof(cols[0]));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < rep->n_peers && e == 0; i++) {
		const UcclCtl__PeerInfo *p = rep->peers[i];
		char since[32], rtt[32];
		bool ann = p->host_name != NULL;

		table_fmt_ms(since, sizeof(since), p->since_ms);
		fmt_rtt(rtt, sizeof(rtt), p);
		e |= table_add(t, "%s", p->name);
		e |= table_add(t, "%s", p->address);
		e |= table_add(t, "%s", peer_state_name(p->state));
		e |= table_add(t, "%s", since);
		e |= table_add(t, "%s", p->dials ? "out" : "in");
		e |= table_add(t, "%s", p->has_authenticated && p->authenticated ? "key" : "-");
		e |= table_add(t, "%s", rtt);
		e |= table_add(t, "%s", tokens_text(p));
		e |= table_add(t, "%s", opt_str(p->host_name));
		if (ann && p->data_address && p->data_port)
			e |= table_add(t, "%s%s%s:%" PRIu32, strchr(p->data_address, ':') ? "[" : "",
				       p->data_address, strchr(p->data_address, ':') ? "]" : "",
				       p->data_port);
		else if (ann && p->data_address)
			e |= table_add(t, "%s (no port)", p->data_address);
		else
			e |= table_add(t, "-");
		if (ann)
			e |= table_add(t, "%" PRIu32, p->data_paths);
		else
			e |= table_add(t, "-");
		if (ann)
			e |= table_add(t, "%" PRIu32, p->mtu);
		else
			e |= table_add(t, "-");
		e |= table_add(t, "%" PRIu32, p->reconnects);
		e |= table_add(t, "%s", opt_str(p->last_error));
	}
	return finish_table(t, e ? -ENOMEM : 0);
}

/* Received packets a channel dropped, by reason (the names are the JSON
 * members' without "drop_"). */
struct drop_reason {
	const char *name;
	uint64_t v;
};

#define DROP_REASONS 7

static size_t channel_drops(const UcclCtl__ChannelInfo *c, struct drop_reason out[DROP_REASONS])
{
	const struct drop_reason all[] = {
		{ "malformed", c->drop_malformed }, { "version", c->drop_version },
		{ "token", c->drop_token }, { "crc", c->drop_crc },
		{ "window", c->drop_window }, { "refused", c->drop_refused },
		{ "nomem", c->drop_nomem },
	};

	_Static_assert(sizeof(all) / sizeof(all[0]) == DROP_REASONS, "one entry per reason");
	size_t n = 0;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i].v)
			out[n++] = all[i];
	return n;
}

/* Which (sub-)channel a row is: the first members of channels' and paths'. */
static void json_channel_id(struct json *j, const UcclCtl__ChannelInfo *c)
{
	json_kv_u64(j, "chan", c->chan);
	json_kv_u64(j, "thread", c->thread);
	json_kv_u64(j, "remote_thread", c->remote_thread);
	json_kv_str(j, "peer", c->peer);
}

static void json_channel(struct json *j, const UcclCtl__ChannelInfo *c)
{
	json_obj_begin(j);
	json_channel_id(j, c);
	json_kv_u64(j, "up_ms", c->up_ms);
	json_kv_u64(j, "paths", c->paths);
	json_kv_u64(j, "mtu", c->mtu);
	json_key(j, "crc");
	if (c->has_crc)
		json_bool(j, c->crc);
	else
		json_null(j);         /* an older daemon: not known */
	json_kv_u64(j, "conns", c->conns);
	json_kv_u64(j, "queued_ops", c->queued_ops);
	json_kv_u64(j, "srtt_us", c->srtt_us);
	json_kv_u64(j, "rto_us", c->rto_us);
	json_kv_u64(j, "cwnd_bytes", c->cwnd_bytes);
	json_kv_u64(j, "inflight_pkts", c->inflight_pkts);
	json_kv_u64(j, "inflight_bytes", c->inflight_bytes);
	json_kv_u64(j, "queued_msgs", c->queued_msgs);
	json_kv_u64(j, "msgs_submitted", c->msgs_submitted);
	json_kv_u64(j, "msgs_completed", c->msgs_completed);
	json_kv_u64(j, "msgs_failed", c->msgs_failed);
	json_kv_u64(j, "data_pkts_tx", c->data_pkts_tx);
	json_kv_u64(j, "data_bytes_tx", c->data_bytes_tx);
	json_kv_u64(j, "retx_pkts", c->retx_pkts);
	json_kv_u64(j, "retx_timeouts", c->retx_timeouts);
	json_kv_u64(j, "rto_spurious", c->rto_spurious);
	json_kv_u64(j, "fast_retx", c->fast_retx);
	json_kv_u64(j, "acks_tx", c->acks_tx);
	json_kv_u64(j, "acks_rx", c->acks_rx);
	json_kv_u64(j, "nacks_tx", c->nacks_tx);
	json_kv_u64(j, "acks_held", c->acks_held);
	json_kv_u64(j, "acks_with_data", c->acks_with_data);
	json_kv_u64(j, "ack_holds_expired", c->ack_holds_expired);
	json_kv_u64(j, "nacks_rx", c->nacks_rx);
	json_kv_u64(j, "data_pkts_rx", c->data_pkts_rx);
	json_kv_u64(j, "data_bytes_rx", c->data_bytes_rx);
	json_kv_u64(j, "dup_pkts_rx", c->dup_pkts_rx);
	json_kv_u64(j, "sack_holes", c->sack_holes);
	json_kv_u64(j, "drop_malformed", c->drop_malformed);
	json_kv_u64(j, "drop_version", c->drop_version);
	json_kv_u64(j, "drop_token", c->drop_token);
	json_kv_u64(j, "drop_crc", c->drop_crc);
	json_kv_u64(j, "drop_window", c->drop_window);
	json_kv_u64(j, "drop_refused", c->drop_refused);
	json_kv_u64(j, "drop_nomem", c->drop_nomem);
	json_kv_u64(j, "tlp_probes", c->tlp_probes);
	json_kv_u64(j, "credits_tx", c->credits_tx);
	json_kv_u64(j, "credits_rx", c->credits_rx);
	json_kv_u64(j, "credit_granted_pkts", c->credit_granted_pkts);
	json_kv_u64(j, "small_chunks", c->small_chunks);
	json_kv_u64(j, "loss_ppm", c->loss_ppm);
	json_kv_u64(j, "state_bytes", c->state_bytes);
	json_kv_u64(j, "state_releases", c->state_releases);
	json_kv_bool(j, "failed", c->has_failed && c->failed);
	json_kv_str(j, "cc", c->cc ? c->cc : "");
	json_key(j, "cc_state");
	json_obj_begin(j);
	for (size_t i = 0; i < c->n_cc_state; i++)
		json_kv_u64(j, c->cc_state[i]->name, c->cc_state[i]->value);
	json_obj_end(j);
	json_obj_end(j);
}

/* Datagrams sent; a daemon from before field 16 sent a packet in each. */
static uint64_t nic_dgrams(const UcclCtl__NicStats *n)
{
	return n->has_tx_dgrams ? n->tx_dgrams : n->tx_pkts;
}

static void json_nic(struct json *j, const UcclCtl__NicStats *n)
{
	json_obj_begin(j);
	json_kv_str(j, "data_address", opt_name(n->data_address));
	json_kv_u64(j, "tx_pkts", n->tx_pkts);
	json_kv_u64(j, "tx_bytes", n->tx_bytes);
	json_kv_u64(j, "tx_calls", n->tx_calls);
	json_kv_u64(j, "tx_gso_calls", n->tx_gso_calls);
	json_kv_u64(j, "tx_dgrams", nic_dgrams(n));
	json_kv_u64(j, "tx_gso_refused", n->has_tx_gso_refused ? n->tx_gso_refused : 0);
	json_kv_u64(j, "rx_overflow", n->has_rx_overflow ? n->rx_overflow : 0);
	json_kv_u64(j, "rx_hint", n->has_rx_hint ? n->rx_hint : 0);
	json_kv_u64(j, "rx_skipped", n->has_rx_skipped ? n->rx_skipped : 0);
	json_kv_u64(j, "rx_hint_written_off", n->has_rx_hint_written_off ? n->rx_hint_written_off : 0);
	json_kv_u64(j, "tx_eagain", n->tx_eagain);
	json_kv_u64(j, "tx_errors", n->tx_errors);
	json_kv_u64(j, "rx_pkts", n->rx_pkts);
	json_kv_u64(j, "rx_bytes", n->rx_bytes);
	json_kv_u64(j, "rx_calls", n->rx_calls);
	json_kv_u64(j, "rx_gro_segs", n->rx_gro_segs);
	json_kv_u64(j, "rx_truncated", n->rx_truncated);
	json_kv_u64(j, "rx_unknown_peer", n->rx_unknown_peer);
	json_kv_u64(j, "rx_unknown_chan", n->rx_unknown_chan);
	json_kv_u64(j, "tx_dropped", n->tx_dropped);
	json_obj_end(j);
}

/* One line under the channels table: the data plane's NIC as a whole. */
static int print_nic(const UcclCtl__NicStats *n)
{
	char txb[32], rxb[32], *addr;

	if (!n->data_address || !*n->data_address) {
		printf("nic: data plane off (no peer_listen in uccl.conf, one engine thread)\n");
		return ferror(stdout) ? -EIO : 0;
	}
	addr = table_sanitize(n->data_address);
	if (!addr)
		return -ENOMEM;
	table_fmt_bytes(txb, sizeof(txb), n->tx_bytes);
	table_fmt_bytes(rxb, sizeof(rxb), n->rx_bytes);
	printf("nic %s: tx %" PRIu64 " pkts in %" PRIu64 " datagrams (%s, %" PRIu64 " GSO), rx %"
	       PRIu64 " datagrams (%s, %" PRIu64 " GRO), EAGAIN %" PRIu64 ", unknown peer %" PRIu64,
	       addr, n->tx_pkts, nic_dgrams(n), txb, n->tx_gso_calls,
	       n->rx_pkts, rxb, n->rx_gro_segs, n->tx_eagain, n->rx_unknown_peer);
	if (n->has_rx_hint && n->rx_hint)
		printf(", receives %" PRIu64 " (%" PRIu64 " skipped by the hint)",
		       n->rx_calls + (n->has_rx_skipped ? n->rx_skipped : 0),
		       n->has_rx_skipped ? n->rx_skipped : 0);
	/* the rest only when something went wrong */
	if (n->has_tx_gso_refused && n->tx_gso_refused)
		printf(", GSO refused by the kernel (off on %" PRIu64 " nic%s)", n->tx_gso_refused,
		       n->tx_gso_refused == 1 ? "" : "s");
	if (n->has_rx_overflow && n->rx_overflow)
		printf(", rx dropped by the kernel (mostly a full receive buffer) %" PRIu64, n->rx_overflow);
	if (n->has_rx_hint_written_off && n->rx_hint_written_off)
		printf(", rx hint written off %" PRIu64, n->rx_hint_written_off);
	if (n->tx_errors)
		printf(", tx errors %" PRIu64, n->tx_errors);
	if (n->tx_dropped)
		printf(", tx dropped %" PRIu64, n->tx_dropped);
	if (n->rx_truncated)
		printf(", truncated %" PRIu64, n->rx_truncated);
	if (n->rx_unknown_chan > n->rx_unknown_peer)
		printf(", no channel %" PRIu64, n->rx_unknown_chan - n->rx_unknown_peer);
	putchar('\n');
	free(addr);
	return ferror(stdout) ? -EIO : 0;
}

static int print_channels(const UcclCtl__Reply *r, bool json)
{
	static const struct table_col cols[] = {
		{ "CHAN", TABLE_RIGHT }, { "THR", TABLE_RIGHT }, { "PEER", TABLE_LEFT },
		{ "PEER THR", TABLE_RIGHT }, { "AGE", TABLE_RIGHT },
		{ "PATHS", TABLE_RIGHT }, { "MTU", TABLE_RIGHT }, { "CONNS", TABLE_RIGHT },
		{ "CC", TABLE_LEFT },
		{ "SRTT", TABLE_RIGHT }, { "RTO", TABLE_RIGHT }, { "CWND", TABLE_RIGHT },
		{ "INFLIGHT", TABLE_RIGHT }, { "RETX (TO/FAST)", TABLE_RIGHT },
		{ "HOLES", TABLE_RIGHT }, { "TX PKTS/BYTES", TABLE_RIGHT },
		{ "RX PKTS/BYTES", TABLE_RIGHT }, { "DROPS", TABLE_RIGHT },
	};
	const UcclCtl__ChannelsRep *rep = r->channels;
	struct table *t;
	int e = 0;

	if (!rep->nic)
		return -EPROTO;
	if (json) {
		struct json j;

		json_list_begin(&j, stdout, "channels");
		for (size_t i = 0; i < rep->n_channels; i++)
			json_channel(&j, rep->channels[i]);
		json_arr_end(&j);
		json_kv_u64(&j, "left_out", rep->has_channels_left_out ? rep->channels_left_out : 0);
		json_key(&j, "nic");
		json_nic(&j, rep->nic);
		json_obj_end(&j);
		return json_finish(&j);
	}
	t = table_new(cols, sizeof(cols) / sizeof(cols[0]));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < rep->n_channels && e == 0; i++) {
		const UcclCtl__ChannelInfo *c = rep->channels[i];
		char age[32], srtt[32], rto[32], cwnd[32], infl[32], txb[32], rxb[32];
		struct drop_reason dr[DROP_REASONS];
		size_t nd = channel_drops(c, dr);
		uint64_t drops = 0;

		for (size_t k = 0; k < nd; k++)
			drops += dr[k].v;
		table_fmt_ms(age, sizeof(age), c->up_ms);
		fmt_srtt(srtt, sizeof(srtt), c->srtt_us);
		fmt_us(rto, sizeof(rto), c->rto_us);
		table_fmt_bytes(cwnd, sizeof(cwnd), c->cwnd_bytes);
		table_fmt_bytes(infl, sizeof(infl), c->inflight_bytes);
		table_fmt_bytes(txb, sizeof(txb), c->data_bytes_tx);
		table_fmt_bytes(rxb, sizeof(rxb), c->data_bytes_rx);
		e |= table_add(t, "%" PRIu32, c->chan);
		e |= table_add(t, "%" PRIu32, c->thread);
		e |= table_add(t, "%s%s", c->peer, c->has_failed && c->failed ? " (failed)" : "");
		e |= table_add(t, "%" PRIu32, c->remote_thread);
		e |= table_add(t, "%s", age);
		e |= table_add(t, "%" PRIu32, c->paths);
		e |= table_add(t, "%" PRIu32 "%s", c->mtu, c->has_crc && c->crc ? " crc" : "");
		e |= table_add(t, "%" PRIu32, c->conns);
		e |= table_add(t, "%s", c->cc && *c->cc ? c->cc : "-");
		e |= table_add(t, "%s", srtt);
		e |= table_add(t, "%s", rto);
		e |= table_add(t, "%s", cwnd);
		e |= table_add(t, "%" PRIu64 "/%s", c->inflight_pkts, infl);
		e |= table_add(t, "%" PRIu64 " (%" PRIu64 "/%" PRIu64 ")", c->retx_pkts,
			       c->retx_timeouts, c->fast_retx);
		e |= table_add(t, "%" PRIu32, c->sack_holes);
		e |= table_add(t, "%" PRIu64 "/%s", c->data_pkts_tx, txb);
		e |= table_add(t, "%" PRIu64 "/%s", c->data_pkts_rx, rxb);
		e |= table_add(t, "%" PRIu64 "%s", drops, nd ? "*" : "");
	}
	e = finish_table(t, e ? -ENOMEM : 0);
	if (e == 0 && rep->has_channels_left_out && rep->channels_left_out)
		printf("(%" PRIu32 " more sub-channels not listed: a reply holds 256; "
		       "ucclctl paths PEER lists one peer's)\n", rep->channels_left_out);
	/* footnotes: the reasons behind each non-zero DROPS */
	for (size_t i = 0; i < rep->n_channels && e == 0; i++) {
		const UcclCtl__ChannelInfo *c = rep->channels[i];
		struct drop_reason dr[DROP_REASONS];
		size_t nd = channel_drops(c, dr);
		char *peer;

		if (!nd)
			continue;
		peer = table_sanitize(c->peer);
		if (!peer)
			return -ENOMEM;
		/* a chan id repeats on each thread: name the thread beyond 0 */
		if (c->thread)
			printf("* drops on chan %" PRIu32 " thread %" PRIu32 " (%s):", c->chan, c->thread, peer);
		else
			printf("* drops on chan %" PRIu32 " (%s):", c->chan, peer);
		for (size_t k = 0; k < nd; k++)
			printf("%s %s %" PRIu64, k ? "," : "", dr[k].name, dr[k].v);
		putchar('\n');
		free(peer);
	}
	/* each controller's own state, one line per channel */
	for (size_t i = 0; i < rep->n_channels && e == 0; i++) {
		const UcclCtl__ChannelInfo *c = rep->channels[i];

		if (!c->n_cc_state)
			continue;
		if (c->thread)
			printf("cc on chan %" PRIu32 " thread %" PRIu32 ": %s", c->chan, c->thread,
			       c->cc ? c->cc : "?");
		else
			printf("cc on chan %" PRIu32 ": %s", c->chan, c->cc ? c->cc : "?");
		for (size_t k = 0; k < c->n_cc_state; k++) {
			char *name = table_sanitize(c->cc_state[k]->name);

			if (!name)
				return -ENOMEM;
			printf("%s %s %" PRIu64, k ? "," : "", name, c->cc_state[k]->value);
			free(name);
		}
		putchar('\n');
	}
	return e < 0 ? e : print_nic(rep->nic);
}

/* The words after lookup (PEER NAME) or set-cc (PEER CC), for the request
 * and its output. */
static const char *arg_peer, *arg_name;

static int print_lookup(const UcclCtl__Reply *r, bool json)
{
	const UcclCtl__PeerLookup *lk = r->peers->lookup;
	char *peer, *name;

	if (!lk)
		return -EPROTO;
	if (json) {
		struct json j;

		json_init(&j, stdout, true);
		json_obj_begin(&j);
		json_key(&j, "lookup");
		json_obj_begin(&j);
		json_kv_str(&j, "peer", arg_peer);
		json_kv_str(&j, "name", arg_name);
		json_kv_bool(&j, "found", lk->found);
		json_key(&j, "ep_id");
		if (lk->found && lk->has_ep_id)
			json_u64(&j, lk->ep_id);
		else
			json_null(&j);
		json_obj_end(&j);
		json_obj_end(&j);
		return json_finish(&j);
	}
	peer = table_sanitize(arg_peer);
	name = table_sanitize(arg_name);
	if (!peer || !name) {
		free(peer);
		free(name);
		return -ENOMEM;
	}
	if (lk->found)
		printf("%s: '%s' is endpoint %" PRIu32 "\n", peer, name, lk->ep_id);
	else
		printf("%s: nothing listens under '%s'\n", peer, name);
	free(peer);
	free(name);
	return ferror(stdout) ? -EIO : 0;
}

static int print_set_cc(const UcclCtl__Reply *r, bool json)
{
	char *peer, *cc;

	if (json) {
		struct json j;

		json_init(&j, stdout, true);
		json_obj_begin(&j);
		json_key(&j, "set_cc");
		json_obj_begin(&j);
		json_kv_str(&j, "peer", arg_peer);
		json_kv_str(&j, "cc", arg_name);
		json_kv_bool(&j, "applied", r->set_cc->applied);
		json_obj_end(&j);
		json_obj_end(&j);
		return json_finish(&j);
	}
	peer = table_sanitize(arg_peer);
	cc = table_sanitize(arg_name);
	if (!peer || !cc) {
		free(peer);
		free(cc);
		return -ENOMEM;
	}
	if (r->set_cc->applied)
		printf("%s: congestion control is now %s\n", peer, cc);
	else
		printf("%s: not up; its channel will start with %s\n", peer, cc);
	free(peer);
	free(cc);
	return ferror(stdout) ? -EIO : 0;
}

/* A daemon before ChannelsReq.paths_peer ignores it and lists every
 * channel: the rows say whether it was heard. */
static bool only_peer(const UcclCtl__Reply *r, const char *peer)
{
	for (size_t i = 0; i < r->channels->n_channels; i++)
		if (strcmp(r->channels->channels[i]->peer, peer) != 0)
			return false;
	return true;
}

static void json_path(struct json *j, const UcclCtl__PathInfo *p)
{
	json_obj_begin(j);
	json_kv_u64(j, "path", p->path);
	json_kv_u64(j, "srtt_us", p->srtt_us);
	json_kv_u64(j, "inflight_pkts", p->inflight_pkts);
	json_kv_u64(j, "sent_chunks", p->sent_chunks);
	json_kv_u64(j, "losses", p->losses);
	if (p->has_last_loss_ms_ago)
		json_kv_u64(j, "last_loss_ms_ago", p->last_loss_ms_ago);
	json_obj_end(j);
}

/* One peer's (sub-)channels, each path on a line. */
static int print_paths(const UcclCtl__Reply *r, bool json)
{
	static const struct table_col cols[] = {
		{ "CHAN", TABLE_RIGHT }, { "THR", TABLE_RIGHT }, { "PEER THR", TABLE_RIGHT },
		{ "PATH", TABLE_RIGHT }, { "SRTT", TABLE_RIGHT }, { "INFLIGHT", TABLE_RIGHT },
		{ "CHUNKS", TABLE_RIGHT }, { "LOSSES", TABLE_RIGHT }, { "LAST LOSS", TABLE_RIGHT },
	};
	const UcclCtl__ChannelsRep *rep = r->channels;
	bool cut = rep->has_paths_truncated && rep->paths_truncated;
	struct table *t;
	int e = 0;

	if (json) {
		struct json j;

		json_list_begin(&j, stdout, "channels");
		for (size_t i = 0; i < rep->n_channels; i++) {
			const UcclCtl__ChannelInfo *c = rep->channels[i];

			json_obj_begin(&j);
			json_channel_id(&j, c);
			json_kv_u64(&j, "paths", c->paths);
			json_key(&j, "path_stats");
			json_arr_begin(&j);
			for (size_t k = 0; k < c->n_path_stats; k++)
				json_path(&j, c->path_stats[k]);
			json_arr_end(&j);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_kv_bool(&j, "truncated", cut);
		json_obj_end(&j);
		return json_finish(&j);
	}
	t = table_new(cols, sizeof(cols) / sizeof(cols[0]));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < rep->n_channels && e == 0; i++) {
		const UcclCtl__ChannelInfo *c = rep->channels[i];

		for (size_t k = 0; k < c->n_path_stats && e == 0; k++) {
			const UcclCtl__PathInfo *p = c->path_stats[k];
			char srtt[32], last[32];

			fmt_srtt(srtt, sizeof(srtt), p->srtt_us);
			if (p->has_last_loss_ms_ago)
				table_fmt_ms(last, sizeof(last), p->last_loss_ms_ago);
			else
				snprintf(last, sizeof(last), "-");
			e |= table_add(t, "%" PRIu32, c->chan);
			e |= table_add(t, "%" PRIu32, c->thread);
			e |= table_add(t, "%" PRIu32, c->remote_thread);
			e |= table_add(t, "%" PRIu32, p->path);
			e |= table_add(t, "%s", srtt);
			e |= table_add(t, "%" PRIu32, p->inflight_pkts);
			e |= table_add(t, "%" PRIu64, p->sent_chunks);
			e |= table_add(t, "%" PRIu64, p->losses);
			e |= table_add(t, "%s%s", last, p->has_last_loss_ms_ago ? " ago" : "");
		}
	}
	e = finish_table(t, e ? -ENOMEM : 0);
	/* an idle channel holds no per-path state: say so rather than show nothing */
	for (size_t i = 0; i < rep->n_channels && e == 0; i++) {
		const UcclCtl__ChannelInfo *c = rep->channels[i];

		if (c->n_path_stats == 0 && !cut)
			printf("chan %" PRIu32 " thread %" PRIu32 ": idle (per-path state is kept only "
			       "while traffic flows)\n", c->chan, c->thread);
	}
	if (e == 0 && cut)
		printf("(more paths than one reply holds: later channels left out)\n");
	return e ? e : (ferror(stdout) ? -EIO : 0);
}

static const struct cmd cmds[] = {
	{ "status", UCCL_CTL__REQUEST__BODY_STATUS, UCCL_CTL__REPLY__BODY_STATUS_REP, print_status,
	  0, "" },
	{ "clients", UCCL_CTL__REQUEST__BODY_CLIENTS, UCCL_CTL__REPLY__BODY_CLIENTS, print_clients,
	  0, "" },
	{ "endpoints", UCCL_CTL__REQUEST__BODY_ENDPOINTS, UCCL_CTL__REPLY__BODY_ENDPOINTS,
	  print_endpoints, 0, "" },
	{ "mrs", UCCL_CTL__REQUEST__BODY_MRS, UCCL_CTL__REPLY__BODY_MRS, print_mrs, 0, "" },
	{ "stats", UCCL_CTL__REQUEST__BODY_STATS, UCCL_CTL__REPLY__BODY_STATS, print_stats, 0, "" },
	{ "peers", UCCL_CTL__REQUEST__BODY_PEERS, UCCL_CTL__REPLY__BODY_PEERS, print_peers, 0, "" },
	{ "lookup", UCCL_CTL__REQUEST__BODY_PEERS, UCCL_CTL__REPLY__BODY_PEERS, print_lookup, 2,
	  "PEER NAME" },
	{ "channels", UCCL_CTL__REQUEST__BODY_CHANNELS, UCCL_CTL__REPLY__BODY_CHANNELS,
	  print_channels, 0, "" },
	{ "set-cc", UCCL_CTL__REQUEST__BODY_SET_CC, UCCL_CTL__REPLY__BODY_SET_CC, print_set_cc, 2,
	  "PEER CC" },
	{ "paths", UCCL_CTL__REQUEST__BODY_CHANNELS, UCCL_CTL__REPLY__BODY_CHANNELS, print_paths, 1,
	  "PEER" },
};

/* Say why an exchange with the daemon failed, in the user's terms. */
static void report_io(const struct opts *o, const char *what, int err)
{
	switch (err) {
	case -ETIMEDOUT:
		fprintf(stderr, "ucclctl: %s: no reply from %s within %d ms (daemon busy or hung?)\n",
			what, o->socket, o->timeout_ms);
		break;
	case -ECONNRESET:
	case -EPIPE:
		fprintf(stderr, "ucclctl: %s: the daemon closed the connection\n", what);
		break;
	case -EBADMSG:
		fprintf(stderr, "ucclctl: %s: the daemon's reply does not decode\n", what);
		break;
	case -EPROTO:
		fprintf(stderr, "ucclctl: %s: the daemon answered a different request\n", what);
		break;
	case -EMSGSIZE:
		fprintf(stderr, "ucclctl: %s: message over the %u byte limit\n", what, MAX_REPLY);
		break;
	default:
		fprintf(stderr, "ucclctl: %s: %s\n", what, strerror(-err));
	}
}

/* The daemon refused: print its reason. Its text came from the daemon and
 * goes to a terminal, so it is sanitised like any other string. */
static void report_refusal(const char *what, const UcclCtl__Reply *rep)
{
	char *msg = rep->error && *rep->error ? table_sanitize(rep->error) : NULL;
	int err = rep->status;

	if (msg)
		fprintf(stderr, "ucclctl: %s (%s)\n", msg, strerror(-err));
	else if (err == -EPERM || err == -EACCES)
		fprintf(stderr, "ucclctl: %s refused: needs the admin role (uid 0, the "
			"daemon's own user, or its admin group) (%s)\n", what, strerror(-err));
	else
		fprintf(stderr, "ucclctl: %s refused by the daemon (%s)\n", what, strerror(-err));
	free(msg);
}

/* stdout written out, or why not on stderr: 0 or 1 (the exit status) */
static int stdout_done(void)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	fprintf(stderr, "ucclctl: writing output: %s\n", strerror(errno));
	return 1;
}

static int run(const struct opts *o, const struct cmd *c)
{
	int64_t deadline = now_ms() + o->timeout_ms;
	UcclCtl__AttachReq att = UCCL_CTL__ATTACH_REQ__INIT;
	UcclCtl__Request req = UCCL_CTL__REQUEST__INIT;
	/* every query request is an empty message; only the descriptor differs */
	UcclCtl__StatusReq q_status = UCCL_CTL__STATUS_REQ__INIT;
	UcclCtl__ClientsReq q_clients = UCCL_CTL__CLIENTS_REQ__INIT;
	UcclCtl__EndpointsReq q_endpoints = UCCL_CTL__ENDPOINTS_REQ__INIT;
	UcclCtl__MrsReq q_mrs = UCCL_CTL__MRS_REQ__INIT;
	UcclCtl__StatsReq q_stats = UCCL_CTL__STATS_REQ__INIT;
	UcclCtl__PeersReq q_peers = UCCL_CTL__PEERS_REQ__INIT;
	UcclCtl__ChannelsReq q_channels = UCCL_CTL__CHANNELS_REQ__INIT;
	UcclCtl__SetCcReq q_set_cc = UCCL_CTL__SET_CC_REQ__INIT;
	UcclCtl__Reply *rep = NULL;
	int fd = -1, r, ret = EXIT_FAIL;

	r = ctl_connect(o->socket, deadline, &fd);
	if (r < 0) {
		if (r == -ETIMEDOUT)
			fprintf(stderr, "ucclctl: cannot connect to %s: timed out after %d ms "
				"(is ucclsvcd running?)\n", o->socket, o->timeout_ms);
		else if (r == -ENOENT || r == -ECONNREFUSED)
			fprintf(stderr, "ucclctl: cannot connect to %s: %s (is ucclsvcd running?)\n",
				o->socket, strerror(-r));
		else if (r == -EACCES || r == -EPERM)
			/* the daemon may well be running: the hint would mislead */
			fprintf(stderr, "ucclctl: cannot connect to %s: %s (the socket or its "
				"directory is not accessible to this user)\n", o->socket, strerror(-r));
		else
			fprintf(stderr, "ucclctl: cannot connect to %s: %s\n", o->socket,
				strerror(-r));
		return EXIT_FAIL;
	}

	att.proto_version = UCCL_PROTO_VERSION;
	att.name = (char *)"ucclctl";
	att.has_observer = 1;
	att.observer = 1;
	req.seq = 1;
	req.body_case = UCCL_CTL__REQUEST__BODY_ATTACH;
	req.attach = &att;
	r = exchange(fd, &req, deadline, &rep);
	if (r < 0) {
		report_io(o, "attach", r);
		goto out_close;
	}
	if (rep->status < 0) {
		report_refusal("attach", rep);
		goto out_reply;
	}
	if (rep->body_case != UCCL_CTL__REPLY__BODY_ATTACH) {
		report_io(o, "attach", -EPROTO);
		goto out_reply;
	}
	uccl_ctl__reply__free_unpacked(rep, NULL);
	rep = NULL;

	req = (UcclCtl__Request)UCCL_CTL__REQUEST__INIT;
	req.seq = 2;
	req.body_case = c->req;
	switch (c->req) {
	case UCCL_CTL__REQUEST__BODY_STATUS: req.status = &q_status; break;
	case UCCL_CTL__REQUEST__BODY_CLIENTS: req.clients = &q_clients; break;
	case UCCL_CTL__REQUEST__BODY_ENDPOINTS: req.endpoints = &q_endpoints; break;
	case UCCL_CTL__REQUEST__BODY_MRS: req.mrs = &q_mrs; break;
	case UCCL_CTL__REQUEST__BODY_STATS: req.stats = &q_stats; break;
	case UCCL_CTL__REQUEST__BODY_PEERS:
		q_peers.lookup_peer = (char *)arg_peer;
		q_peers.lookup_name = (char *)arg_name;
		req.peers = &q_peers;
		break;
	case UCCL_CTL__REQUEST__BODY_CHANNELS:
		q_channels.paths_peer = (char *)arg_peer;   /* paths PEER; NULL: channels */
		req.channels = &q_channels;
		break;
	case UCCL_CTL__REQUEST__BODY_SET_CC:
		q_set_cc.peer = (char *)arg_peer;
		q_set_cc.cc = (char *)arg_name;
		req.set_cc = &q_set_cc;
		break;
	default: abort();
	}
	r = exchange(fd, &req, deadline, &rep);
	if (r < 0) {
		report_io(o, c->name, r);
		goto out_close;
	}
	if (rep->status < 0) {
		report_refusal(c->name, rep);
		goto out_reply;
	}
	if (rep->body_case != c->rep) {
		report_io(o, c->name, -EPROTO);
		goto out_reply;
	}
	if (c->req == UCCL_CTL__REQUEST__BODY_CHANNELS && arg_peer && !only_peer(rep, arg_peer)) {
		fprintf(stderr, "ucclctl: paths: the daemon predates it (it answered with every "
			"channel)\n");
		goto out_reply;
	}
	r = c->print(rep, o->json);
	if (r == -EPROTO) {           /* a member the answer must have is missing */
		fprintf(stderr, "ucclctl: %s: the daemon's answer is incomplete\n", c->name);
		goto out_reply;
	}
	if (r < 0) {
		fprintf(stderr, "ucclctl: writing output: %s\n", strerror(-r));
		goto out_reply;
	}
	ret = stdout_done();

out_reply:
	uccl_ctl__reply__free_unpacked(rep, NULL);
out_close:
	close(fd);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: ucclctl [OPTIONS] COMMAND\n"
		"Inspect a running ucclsvcd.\n"
		"\n"
		"Commands:\n"
		"  status      daemon version, uptime, totals and limits\n"
		"  clients     attached clients (admin)\n"
		"  endpoints   endpoints and their operation counters (admin)\n"
		"  mrs         registered memory regions (admin)\n"
		"  stats       the daemon's counters (admin)\n"
		"  peers       peer daemons: state, RTT, announced data plane\n"
		"  lookup PEER NAME\n"
		"              ask PEER's daemon whether an endpoint listens under NAME (admin)\n"
		"  channels    data channels to peers: RTT, window, packets, drops; NIC totals\n"
		"  set-cc PEER CC\n"
		"              switch PEER's channel to congestion controller CC (admin)\n"
		"  paths PEER  PEER's channel, path by path: RTT, packets in flight, chunks, losses\n"
		"\n"
		"Options:\n"
		"  -s, --socket PATH   control socket (default: $UCCL_SOCKET, else %s)\n"
		"  -j, --json          print JSON instead of text\n"
		"  -t, --timeout MS    give up after MS milliseconds (default %d)\n"
		"  -h, --help          show this help\n"
		"  -V, --version       show the version\n"
		"\n"
		"Exit status: 0 success, 1 failure, 2 usage error.\n",
		DEFAULT_SOCKET, DEFAULT_TIMEOUT_MS);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .timeout_ms = DEFAULT_TIMEOUT_MS };
	const struct cmd *c = NULL;
	int opt;

	while ((opt = getopt_long(argc, argv, "s:jt:hV", lopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			o.socket = *optarg ? optarg : NULL;   /* empty: unset, as in the library */
			break;
		case 'j':
			o.json = true;
			break;
		case 't': {
			char *end;
			long v;

			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 || v > INT_MAX) {
				fprintf(stderr, "ucclctl: --timeout: not a positive number of "
					"milliseconds: '%s'\n", optarg);
				return EXIT_USAGE;
			}
			o.timeout_ms = (int)v;
			break;
		}
		case 'h':
			usage(stdout);
			return stdout_done();
		case 'V':
			printf("ucclctl %s (control protocol %u)\n", PACKAGE_VERSION,
			       UCCL_PROTO_VERSION);
			return stdout_done();
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "ucclctl: no command given\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[optind], cmds[i].name) == 0)
			c = &cmds[i];
	if (!c) {
		fprintf(stderr, "ucclctl: unknown command '%s' (status, clients, endpoints, mrs, "
			"stats, peers, lookup, channels, set-cc, paths)\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (argc - optind - 1 < c->nargs) {
		fprintf(stderr, "ucclctl: usage: ucclctl %s %s\n", c->name, c->args);
		return EXIT_USAGE;
	}
	if (argc - optind - 1 > c->nargs) {
		fprintf(stderr, "ucclctl: %s takes %s; unexpected argument '%s' (one command at a time)\n",
			c->name, c->nargs ? c->args : "no arguments", argv[optind + 1 + c->nargs]);
		return EXIT_USAGE;
	}
	if (c->nargs >= 1)
		arg_peer = argv[optind + 1];
	if (c->nargs == 2)
		arg_name = argv[optind + 2];
	if (!o.socket) {
		const char *env = getenv("UCCL_SOCKET");

		o.socket = env && *env ? env : DEFAULT_SOCKET;
	}
	return run(&o, c);
}
