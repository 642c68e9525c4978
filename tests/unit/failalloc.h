/* SPDX-License-Identifier: MIT */
/*
 * failalloc.h: allocation failure on demand for a unit test program (include
 * it in exactly one of its files). calloc, and realloc unless g_calloc_only,
 * of at least g_fail_min bytes fails while g_fail_min is set. Not under
 * ASan, which owns these functions: tests that use it skip() there.
 */
#ifndef UCCL_TESTS_FAILALLOC_H
#define UCCL_TESTS_FAILALLOC_H

#include <stdbool.h>
#include <stddef.h>

#ifndef __SANITIZE_ADDRESS__
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
static size_t g_fail_min;
static bool g_calloc_only;

void *calloc(size_t n, size_t size)
{
	if (g_fail_min && n && size && n * size >= g_fail_min)
		return NULL;
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	if (g_fail_min && !g_calloc_only && size >= g_fail_min)
		return NULL;
	return __libc_realloc(p, size);
}
#endif

#endif
