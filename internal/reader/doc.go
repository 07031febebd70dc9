// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package reader reads the process context of a live process on this host:
// it finds the context mapping in <root>/proc/<pid>/maps and reads the
// header and payload out of the process's memory with the protocol of
// internal/otep, through process_vm_readv or pread on <root>/proc/<pid>/mem.
//
// The maps text costs the kernel a formatted line per VMA, and processes
// with tens of thousands of them (JVMs, browsers) dominate a scan. So
// FindMapping reads only the first 64 KiB of the text and asks the
// PROCMAP_QUERY ioctl (Linux 6.11) of the same file for the readable
// file-backed VMAs after it, one at a time, skipping the anonymous ones in
// the kernel: without anonymous VMA naming (CONFIG_ANON_VMA_NAME, probed
// once by New) those carry no name, so the answer is the text's. Where the
// kernel names anonymous VMAs or refuses the ioctl, it reads the whole text.
// Stats counts the text's bytes and the queries.
//
// Every call may block as long as the target lets it (process_vm_readv on
// userfaultfd-registered pages waits until the fault is served): callers
// that must not stall run reads under a deadline, as internal/tracker does.
// ViaMemFile avoids process_vm_readv for a process that stalled it once:
// pread of the mem file fails at once where process_vm_readv waits.
//
// # Errors
//
// Errors name the pid and wrap the kinds of internal/otep (ErrNoContext,
// ErrTorn, ErrInvalid, ErrTooLarge) and of internal/procfs (ErrProcessGone,
// ErrPermissionDenied); an error of neither kind wraps the OS error, or
// says that a PROCMAP_QUERY walk did not end.
package reader
