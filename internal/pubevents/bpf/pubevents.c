// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Publication events of OpenTelemetry process contexts (OTEP 4719): tells
 * user space at once when a process names a mapping OTEL_CTX (publish and
 * every update), creates a memfd named OTEL_CTX (a publish is coming), or
 * unmaps the context mapping of a process user space tracks.
 *
 * Every program runs after the syscall, so an event describes a finished
 * syscall (a memfd that exists, an unmap that is done: a reader never
 * races the kernel), and a user string the kernel itself read is resident
 * when we read it (a tracing program cannot fault pages in). Four ways to
 * attach, chosen in Go: fexit on the three syscall entry points (nothing
 * else pays); a kretprobe on prctl's and memfd_create's (nothing else pays
 * either, each of their calls costs more, and unmaps go unreported); the
 * exit events of the three syscalls (every
 * syscall takes the slow path, only these run a program); the raw
 * sys_exit tracepoint (every syscall runs the program).
 *
 * No vmlinux.h: the few kernel types used are declared below and relocated
 * against the running kernel's BTF (CO-RE).
 */

/* The integer types bpf_helper_defs.h expects, without linux/types.h. */
typedef unsigned char __u8;
typedef short int __s16;
typedef short unsigned int __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long int __s64;
typedef long long unsigned int __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/* UAPI values (linux/bpf.h), spelled out to need no kernel headers. */
#define MAP_HASH 1
#define MAP_PERCPU_ARRAY 6
#define MAP_RINGBUF 27

/* linux/prctl.h */
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0

#if defined(__TARGET_ARCH_x86)
/* The syscall's saved user registers; only the fields read here. */
struct pt_regs {
	unsigned long di, si, dx, r10, r8, ax, orig_ax;
} __attribute__((preserve_access_index));
/*
 * regs is a BTF-typed pointer in these programs: plain loads, relocated by
 * CO-RE, need no bpf_probe_read_kernel (one helper call each, and one that
 * lockdown=confidentiality withdraws).
 */
#define SYSCALL_ARG1(regs) ((regs)->di)
#define SYSCALL_ARG2(regs) ((regs)->si)
#define SYSCALL_ARG3(regs) ((regs)->dx)
#define SYSCALL_ARG4(regs) ((regs)->r10)
#define SYSCALL_ARG5(regs) ((regs)->r8)
#define SYSCALL_NR(regs) ((long)(regs)->orig_ax)
/* A kretprobe's registers: the function's return value. */
#define RETURN_VALUE(ctx) ((long)(ctx)->ax)

/* x86_64 numbers (asm/unistd_64.h). */
#define NR_munmap 11
#define NR_prctl 157
#define NR_memfd_create 319

/* task_struct starts with thread_info on x86 (THREAD_INFO_IN_TASK). */
struct thread_info {
	__u32 status;
} __attribute__((preserve_access_index));
struct task_struct {
	struct thread_info thread_info;
} __attribute__((preserve_access_index));
#define TS_COMPAT 0x0002 /* a 32-bit syscall is running */
/* 32-bit syscalls have entry points of their own (__ia32_sys_*). */
#define COMPAT_REACHES_ENTRY_POINTS 0

/*
 * A 32-bit syscall: only the raw sys_exit tracepoint sees them (with their
 * own numbers); the 64-bit entry points and their exit events do not.
 */
static __always_inline int in_compat_syscall(const struct pt_regs *regs)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return task->thread_info.status & TS_COMPAT;
}
#elif defined(__TARGET_ARCH_arm64)
/*
 * The syscall's saved user registers; only the fields read here (regs is
 * in an anonymous union of the kernel's struct, which CO-RE looks into).
 */
struct pt_regs {
	unsigned long regs[31];
	unsigned long pstate;
	unsigned long orig_x0;
	int syscallno;
} __attribute__((preserve_access_index));
/*
 * x0 holds the return value once the syscall returned (the exit events
 * and sys_exit run after that): the first argument is kept in orig_x0.
 */
#define SYSCALL_ARG1(regs) ((regs)->orig_x0)
#define SYSCALL_ARG2(regs) ((regs)->regs[1])
#define SYSCALL_ARG3(regs) ((regs)->regs[2])
#define SYSCALL_ARG4(regs) ((regs)->regs[3])
#define SYSCALL_ARG5(regs) ((regs)->regs[4])
#define SYSCALL_NR(regs) ((long)(regs)->syscallno)
/* A kretprobe's registers: the function's return value. */
#define RETURN_VALUE(ctx) ((long)(ctx)->regs[0])

/* arm64 numbers (asm-generic/unistd.h). */
#define NR_munmap 215
#define NR_prctl 167
#define NR_memfd_create 279

#define PSR_MODE32_BIT 0x10 /* the task runs AArch32 code */
#define COMPAT_REACHES_ENTRY_POINTS 1

/*
 * A syscall of a 32-bit (AArch32) task. Unlike x86's, arm64's compat
 * table calls the same __arm64_sys_prctl and __arm64_sys_munmap as 64-bit
 * tasks: every mechanism skips them, as on x86_64.
 */
static __always_inline int in_compat_syscall(const struct pt_regs *regs)
{
	return regs->pstate & PSR_MODE32_BIT;
}
#else
#error "pubevents: only the syscall registers of x86_64 and arm64 are declared"
#endif

enum event_kind {
	EVENT_PUBLISH = 1,
	EVENT_MEMFD = 2,
	EVENT_UNMAP = 3,
};

/* One ring buffer record; parsed by hand in Go, keep in sync. */
struct event {
	__u64 addr;
	__u64 len;
	__u32 tgid;
	enum event_kind kind;
	/*
	 * CLOCK_MONOTONIC ns, the clock of the proc connector's events: user
	 * space orders the two streams with it (an exec reported after the
	 * publication that followed it).
	 */
	__u64 time;
};

/* A tracked process's context mapping: [addr, addr+len). */
struct tracked_range {
	__u64 addr;
	__u64 len;
};

struct {
	__uint(type, MAP_RINGBUF);
	__uint(max_entries, 256 * 1024); /* set again at load time */
} events SEC(".maps");

/* Written by user space only: the processes whose munmap matters. */
struct {
	__uint(type, MAP_HASH);
	__uint(max_entries, 8192); /* set again at load time */
	__type(key, __u32);
	__type(value, struct tracked_range);
} tracked SEC(".maps");

/* Records dropped because the ring buffer was full. */
struct {
	__uint(type, MAP_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* The name of a context mapping, with its terminator. */
#define CTX_NAME "OTEL_CTX"
#define CTX_NAME_SIZE sizeof(CTX_NAME)

/*
 * is_ctx_name reports whether the user string at ptr is exactly
 * "OTEL_CTX": the read stops at the first NUL, so a length of 9 means 8
 * bytes and a terminator; longer names ("OTEL_CTX2") read more.
 */
static __always_inline int is_ctx_name(const void *ptr)
{
	char name[16];
	long n = bpf_probe_read_user_str(name, sizeof(name), ptr);

	if (n != CTX_NAME_SIZE)
		return 0;
#pragma unroll
	for (int i = 0; i < CTX_NAME_SIZE - 1; i++)
		if (name[i] != CTX_NAME[i])
			return 0;
	return 1;
}

static __always_inline void emit(enum event_kind kind, __u32 tgid, __u64 addr, __u64 len)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		__u32 zero = 0;
		__u64 *n = bpf_map_lookup_elem(&lost, &zero);

		/* Atomic: a tracing program can be preempted by another task on this CPU. */
		if (n)
			__sync_fetch_and_add(n, 1);
		return;
	}
	e->addr = addr;
	e->len = len;
	e->tgid = tgid;
	e->kind = kind;
	e->time = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, 0);
}

/* The pid in the initial pid namespace (what a host /proc shows). */
static __always_inline __u32 current_tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

/*
 * prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, addr, len, "OTEL_CTX"): a publish
 * or an update. Its result is ignored, as publishers ignore it: kernels
 * without CONFIG_ANON_VMA_NAME fail it with EINVAL.
 */
static __always_inline void handle_prctl(const struct pt_regs *regs)
{
	if (COMPAT_REACHES_ENTRY_POINTS && in_compat_syscall(regs))
		return;
	if (SYSCALL_ARG1(regs) != PR_SET_VMA || SYSCALL_ARG2(regs) != PR_SET_VMA_ANON_NAME)
		return;
	if (!is_ctx_name((const void *)SYSCALL_ARG5(regs)))
		return;
	emit(EVENT_PUBLISH, current_tgid(), SYSCALL_ARG3(regs), SYSCALL_ARG4(regs));
}

/*
 * memfd_create("OTEL_CTX", ...) that succeeded: the header is not written
 * yet, but a publish follows. A failed first try (publishers retry without
 * MFD_NOEXEC_SEAL) is not reported.
 */
static __always_inline void handle_memfd_create(const struct pt_regs *regs, long ret)
{
	if (ret < 0 || (COMPAT_REACHES_ENTRY_POINTS && in_compat_syscall(regs)))
		return;
	if (!is_ctx_name((const void *)SYSCALL_ARG1(regs)))
		return;
	emit(EVENT_MEMFD, current_tgid(), 0, 0);
}

/*
 * munmap that succeeded and overlaps the tracked mapping of the calling
 * process. munmap is frequent: everything else leaves after one hash
 * lookup. The tracked start is page aligned, so comparing against the
 * unrounded length is exact.
 */
static __always_inline void handle_munmap(const struct pt_regs *regs, long ret)
{
	if (ret != 0 || (COMPAT_REACHES_ENTRY_POINTS && in_compat_syscall(regs)))
		return;
	__u32 tgid = current_tgid();
	struct tracked_range *r = bpf_map_lookup_elem(&tracked, &tgid);

	if (!r)
		return;
	__u64 addr = SYSCALL_ARG1(regs);
	__u64 len = SYSCALL_ARG2(regs);

	if (addr < r->addr + r->len && r->addr < addr + len)
		emit(EVENT_UNMAP, tgid, addr, len);
}

/*
 * Preferred: one fexit program per syscall entry point, so that no other
 * syscall pays anything. Go sets the targets (AttachTo).
 */
SEC("fexit")
int BPF_PROG(on_prctl, const struct pt_regs *regs, long ret)
{
	handle_prctl(regs);
	return 0;
}

SEC("fexit")
int BPF_PROG(on_memfd_create, const struct pt_regs *regs, long ret)
{
	handle_memfd_create(regs, ret);
	return 0;
}

SEC("fexit")
int BPF_PROG(on_munmap, const struct pt_regs *regs, long ret)
{
	handle_munmap(regs, ret);
	return 0;
}

/*
 * Where the kernel refuses BPF trampolines (arm64 before Linux 6.4, some
 * hardened kernels): a kretprobe on the entry points of prctl and
 * memfd_create. Only those syscalls pay (a breakpoint or an ftrace call on
 * entry, a return trampoline on exit): no other syscall, and not munmap,
 * which every process makes and a kprobe would make dearer (unmaps are
 * then found by the reader's scans). The arguments are read from the
 * task's saved user registers, as the exit events below do: a kretprobe
 * sees the function's registers at its return. Go sets the targets.
 */
static __always_inline const struct pt_regs *current_regs(void)
{
	return (const struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
}

SEC("kretprobe")
int on_ret_prctl(struct pt_regs *ctx)
{
	handle_prctl(current_regs());
	return 0;
}

SEC("kretprobe")
int on_ret_memfd_create(struct pt_regs *ctx)
{
	handle_memfd_create(current_regs(), RETURN_VALUE(ctx));
	return 0;
}

/*
 * Where the kernel refuses BPF trampolines: the syscall exit events of the
 * three syscalls (tracefs's syscalls/sys_exit_*). Only these syscalls run
 * a program; enabling any syscall event does move every task to the
 * kernel's slower syscall path (about 1 % per syscall, measured). Their
 * context holds the return value, not the arguments: those are in the
 * task's saved user registers, which a syscall leaves as they were (but
 * for the return value's register). 32-bit syscalls do not fire these
 * events.
 */
struct syscall_exit {
	__u64 common; /* type, flags, preempt count, pid */
	int nr;
	long ret;
};

SEC("tracepoint/syscalls/sys_exit_prctl")
int on_exit_prctl(struct syscall_exit *ctx)
{
	handle_prctl(current_regs());
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_memfd_create")
int on_exit_memfd_create(struct syscall_exit *ctx)
{
	handle_memfd_create(current_regs(), ctx->ret);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_munmap")
int on_exit_munmap(struct syscall_exit *ctx)
{
	handle_munmap(current_regs(), ctx->ret);
	return 0;
}

/*
 * Only when asked for by name, for what it costs: the raw syscall exit
 * tracepoint (no tracefs needed). It runs after every syscall of every
 * task, and its presence puts all syscalls on the slower traced path.
 * 32-bit syscalls reach it with their own numbers: they are skipped, as
 * the fexit programs (64-bit entry points) never see them.
 */
SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, const struct pt_regs *regs, long ret)
{
	long nr = SYSCALL_NR(regs);

	if (nr != NR_prctl && nr != NR_memfd_create && nr != NR_munmap)
		return 0;
	if (in_compat_syscall(regs))
		return 0;
	if (nr == NR_prctl)
		handle_prctl(regs);
	else if (nr == NR_memfd_create)
		handle_memfd_create(regs, ret);
	else
		handle_munmap(regs, ret);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
