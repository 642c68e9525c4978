/* SPDX-License-Identifier: MIT */
/*
 * eagain_shim: LD_PRELOADed into a client, refuses posts with -EAGAIN
 * before passing them on (as a full ring would), so a test sees that the
 * client keeps to the contract in uccl.h: a refused post is queued nowhere
 * and is tried again after completions are taken. Every send and receive is
 * refused once; one put and signal in 16, as a client may wait some
 * milliseconds for a completion after each refusal.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <uccl/uccl.h>

/* The library's own function named NAME, looked up once. */
#define REAL(name)                                                              \
	({                                                                      \
		static __typeof__(name) *real_;                                 \
		if (!real_ && !(real_ = (__typeof__(name) *)dlsym(RTLD_NEXT, #name))) { \
			fprintf(stderr, "eagain_shim: no %s\n", #name);         \
			abort();                                                \
		}                                                               \
		real_;                                                          \
	})

/* One call in n refused, starting with the first (n = 2: each call is
 * refused once, as the one that follows it is the retry). */
#define REFUSE_ONE_IN(n)                                                        \
	do {                                                                    \
		static unsigned calls_;                                         \
		if (calls_++ % (n) == 0)                                        \
			return -EAGAIN;                                         \
	} while (0)

int uccl_put(struct uccl_ep *ep, uint32_t conn, const struct uccl_mr *src, uint64_t src_off,
	     uint64_t rkey, uint64_t dst_off, uint64_t len, unsigned flags, uint64_t user_data)
{
	REFUSE_ONE_IN(16);
	return REAL(uccl_put)(ep, conn, src, src_off, rkey, dst_off, len, flags, user_data);
}

int uccl_signal(struct uccl_ep *ep, uint32_t conn, unsigned flags, uint64_t user_data)
{
	REFUSE_ONE_IN(16);
	return REAL(uccl_signal)(ep, conn, flags, user_data);
}

int uccl_send(struct uccl_ep *ep, uint32_t conn, const struct uccl_mr *src, uint64_t off,
	      uint64_t len, uint64_t tag, unsigned flags, uint64_t user_data)
{
	REFUSE_ONE_IN(2);
	return REAL(uccl_send)(ep, conn, src, off, len, tag, flags, user_data);
}

int uccl_recv(struct uccl_ep *ep, uint32_t conn, const struct uccl_mr *dst, uint64_t off,
	      uint64_t len, uint64_t tag, unsigned flags, uint64_t user_data)
{
	REFUSE_ONE_IN(2);
	return REAL(uccl_recv)(ep, conn, dst, off, len, tag, flags, user_data);
}
