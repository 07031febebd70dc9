// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

/*
 * Test helper: a 32-bit syscall (int $0x80) whose number is prctl's on
 * x86_64 (157, sched_getscheduler in the 32-bit table), with the 64-bit
 * registers holding prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, 0x1000,
 * 0x2000, "OTEL_CTX"); then a real prctl naming 0x3000+0x4000 as the
 * marker. Prints the 32-bit call's result.
 */
#include <stdio.h>
#include <sys/prctl.h>

int main(void)
{
	char name[] = "OTEL_CTX"; /* on the stack: resident */
	long ret;
	register long r10 __asm__("r10") = 0x2000;
	register long r8 __asm__("r8") = (long)name;

	/* int $0x80 from 64-bit code enters the 32-bit syscall table. */
	__asm__ volatile("int $0x80"
			 : "=a"(ret), "+r"(r10), "+r"(r8)
			 : "a"(157L), "b"(0L), "D"(0x53564d41L), "S"(0L), "d"(0x1000L)
			 : "r9", "r11", "memory", "cc");
	prctl(0x53564d41, 0, 0x3000, 0x4000, name);
	printf("int80=%ld\n", ret);
	return 0;
}
