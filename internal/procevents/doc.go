// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package procevents delivers the kernel's process events (a new process,
// an exec, the exit of a process) from the netlink proc connector, within
// milliseconds of the event, so the process tracker need not wait for its
// next scan of procfs to learn of them.
//
// Events are about processes (thread groups), never threads: a fork that
// creates a thread and the exit of a thread other than the leader are
// filtered out, in the kernel by a socket filter (so that a threaded
// program does not wake the listener once per thread) and again when a
// message is parsed; an exec reports the process. Pids are those of the initial
// pid namespace, as the host's procfs shows them.
//
// Events are hints, to be checked against procfs: the kernel drops events
// when the socket's buffer is full (Read reports it, and the caller must
// scan to catch up), or when it cannot allocate a message (which nothing
// reports); and an Exit reports the exit of the process's leader thread,
// which may come before the end of the process (see Exit).
//
// # Requirements
//
// The kernel needs CONFIG_CONNECTOR and CONFIG_PROC_EVENTS. The proc
// connector serves only the initial network namespace, and only accepts a
// subscription from a process in the initial user and pid namespaces: in a
// container it needs the host's network, pid and user namespaces
// (hostNetwork and hostPID in Kubernetes). It also needs CAP_NET_ADMIN
// where the kernel refuses the binding without it, as Linux 6.18 does in
// any namespace (TestWithoutNetAdmin says which a kernel does), and that
// refusal comes first: in a container without it, the kernel answers
// ErrPermission before it would say that the namespaces are not the
// host's (internal/hostopen tells those apart). A listener without
// CAP_NET_ADMIN cannot raise its socket buffer above net.core.rmem_max,
// and so loses events in smaller bursts.
//
// # Errors
//
// Listen's errors say what failed and wrap one of these kinds (test with
// errors.Is) with the OS error, when they have a kind:
//
//   - ErrPermission: the kernel refused the socket, its binding to the
//     proc connector's group or the subscription (no CAP_NET_ADMIN; a
//     seccomp or LSM policy).
//   - ErrUnsupported: the proc connector is not there for this process:
//     a kernel without CONFIG_CONNECTOR, a network namespace other than the
//     initial one (the kernel refuses the subscription), or no answer to
//     the subscription (a kernel without CONFIG_PROC_EVENTS, or a process
//     outside the initial user or pid namespace, whose subscription the
//     kernel ignores).
//
// Read returns ErrClosed once the Listener is closed; a full socket buffer
// is not an error (Read reports it as lost events); any other error wraps
// the OS error.
package procevents
