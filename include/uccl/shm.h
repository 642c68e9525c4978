/* SPDX-License-Identifier: MIT */
/*
 * The shared-memory ABI between libucclclient and ucclsvcd: the layout of an
 * endpoint's region (one memfd created and size-sealed by the daemon, mapped
 * by both), its submission ring (client -> daemon), completion ring (daemon ->
 * client) and per-connection semaphores. Specified in docs/shm-abi.md; a
 * change that is not backward compatible bumps UCCL_SHM_ABI_VERSION.
 *
 * Rings are single producer / single consumer. Indices are free-running u32
 * counters; slot = index & (entries - 1). Each side keeps its own index in a
 * private variable and only publishes it here: the daemon never trusts a value
 * it reads back from shared memory except the peer's index, and that one is
 * checked (a producer index more than `entries` ahead is a corrupt ring).
 */
#ifndef UCCL_SHM_H
#define UCCL_SHM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UCCL_SHM_MAGIC       0x314d48534c434355ULL  /* "UCCLSHM1" little endian */
#define UCCL_SHM_ABI_VERSION 2u   /* 2: UCCL_SEM_RESET */
#define UCCL_CACHELINE       64u

/* Set in a connection's semaphore by the daemon when the connection is
 * reset (the peer went away, or its channel gave up); the signal count is
 * the other 63 bits. Cleared when the id joins a new connection. */
#define UCCL_SEM_RESET       (1ull << 63)

/* Descriptor formats. Only the 64-byte CPU format is implemented; the 16-byte
 * format is reserved for GPU-written commands and refused with -EOPNOTSUPP. */
#define UCCL_SQE_SIZE        64u
#define UCCL_SQE16_SIZE      16u
#define UCCL_CQE_SIZE        32u

/* Ring control block: producer and consumer indices on separate cache lines. */
struct uccl_ring_ctl {
	uint32_t prod;                   /* written by the producer only */
	/* CQ only, written by the daemon: 0 while it serves the endpoint, a
	 * negative errno once it stopped for good (-EBADMSG: an index in one
	 * of the endpoint's rings was impossible). Was padding (zero) before. */
	int32_t stopped;
	uint32_t pad0[UCCL_CACHELINE / 4 - 2];
	uint32_t cons;                   /* written by the consumer only */
	uint32_t pad1[UCCL_CACHELINE / 4 - 1];
	/* UCCL_RING_NEED_WAKEUP: the consumer is about to sleep and wants a
	 * write to its wake-up pipe (SQ: the doorbell; CQ: the notify pipe)
	 * after the next publish. Written by the consumer. */
	uint32_t flags;
	uint32_t pad2[UCCL_CACHELINE / 4 - 1];
};

#define UCCL_RING_NEED_WAKEUP 1u

/* Operation codes. 0 is invalid so that a zeroed slot is rejected. */
enum uccl_opcode {
	UCCL_OP_NOP    = 1,   /* completes at once; measures the ring itself */
	UCCL_OP_PUT    = 2,   /* local [lmr+loff, len) -> remote [rkey+roff, len) */
	UCCL_OP_GET    = 3,   /* remote [rkey+roff, len) -> local [lmr+loff, len) */
	UCCL_OP_SIGNAL = 4,   /* +1 on the peer's semaphore for this connection */
	UCCL_OP_FLUSH  = 5,   /* completes when every earlier op on conn completed */
	UCCL_OP_SEND   = 6,   /* two-sided, matched by tag with a posted RECV */
	UCCL_OP_RECV   = 7,
	UCCL_OP_MAX_
};

/* Per-operation flags (uccl_sqe.flags). Relaxed ordering is the default. */
#define UCCL_SQE_F_STRICT 0x01u  /* completes after every earlier op on conn */
#define UCCL_SQE_F_FENCE  0x02u  /* starts after every earlier op on conn completed */
/* PUT only: +1 on the peer's semaphore for conn once this put and every
 * earlier one on conn are written, as a SIGNAL right behind it would (one
 * operation and one completion instead of two) */
#define UCCL_SQE_F_SIGNAL 0x04u
#define UCCL_SQE_F_MASK   0x07u

/* Submission entry, 64 bytes. Reserved fields must be zero (-EINVAL otherwise). */
struct uccl_sqe {
	uint8_t  opcode;
	uint8_t  flags;
	uint16_t rsvd0;
	uint32_t conn;                   /* connection id from connect/accept */
	uint64_t user_data;              /* echoed in the completion */
	uint32_t lmr;                    /* local memory region id */
	uint32_t rsvd1;
	uint64_t loff;                   /* offset in the local region */
	union {
		uint64_t rkey;           /* PUT/GET: remote region key */
		uint64_t tag;            /* SEND/RECV: message tag */
	};
	uint64_t roff;                   /* PUT/GET: offset in the remote region */
	uint64_t len;                    /* bytes */
	uint64_t rsvd2;
};

/* RECV may match any tag. */
#define UCCL_TAG_ANY UINT64_MAX

/* Completion entry, 32 bytes. */
struct uccl_cqe {
	uint64_t user_data;
	uint64_t len;                    /* bytes moved (RECV: message length) */
	uint64_t tag;                    /* RECV: tag of the matched SEND */
	int32_t  res;                    /* 0 or a negative errno */
	uint8_t  opcode;
	uint8_t  flags;
	uint16_t rsvd;
};

/*
 * Region header at offset 0. Written once by the daemon before the fd is
 * handed out; the client validates it, the daemon never reads it back.
 */
struct uccl_shm_hdr {
	uint64_t magic;
	uint32_t abi_version;
	uint32_t hdr_size;               /* sizeof(struct uccl_shm_hdr) */
	uint32_t sq_entries;             /* power of two */
	uint32_t sq_entry_size;          /* UCCL_SQE_SIZE */
	uint32_t cq_entries;             /* power of two */
	uint32_t cq_entry_size;          /* UCCL_CQE_SIZE */
	uint64_t sq_ctl_off;             /* struct uccl_ring_ctl */
	uint64_t sq_off;                 /* sq_entries x sq_entry_size */
	uint64_t cq_ctl_off;
	uint64_t cq_off;
	uint64_t sem_off;                /* sem_count x uint64_t, indexed by conn id */
	uint32_t sem_count;
	uint32_t rsvd;
	uint64_t total_size;
};

#ifdef __cplusplus
}
#endif

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct uccl_sqe) == UCCL_SQE_SIZE, "sqe is 64 bytes");
_Static_assert(sizeof(struct uccl_cqe) == UCCL_CQE_SIZE, "cqe is 32 bytes");
_Static_assert(sizeof(struct uccl_ring_ctl) == 3 * UCCL_CACHELINE, "ring ctl is 3 lines");
#endif

#endif
