/* SPDX-License-Identifier: MIT */
/*
 * rxhint: tells a polling engine whether its UDP receive socket may hold
 * anything, without a system call. A socket filter counts every datagram the
 * kernel lets through to the socket into a memory-mapped BPF array; the
 * engine compares that count with the datagrams it has taken and skips the
 * recvmmsg that would find the socket empty. On the 16-core machines an empty
 * recvmmsg costs about 1.2 us, most of an idle engine pass, and a packet or a
 * ring descriptor that arrives during it waits for it to end.
 *
 * The count is a hint, and every way it can be wrong is bounded:
 * - the filter counts a datagram before the kernel queues it, so a receive
 *   right after the count moved may come back empty: the hint stays due
 *   until the datagram is taken;
 * - a datagram counted and then dropped (a full receive buffer) would keep
 *   the hint due for good: after RXHINT_STUCK_CALLS receives in a row that
 *   drained the socket and still left the count ahead, the least it was
 *   ahead after any of them is written off (a datagram on its way in is
 *   counted at one such receive, not at all of them);
 * - a datagram taken but never counted (the filter goes on before the
 *   socket is bound, so none should be) would make as many new ones read
 *   as an empty socket: a count behind what was taken is settled at once;
 * - whatever was missed still gets a receive within RXHINT_SAFETY_SKIPS
 *   skipped calls, and a sleeping engine waits on the socket itself.
 *
 * The accounting (rxhint_due, rxhint_took) is plain arithmetic, tested
 * with made-up counts; only rxhint_attach and rxhint_count touch the kernel.
 */
#ifndef UCCL_ENGINE_NIC_RXHINT_H
#define UCCL_ENGINE_NIC_RXHINT_H

#include <stdbool.h>
#include <stdint.h>

#define RXHINT_STUCK_CALLS  64u      /* drained receives before a write-off */
#define RXHINT_SAFETY_SKIPS 1024u    /* skipped receives before one anyway */

struct rxhint_acct {
	uint64_t seen;                 /* datagrams taken, plus those written off */
	uint64_t before;               /* the count read by the last rxhint_due */
	uint32_t stuck;                /* drained receives in a row that left the count ahead */
	uint64_t stuck_min;            /* ... the least it was ahead after one of them */
	uint32_t skips;                /* receives skipped in a row */
	uint64_t skipped;              /* receives skipped in all */
	uint64_t written_off;          /* datagrams counted that never came (or the reverse) */
};

/* Given the filter's count now: whether to receive. */
bool rxhint_due(struct rxhint_acct *a, uint64_t count);
/* After a receive that rxhint_due asked for: got datagrams, and whether
 * the socket was drained (fewer than asked for came back). */
void rxhint_took(struct rxhint_acct *a, uint32_t got, bool drained);

/* The kernel side: a counting filter on fd and the count's mapping. Attach
 * before binding fd: a datagram queued before the filter is not counted. */
struct rxhint;
/* 0, or -errno: -EOPNOTSUPP without BPF in the headers this was built
 * with, -EPERM without CAP_BPF (or CAP_SYS_ADMIN), -EINVAL on a kernel
 * older than 5.5 (no mappable arrays). */
int rxhint_attach(int fd, struct rxhint **out);
void rxhint_free(struct rxhint *h);            /* accepts NULL */
uint64_t rxhint_count(const struct rxhint *h);

#endif
