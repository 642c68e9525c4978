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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

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
 * while the registering process lives; once the event loop saw it exit,
 * they are refused (-ESRCH) even though the region's pid (ours here) names
 * a live process, which is what a reused pid would look like. */
static void test_a_copy_needs_the_registering_process(void **state)
{
	static char from[64] = "registered bytes", to[64];
	struct mr src = { .id = 1, .client_id = 1, .len = sizeof(from), .kind = MR_REMOTE_VA,
			  .pid = (int32_t)getpid(), .addr = (uint64_t)(uintptr_t)from };
	struct mr dst = { .id = 2, .client_id = 1, .len = sizeof(to), .kind = MR_MAPPED, .base = to };
	struct timeval limit = { .tv_sec = 5 };
	struct event_base *base = event_base_new();
	struct mem_owner o;
	int pipefd[2], r;
	pid_t child;
	char c;

	(void)state;
	assert_non_null(base);
	assert_int_equal(pipe(pipefd), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(pipefd[1]);
		_exit(read(pipefd[0], &c, 1) < 0);   /* until the parent closes its end */
	}
	close(pipefd[0]);
	r = mem_owner_watch(base, child, &o);
	if (r == -EOPNOTSUPP || r == -ENOSYS) {
		close(pipefd[1]);
		waitpid(child, NULL, 0);
		event_base_free(base);
		print_message("no pidfds here: registered memory is copied unchecked\n");
		skip();
	}
	assert_int_equal(r, 0);
	src.gone = mem_owner_gone(&o);
	assert_non_null(src.gone);

	assert_int_equal(event_base_loop(base, EVLOOP_NONBLOCK), 0);
	assert_int_equal(mem_copy_ops.copy(NULL, &dst, 0, &src, 0, 17), 0);
	assert_string_equal(to, "registered bytes");
	memset(to, 0, sizeof(to));

	close(pipefd[1]);                /* the child exits */
	assert_int_equal(waitpid(child, NULL, 0), child);
	event_base_loopexit(base, &limit);
	assert_int_equal(event_base_loop(base, EVLOOP_ONCE), 0);
	assert_int_equal(*src.gone, 1);
	assert_int_equal(mem_copy_ops.copy(NULL, &dst, 0, &src, 0, 17), -ESRCH);
	assert_int_equal(mem_copy_ops.copy(NULL, &src, 0, &dst, 0, 17), -ESRCH);
	assert_int_equal(to[0], 0);
	src.gone = NULL;                 /* not known: not checked */
	assert_int_equal(mem_copy_ops.copy(NULL, &dst, 0, &src, 0, 17), 0);
	mem_owner_end(&o);
	assert_int_equal(o.pidfd, -1);
	mem_owner_end(&o);               /* twice is harmless */
	event_base_free(base);
}

/* The start of our own /proc/self/maps line for addr (its path follows). */
static size_t maps_path_at(uintptr_t addr)
{
	char want[32], *line = NULL;
	size_t cap = 0, at = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	assert_non_null(f);
	snprintf(want, sizeof(want), "%lx-", (unsigned long)addr);
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, want, strlen(want)) == 0) {
			at = (size_t)(strchr(line, '/') - line);
			break;
		}
	}
	free(line);
	fclose(f);
	assert_true(at > 0);
	return at;
}

/* Only RAM-backed mappings qualify, read whole line by line: a file whose
 * long path ends in what looks like a maps line (read with a 512-byte
 * fgets, its tail was a line of its own) does not vouch for the file
 * mapped after it. */
static void test_only_ram_mappings_qualify_however_long_a_path(void **state)
{
	char dir[] = "/tmp/uccl-mt.XXXXXX", a[1024], b[1024], seg[201];
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *anon, *two;
	size_t n, at;
	int fa, fb;

	(void)state;
	anon = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(anon != MAP_FAILED);
	assert_int_equal(mem_check_vaddr(getpid(), getuid(), (uintptr_t)anon, (uint64_t)pg), 0);
	munmap(anon, (size_t)pg);

	/* two file pages side by side: a (long path) then b */
	assert_non_null(mkdtemp(dir));
	memset(seg, 'd', 200);
	seg[200] = 0;
	snprintf(a, sizeof(a), "%s/%s", dir, seg);
	assert_int_equal(mkdir(a, 0700), 0);
	snprintf(a, sizeof(a), "%s/%s/%s", dir, seg, seg);
	assert_int_equal(mkdir(a, 0700), 0);
	snprintf(a, sizeof(a), "%s/%s/%s/a", dir, seg, seg);
	snprintf(b, sizeof(b), "%s/b", dir);
	fa = open(a, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	fb = open(b, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fa >= 0 && fb >= 0);
	assert_int_equal(ftruncate(fa, pg), 0);
	assert_int_equal(ftruncate(fb, pg), 0);
	two = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_SHARED, fa, 0);
	assert_true(two != MAP_FAILED);
	assert_true(mmap(two + pg, (size_t)pg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fb, 0) !=
		    MAP_FAILED);
	assert_int_equal(mem_check_vaddr(getpid(), getuid(), (uintptr_t)(two + pg), (uint64_t)pg),
			 -EFAULT);

	/* a's new name fills its line to 511 bytes, then claims b's range */
	at = maps_path_at((uintptr_t)two);
	n = strlen(dir) + 2 * (1 + strlen(seg)) + 1;
	assert_true(at + n < 511);
	{
		char fake[256], pad[512], to[1024];

		memset(pad, 'p', 511 - at - n);
		pad[511 - at - n] = 0;
		snprintf(fake, sizeof(fake), "%lx-%lx rw-p 00000000 00:00 0", (unsigned long)(two + pg),
			 (unsigned long)(two + 2 * pg));
		assert_true(strlen(pad) + strlen(fake) < 255);
		snprintf(to, sizeof(to), "%s/%s/%s/%s%s", dir, seg, seg, pad, fake);
		assert_int_equal(rename(a, to), 0);
		assert_int_equal(mem_check_vaddr(getpid(), getuid(), (uintptr_t)(two + pg), (uint64_t)pg),
				 -EFAULT);
		unlink(to);
	}
	munmap(two, 2 * (size_t)pg);
	close(fa);
	close(fb);
	unlink(b);
	snprintf(a, sizeof(a), "%s/%s/%s", dir, seg, seg);
	rmdir(a);
	snprintf(a, sizeof(a), "%s/%s", dir, seg);
	rmdir(a);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_sealed_memfd_is_mapped),
		cmocka_unit_test(test_unsealed_short_and_foreign_fds_are_refused),
		cmocka_unit_test(test_a_huge_page_memfd_is_refused),
		cmocka_unit_test(test_a_copy_needs_the_registering_process),
		cmocka_unit_test(test_only_ram_mappings_qualify_however_long_a_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
