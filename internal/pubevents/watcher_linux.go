// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package pubevents

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// errnoENOTSUPP is the kernel-internal ENOTSUPP (524) the BPF syscalls
// return for what this kernel cannot do (e.g. no trampoline support).
const errnoENOTSUPP = syscall.Errno(524)

// Watcher owns the loaded programs, their links and the ring buffer reader.
type Watcher struct {
	coll      *ebpf.Collection
	tracked   *ebpf.Map
	lost      *ebpf.Map
	links     []link.Link
	rd        *ringbuf.Reader
	mechanism Mechanism

	// readMu serializes Read, which reuses rec.
	readMu sync.Mutex
	rec    ringbuf.Record

	// mu guards the map file descriptors against Close.
	mu        sync.RWMutex
	closed    bool
	finalLost uint64
}

// programs returns the programs of a mechanism.
func programs(m Mechanism) []string {
	switch m {
	case Fexit:
		return []string{pubeventsProgOnPrctl, pubeventsProgOnMemfdCreate, pubeventsProgOnMunmap}
	case Kprobe:
		return []string{pubeventsProgOnRetPrctl, pubeventsProgOnRetMemfdCreate}
	case SyscallTracepoints:
		return []string{pubeventsProgOnExitPrctl, pubeventsProgOnExitMemfdCreate, pubeventsProgOnExitMunmap}
	}
	return []string{pubeventsProgOnSysExit}
}

// The syscalls the programs watch, by program: the fexit and kretprobe
// target is the syscall's entry point, the tracepoint its exit event.
var syscallOf = map[string]string{
	pubeventsProgOnPrctl:           "prctl",
	pubeventsProgOnMemfdCreate:     "memfd_create",
	pubeventsProgOnMunmap:          "munmap",
	pubeventsProgOnRetPrctl:        "prctl",
	pubeventsProgOnRetMemfdCreate:  "memfd_create",
	pubeventsProgOnExitPrctl:       "prctl",
	pubeventsProgOnExitMemfdCreate: "memfd_create",
	pubeventsProgOnExitMunmap:      "munmap",
}

// Load loads the programs, attaches them and opens the ring buffer. See the
// package documentation for what it needs and what its errors mean.
func Load(opts Options) (*Watcher, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	spec, err := loadPubevents()
	if err != nil {
		return nil, fmt.Errorf("pubevents: %w", err)
	}
	spec.Maps[pubeventsMapEvents].MaxEntries = uint32(opts.RingSize)
	spec.Maps[pubeventsMapTracked].MaxEntries = uint32(opts.MaxTracked)
	// The entry points are chosen here, not in the C sections, so that
	// each architecture only needs its own prefix (and registers in C).
	for _, m := range []Mechanism{Fexit, Kprobe} {
		for _, prog := range programs(m) {
			spec.Programs[prog].AttachTo = syscallPrefix + syscallOf[prog]
		}
	}

	if opts.Mechanism == Kprobe {
		if err := kprobeEvents(); err != nil {
			return nil, classify(Kprobe, "attach", err)
		}
	}
	return load(spec, opts.Mechanism, false)
}

// kprobePMU is where a kernel with kprobe events (CONFIG_KPROBE_EVENTS,
// Linux 4.17 and later) lists its kprobe PMU, which perf_event_open
// creates kretprobes with.
const kprobePMU = "/sys/bus/event_source/devices/kprobe"

// kprobeEvents returns an error wrapping ebpf.ErrNotSupported when sysfs
// lists event sources but no kprobe PMU: the kernel has no kprobes to
// attach to (the development VM's, whose tracefs has no kprobe_events
// either). With no sysfs to tell, the attach itself decides.
func kprobeEvents() error {
	if _, err := os.Stat(kprobePMU); err == nil || !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(filepath.Dir(kprobePMU)); err != nil {
		return nil
	}
	return fmt.Errorf("this kernel has no kprobe events (no %s: CONFIG_KPROBE_EVENTS off): %w", kprobePMU, ebpf.ErrNotSupported)
}

// load loads and attaches the programs of one mechanism, with their own
// maps. The fexit programs whose target's name is ambiguous in the
// kernel's BTF are loaded with the target's type id (target_linux.go);
// all of them with byID, for tests.
func load(spec *ebpf.CollectionSpec, m Mechanism, byID bool) (*Watcher, error) {
	spec = spec.Copy()
	keep := map[string]bool{}
	for _, name := range programs(m) {
		keep[name] = true
	}
	for name := range spec.Programs {
		if !keep[name] {
			delete(spec.Programs, name)
		}
	}
	// One parse of the kernel's BTF, for the library and the checks here.
	cache := btf.NewCache()
	var (
		kernel *btf.Spec
		ids    map[string]btf.TypeID
	)
	byName := *spec
	byName.Programs = maps.Clone(spec.Programs)
	if m == Fexit {
		var err error
		if kernel, err = cache.Kernel(); err != nil {
			return nil, classify(m, "load the kernel's BTF", err)
		}
		if ids, err = fexitTargetIDs(spec, kernel, byID); err != nil {
			return nil, classify(m, "load BPF programs", err)
		}
		for name := range ids {
			delete(byName.Programs, name)
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(&byName, ebpf.CollectionOptions{Cache: cache})
	if err != nil {
		return nil, classify(m, "load BPF programs", err)
	}
	for name, id := range ids {
		prog, err := loadTracingByID(spec.Programs[name], coll.Maps, kernel, id)
		if err != nil {
			coll.Close()
			return nil, classify(m, "load BPF programs", fmt.Errorf("program %s (%s, BTF type %d): %w", name, spec.Programs[name].AttachTo, id, err))
		}
		coll.Programs[name] = prog
	}
	w := &Watcher{
		coll:      coll,
		tracked:   coll.Maps[pubeventsMapTracked],
		lost:      coll.Maps[pubeventsMapLost],
		mechanism: m,
	}
	if err := w.attach(spec); err != nil {
		_ = w.Close()
		return nil, classify(m, "attach", err)
	}
	w.rd, err = ringbuf.NewReader(coll.Maps[pubeventsMapEvents])
	if err != nil {
		_ = w.Close()
		return nil, classify(m, "open ring buffer", err)
	}
	return w, nil
}

// attach links the loaded programs of w's mechanism to their targets.
func (w *Watcher) attach(spec *ebpf.CollectionSpec) error {
	tracefs := -1
	if w.mechanism == SyscallTracepoints {
		fd, err := openTracefs()
		if err != nil {
			return err
		}
		tracefs = fd
		defer func() { _ = unix.Close(tracefs) }()
	}
	for _, name := range programs(w.mechanism) {
		l, err := w.attachProgram(spec, name, tracefs)
		if err != nil {
			return err
		}
		w.links = append(w.links, l)
	}
	return nil
}

// attachProgram links one program: to its syscall's exit event when
// tracefs (a tracefs root) is open, else as its spec says.
func (w *Watcher) attachProgram(spec *ebpf.CollectionSpec, name string, tracefs int) (link.Link, error) {
	prog := w.coll.Programs[name]
	if tracefs >= 0 {
		l, err := attachSyscallExit(tracefs, prog, syscallOf[name])
		if err != nil {
			return nil, fmt.Errorf("program %s: %w", name, err)
		}
		return l, nil
	}
	ps := spec.Programs[name]
	var (
		l   link.Link
		err error
	)
	if w.mechanism == Kprobe {
		l, err = link.Kretprobe(ps.AttachTo, prog, nil)
	} else {
		l, err = link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ps.AttachType})
	}
	if err != nil {
		return nil, fmt.Errorf("program %s: %s: %w", name, ps.AttachTo, err)
	}
	return l, nil
}

// classify wraps err with context and, where it applies, the sentinel a
// caller branches on.
func classify(m Mechanism, what string, err error) error {
	err = withoutMemlockHint{err}
	switch {
	case errors.Is(err, unix.EPERM) && m == Fexit && canTrace():
		return fmt.Errorf("%w: this kernel refuses BPF trampolines, even with CAP_BPF and CAP_PERFMON: %s: %s: %w", ErrUnsupported, m, what, err)
	case errors.Is(err, unix.EPERM) && m == Fexit:
		return fmt.Errorf("%w, or this kernel refuses BPF trampolines: %s: %s: %w", ErrPermission, m, what, err)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("%w: %s: %s: %w", ErrPermission, m, what, err)
	case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, errnoENOTSUPP), errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("%w: %s: %s: %w", ErrUnsupported, m, what, err)
	case errors.Is(err, btf.ErrMultipleMatches):
		// A target name of different functions (fexitTargetIDs), or the
		// library's refusal of an ambiguous one.
		return fmt.Errorf("%w: %s: %s: %w", ErrUnsupported, m, what, err)
	}
	return fmt.Errorf("pubevents: %s: %s: %w", m, what, err)
}

// canTrace reports whether this process has CAP_BPF and CAP_PERFMON (or
// CAP_SYS_ADMIN, which implies both): an EPERM from the kernel is then not
// about privilege.
func canTrace() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	has := func(c int) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	return has(unix.CAP_SYS_ADMIN) || has(unix.CAP_BPF) && has(unix.CAP_PERFMON)
}

// memlockHint is what cilium/ebpf adds to EPERM for kernels that charged
// BPF memory to RLIMIT_MEMLOCK; on the kernels this package runs on
// (5.11+) memory cgroups are charged instead, and the hint misleads.
const memlockHint = " (MEMLOCK may be too low, consider rlimit.RemoveMemlock)"

// withoutMemlockHint is an error without memlockHint in its text.
type withoutMemlockHint struct{ error }

func (e withoutMemlockHint) Error() string {
	return strings.ReplaceAll(e.error.Error(), memlockHint, "")
}
func (e withoutMemlockHint) Unwrap() error { return e.error }

// Read blocks until the next event and stores it in ev. It returns
// ErrClosed once Close was called (also to a Read blocked in it), and
// os.ErrDeadlineExceeded when the deadline passed. Reads are serialized;
// the steady path does not allocate.
func (w *Watcher) Read(ev *Event) error {
	w.readMu.Lock()
	defer w.readMu.Unlock()
	if w.rd == nil {
		return ErrClosed
	}
	if err := w.rd.ReadInto(&w.rec); err != nil {
		switch {
		case errors.Is(err, os.ErrClosed):
			return ErrClosed
		case errors.Is(err, os.ErrDeadlineExceeded):
			return os.ErrDeadlineExceeded
		}
		return fmt.Errorf("pubevents: read ring buffer: %w", err)
	}
	return parseEvent(w.rec.RawSample, ev)
}

// SetDeadline makes Read return os.ErrDeadlineExceeded once t passed and
// no event is buffered; the zero time removes the deadline.
func (w *Watcher) SetDeadline(t time.Time) {
	if w.rd != nil {
		w.rd.SetDeadline(t)
	}
}

// Lost returns how many events were dropped because the ring buffer was
// full, since Load (the count at Close once closed).
func (w *Watcher) Lost() uint64 {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return w.finalLost
	}
	return w.lostLocked()
}

func (w *Watcher) lostLocked() uint64 {
	var perCPU []uint64
	if err := w.lost.Lookup(uint32(0), &perCPU); err != nil {
		return 0
	}
	var sum uint64
	for _, n := range perCPU {
		sum += n
	}
	return sum
}

// Track registers the context mapping [addr, addr+length) of pid (as in
// its maps file: page aligned) so that an munmap overlapping it is
// reported (by the mechanisms that report unmaps: Mechanism.ReportsUnmaps);
// it replaces pid's previous entry.
func (w *Watcher) Track(pid int, addr, length uint64) error {
	if err := checkTrack(pid, addr, length); err != nil {
		return err
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	err := w.tracked.Update(uint32(pid), pubeventsTrackedRange{Addr: addr, Len: length}, ebpf.UpdateAny)
	if errors.Is(err, unix.E2BIG) {
		return fmt.Errorf("%w (%d processes): track pid %d", ErrTrackFull, w.tracked.MaxEntries(), pid)
	}
	if err != nil {
		return fmt.Errorf("pubevents: track pid %d: %w", pid, err)
	}
	return nil
}

// Untrack removes pid's entry; untracking a pid that is not tracked is not
// an error.
func (w *Watcher) Untrack(pid int) error {
	if pid <= 0 || pid > maxTgid {
		return fmt.Errorf("pubevents: untrack: invalid pid %d", pid)
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	err := w.tracked.Delete(uint32(pid))
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("pubevents: untrack pid %d: %w", pid, err)
	}
	return nil
}

// Close detaches the programs and frees everything; a blocked Read returns
// ErrClosed. Calling it again does nothing.
func (w *Watcher) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	w.finalLost = w.lostLocked()
	var errs []error
	// The reader first: it interrupts a blocked Read.
	if w.rd != nil {
		errs = append(errs, w.rd.Close())
	}
	for _, l := range w.links {
		errs = append(errs, l.Close())
	}
	w.coll.Close()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pubevents: close: %w", err)
	}
	return nil
}
