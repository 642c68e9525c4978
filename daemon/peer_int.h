/* SPDX-License-Identifier: MIT */
/*
 * peer_int: what the two halves of peering share. daemon/peer.c owns the
 * connections (dialing, accepting, hellos, keepalives, closing) and the
 * peers; daemon/peer_req.c owns the requests and answers that travel on an
 * up connection (lookups, connects, closes of connections across hosts).
 * Nothing else includes this: the daemon's interface is daemon/peer.h.
 */
#ifndef UCCL_DAEMON_PEER_INT_H
#define UCCL_DAEMON_PEER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "daemon/conf.h"
#include "daemon/listener.h"
#include "daemon/peer.h"
#include "daemon/peerauth.h"
#include "proto/peerframe.h"

#define RATELOG_SLOTS 32u

enum pc_phase { PC_CONNECTING, PC_HELLO, PC_UP, PC_CLOSING };

/* Peer authentication within PC_HELLO (docs/peer-protocol.md). */
enum pc_auth {
	PA_NONE = 0,
	PA_CHALLENGED,     /* accepting: sent our Auth, waits for the dialer's */
	PA_ANSWERED,       /* dialing: checked theirs, sent ours, waits for the hello */
	PA_DONE,           /* accepting: the dialer's proof checked */
};

/* Requests this daemon asks of a peer; their ids count separately per kind. */
enum preq_kind { PREQ_LOOKUP = 0, PREQ_CONNECT, PREQ_KINDS };

struct pconn;
struct preq;                       /* peer_req.c: one request asked of a peer */

struct peer {
	struct peermgr *pm;
	bool removing;                  /* peer_remove is failing its requests */
	char name[CONF_PEER_NAME_MAX + 1];
	struct conf_addr addr;
	struct sockaddr_storage sa;
	socklen_t salen;
	char addrtext[64];
	bool dials;                    /* our host_name sorts first: we make the connection */
	bool keep;                     /* reload: still configured */
	bool dynamic;                  /* added at run time (dynamic_peers), not configured:
					* named by its address:port when we dialed it, by its
					* host name when it dialed us; removed once its
					* connection is gone */
	bool expire;                   /* dynamic, its connection gone: retry_ev removes it */
	uint64_t first_fail_ms;        /* never up: when its first dial failed (0: not yet) */
	bool superseded;               /* dynamic, dialed by us: the other daemon's own
					* connection to us is used instead; never dialed again */
	uint16_t listen_port;          /* from its hello: its peer_listen port (0: unknown) */
	enum peer_state state;
	uint64_t since_ms;
	struct pconn *conn;            /* being made or up; NULL between attempts */
	struct event *retry_ev;
	uint32_t backoff_ms;
	uint32_t reconnects;
	bool was_up;
	bool has_rtt;
	uint32_t rtt_us;
	/* from its last hello */
	bool announced;
	char host[CONF_PEER_NAME_MAX + 1];
	char data_addr[PEER_ADDR_TEXT_MAX + 2];
	uint32_t data_port, data_paths, mtu;
	uint32_t n_threads, thread_ports[16];   /* from thread_ports, or 1 at data_port */
	bool knows_threads;                     /* its hello had thread_ports */
	uint32_t lanes;                         /* from its hello (0: none) */
	uint64_t max_inflight_bytes;            /* from its hello (0: it predates it) */
	bool data_crc;                          /* from its hello: it wants crc32c */
	bool authenticated;                     /* it proved peer_key_file's key */
	uint32_t their_timeout_ms;
	uint64_t tx_token, rx_token;   /* set while up */
	uint64_t generation;
	char last_error[160];
	/* requests asked of it, not answered yet */
	struct preq *reqs;
	uint32_t n_reqs[PREQ_KINDS];
	uint32_t next_id[PREQ_KINDS];  /* the last id sent, per kind */
};

struct pconn {
	struct peermgr *pm;
	struct pconn *next, *prev;     /* pm->conns */
	struct peer *peer;             /* NULL: inbound and not identified yet, or closing */
	int fd;
	struct bufferevent *bev;       /* from PC_HELLO on */
	struct event *conn_ev;         /* PC_CONNECTING: the socket becomes writable */
	/* hello deadline; then the linger before free; or a close asked for
	 * by pconn_close_soon */
	struct event *deadline_ev;
	struct event *ka_ev;           /* PC_UP: keepalive tick */
	struct event *silence_ev;      /* PC_UP: peer_timeout_ms without a message */
	enum pc_phase phase;
	bool inbound;
	bool unidentified;             /* counted in pm->n_unident */
	bool unident_other;            /* ... and in n_unident_other (no peer's host) */
	bool lingering;                /* counted in pm->n_lingering */
	char ratext[72];               /* remote address:port */
	struct conf_addr ra;           /* remote address (v4-mapped shown as v4) */
	uint64_t local_token;          /* in our hello: the peer puts it in packets to us */
	uint64_t ka_seq;               /* last keepalive sent */
	uint64_t ka_sent_us;
	uint32_t ka_interval_ms;
	uint32_t n_asked;              /* connects it asked of us, not answered yet */
	char close_soon[96];           /* pconn_close_soon's reason; "" if none */
	/* authentication: keyed is set when our side brought a nonce */
	bool keyed;
	enum pc_auth auth;
	uint32_t key_gen;              /* pm->key_gen when the handshake began */
	uint8_t nonce[PEERAUTH_NONCE_LEN], their_nonce[PEERAUTH_NONCE_LEN];
	char dialer[CONF_PEER_NAME_MAX + 1];   /* the dialer's name, as its hello gave it */
	char acceptor[CONF_PEER_NAME_MAX + 1]; /* the accepting side's, as its Auth gave it */
	uint8_t hello_hash[SHA256_LEN];        /* of the dialer's hello (PeerMsg bytes) */
	uint8_t *held;                 /* accepting: the dialer's hello, packed, until its proof */
	size_t held_len;
	/* after the handshake: every frame ends in a MAC under ks */
	bool mac;
	uint8_t ks[SHA256_LEN];
	uint64_t tx_seq, rx_seq;
};

enum ratelog_kind { RL_UNKNOWN_HOST = 1, RL_TOO_MANY };

struct ratelog {
	enum ratelog_kind kind;
	struct conf_addr a;
	uint64_t ms;
	uint32_t suppressed;
};

struct peermgr {
	struct event_base *base;
	char host_name[CONF_PEER_NAME_MAX + 1];
	struct conf_addr listen;
	struct conf_addr data_address;
	uint32_t data_port, data_paths, mtu;
	uint32_t n_threads, thread_ports[16];   /* ours, announced when n_threads > 1 */
	uint32_t lanes;                         /* ours, announced when > 0 */
	uint64_t max_inflight_bytes;            /* ours, announced */
	bool data_crc;                          /* ours, announced */
	uint32_t timeout_ms;
	struct peerauth_key key;       /* len 0: peers are not authenticated */
	uint32_t key_gen;              /* bumped by every reload of the key */
	char key_file[CONF_PATH_MAX + 1];
	int listen_fd;
	struct listener listener;
	/* configured peers and those added at run time share the table: room
	 * for the most of each (peers, dynamic_peers), so that run-time peers
	 * never keep a configured one out */
	struct peer *peers[PEERMGR_MAX];
	uint32_t n_peers;
	uint32_t max_dynamic, n_dynamic;   /* dynamic_peers, and how many count against it
					    * (superseded dials do not) */
	uint32_t n_made;                   /* peers made so far: each starts its
					    * generations above every earlier one's */
	struct pconn *conns;
	uint32_t n_unident;                /* accepted, no hello yet: at most
					    * PEER_MAX_UNIDENTIFIED from peers' hosts */
	uint32_t n_unident_other;          /* ... of them from other hosts (dynamic_peers):
					    * at most as many again */
	uint32_t n_closing;
	uint32_t n_lingering;          /* closing ones that wait for their Error to leave */
	uint32_t n_conns;              /* every pconn, closing ones included */
	uint64_t next_handle;
	uint64_t rng;
	peer_resolve_fn resolve;
	void *resolve_arg;
	peer_event_fn notify;
	void *notify_arg;
	struct peer_handlers handlers;
	struct peer_connect_req *asked;   /* connects peers asked of us, not answered yet */
	struct ratelog ratelog[RATELOG_SLOTS];
	bool stopping;
};

static inline struct timeval tv_ms(uint32_t ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (suseconds_t)(ms % 1000) * 1000 };

	return tv;
}

/* ---- peer.c ---- */

struct peer *find_peer(const struct peermgr *pm, const char *name);
/* Queue m on c. 0, -ENOTCONN (no socket yet), -ENOBUFS (the peer does not
 * read), -EMSGSIZE, -ENOMEM. */
int pconn_send(struct pconn *c, const UcclPeer__PeerMsg *m);
/* Send, and close the connection at once if that fails (only where c's own
 * callbacks run: the close calls the daemon back). false: it is closing. */
bool pconn_send_or_close(struct pconn *c, const UcclPeer__PeerMsg *m);
/* Send, and close the connection from the event loop if that fails: safe
 * anywhere, the daemon is not called back from inside. */
void pconn_send_or_close_soon(struct pconn *c, const UcclPeer__PeerMsg *m);
/* Close c, logging reason, and send an Error with send_code if < 0. Calls
 * the daemon back (notify, failed requests) if c was its peer's. */
void pconn_close(struct pconn *c, const char *reason, int send_code);

/* ---- peer_req.c ---- */

/* Act on a request or answer that arrived on the up connection c. false:
 * m is of no kind peer_req.c handles. */
bool peer_reqs_handle(struct pconn *c, const UcclPeer__PeerMsg *m);
/* Complete every request asked of p with status (its connection is gone,
 * or p is being removed). */
void peer_reqs_fail(struct peer *p, int status);
/* c closes: the connects it asked of us are answered into the void. */
void peer_reqs_conn_gone(struct pconn *c);
/* The manager stops: free what peers asked and was never answered. */
void peer_reqs_free(struct peermgr *pm);

#endif
