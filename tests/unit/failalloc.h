/* SPDX-License-Identifier: MIT */
/*
 * failalloc.h: allocation failure on demand for a unit test program (include
 * it in exactly one of its files). calloc (unless g_realloc_only) and
 * realloc (unless g_calloc_only) of at least g_fail_min bytes, and at most
 * g_fail_max when that is set, fail while g_fail_min is set; malloc too
 * with g_malloc_too; g_fails counts the failures. Not under
 * ASan, which owns these functions: tests that use it skip() there.
 */
#ifndef UCCL_TESTS_FAILALLOC_H
#define UCCL_TESTS_FAILALLOC_H

#include <stdbool.h>
#include <stddef.h>

#ifndef __SANITIZE_ADDRESS__
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_malloc(size_t size);
static size_t g_fail_min, g_fail_max;
static bool g_calloc_only, g_realloc_only, g_malloc_too;
static unsigned g_fails;

static bool fail_size(size_t size)
{
	bool f = g_fail_min && size >= g_fail_min && (!g_fail_max || size <= g_fail_max);

	g_fails += f;
	return f;
}

void *calloc(size_t n, size_t size)
{
	if (!g_realloc_only && n && size && fail_size(n * size))
		return NULL;
	return __libc_calloc(n, size);
}

void *malloc(size_t size)
{
	if (g_malloc_too && fail_size(size))
		return NULL;
	return __libc_malloc(size);
}

void *realloc(void *p, size_t size)
{
	if (!g_calloc_only && fail_size(size))
		return NULL;
	return __libc_realloc(p, size);
}
#endif

#endif
