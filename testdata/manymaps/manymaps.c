// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

/*
 * manymaps: a benchmark process with many memory mappings, optionally
 * publishing an OpenTelemetry process context (OTEP 4719, SPEC.md).
 *
 * Build: gcc -O2 -Wall -Wextra -Werror -std=gnu11 -o manymaps manymaps.c
 *
 * Usage: manymaps <mappings> [payload-hex]
 *   <mappings>   number of separate mappings to create (0 for a plain idle
 *                process). One region of that many pages is mapped and every
 *                other page gets a different protection, so the kernel keeps
 *                one VMA per page: /proc/<pid>/maps gets <mappings> extra lines.
 *                The region is placed low in the address space (a hint, not
 *                MAP_FIXED), so that these lines come before the context
 *                mapping in maps: a reader has to go through all of them.
 *   payload-hex  when given, a context with this protobuf payload is
 *                published after the mappings exist.
 *
 * Prints "ready <pid>" when set up, then waits for EOF on stdin and exits.
 * The same first line as the test publishers, so internal/pubtest can start
 * and stop it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002U
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef PR_SET_VMA_ANON_NAME
#define PR_SET_VMA_ANON_NAME 0
#endif

/* Where the many mappings go: 1 TiB, far below the heap and libraries. */
#define REGION_HINT ((void *)0x10000000000ULL)

static void die(const char *what)
{
	fprintf(stderr, "manymaps: %s: %s\n", what, strerror(errno));
	exit(2);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void make_mappings(long n)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)n * (size_t)page;
	unsigned char *region = mmap(REGION_HINT, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (region == MAP_FAILED)
		die("mmap region");
	for (long i = 1; i < n; i += 2) {
		if (mprotect(region + (size_t)i * (size_t)page, (size_t)page, PROT_READ | PROT_WRITE) != 0)
			die("mprotect (raise vm.max_map_count?)");
	}
}

/* Publishes payload per SPEC.md: memfd (anonymous fallback), DONTFORK,
 * payload inline after the header, the timestamp stored last. */
static void publish(const char *hex)
{
	size_t hexlen = strlen(hex);
	if (hexlen == 0 || hexlen % 2 != 0) {
		fprintf(stderr, "manymaps: bad payload hex\n");
		exit(2);
	}
	size_t size = hexlen / 2;
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (32 + size + (size_t)page - 1) / (size_t)page * (size_t)page;

	unsigned char *m = MAP_FAILED;
	int fd = memfd_create("OTEL_CTX", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
	if (fd < 0 && errno == EINVAL)
		fd = memfd_create("OTEL_CTX", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd >= 0) {
		if (ftruncate(fd, (off_t)len) == 0)
			m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		close(fd);
	}
	if (m == MAP_FAILED)
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		die("mmap context");
	(void)madvise(m, len, MADV_DONTFORK);

	unsigned char *payload = m + 32;
	for (size_t i = 0; i < size; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			fprintf(stderr, "manymaps: bad payload hex\n");
			exit(2);
		}
		payload[i] = (unsigned char)(hi << 4 | lo);
	}
	uint32_t version = 2, psize = (uint32_t)size;
	uint64_t ptr = (uint64_t)(uintptr_t)payload;
	memcpy(m, "OTEL_CTX", 8);
	memcpy(m + 8, &version, 4);
	memcpy(m + 12, &psize, 4);
	memcpy(m + 24, &ptr, 8);

	struct timespec ts;
	if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
		die("clock_gettime");
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	if (now == 0)
		now = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n((uint64_t *)(void *)(m + 16), now, __ATOMIC_SEQ_CST);

	(void)prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)m, (unsigned long)len,
		    (unsigned long)"OTEL_CTX");
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: manymaps <mappings> [payload-hex]\n");
		return 2;
	}
	char *end;
	long n = strtol(argv[1], &end, 10);
	if (*end != '\0' || n < 0) {
		fprintf(stderr, "manymaps: bad mapping count %s\n", argv[1]);
		return 2;
	}
	if (n > 0)
		make_mappings(n);
	if (argc == 3)
		publish(argv[2]);

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	char buf[256];
	while (read(STDIN_FILENO, buf, sizeof buf) > 0) {
	}
	return 0;
}
