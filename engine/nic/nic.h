/* SPDX-License-Identifier: MIT */
/*
 * nic: NIC backends behind one ops table (udp now; verbs and the simulated
 * fabric later). A backend only moves packets: every decision (what to send,
 * when, on which path, what to retransmit) stays in the engine. This is the
 * one place under engine/ that makes system calls, and it stays thin.
 *
 * Paths: a path is one source port. A backend with npaths paths owns npaths
 * send sockets bound to base_port .. base_port+npaths-1 (distinct 5-tuples,
 * so ECMP spreads them) and receives on base_port; peers send to a peer's
 * base_port from their own path sockets.
 */
#ifndef UCCL_ENGINE_NIC_NIC_H
#define UCCL_ENGINE_NIC_NIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define NIC_MAX_PEERS 4096u

struct nic_params {
	const char *bind_addr;         /* numeric IPv4 or IPv6 address to bind ("127.0.0.1") */
	uint16_t base_port;            /* receive port; path i sends from base_port + i;
					* 0: the kernel picks base_port, paths take the ports
					* after it (peers map a source port to a peer by that
					* range, so all daemons use the same npaths) */
	uint32_t npaths;               /* 1 .. 256 */
	uint32_t mtu;                  /* largest UDP payload sent or accepted (576 .. 9000) */
	uint32_t rcvbuf, sndbuf;       /* socket buffers in bytes (SO_*BUFFORCE when allowed) */
	bool gso;                      /* UDP_SEGMENT batching on send */
	bool gro;                      /* UDP_GRO coalescing on receive */
	bool pack;                     /* honour nic_pkt.pack_max (else one packet a datagram) */
	uint32_t rx_batch;             /* datagrams per recvmmsg (1 .. 1024) */
	bool ecn;                      /* send ECT(0) (rx always reports the TOS byte) */
	bool rx_hint;                  /* skip receives a socket filter's count says would
					* find nothing (engine/nic/rxhint.h); best effort */
};

struct nic_pkt {
	uint8_t *buf;                  /* tx: packet bytes; rx: points into backend memory,
					* valid until the next rx call */
	uint32_t len;
	uint16_t path;                 /* tx: path to send on; rx: not known (0) */
	uint32_t peer;                 /* tx: destination; rx: source peer id, or
					* NIC_PEER_UNKNOWN for an address not added */
	uint8_t tos;                   /* rx: IP TOS byte if available (ECN), else 0 */
	/* tx, optional: the packet is buf[0, hdr_len) then payload[0, len -
	 * hdr_len), gathered by the send (no copy in user space); NULL: all of
	 * it is in buf. Must stay readable until tx returns. */
	const uint8_t *payload;
	uint32_t hdr_len;
	/* tx, optional: path is only a preference; the backend may send the
	 * packet on another path to batch it with its neighbours (ACKs) */
	bool any_path;
	/* tx, optional: the packet may share one datagram with the packets
	 * next to it in the call that also allow it (same peer, a path their
	 * socket serves), back to back, up to pack_max bytes in all (never
	 * more than the mtu). 0: a datagram of its own. The receiver gets the
	 * datagram as one nic_pkt and cuts it (engine_rx, wire_first_len). */
	uint32_t pack_max;
};
#define NIC_PEER_UNKNOWN UINT32_MAX

/* tx_pkts counts the packets handed to tx, tx_dgrams the datagrams they
 * went in (fewer when packed); rx_pkts counts datagrams (rx does not look
 * inside them). tx_gso_refused: 1 once the kernel refused a GSO send and
 * the nic turned GSO off for good (sums count such nics). */
struct nic_stats {
	uint64_t tx_pkts, tx_bytes, tx_calls, tx_gso_calls, tx_eagain, tx_errors;
	uint64_t rx_pkts, rx_bytes, rx_calls, rx_gro_segs, rx_truncated, rx_unknown_peer;
	uint64_t tx_dgrams;
	uint64_t tx_gso_refused;
	/* datagrams the kernel dropped at the receive socket (its buffer was
	 * full), as SO_RXQ_OVFL last reported: seen only with the next
	 * datagram that gets through */
	uint64_t rx_overflow;
	uint64_t rcvbuf_bytes;         /* the receive buffer the kernel granted (of rcvbuf) */
	/* rx_hint: 1 when the receive hint is on (sums count such nics);
	 * rx_skipped: rx calls it answered with no system call;
	 * rx_hint_written_off: datagrams its count and the receives
	 * disagreed on for good (counted, then dropped by a full buffer) */
	uint64_t rx_hint, rx_skipped, rx_hint_written_off;
	int rx_hint_error;             /* asked for but off: the positive errno; else 0 */
};

struct nic;

struct nic_ops {
	const char *name;
	int (*open)(const struct nic_params *p, struct nic **out);
	void (*close)(struct nic *n);                 /* accepts NULL */
	/* The local receive address (after a base_port of 0 was resolved). */
	int (*local_addr)(struct nic *n, struct sockaddr_storage *ss, socklen_t *len);
	/* Register a peer's receive address; ids are small integers. paths:
	 * how many of our path sockets the peer knows us by (its own path
	 * count, when smaller than ours; 0: all of them); nothing to it
	 * leaves on another. */
	int (*add_peer)(struct nic *n, const struct sockaddr *addr, socklen_t len, uint32_t paths,
			uint32_t *peer);
	int (*remove_peer)(struct nic *n, uint32_t peer);
	/* Send n packets. Returns how many were handed to the kernel (the
	 * rest: try again later; -errno only if none could be sent for a
	 * reason other than a full socket buffer). Consecutive packets to the
	 * same peer on the same path may go out as one GSO send, and those
	 * that allow it (pack_max) in one datagram. */
	int (*tx)(struct nic *n, const struct nic_pkt *pkts, int count);
	/* Receive up to max datagrams without blocking; 0 if none. GRO
	 * super-packets are split back into the sender's datagrams, each of
	 * which may hold several packets (the engine cuts them). */
	int (*rx)(struct nic *n, struct nic_pkt *pkts, int max);
	/* fds to wait on (readable = rx has work) while the engine sleeps. */
	int (*wait_fds)(struct nic *n, int *fds, int max);
	void (*get_stats)(struct nic *n, struct nic_stats *out);
};

extern const struct nic_ops nic_udp_ops;

#endif
