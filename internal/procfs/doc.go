// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package procfs is the toolkit for reading what a procfs says about
// processes, through a root path that may be the host's ("/") or a host
// filesystem mounted in a container (e.g. "/hostfs"): listing pids with
// their inode numbers, the start time that tells a reused pid from its
// previous process, the identity of a process (executable, command line,
// owner, NSpid, container id and Kubernetes pod uid from the cgroup path),
// user names from the root's passwd file, the environment as a stream (for
// the two SDK variables internal/sdkenv keeps), and why a process cannot be
// read.
//
// Small parsers over procfs text, in the manner of prometheus/procfs (which
// it uses for exe, cmdline, status and the boot time); the hot path
// (StartTime) allocates nothing.
//
// # Errors
//
// Errors about a process wrap one of these kinds (test with errors.Is), with
// the pid and the file in the message:
//
//   - ErrProcessGone: the process exited, is a zombie, or its pid was reused
//     while it was read.
//   - ErrPermissionDenied: the procfs refused the file (ptrace access checks,
//     hidepid).
//   - ErrMalformed: a file did not parse (a kernel we do not know).
//
// Any other OS error is wrapped as it is. NewFS wraps ErrNoProcfs; CheckHost
// wraps ErrNotHostProcfs; PidLister.List wraps the OS error of the listing,
// or ErrNoProcfs when the directory is no longer a procfs (unmounted);
// CheckAccess wraps ErrPermissionDenied.
package procfs
