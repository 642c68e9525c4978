/* SPDX-License-Identifier: MIT */
/*
 * sim_net: the fabric model. Events are packet arrivals at a node, a port
 * finishing a packet, a host's timer, a flow's start and a sampling tick.
 *
 * A host's NIC has no queue of its own: when it is idle it asks its
 * channels, round robin, for one packet each (tpchan_tx with max 1), the
 * way an engine thread feeds a NIC under flow control, so a packet's send
 * timestamp is the moment it starts onto the wire. When no channel has
 * anything, the host sleeps until the earliest tpchan_next_deadline().
 * Switch output ports are drop-tail FIFOs in bytes; a packet arriving at a
 * switch is marked (ECN, DATA packets only: they are the ECN-capable ones)
 * from the queue it finds, then queued or dropped. Store and forward: a
 * packet reaches the next node after its whole serialisation plus the
 * link's delay. Serialisation times carry their sub-nanosecond remainder
 * per port, so rates are exact on average. Routes are shortest paths in
 * hops computed once (breadth-first from every host, never through a host);
 * among equal next hops a switch picks by a hash of (seed, switch, source
 * host, destination host, path). Loss is decided as a packet starts onto a
 * link; a lost packet still occupies the link.
 *
 * PFC (sim_pfc): a packet remembers the switch port it came in through; the
 * bytes are charged to that ingress port from arrival until the output port
 * finishes sending them. Crossing xoff schedules EV_PAUSE for the upstream
 * transmitter one link delay later, falling to xon EV_RESUME; the pair
 * alternates per link and both travel the same delay, so they arrive in
 * order. The PAUSE frame itself takes no link time (it is 64 bytes; the
 * headroom covers the packet it may wait behind).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sim/sim_core.h"
#include "engine/sim/sim_net.h"
#include "engine/pull.h"
#include "engine/tpchan.h"
#include "engine/wire.h"

#define NONE UINT32_MAX

enum { EV_ARRIVE, EV_PORT_DONE, EV_WAKE, EV_FLOW, EV_SAMPLE, EV_PAUSE, EV_RESUME };

struct pkt {
	struct pkt *next;
	uint32_t src, dst;             /* host indices */
	uint32_t len;
	uint16_t path;
	bool ect, ce;
	uint32_t hint_ppm;             /* inband: worst queue on the way (sim_net_params) */
	uint32_t in_port;              /* pfc: the receiving node's port of the last link */
	uint8_t buf[];
};

struct port {
	uint32_t node, peer, peer_port;
	uint64_t rate_mbps, delay_ns, rem;
	bool busy, bad;                /* bad: Gilbert-Elliott state */
	uint64_t rng;
	struct pkt *qhead, *qtail;
	uint64_t qbytes;
	uint32_t qcol;                 /* column in the queue samples, NONE for a NIC */
	/* pfc */
	uint64_t in_bytes;             /* switch: bytes held that came in on this link */
	bool xoff;                     /* switch: PAUSE sent upstream, no RESUME yet */
	bool paused;                   /* this transmitter is held by its peer */
	uint64_t paused_at;
	uint32_t cur_in, cur_len;      /* ingress port and length of the packet on the wire */
	struct sim_port_info st;
	char name[48];
};

struct flow {
	struct sim_flow_info i;
	uint32_t next_wait;            /* channel's -EAGAIN list */
	uint64_t *rows;                /* delivered bytes per sampling row */
	size_t nrows;
};

struct hchan {
	struct sim_net *net;
	struct tpchan *c;
	uint32_t host, remote;
	uint32_t wait_head, wait_tail; /* flows refused with -EAGAIN, in order */
};

struct node {
	bool is_host;
	uint32_t idx;                  /* host or switch index */
	uint32_t *ports;
	uint32_t nports;
	char name[24];
	/* host */
	struct hchan **ch;
	uint32_t nch, capch, rr;
	uint64_t wake_t;
	/* the host's credit pacer at its NIC rate: grants credit to the
	 * senders of its channels that run a receiver-driven cc (eqds) */
	struct pull *pull;
	uint64_t pull_t;               /* when it next has work */
};

struct sim_net {
	struct sim_net_params p;
	struct sim_evq *q;
	uint64_t now;
	struct node *nodes;
	uint32_t nnodes, capnodes;
	uint32_t *hosts, nhosts;       /* node of each host */
	uint32_t nswitches;
	struct port *ports;
	uint32_t nports, capports, nqports;
	struct flow *flows;
	uint32_t nflows, capflows;
	/* routes: for switch node s (by switch index) and host h, candidate
	 * ports route_v[route_off[s * nhosts + h] ...] count route_n[...] */
	uint32_t *route_off, *route_n, *route_v;
	bool routed, started;
	struct pkt *pool;
	uint64_t *qsamples;            /* rows x nqports */
	size_t nsamples, capsamples;
	struct tpchan_txpkt txp;
	struct pkt *txpkt;             /* the packet txp.buf belongs to */
	struct sim_net_stats st;
};

/* ---- packets ---- */

static struct pkt *pkt_get(struct sim_net *n)
{
	struct pkt *k = n->pool;

	if (k) {
		n->pool = k->next;
		return k;
	}
	return malloc(sizeof(*k) + n->p.mtu);
}

static void pkt_put(struct sim_net *n, struct pkt *k)
{
	k->next = n->pool;
	n->pool = k;
}

/* ---- construction ---- */

struct sim_net *sim_net_new(const struct sim_net_params *p)
{
	struct sim_net *n;

	if (!p || p->mtu <= WIRE_DATA_HDR_LEN || p->mtu > WIRE_DATA_HDR_LEN + WIRE_MAX_PAYLOAD)
		return NULL;
	if (p->npaths < 1 || p->npaths > 256)
		return NULL;
	if (p->ecn.mode == SIM_ECN_RED && p->ecn.min_bytes >= p->ecn.max_bytes)
		return NULL;
	if (p->pfc.on && (p->pfc.xon_bytes >= p->pfc.xoff_bytes ||
			  p->pfc.xoff_bytes > p->queue_bytes ||
			  p->queue_bytes - p->pfc.xoff_bytes < p->mtu))
		return NULL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->p = *p;
	n->q = sim_evq_new();
	n->txpkt = NULL;
	if (!n->q) {
		free(n);
		return NULL;
	}
	return n;
}

struct sim_net *sim_net_free(struct sim_net *n)
{
	struct pkt *k;

	if (!n)
		return NULL;
	for (size_t i = 0; i < sim_evq_len(n->q); i++) {
		const struct sim_ev *e = sim_evq_at(n->q, i);

		if (e->kind == EV_ARRIVE)
			free(e->p);
	}
	sim_evq_free(n->q);
	for (uint32_t i = 0; i < n->nports; i++)
		while ((k = n->ports[i].qhead)) {
			n->ports[i].qhead = k->next;
			free(k);
		}
	for (uint32_t i = 0; i < n->nnodes; i++) {
		struct node *d = &n->nodes[i];

		for (uint32_t c = 0; c < d->nch; c++) {
			tpchan_free(d->ch[c]->c);
			free(d->ch[c]);
		}
		free(d->ch);
		free(d->ports);
		pull_free(d->pull);
	}
	while ((k = n->pool)) {
		n->pool = k->next;
		free(k);
	}
	for (uint32_t i = 0; i < n->nflows; i++)
		free(n->flows[i].rows);
	free(n->txpkt);
	free(n->nodes);
	free(n->hosts);
	free(n->ports);
	free(n->flows);
	free(n->route_off);
	free(n->route_n);
	free(n->route_v);
	free(n->qsamples);
	free(n);
	return NULL;
}

static int grow(void **v, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t c;
	void *nv;

	if (need <= *cap)
		return 0;
	c = *cap ? *cap : 8;
	while (c < need)                        /* need <= UINT32_MAX: stops */
		c = c > UINT32_MAX / 2 ? UINT32_MAX : c * 2;
	nv = realloc(*v, (size_t)c * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

static int add_node(struct sim_net *n, bool host, const char *name)
{
	struct node *d;
	int r;

	if (n->started)
		return -EBUSY;
	if (n->nnodes >= SIM_MAX_NODES)
		return -E2BIG;
	r = grow((void **)&n->nodes, &n->capnodes, n->nnodes + 1, sizeof(*n->nodes));
	if (r < 0)
		return r;
	if (host) {
		uint32_t *h = realloc(n->hosts, (n->nhosts + 1) * sizeof(*h));

		if (!h)
			return -ENOMEM;
		n->hosts = h;
		h[n->nhosts] = n->nnodes;
	}
	d = &n->nodes[n->nnodes];
	*d = (struct node){ .is_host = host, .idx = host ? n->nhosts++ : n->nswitches++,
			    .wake_t = UINT64_MAX };
	snprintf(d->name, sizeof(d->name), "%s", name);
	n->nnodes++;
	return (int)d->idx;
}

int sim_net_add_host(struct sim_net *n, const char *name)
{
	return add_node(n, true, name);
}

int sim_net_add_switch(struct sim_net *n, const char *name)
{
	return add_node(n, false, name);
}

static uint32_t switch_node(const struct sim_net *n, uint32_t sw)
{
	for (uint32_t i = 0; i < n->nnodes; i++)
		if (!n->nodes[i].is_host && n->nodes[i].idx == sw)
			return i;
	return NONE;
}

static int add_port(struct sim_net *n, uint32_t node, uint32_t peer, uint64_t rate,
		    uint64_t delay)
{
	struct node *d = &n->nodes[node];
	uint32_t *pv;
	struct port *pt;
	int r;

	r = grow((void **)&n->ports, &n->capports, n->nports + 1, sizeof(*n->ports));
	if (r < 0)
		return r;
	pv = realloc(d->ports, (d->nports + 1) * sizeof(*pv));
	if (!pv)
		return -ENOMEM;
	d->ports = pv;
	pv[d->nports++] = n->nports;
	pt = &n->ports[n->nports];
	*pt = (struct port){ .node = node, .peer = peer, .peer_port = NONE, .rate_mbps = rate,
			     .delay_ns = delay, .qcol = NONE, .cur_in = NONE };
	pt->rng = sim_mix(n->p.seed ^ sim_mix(0x1055ull + n->nports));
	snprintf(pt->name, sizeof(pt->name), "%s>%s", d->name,
		 d->is_host ? "nic" : n->nodes[peer].name);
	pt->st.is_switch = !d->is_host;
	if (!d->is_host)
		pt->qcol = n->nqports++;
	return (int)n->nports++;
}

static int link_nodes(struct sim_net *n, uint32_t a, uint32_t b, uint64_t rate, uint64_t delay)
{
	int pa, pb;

	if (n->started)
		return -EBUSY;
	if (a == NONE || b == NONE || a == b || rate == 0 || rate > 100000000)
		return -EINVAL;
	if ((n->nodes[a].is_host && n->nodes[a].nports) ||
	    (n->nodes[b].is_host && n->nodes[b].nports))
		return -EEXIST;   /* one NIC per host */
	pa = add_port(n, a, b, rate, delay);
	if (pa < 0)
		return pa;
	pb = add_port(n, b, a, rate, delay);
	if (pb < 0)
		return pb;
	n->ports[pa].peer_port = (uint32_t)pb;
	n->ports[pb].peer_port = (uint32_t)pa;
	return 0;
}

int sim_net_link_host(struct sim_net *n, uint32_t host, uint32_t sw, uint64_t rate_mbps,
		      uint64_t delay_ns)
{
	if (host >= n->nhosts)
		return -EINVAL;
	return link_nodes(n, n->hosts[host], switch_node(n, sw), rate_mbps, delay_ns);
}

int sim_net_link_switches(struct sim_net *n, uint32_t a, uint32_t b, uint64_t rate_mbps,
			  uint64_t delay_ns)
{
	return link_nodes(n, switch_node(n, a), switch_node(n, b), rate_mbps, delay_ns);
}

int sim_net_link_hosts(struct sim_net *n, uint32_t a, uint32_t b, uint64_t rate_mbps,
		       uint64_t delay_ns)
{
	if (a >= n->nhosts || b >= n->nhosts)
		return -EINVAL;
	return link_nodes(n, n->hosts[a], n->hosts[b], rate_mbps, delay_ns);
}

uint32_t sim_net_hosts(const struct sim_net *n)
{
	return n->nhosts;
}

int sim_net_add_flow(struct sim_net *n, uint32_t src, uint32_t dst, uint64_t bytes,
		     uint64_t start_ns)
{
	int r;

	if (n->started)
		return -EBUSY;
	if (src >= n->nhosts || dst >= n->nhosts || src == dst || bytes == 0)
		return -EINVAL;
	if (n->nflows >= SIM_MAX_FLOWS)
		return -E2BIG;
	r = grow((void **)&n->flows, &n->capflows, n->nflows + 1, sizeof(*n->flows));
	if (r < 0)
		return r;
	n->flows[n->nflows] = (struct flow){
		.i = { .src = src, .dst = dst, .bytes = bytes, .start_ns = start_ns },
		.next_wait = NONE,
	};
	return (int)n->nflows++;
}

/* ---- routing ---- */

static int route(struct sim_net *n)
{
	uint32_t *dist = NULL, *fifo = NULL, nv = 0, capv = 0;
	size_t cells = (size_t)n->nswitches * n->nhosts;
	int r = -ENOMEM;

	n->route_off = calloc(cells ? cells : 1, sizeof(uint32_t));
	n->route_n = calloc(cells ? cells : 1, sizeof(uint32_t));
	dist = malloc(n->nnodes * sizeof(*dist));
	fifo = malloc(n->nnodes * sizeof(*fifo));
	if (!n->route_off || !n->route_n || !dist || !fifo)
		goto out;
	for (uint32_t h = 0; h < n->nhosts; h++) {
		uint32_t head = 0, tail = 0;

		for (uint32_t i = 0; i < n->nnodes; i++)
			dist[i] = NONE;
		dist[n->hosts[h]] = 0;
		fifo[tail++] = n->hosts[h];
		while (head < tail) {
			uint32_t u = fifo[head++];
			const struct node *d = &n->nodes[u];

			if (d->is_host && u != n->hosts[h])
				continue;   /* hosts do not forward */
			for (uint32_t k = 0; k < d->nports; k++) {
				uint32_t v = n->ports[d->ports[k]].peer;

				if (dist[v] == NONE) {
					dist[v] = dist[u] + 1;
					fifo[tail++] = v;
				}
			}
		}
		for (uint32_t u = 0; u < n->nnodes; u++) {
			const struct node *d = &n->nodes[u];
			size_t cell;

			if (d->is_host || dist[u] == NONE)
				continue;
			cell = (size_t)d->idx * n->nhosts + h;
			n->route_off[cell] = nv;
			for (uint32_t k = 0; k < d->nports; k++) {
				uint32_t v = n->ports[d->ports[k]].peer;

				if (dist[v] != NONE && dist[v] + 1 == dist[u] &&
				    (!n->nodes[v].is_host || v == n->hosts[h])) {
					if (nv == UINT32_MAX ||
					    grow((void **)&n->route_v, &capv, nv + 1, sizeof(uint32_t)) < 0)
						goto out;
					n->route_v[nv++] = d->ports[k];
					n->route_n[cell]++;
				}
			}
		}
	}
	n->routed = true;
	r = 0;
out:
	free(dist);
	free(fifo);
	return r;
}

/* ---- ports ---- */

static uint64_t ser_ns(struct port *pt, uint32_t len)
{
	uint64_t num = (uint64_t)len * 8000 + pt->rem;   /* bits * 1000 / Mbit/s = ns */

	pt->rem = num % pt->rate_mbps;
	return num / pt->rate_mbps;
}

static bool link_loses(struct sim_net *n, struct port *pt)
{
	const struct sim_loss *l = &n->p.loss;

	switch (l->mode) {
	case SIM_LOSS_RANDOM:
		return sim_chance(&pt->rng, l->ppm);
	case SIM_LOSS_BURSTY:
		if (sim_chance(&pt->rng, pt->bad ? l->p_bg_ppm : l->p_gb_ppm))
			pt->bad = !pt->bad;
		return sim_chance(&pt->rng, pt->bad ? l->bad_ppm : l->good_ppm);
	default:
		return false;
	}
}

static int port_start(struct sim_net *n, uint32_t pi, struct pkt *k)
{
	struct port *pt = &n->ports[pi];
	uint64_t done = n->now + ser_ns(pt, k->len);
	int r;

	pt->busy = true;
	pt->st.tx_pkts++;
	pt->st.tx_bytes += k->len;
	if (n->p.pfc.on && !n->nodes[pt->node].is_host) {
		pt->cur_in = k->in_port;     /* released when the port is done */
		pt->cur_len = k->len;
	}
	k->in_port = pt->peer_port;
	r = sim_evq_push(n->q, done, EV_PORT_DONE, pi, NULL);
	if (r < 0) {
		free(k);
		return r;
	}
	if (link_loses(n, pt)) {
		pt->st.lost++;
		pkt_put(n, k);
		return 0;
	}
	r = sim_evq_push(n->q, done + pt->delay_ns, EV_ARRIVE, pt->peer, k);
	if (r < 0)
		free(k);
	return r;
}

static bool ecn_mark(struct sim_net *n, struct port *pt)
{
	const struct sim_ecn *e = &n->p.ecn;
	uint64_t q = pt->qbytes;

	switch (e->mode) {
	case SIM_ECN_STEP:
		return q >= e->k_bytes;
	case SIM_ECN_RED:
		if (q < e->min_bytes)
			return false;
		if (q >= e->max_bytes)
			return true;
		return sim_chance(&pt->rng, (uint32_t)((uint64_t)e->pmax_ppm * (q - e->min_bytes) /
						       (e->max_bytes - e->min_bytes)));
	default:
		return false;
	}
}

/* inband: the congestion degree of a port's queue, in ppm of the depth at
 * which ECN marks everything (sim_net_params.inband). */
static uint32_t queue_degree(const struct sim_net *n, const struct port *pt)
{
	const struct sim_ecn *e = &n->p.ecn;
	uint64_t full = e->mode == SIM_ECN_STEP ? e->k_bytes :
			e->mode == SIM_ECN_RED ? e->max_bytes : n->p.queue_bytes;

	if (pt->qbytes >= full)
		return 1000000;
	return (uint32_t)(pt->qbytes * 1000000 / full);
}

/* ---- pfc ---- */

/* A packet came into a switch: charge its ingress port, PAUSE upstream at
 * xoff. Never drops: past the buffer it is counted (sim_pfc). */
static int pfc_charge(struct sim_net *n, const struct pkt *k)
{
	struct port *ip = &n->ports[k->in_port];

	if (ip->in_bytes + k->len > n->p.queue_bytes)
		ip->st.pfc_overflow++;
	ip->in_bytes += k->len;
	if (ip->xoff || ip->in_bytes < n->p.pfc.xoff_bytes)
		return 0;
	ip->xoff = true;
	ip->st.pauses++;
	return sim_evq_push(n->q, n->now + ip->delay_ns, EV_PAUSE, ip->peer_port, NULL);
}

/* Switch port pi finished sending a packet: release it from its ingress
 * port, RESUME upstream at xon. */
static int pfc_release(struct sim_net *n, struct port *pt)
{
	struct port *ip;

	if (pt->cur_in == NONE)
		return 0;
	ip = &n->ports[pt->cur_in];
	pt->cur_in = NONE;
	ip->in_bytes -= pt->cur_len;
	if (!ip->xoff || ip->in_bytes > n->p.pfc.xon_bytes)
		return 0;
	ip->xoff = false;
	return sim_evq_push(n->q, n->now + ip->delay_ns, EV_RESUME, ip->peer_port, NULL);
}

static int host_kick(struct sim_net *n, struct node *d);

/* A switch output port: start its next queued packet if it may. */
static int port_next(struct sim_net *n, uint32_t pi)
{
	struct port *pt = &n->ports[pi];
	struct pkt *k = pt->qhead;

	if (!k || pt->busy || pt->paused)
		return 0;
	pt->qhead = k->next;
	if (!pt->qhead)
		pt->qtail = NULL;
	pt->qbytes -= k->len;
	return port_start(n, pi, k);
}

static int pfc_pause(struct sim_net *n, uint32_t pi, bool pause)
{
	struct port *pt = &n->ports[pi];
	struct node *d = &n->nodes[pt->node];

	if (pause == pt->paused)
		return 0;
	pt->paused = pause;
	if (pause) {
		pt->paused_at = n->now;
		return 0;
	}
	pt->st.paused_ns += n->now - pt->paused_at;
	return d->is_host ? host_kick(n, d) : port_next(n, pi);
}

static int switch_rx(struct sim_net *n, const struct node *d, struct pkt *k)
{
	size_t cell = (size_t)d->idx * n->nhosts + k->dst;
	uint32_t cnt = n->route_n[cell], pi;
	struct port *pt;

	if (!cnt) {
		n->st.stray++;
		pkt_put(n, k);
		return 0;
	}
	pi = n->route_v[n->route_off[cell]];
	if (cnt > 1) {
		uint64_t h = sim_mix(n->p.seed ^ sim_mix(0x5eed0000ull + d->idx));

		h = sim_mix(h ^ ((uint64_t)k->src << 32 | k->dst));
		h = sim_mix(h ^ k->path);
		pi = n->route_v[n->route_off[cell] + h % cnt];
	}
	pt = &n->ports[pi];
	if (n->p.pfc.on) {
		int r = pfc_charge(n, k);

		if (r < 0) {
			pkt_put(n, k);
			return r;
		}
	} else if (pt->qbytes + k->len > n->p.queue_bytes) {
		pt->st.drops++;
		pkt_put(n, k);
		return 0;
	}
	if (k->ect && !k->ce && ecn_mark(n, pt)) {
		k->ce = true;
		pt->st.marks++;
	}
	if (k->ect && n->p.inband) {
		uint32_t deg = queue_degree(n, pt);

		if (deg > k->hint_ppm)
			k->hint_ppm = deg;
	}
	if (!pt->busy && !pt->paused)
		return port_start(n, pi, k);
	k->next = NULL;
	if (pt->qtail)
		pt->qtail->next = k;
	else
		pt->qhead = k;
	pt->qtail = k;
	pt->qbytes += k->len;
	if (pt->qbytes > pt->st.max_queue)
		pt->st.max_queue = pt->qbytes;
	return 0;
}

/* ---- hosts and channels ---- */

static uint8_t pattern(uint32_t flow, uint64_t off)
{
	return (uint8_t)sim_mix((uint64_t)flow << 40 ^ off);
}

static int cb_read(void *arg, uint64_t cookie, uint64_t off, void *dst, uint32_t len)
{
	(void)arg;
	memset(dst, pattern((uint32_t)cookie, off), len);
	return 0;
}

static int cb_deliver(void *arg, const struct wire_data *d)
{
	struct hchan *hc = arg;
	struct sim_net *n = hc->net;
	struct flow *f;
	uint8_t want;

	if (d->rkey >= n->nflows) {
		n->st.bad_payload += d->payload_len;
		return -EINVAL;
	}
	f = &n->flows[d->rkey];
	want = pattern((uint32_t)d->rkey, d->msg_off);
	if (f->i.src != hc->remote || f->i.dst != hc->host ||
	    d->msg_off + d->payload_len > f->i.bytes ||
	    (d->payload_len && (d->payload[0] != want || d->payload[d->payload_len - 1] != want))) {
		n->st.bad_payload += d->payload_len;
		return -EINVAL;
	}
	f->i.delivered += d->payload_len;
	if (n->p.sample_ns) {
		size_t row = n->now / n->p.sample_ns;

		if (row >= f->nrows) {
			size_t nr = row + 1 > 2 * f->nrows ? row + 1 : 2 * f->nrows;
			uint64_t *v = realloc(f->rows, nr * sizeof(*v));

			if (!v)
				return -ENOMEM;
			memset(v + f->nrows, 0, (nr - f->nrows) * sizeof(*v));
			f->rows = v;
			f->nrows = nr;
		}
		f->rows[row] += d->payload_len;
	}
	return 0;
}

static void submit_waiting(struct hchan *hc);

static void cb_complete(void *arg, uint64_t cookie, int res)
{
	struct hchan *hc = arg;
	struct sim_net *n = hc->net;
	struct flow *f = &n->flows[cookie];

	f->i.done = true;
	f->i.res = res;
	f->i.end_ns = n->now;
	n->st.flows_done++;
	if (res)
		n->st.flows_failed++;
	submit_waiting(hc);
}

static const struct tpchan_cb chan_cb = {
	.read = cb_read, .deliver = cb_deliver, .complete = cb_complete,
};

static uint64_t token(const struct sim_net *n, uint32_t from, uint32_t to)
{
	return sim_mix(n->p.seed ^ sim_mix((uint64_t)from << 32 | to)) | 1;
}

static struct hchan *find_chan(const struct node *d, uint32_t remote)
{
	for (uint32_t i = 0; i < d->nch; i++)
		if (d->ch[i]->remote == remote)
			return d->ch[i];
	return NULL;
}

/* 0 and the channel in *out (when out is given), -EINVAL when the transport
 * refuses the parameters, or -ENOMEM. */
static int new_chan(struct sim_net *n, uint32_t host, uint32_t remote, struct hchan **out)
{
	struct node *d = &n->nodes[n->hosts[host]];
	struct tpchan_params tp = {
		.tx_token = token(n, remote, host), .rx_token = token(n, host, remote),
		.mtu = n->p.mtu, .chunk_bytes = n->p.chunk_bytes, .npaths = n->p.npaths,
		.max_inflight_bytes = n->p.max_inflight_bytes, .go_back_n = n->p.go_back_n,
		.rto_min_ns = n->p.rto_min_ns, .dupthresh = n->p.dupthresh, .cc = n->p.cc,
		.rack_off = n->p.rack_off,
		.adaptive_chunk = n->p.adaptive_chunk,
		.path_per_packet = n->p.path_per_packet,
		.path_run_bytes = n->p.path_run_bytes,
		.cc_delay_slack_ns = n->p.cc_delay_slack_ns,
		.cc_base_rtt_ns = n->p.cc_base_rtt_ns,
		.seed = sim_mix(n->p.seed ^ ((uint64_t)host << 32 | remote)),
		.cb = &chan_cb,
	};
	struct hchan *hc;

	/* the NIC's rate, for a CC that starts at line rate (dcqcn) */
	for (uint32_t i = 0; i < d->nports; i++) {
		uint64_t bps = n->ports[d->ports[i]].rate_mbps * 1000000;

		if (bps > tp.cc_line_rate_bps)
			tp.cc_line_rate_bps = bps;
	}
	if (tp.rto_min_ns && tp.rto_min_ns > 100000000)
		tp.rto_max_ns = tp.rto_min_ns;
	if (!tpchan_params_ok(&tp))
		return -EINVAL;
	if (grow((void **)&d->ch, &d->capch, d->nch + 1, sizeof(*d->ch)) < 0)
		return -ENOMEM;
	hc = calloc(1, sizeof(*hc));
	if (!hc)
		return -ENOMEM;
	*hc = (struct hchan){ .net = n, .host = host, .remote = remote,
			      .wait_head = NONE, .wait_tail = NONE };
	tp.cb_arg = hc;
	hc->c = tpchan_new(&tp);
	if (!hc->c) {
		free(hc);
		return -ENOMEM;
	}
	if (!d->pull) {
		d->pull = pull_new(n->ports[d->ports[0]].rate_mbps * 1000000, 0);
		d->pull_t = UINT64_MAX;
	}
	if (!d->pull || pull_add(d->pull, hc->c) < 0) {
		tpchan_free(hc->c);
		free(hc);
		return -ENOMEM;
	}
	d->ch[d->nch++] = hc;
	if (out)
		*out = hc;
	return 0;
}

static int submit(struct hchan *hc, uint32_t fi)
{
	const struct flow *f = &hc->net->flows[fi];
	struct tpchan_msg m = {
		.cookie = fi, .opcode = 2 /* UCCL_OP_PUT */, .rkey = fi, .len = f->i.bytes,
	};

	return tpchan_submit(hc->c, &m);
}

static void submit_waiting(struct hchan *hc)
{
	while (hc->wait_head != NONE) {
		uint32_t fi = hc->wait_head;

		if (submit(hc, fi) < 0)
			return;
		hc->wait_head = hc->net->flows[fi].next_wait;
		if (hc->wait_head == NONE)
			hc->wait_tail = NONE;
	}
}

static int wake_at(struct sim_net *n, struct node *d, uint64_t t)
{
	if (t >= d->wake_t)
		return 0;
	d->wake_t = t;
	return sim_evq_push(n->q, t, EV_WAKE, d->idx, NULL);
}

/* The host's NIC is idle: give it the next packet, round robin over the
 * channels, or sleep until the earliest channel deadline. */
static int host_kick(struct sim_net *n, struct node *d)
{
	struct port *pt = &n->ports[d->ports[0]];
	uint64_t next = UINT64_MAX;

	/* credit first: a grant it makes is a packet the loop below sends */
	if (d->pull)
		d->pull_t = pull_run(d->pull, n->now);
	if (pt->busy || pt->paused)
		return 0;   /* the port's done event or the RESUME kicks again */
	for (uint32_t k = 0; k < d->nch; k++) {
		struct hchan *hc = d->ch[(d->rr + k) % d->nch];
		struct pkt *pk;

		if (tpchan_tx(hc->c, n->now, &n->txp, 1) != 1)
			continue;
		d->rr = (d->rr + k + 1) % d->nch;
		pk = n->txpkt;
		n->txpkt = pkt_get(n);
		if (!n->txpkt) {
			free(pk);
			return -ENOMEM;
		}
		n->txp.buf = n->txpkt->buf;
		pk->src = d->idx;
		pk->dst = hc->remote;
		pk->len = n->txp.len;
		pk->path = n->txp.path;
		pk->ect = pk->len > 2 && pk->buf[2] == WIRE_DATA;
		pk->ce = false;
		pk->hint_ppm = 0;
		return port_start(n, d->ports[0], pk);
	}
	if (d->pull)
		next = d->pull_t;
	for (uint32_t k = 0; k < d->nch; k++) {
		uint64_t t = tpchan_next_deadline(d->ch[k]->c);

		if (t < next)
			next = t;
	}
	if (next == UINT64_MAX)
		return 0;
	if (next <= n->now)
		next = n->now + 1;   /* due but sent nothing: try again shortly */
	return wake_at(n, d, next);
}

static int host_rx(struct sim_net *n, struct node *d, struct pkt *k)
{
	struct hchan *hc = k->dst == d->idx ? find_chan(d, k->src) : NULL;

	if (!hc) {
		n->st.stray++;
		pkt_put(n, k);
		return 0;
	}
	if (tpchan_rx_ext(hc->c, k->buf, k->len, n->now, k->ce, k->hint_ppm) < 0)
		n->st.rx_refused++;
	pkt_put(n, k);
	return host_kick(n, d);
}

static int flow_start(struct sim_net *n, uint32_t fi)
{
	struct flow *f = &n->flows[fi];
	struct node *sd = &n->nodes[n->hosts[f->i.src]];
	struct node *dd = &n->nodes[n->hosts[f->i.dst]];
	struct hchan *hc = find_chan(sd, f->i.dst);
	int r;

	if (!hc) {
		r = new_chan(n, f->i.src, f->i.dst, &hc);
		if (r == 0 && !find_chan(dd, f->i.src))
			r = new_chan(n, f->i.dst, f->i.src, NULL);
		if (r < 0)
			return r;
	}
	if (hc->wait_head == NONE) {
		r = submit(hc, fi);
		if (r == 0)
			return host_kick(n, sd);
		if (r != -EAGAIN)
			return r;
	}
	if (hc->wait_tail == NONE)
		hc->wait_head = fi;
	else
		n->flows[hc->wait_tail].next_wait = fi;
	hc->wait_tail = fi;
	return 0;
}

/* ---- sampling ---- */

static int sample(struct sim_net *n)
{
	size_t need = (n->nsamples + 1) * n->nqports;

	if (need > n->capsamples) {
		size_t cap = n->capsamples ? 2 * n->capsamples : 64 * (n->nqports + 1);
		uint64_t *v;

		while (cap < need)
			cap *= 2;
		v = realloc(n->qsamples, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		n->qsamples = v;
		n->capsamples = cap;
	}
	for (uint32_t i = 0; i < n->nports; i++)
		if (n->ports[i].qcol != NONE)
			n->qsamples[n->nsamples * n->nqports + n->ports[i].qcol] = n->ports[i].qbytes;
	n->nsamples++;
	if (n->st.flows_done == n->nflows)
		return 0;
	return sim_evq_push(n->q, n->now + n->p.sample_ns, EV_SAMPLE, 0, NULL);
}

/* ---- the loop ---- */

static int dispatch(struct sim_net *n, const struct sim_ev *e)
{
	struct port *pt;
	struct node *d;

	switch (e->kind) {
	case EV_ARRIVE:
		d = &n->nodes[e->id];
		return d->is_host ? host_rx(n, d, e->p) : switch_rx(n, d, e->p);
	case EV_PORT_DONE: {
		int r;

		pt = &n->ports[e->id];
		pt->busy = false;
		d = &n->nodes[pt->node];
		if (d->is_host)
			return host_kick(n, d);
		r = pfc_release(n, pt);
		return r < 0 ? r : port_next(n, e->id);
	}
	case EV_PAUSE:
	case EV_RESUME:
		return pfc_pause(n, e->id, e->kind == EV_PAUSE);
	case EV_WAKE:
		d = &n->nodes[n->hosts[e->id]];
		if (e->t == d->wake_t)
			d->wake_t = UINT64_MAX;
		return host_kick(n, d);
	case EV_FLOW:
		return flow_start(n, e->id);
	case EV_SAMPLE:
		return sample(n);
	}
	return -EINVAL;
}

static int start(struct sim_net *n)
{
	int r;

	for (uint32_t h = 0; h < n->nhosts; h++)
		if (n->nodes[n->hosts[h]].nports != 1)
			return -ENOTCONN;
	r = route(n);
	if (r < 0)
		return r;
	n->txpkt = pkt_get(n);
	if (!n->txpkt)
		return -ENOMEM;
	n->txp.buf = n->txpkt->buf;
	for (uint32_t i = 0; i < n->nflows; i++) {
		r = sim_evq_push(n->q, n->flows[i].i.start_ns, EV_FLOW, i, NULL);
		if (r < 0)
			return r;
	}
	if (n->p.sample_ns)
		return sim_evq_push(n->q, 0, EV_SAMPLE, 0, NULL);
	return 0;
}

int sim_net_run(struct sim_net *n)
{
	struct sim_ev e;
	int r;

	if (n->started)
		return -EALREADY;
	n->started = true;
	r = start(n);
	if (r < 0)
		return r;
	while (n->st.flows_done < n->nflows) {
		if (!sim_evq_pop(n->q, &e))
			return -ENODATA;
		if (n->p.time_limit_ns && e.t > n->p.time_limit_ns) {
			if (e.kind == EV_ARRIVE)
				free(e.p);
			return -ETIME;
		}
		n->now = e.t;
		n->st.events++;
		r = dispatch(n, &e);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- results ---- */

/* Paused time so far, counting a pause still in force at the end. */
static uint64_t port_paused_ns(const struct sim_net *n, const struct port *pt)
{
	return pt->st.paused_ns + (pt->paused ? n->now - pt->paused_at : 0);
}

void sim_net_get_stats(const struct sim_net *n, struct sim_net_stats *out)
{
	*out = n->st;
	out->now_ns = n->now;
	for (uint32_t i = 0; i < n->nports; i++) {
		out->drops += n->ports[i].st.drops;
		out->marks += n->ports[i].st.marks;
		out->lost += n->ports[i].st.lost;
		out->pauses += n->ports[i].st.pauses;
		out->paused_ns += port_paused_ns(n, &n->ports[i]);
		out->pfc_overflow += n->ports[i].st.pfc_overflow;
	}
	for (uint32_t i = 0; i < n->nnodes; i++)
		for (uint32_t c = 0; c < n->nodes[i].nch; c++) {
			struct tpchan_stats s;

			tpchan_get_stats(n->nodes[i].ch[c]->c, &s);
			out->data_pkts += s.data_pkts_tx;
			out->retx_pkts += s.retx_pkts;
			out->fast_retx += s.fast_retx;
			out->spurious_retx += s.spurious_retx;
			out->timeouts += s.retx_timeouts;
			out->acks += s.acks_tx;
			out->small_chunks += s.small_chunks;
		}
}

size_t sim_net_nflows(const struct sim_net *n)
{
	return n->nflows;
}

void sim_net_flow(const struct sim_net *n, size_t i, struct sim_flow_info *out)
{
	*out = n->flows[i].i;
}

size_t sim_net_nports(const struct sim_net *n)
{
	return n->nports;
}

void sim_net_port(const struct sim_net *n, size_t i, struct sim_port_info *out)
{
	*out = n->ports[i].st;
	out->name = n->ports[i].name;   /* ports move while the fabric grows */
	out->paused_ns = port_paused_ns(n, &n->ports[i]);
}

size_t sim_net_nsamples(const struct sim_net *n)
{
	return n->nsamples;
}

uint64_t sim_net_flow_bytes(const struct sim_net *n, size_t flow, size_t row)
{
	const struct flow *f = &n->flows[flow];

	return row < f->nrows ? f->rows[row] : 0;
}

uint64_t sim_net_queue(const struct sim_net *n, size_t port, size_t row)
{
	uint32_t col = n->ports[port].qcol;

	if (col == NONE || row >= n->nsamples)
		return 0;
	return n->qsamples[row * n->nqports + col];
}
