// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ClockTicks is USER_HZ, the unit of start times in /proc/<pid>/stat (100 on
// every Linux ABI).
const ClockTicks = 100

// statBufSize bounds the bytes of /proc/<pid>/stat read. Field 22 (the start
// time) ends within the first ~500 bytes: the comm is at most 64 bytes and
// fields 3-22 at most 20 numbers of at most 20 digits.
const statBufSize = 1024

// StartTime returns the process's start time in clock ticks since boot
// (field 22 of /proc/<pid>/stat). Together with the pid it identifies a
// process: pids are reused, (pid, start time) are not.
//
// A process that exited, or is a zombie, is reported as ErrProcessGone; a
// procfs mounted with hidepid may give ErrPermissionDenied. This is the hot
// path of a scan: one open, read and close into a stack buffer, no allocation
// (unless the procfs path is very long).
func (fs *FS) StartTime(pid int) (uint64, error) {
	var buf [statBufSize]byte
	st, err := fs.statFields(pid, &buf) // not Stat: no clock read for an Age unused
	return st.start, err
}

// Stat is what the tracker reads of a process it sees for the first time.
type Stat struct {
	// StartTicks is the start time in clock ticks since boot (field 22).
	StartTicks uint64
	// KernelThread: a kernel thread (PF_KTHREAD in field 9), which has no
	// user memory and never publishes.
	KernelThread bool
	// Age is how long before the read it started, by CLOCK_BOOTTIME (the
	// clock of start times); 0 if that clock cannot be read.
	Age time.Duration
	// VSize is the size of its address space in bytes (field 23): a new
	// mapping changes it; 0 if the line stops before it.
	VSize uint64
}

// Pages is VSize in 4 KiB units, truncated to 32 bits: the part that tells
// a change of the address space (16 TiB of change go unseen).
func (s Stat) Pages() uint32 { return uint32(s.VSize >> 12) }

// Stat reads the start time and whether pid is a kernel thread, from one
// read of /proc/<pid>/stat; its errors are StartTime's.
func (fs *FS) Stat(pid int) (Stat, error) {
	var buf [statBufSize]byte
	st, err := fs.statFields(pid, &buf)
	if err != nil {
		return Stat{}, err
	}
	s := Stat{StartTicks: st.start, KernelThread: st.flags&pfKthread != 0, VSize: st.vsize}
	var now unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &now) == nil {
		s.Age = max(time.Duration(now.Nano())-time.Duration(st.start)*(time.Second/ClockTicks), 0)
	}
	return s, nil
}

// pfKthread is PF_KTHREAD of include/linux/sched.h.
const pfKthread = 0x00200000

// statFields reads and parses /proc/<pid>/stat through buf; the comm of the
// result points into buf. A zombie or dead process is ErrProcessGone.
func (fs *FS) statFields(pid int, buf *[statBufSize]byte) (statLine, error) {
	n, err := fs.readStat(pid, buf)
	if err != nil {
		return statLine{}, err
	}
	st, err := parseStatLine(buf[:n])
	if err != nil {
		return statLine{}, fmt.Errorf("parse stat of pid %d: %w", pid, err)
	}
	if st.gone() {
		return statLine{}, fmt.Errorf("stat of pid %d: state %c: %w", pid, st.state, ErrProcessGone)
	}
	return st, nil
}

// readStat reads the start of <root>/proc/<pid>/stat into buf and returns the
// number of bytes read. It calls openat directly with a NUL-terminated path
// built on the stack: unix.Open would copy the path to the heap.
func (fs *FS) readStat(pid int, buf *[statBufSize]byte) (int, error) {
	var pathBuf [128]byte
	p := append(pathBuf[:0], fs.proc...)
	p = append(p, '/')
	p = strconv.AppendInt(p, int64(pid), 10)
	p = append(p, "/stat\x00"...)
	if bytes.IndexByte(p[:len(p)-1], 0) >= 0 {
		return 0, fmt.Errorf("open stat of pid %d: %w", pid, unix.EINVAL)
	}
	dirfd := unix.AT_FDCWD
	var fd int
	for {
		r, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&p[0])),
			uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, WrapOS("open stat", pid, errno)
		}
		fd = int(r)
		break
	}
	defer func() { _ = unix.Close(fd) }()
	// A raw read too: unix.Read, built with -race, moves buf to the heap.
	n := 0
	for n < len(buf) {
		r, _, errno := unix.Syscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&buf[n])), uintptr(len(buf)-n))
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, WrapOS("read stat", pid, errno)
		}
		if r == 0 {
			break
		}
		n += int(r)
		if buf[n-1] == '\n' {
			// The kernel hands out the whole line, newline last, in one
			// read: no need for another read to see EOF (a quarter of
			// the syscalls of a steady-state scan).
			break
		}
	}
	if n == 0 {
		// The task was released between the open and the read.
		return 0, fmt.Errorf("read stat of pid %d: empty: %w", pid, ErrProcessGone)
	}
	return n, nil
}

// statLine holds the fields of /proc/<pid>/stat the identity needs.
type statLine struct {
	comm  []byte // field 2 without the parentheses; a sub-slice of the input
	state byte   // field 3
	ppid  int    // field 4
	flags uint64 // field 9, the task's PF_* flags
	start uint64 // field 22, clock ticks since boot
	vsize uint64 // field 23, bytes; 0 when the data stops before it
}

// gone reports whether the state is zombie or dead: the process has exited
// and only waits to be reaped.
func (s statLine) gone() bool {
	return s.state == 'Z' || s.state == 'X' || s.state == 'x'
}

// errMalformedStat is wrapped by every parse error of a stat line.
var errMalformedStat = fmt.Errorf("stat: %w", ErrMalformed)

// parseStatLine parses the fields of a stat line up to field 23. The comm
// (field 2) may hold any byte, spaces and parentheses included, so the fields
// after it are found after the last ')'. Field 22 must be followed by a
// separator (it always is in a full stat line): data that stops inside it,
// as a short or truncated read would, is an error; field 23 is left 0 when
// the data stops before its end.
func parseStatLine(data []byte) (statLine, error) {
	var st statLine
	open := bytes.IndexByte(data, '(')
	closing := lastIndexByte(data, ')')
	if open < 0 || closing < open {
		return st, fmt.Errorf("no (comm): %w", errMalformedStat)
	}
	st.comm = data[open+1 : closing]
	rest := data[closing+1:]
	// Fields 3 to 23 follow, each preceded by one space.
	for field := 3; field <= 23; field++ {
		if len(rest) == 0 || rest[0] != ' ' {
			if field == 23 {
				break
			}
			return st, fmt.Errorf("field %d missing: %w", field, errMalformedStat)
		}
		rest = rest[1:]
		end := 0
		for end < len(rest) && rest[end] != ' ' && rest[end] != '\n' {
			end++
		}
		if field == 23 {
			if v, ok := parseDecimalUint(rest[:end]); ok && end < len(rest) {
				st.vsize = v
			}
			break
		}
		if end == 0 || (field == 22 && end == len(rest)) {
			// Empty, or the data stops inside field 22.
			return st, fmt.Errorf("field %d missing: %w", field, errMalformedStat)
		}
		v := rest[:end]
		rest = rest[end:]
		switch field {
		case 3:
			if len(v) != 1 {
				return st, fmt.Errorf("state %q: %w", string(v), errMalformedStat)
			}
			st.state = v[0]
		case 4:
			ppid, ok := parseDecimalUint(v)
			if !ok || ppid > 1<<31-1 {
				return st, fmt.Errorf("ppid %q: %w", string(v), errMalformedStat)
			}
			st.ppid = int(ppid)
		case 9:
			flags, ok := parseDecimalUint(v)
			if !ok {
				return st, fmt.Errorf("flags %q: %w", string(v), errMalformedStat)
			}
			st.flags = flags
		case 22:
			start, ok := parseDecimalUint(v)
			if !ok {
				return st, fmt.Errorf("start time %q: %w", string(v), errMalformedStat)
			}
			st.start = start
		}
	}
	return st, nil
}

// lastIndexByte is bytes.LastIndexByte for data where c is rare, e.g. ')'
// in a stat line: repeated forward searches, which are vectorized, where
// bytes.LastIndexByte goes back one byte at a time over the whole line (half
// the cost of parsing it).
func lastIndexByte(data []byte, c byte) int {
	last := -1
	for from := 0; ; {
		i := bytes.IndexByte(data[from:], c)
		if i < 0 {
			return last
		}
		last = from + i
		from = last + 1
	}
}

// parseDecimalUint parses a non-empty unsigned decimal number that fits in a
// uint64.
func parseDecimalUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
