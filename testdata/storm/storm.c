// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

/*
 * storm: starts short-lived processes at a steady rate, for the tracker's
 * storm benchmark and test.
 *
 *   storm RATE SECONDS [EXEC_EVERY]
 *
 * Every 1/RATE s it forks a child that exits at once; every EXEC_EVERY-th
 * child (0: none) execs /bin/true instead, so that exec events come too.
 * Children are reaped by the kernel (SA_NOCLDWAIT): no zombies pile up. On
 * exit it prints "started N" with the number of children it started.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "storm: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: storm RATE SECONDS [EXEC_EVERY]\n");
		return 2;
	}
	double rate = atof(argv[1]), seconds = atof(argv[2]);
	long exec_every = argc > 3 ? atol(argv[3]) : 0;
	if (rate <= 0 || seconds <= 0)
		return 2;

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	sa.sa_flags = SA_NOCLDWAIT;
	if (sigaction(SIGCHLD, &sa, NULL) != 0)
		die("sigaction");

	double start = now(), interval = 1.0 / rate;
	long started = 0;
	for (;;) {
		double elapsed = now() - start;
		if (elapsed >= seconds)
			break;
		/* Catch up in a burst when behind: the rate is kept on average. */
		long due = (long)(elapsed * rate) + 1;
		for (; started < due; started++) {
			pid_t pid = fork();
			if (pid < 0) {
				if (errno == EAGAIN)
					break;
				die("fork");
			}
			if (pid == 0) {
				if (exec_every > 0 && started % exec_every == 0) {
					execl("/bin/true", "true", (char *)NULL);
				}
				_exit(0);
			}
		}
		struct timespec ts = {0, (long)(interval * 1e9)};
		if (ts.tv_nsec > 1000000)
			ts.tv_nsec = 1000000; /* wake at least every millisecond */
		nanosleep(&ts, NULL);
	}
	printf("started %ld\n", started);
	return 0;
}
