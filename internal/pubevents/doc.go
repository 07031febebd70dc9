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
//     process with Track.
//
// Events are hints, not a record of state: they come from every process
// of the host, any program may issue the same calls, and a publication can
// go unreported (below), so a reader still verifies what it reads and
// keeps polling, only less often. PID is the pid in the initial pid
// namespace, as a host /proc shows it, also for processes in containers.
//
// What is not reported: a process's exit or exec (no munmap is called),
// a context mapping replaced by mmap(MAP_FIXED) or moved by mremap,
// syscalls of 32-bit processes, records dropped because the ring buffer
// was full (counted by Lost), and a prctl whose name string is in a page
// that is not resident: a tracing program cannot fault it in, and kernels
// without CONFIG_ANON_VMA_NAME do not read the name themselves
// (memfd_create does, before the program reads it). Track entries stay
// until Untrack, also after the process exits.
//
// # Mechanisms
//
// Fexit attaches one program to each of __x64_sys_prctl,
// __x64_sys_memfd_create and __x64_sys_munmap: no other syscall pays
// anything. It needs BPF trampolines, which some kernels refuse even to
// root, with EPERM (the development VM's kernel does). SyscallTracepoint attaches to the raw sys_exit
// tracepoint instead: every syscall of the host then takes the traced
// path and runs the program (25-45 ns more each in a micro-benchmark of the
// program, about 150 ns per getppid with the collector running, measured on the
// development VM). Auto, the default, tries Fexit first; FallbackReason
// says why it fell back.
//
// # Requirements
//
// Linux 5.11 or later on x86_64 with kernel BTF (/sys/kernel/btf/vmlinux),
// and CAP_BPF with CAP_PERFMON, or root. Neither kprobes nor tracefs are
// used. BPF memory is charged to the memory cgroup, not RLIMIT_MEMLOCK,
// which this package leaves alone (the "MEMLOCK may be too low" hint in
// some errors comes from cilium/ebpf and is moot on these kernels).
//
// # Errors
//
// Load returns an error wrapping ErrPermission when the kernel refused for
// lack of privilege (EPERM: missing capabilities, lockdown, or with Fexit
// alone a kernel refusing trampolines), and ErrUnsupported when this
// system cannot run the programs (another OS or architecture, no kernel
// BTF, no attach target); both also wrap the underlying error. Any other
// Load error is unexpected, such as a verifier rejection, whose log it
// carries. With Auto, the error is the tracepoint's, the fexit error is in
// its text. Read returns ErrClosed after Close, os.ErrDeadlineExceeded
// when the deadline of SetDeadline passed, and for a record it cannot
// parse (it never should) an error after which the Watcher is still
// usable. Track returns an error wrapping ErrTrackFull when the tracked
// map is full, and ErrClosed after Close.
package pubevents
