// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procevents

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The proc connector reports every thread's fork and exit. A process that
// starts threads by the dozen (a compiler, a JVM, any Go program) makes
// dozens of messages the listener drops (message.event): each a wake-up of
// the collector for nothing. threadFilter drops them in the kernel, before
// they are queued on the socket: a classic BPF socket filter that keeps a
// message unless it is a fork whose child_pid is not its child_tgid, or an
// exit whose process_pid is not its process_tgid. event still checks
// every message: the filter is best effort (attachFilter).

// Offsets in the datagram (nlmsghdr, cn_msg, proc_event) of what the
// filter reads: proc_event.what, and the pids it compares.
const (
	filterWhat       = cnDataOffset
	filterData       = cnDataOffset + procEventHeaderLen
	filterChildPid   = filterData + 8 // fork: child_pid, then child_tgid
	filterProcessPid = filterData     // exit: process_pid, then process_tgid
	filterKeep       = 0xffff_ffff    // the whole datagram
)

// threadFilter is the filter program. A load beyond the datagram's end
// ends the program and drops the datagram: only forks and exits are
// loaded past what, and each kind is long enough in every kernel's form.
func threadFilter() []unix.SockFilter {
	// BPF_ABS loads are big-endian; what is in the host's order.
	what := func(w uint32) uint32 {
		var b [4]byte
		binary.NativeEndian.PutUint32(b[:], w)
		return binary.BigEndian.Uint32(b[:])
	}
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: jt, Jf: jf, K: k}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	tax := unix.SockFilter{Code: unix.BPF_MISC | unix.BPF_TAX}
	return []unix.SockFilter{
		/* 0 */ ld(filterWhat),
		/* 1 */ jeq(what(procEventFork), 0, 4), // else to 6
		/* 2 */ ld(filterChildPid + 4), // child_tgid
		/* 3 */ tax,
		/* 4 */ ld(filterChildPid),
		/* 5 */ {Code: unix.BPF_JMP | unix.BPF_JA, K: 4}, // to 10
		/* 6 */ jeq(what(procEventExit), 0, 4), // else to 11: keep
		/* 7 */ ld(filterProcessPid + 4), // process_tgid
		/* 8 */ tax,
		/* 9 */ ld(filterProcessPid),
		/* 10 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_X, Jt: 0, Jf: 1}, // a thread's: drop
		/* 11 */ ret(filterKeep),
		/* 12 */ ret(0),
	}
}

// attachFilter attaches threadFilter to the socket fd. A kernel that
// refuses it only costs the wake-ups: event drops the threads' messages.
func attachFilter(fd int) error {
	prog := threadFilter()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: unsafe.SliceData(prog)}
	return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog)
}
