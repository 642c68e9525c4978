/* SPDX-License-Identifier: MIT */
/*
 * tail_shim: LD_PRELOADed into uccl_xfer's sender, flips the last byte of
 * every put whose length is not a multiple of 8 (the last chunk of an odd
 * --bytes) after the sender filled it, so a test sees that the receiver
 * checks the bytes past the last whole word too.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <uccl/uccl.h>

int uccl_put(struct uccl_ep *ep, uint32_t conn, const struct uccl_mr *src, uint64_t src_off,
	     uint64_t rkey, uint64_t dst_off, uint64_t len, unsigned flags, uint64_t user_data)
{
	static __typeof__(uccl_put) *real;

	if (!real && !(real = (__typeof__(uccl_put) *)dlsym(RTLD_NEXT, "uccl_put"))) {
		fprintf(stderr, "tail_shim: no uccl_put\n");
		abort();
	}
	/* once per put: a retry after -EAGAIN must not flip it back */
	static uint64_t flipped = UINT64_MAX;

	if (len % 8 && src_off + len - 1 != flipped) {
		flipped = src_off + len - 1;
		((uint8_t *)uccl_mr_addr(src))[flipped] ^= 0x5a;
	}
	return real(ep, conn, src, src_off, rkey, dst_off, len, flags, user_data);
}
