/* SPDX-License-Identifier: MIT */
/* memory: which memfds the daemon maps for MEM_MEMFD regions. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/memory.h"

#ifndef MFD_HUGETLB
#define MFD_HUGETLB 4u
#endif

/* A memfd of size bytes with seals added (0: none). */
static int memfd_of(unsigned flags, size_t size, int seals)
{
	int fd = memfd_create("test", MFD_CLOEXEC | MFD_ALLOW_SEALING | flags);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0 || (seals && fcntl(fd, F_ADD_SEALS, seals) < 0)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

static void test_a_sealed_memfd_is_mapped(void **state)
{
	int fd = memfd_of(0, 8192, F_SEAL_SHRINK | F_SEAL_GROW);
	void *base = NULL;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(mem_map_memfd(fd, 4096, &base), 0);
	assert_non_null(base);
	memset(base, 0x5a, 4096);
	assert_int_equal(pread(fd, &(char){ 0 }, 1, 4095), 1);
	mem_unmap(base, 4096);
	close(fd);
}

static void test_unsealed_short_and_foreign_fds_are_refused(void **state)
{
	int unsealed = memfd_of(0, 8192, 0), shortfd = memfd_of(0, 4096, F_SEAL_SHRINK);
	int pipefd[2];
	void *base = NULL;

	(void)state;
	assert_true(unsealed >= 0 && shortfd >= 0);
	assert_int_equal(mem_map_memfd(unsealed, 4096, &base), -EINVAL);
	assert_int_equal(mem_map_memfd(shortfd, 8192, &base), -EINVAL);
	assert_int_equal(mem_map_memfd(shortfd, 0, &base), -EINVAL);
	assert_int_equal(pipe(pipefd), 0);
	assert_int_equal(mem_map_memfd(pipefd[0], 4096, &base), -EINVAL);
	assert_null(base);
	close(unsealed);
	close(shortfd);
	close(pipefd[0]);
	close(pipefd[1]);
}

/* A huge-page memfd is refused even sealed: hole punching frees its pages
 * under the seal, and the daemon's next touch faults when the pool is
 * empty (SIGBUS, the whole daemon). */
static void test_a_huge_page_memfd_is_refused(void **state)
{
	int fd = memfd_of(MFD_HUGETLB, 2u << 20, 0);
	void *base = NULL;

	(void)state;
	if (fd < 0) {
		print_message("no huge-page memfd here (%s)\n", strerror(-fd));
		skip();
	}
	/* sealing may or may not be allowed there; refused either way */
	(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
	assert_int_equal(mem_map_memfd(fd, 4096, &base), -EINVAL);
	assert_null(base);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_sealed_memfd_is_mapped),
		cmocka_unit_test(test_unsealed_short_and_foreign_fds_are_refused),
		cmocka_unit_test(test_a_huge_page_memfd_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
