// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package pubevents delivers publication events of process contexts (OTEP
// 4719) from a small eBPF program, so a tracker reads a context when it is
// published or updated instead of at its next poll of the host.
//
// The program reports, after the syscall returned:
//
//   - Publish: prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, addr, len,
//     "OTEL_CTX"), which a publisher issues after every publish and update,
//     whether or not the kernel can name mappings (kernels without
//     CONFIG_ANON_VMA_NAME fail it with EINVAL; it is reported all the same).
//   - Memfd: a successful memfd_create("OTEL_CTX"): a publish is coming,
//     the header is not written yet.
//   - Unmap: a successful munmap overlapping the mapping registered for the
//     process with Track (not with Kprobe, which leaves munmap alone).
//
// Events are hints, not a record of state: they come from every process
// of the host, any program may issue the same calls, and a publication can
// go unreported (below), so a reader still verifies what it reads and
// keeps polling, only less often. PID is the pid in the initial pid
// namespace, as a host /proc shows it, also for processes in containers.
//
// What is not reported: unmaps with Kprobe (above), a process's exit or
// exec (no munmap is called),
// a context mapping replaced by mmap(MAP_FIXED) or moved by mremap,
// syscalls of 32-bit processes, records dropped because the ring buffer
// was full (counted by Lost), and a prctl whose name string is in a page
// that is not resident: a tracing program cannot fault it in, and kernels
// without CONFIG_ANON_VMA_NAME do not read the name themselves
// (memfd_create does, before the program reads it). Track entries stay
// until Untrack, also after the process exits.
//
// # Mechanisms, by what they cost the host's other processes
//
// Fexit, the default, attaches one program to each of the three syscalls'
// entry points (__x64_sys_prctl, __x64_sys_memfd_create and
// __x64_sys_munmap on x86_64; __arm64_sys_* on arm64): no other syscall
// pays anything. It needs BPF trampolines for kernel functions: x86_64
// has them since Linux 5.5, arm64 only since 6.4 (ftrace direct calls),
// so Debian 12's 6.1 on arm64 refuses them. The development VM's kernel
// refuses them with EPERM even to root, for every target (vfs_read as
// well) and for BPF LSM programs too, and it refuses ftrace's function
// tracer the same way (writing "function" to tracefs's current_tracer
// fails with EPERM): that kernel does not let anything patch function
// entries, so the refusal is the kernel's, not this program's.
//
// An entry point's name may have more than one function in the kernel's
// BTF: Debian 12's cloud kernel (6.1) holds two __x64_sys_memfd_create,
// the definition and the weak stub of kernel/sys_ni.c, which the linker
// dropped. cilium/ebpf refuses such a name (cilium/ebpf#894); when every
// candidate has the same prototype, that program is loaded here with the
// first one's BTF type id, as libbpf would: the kernel finds the function
// by its name, of which there is one symbol. Candidates of different
// prototypes are ErrUnsupported, naming the program.
//
// Kprobe attaches a kretprobe to the entry points of prctl and
// memfd_create, through the kprobe PMU (perf_event_open): no other
// syscall pays anything, and each of those two pays a kprobe's entry (a
// breakpoint, or an ftrace call where the kernel has kprobes on ftrace)
// and its return trampoline, more than fexit's call. It leaves munmap
// alone and reports no Unmap: every process of the host makes munmaps,
// and under emulation (arm64, Debian 12's 6.1) a kretprobe made an mmap
// and munmap pair 1.3x dearer, where it leaves prctl, rare outside
// publishers, as it finds it. A reader learns of an unpublish by reading
// the publication again (the tracker does at each scan when its source
// reports no unmaps). It needs kprobe events (CONFIG_KPROBE_EVENTS), which
// the development VM's kernel lacks (ErrUnsupported), not trampolines. A
// kretprobe runs at most max(10, 2 × CPUs) calls of one function at once;
// a call beyond that goes unreported, as a full ring buffer's records do.
//
// SyscallTracepoints attaches to the exit events of the three syscalls
// (syscalls/sys_exit_prctl, …): only they run a program, which finds the
// arguments in the task's saved user registers. But while any syscall
// event is enabled every syscall of every task takes the kernel's slower
// traced path: about 30 ns more per getppid on the development VM (1.2x–1.3x).
// The events' ids come from tracefs: a mounted one (/sys/kernel/tracing or
// /sys/kernel/debug/tracing) or, with CAP_SYS_ADMIN, a tracefs mount
// attached nowhere (fsmount), so a host without tracefs mounted needs no
// change.
//
// RawSysExit attaches to the raw sys_exit tracepoint: every syscall of the
// host takes the traced path and runs the program (about 80 ns more per
// getppid on the development VM, 1.6x–1.7x).
//
// BenchmarkHostCost in test/e2e measures what each costs the host's other
// syscalls.
//
// # Requirements
//
// Linux 5.15 or later on x86_64 or arm64 with kernel BTF
// (/sys/kernel/btf/vmlinux), and CAP_BPF with CAP_PERFMON, or root;
// kprobes only by Kprobe, tracefs only by SyscallTracepoints. The
// programs are built for both architectures (bpf2go's -target amd64,arm64:
// each declares its own syscall registers and numbers). 32-bit processes
// (ia32 on x86_64, AArch32 on arm64) are not reported by any mechanism.
// BPF memory is charged to the memory cgroup, not
// RLIMIT_MEMLOCK, which this package leaves alone (errors leave out the
// "MEMLOCK may be too low" hint cilium/ebpf adds: it is moot on these
// kernels).
//
// # Errors
//
// Load returns an error wrapping ErrPermission when the kernel refused for
// lack of privilege (EPERM without CAP_BPF and CAP_PERFMON, or lockdown),
// and ErrUnsupported when this system cannot run the programs (another OS
// or architecture, no kernel BTF, no attach target or an ambiguous one, no
// syscall events, or with Fexit an EPERM despite those capabilities: a
// kernel refusing trampolines); both also wrap the underlying error, which
// names the program that failed.
// Any other Load error is unexpected, such as a verifier rejection, whose
// log it carries. Read returns ErrClosed after Close,
// os.ErrDeadlineExceeded when the deadline of SetDeadline passed, and for
// a record it cannot parse (it never should) an error after which the
// Watcher is still usable. Track returns an error wrapping ErrTrackFull
// when the tracked map is full, and ErrClosed after Close.
package pubevents
