/* SPDX-License-Identifier: MIT */
/* memory: which memfds the daemon maps for MEM_MEMFD regions, and copies
 * from registered virtual memory only while the process that registered it
 * is the one at its pid. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
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

/* A region of this process's memory as uccl_mem_reg makes it: copies run
 * while pidfd's process lives; one whose registering process exited is
 * refused (-ESRCH) even though its pid (ours here) names a live process,
 * which is what a reused pid would look like. */
static void test_a_copy_needs_the_registering_process(void **state)
{
	static char from[64] = "registered bytes", to[64];
	struct mr src = { .id = 1, .client_id = 1, .len = sizeof(from), .kind = MR_REMOTE_VA,
			  .pid = (int32_t)getpid(), .addr = (uint64_t)(uintptr_t)from };
	struct mr dst = { .id = 2, .client_id = 1, .len = sizeof(to), .kind = MR_MAPPED, .base = to };
	int self = mem_pidfd_open(getpid()), gone;
	pid_t child;

	(void)state;
	if (self == -EOPNOTSUPP || self == -ENOSYS) {
		print_message("no pidfds here: registered memory is copied unchecked\n");
		skip();
	}
	assert_true(self > 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	gone = mem_pidfd_open(child);
	assert_true(gone > 0);
	assert_int_equal(waitpid(child, NULL, 0), child);

	src.pidfd = self;
	assert_int_equal(mem_copy_ops.copy(NULL, &dst, 0, &src, 0, 17), 0);
	assert_string_equal(to, "registered bytes");
	memset(to, 0, sizeof(to));
	src.pidfd = gone;
	assert_int_equal(mem_copy_ops.copy(NULL, &dst, 0, &src, 0, 17), -ESRCH);
	assert_int_equal(mem_copy_ops.copy(NULL, &src, 0, &dst, 0, 17), -ESRCH);
	assert_int_equal(to[0], 0);
	src.pidfd = 0;                   /* none: not checked */
	assert_int_equal(mem_copy_ops.copy(NULL, &dst, 0, &src, 0, 17), 0);
	close(self);
	close(gone);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_sealed_memfd_is_mapped),
		cmocka_unit_test(test_unsealed_short_and_foreign_fds_are_refused),
		cmocka_unit_test(test_a_huge_page_memfd_is_refused),
		cmocka_unit_test(test_a_copy_needs_the_registering_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
