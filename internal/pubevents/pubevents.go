// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pubevents

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// Kind is what happened.
type Kind uint8

// Kinds of events; the values are those of enum event_kind in
// bpf/pubevents.c.
const (
	// Publish is prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, Addr, Len,
	// "OTEL_CTX"): a publish or an update of the mapping at Addr.
	Publish Kind = 1
	// Memfd is a successful memfd_create("OTEL_CTX"): a publish is coming.
	Memfd Kind = 2
	// Unmap is a successful munmap(Addr, Len) overlapping the tracked
	// mapping of the process.
	Unmap Kind = 3
)

func (k Kind) String() string {
	switch k {
	case Publish:
		return "publish"
	case Memfd:
		return "memfd"
	case Unmap:
		return "unmap"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one publication event.
type Event struct {
	Kind Kind
	// PID is the process's pid in the initial pid namespace.
	PID int
	// Addr and Len are the prctl's or munmap's range; 0 for Memfd.
	Addr, Len uint64
	// Time is when the syscall returned, in nanoseconds of CLOCK_MONOTONIC
	// (bpf_ktime_get_ns), the clock of the proc connector's events.
	Time uint64
}

// Sentinel errors; see the package documentation.
var (
	ErrPermission  = errors.New("pubevents: permission denied (needs CAP_BPF and CAP_PERFMON, or root)")
	ErrUnsupported = errors.New("pubevents: not supported on this system")
	ErrClosed      = errors.New("pubevents: watcher closed")
	ErrTrackFull   = errors.New("pubevents: tracked map is full")
)

// Mechanism is how the programs are attached to the syscalls. Its String
// is the name configurations use. The cheapest for the host comes first;
// only Fexit and Kprobe cost the host's other syscalls nothing.
type Mechanism uint8

const (
	// Fexit attaches one program to each of the three syscalls' entry
	// points: no other syscall pays anything. It needs BPF trampolines.
	Fexit Mechanism = iota
	// Kprobe attaches a kretprobe to the entry points of prctl and
	// memfd_create: no other syscall pays anything, and those two more
	// than with Fexit. It reports no Unmap: munmap, which every process
	// makes, is left alone. It needs kprobes (CONFIG_KPROBE_EVENTS), not
	// trampolines: arm64 kernels before 6.4 have no trampolines for
	// kernel functions.
	Kprobe
	// SyscallTracepoints attaches to the exit events of the three syscalls
	// (tracefs's syscalls/sys_exit_*): only they run a program, but while
	// any syscall event is enabled every syscall of the host takes the
	// kernel's slower traced path. It reads the events' ids from tracefs
	// (a mounted one, or one it mounts nowhere, which needs CAP_SYS_ADMIN).
	SyscallTracepoints
	// RawSysExit attaches to the raw sys_exit tracepoint: no trampoline, no
	// tracefs, but every syscall of the host takes the traced path and runs
	// the program.
	RawSysExit
)

func (m Mechanism) String() string {
	switch m {
	case Fexit:
		return "fexit"
	case Kprobe:
		return "kprobe"
	case SyscallTracepoints:
		return "syscall_tracepoints"
	case RawSysExit:
		return "raw_sys_exit"
	}
	return "mechanism(" + strconv.Itoa(int(m)) + ")"
}

// ParseMechanism returns the mechanism String names.
func ParseMechanism(name string) (Mechanism, error) {
	for m := Fexit; m <= RawSysExit; m++ {
		if m.String() == name {
			return m, nil
		}
	}
	return Fexit, fmt.Errorf("pubevents: unknown mechanism %q (fexit, kprobe, syscall_tracepoints or raw_sys_exit)", name)
}

// ReportsUnmaps reports whether the mechanism reports Unmap events: all but
// Kprobe.
func (m Mechanism) ReportsUnmaps() bool { return m != Kprobe }

// Options select the mechanism and size the BPF maps; zero values select
// the defaults.
type Options struct {
	// Mechanism is Fexit by default.
	Mechanism Mechanism
	// RingSize is the ring buffer's size in bytes: a power of two and a
	// multiple of the page size. Default 256 KiB, room for 8192 events.
	RingSize int
	// MaxTracked is how many processes Track can register. Default 8192.
	MaxTracked int
}

const (
	defaultRingSize   = 256 << 10
	defaultMaxTracked = 8192
)

func (o Options) withDefaults() (Options, error) {
	if o.RingSize == 0 {
		o.RingSize = defaultRingSize
	}
	if o.MaxTracked == 0 {
		o.MaxTracked = defaultMaxTracked
	}
	if page := os.Getpagesize(); o.RingSize < page || o.RingSize&(o.RingSize-1) != 0 || o.RingSize > 1<<30 {
		return o, fmt.Errorf("pubevents: ring size %d is not a power of two between %d and 1 GiB", o.RingSize, page)
	}
	if o.Mechanism > RawSysExit {
		return o, fmt.Errorf("pubevents: unknown %s", o.Mechanism)
	}
	if o.MaxTracked < 1 || o.MaxTracked > 1<<20 {
		return o, fmt.Errorf("pubevents: max tracked %d is not between 1 and %d", o.MaxTracked, 1<<20)
	}
	return o, nil
}

// struct event of bpf/pubevents.c: addr u64, len u64, tgid u32, kind u32.
const (
	eventSize  = 32
	offAddr    = 0
	offLen     = 8
	offTgid    = 16
	offKind    = 20
	offTime    = 24
	maxTgid    = 1<<31 - 1
	lastKindID = Unmap
)

// parseEvent decodes one ring buffer record into ev. The record comes from
// our own program, but a mismatch must not crash the collector.
func parseEvent(raw []byte, ev *Event) error {
	if len(raw) < eventSize {
		return fmt.Errorf("pubevents: record of %d bytes, want %d", len(raw), eventSize)
	}
	kind := binary.NativeEndian.Uint32(raw[offKind:])
	if kind < uint32(Publish) || kind > uint32(lastKindID) {
		return fmt.Errorf("pubevents: record of unknown kind %d", kind)
	}
	tgid := binary.NativeEndian.Uint32(raw[offTgid:])
	if tgid == 0 || tgid > maxTgid {
		return fmt.Errorf("pubevents: record with pid %d", tgid)
	}
	*ev = Event{
		Kind: Kind(kind),
		PID:  int(tgid),
		Addr: binary.NativeEndian.Uint64(raw[offAddr:]),
		Len:  binary.NativeEndian.Uint64(raw[offLen:]),
		Time: binary.NativeEndian.Uint64(raw[offTime:]),
	}
	return nil
}

// checkTrack validates Track's arguments.
func checkTrack(pid int, addr, length uint64) error {
	if pid <= 0 || pid > maxTgid {
		return fmt.Errorf("pubevents: track: invalid pid %d", pid)
	}
	if length == 0 || addr+length < addr {
		return fmt.Errorf("pubevents: track pid %d: invalid range %#x+%#x", pid, addr, length)
	}
	return nil
}
