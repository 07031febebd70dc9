// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

/*
 * getppid: the host's other process in BenchmarkHostCost. Makes N getppid
 * syscalls (the cheapest real syscall: what a hook on every syscall costs
 * shows most) or, with "munmap" as second argument, N pairs of mmap and
 * munmap of one page (munmap is one of the syscalls the publication events
 * hook, which every process makes) in 20 stretches and prints the CPU time of one syscall in
 * the fastest stretch, in nanoseconds: CPU time, not wall time, so that
 * being preempted does not count, and the fastest stretch, so that what
 * else the shared machine did meanwhile (interrupts, a neighbour on the
 * sibling hyperthread) counts as little as it can. It runs on the last CPU:
 * the CPUs of a VM need not be equally fast (the development VM's first is
 * about 8 % slower), and the comparison must not depend on which it got.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define STRETCHES 20

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* One mmap and munmap of a page not touched: the syscalls' own work. */
static void map_unmap(void)
{
	void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED || munmap(p, 4096) != 0) {
		perror("mmap/munmap");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	int munmaps = argc > 2 && strcmp(argv[2], "munmap") == 0;
	long per = n / STRETCHES;
	double best = 0;

	cpu_set_t cpus;

	if (per <= 0)
		return 2;
	CPU_ZERO(&cpus);
	CPU_SET(sysconf(_SC_NPROCESSORS_ONLN) - 1, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus) != 0) {
		perror("sched_setaffinity");
		return 1;
	}
	syscall(SYS_getppid);
	for (int s = 0; s < STRETCHES; s++) {
		double start = now_ns();

		if (munmaps)
			for (long i = 0; i < per; i++)
				map_unmap();
		else
			for (long i = 0; i < per; i++)
				syscall(SYS_getppid);
		double ns = (now_ns() - start) / per;
		if (s == 0 || ns < best)
			best = ns;
	}
	printf("%.2f\n", best);
	return 0;
}
