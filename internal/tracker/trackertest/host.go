// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package trackertest provides a fake tracker.Host: processes that exist
// only in memory, whose reads can be made to fail or to block, and a clock
// that moves only when told. The tracker, the receiver and the processor
// test their logic on it without root, gcc or real processes.
package trackertest

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/reader"
	"github.com/processctx/otelcol-processctx/internal/sdkenv"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Methods of Host, as Proc.Errs, Proc.Block and Host.Count name them.
const (
	MethodStart    = "start"
	MethodMaps     = "maps"
	MethodRead     = "read"
	MethodIdentity = "identity"
	MethodEnviron  = "environ"
)

// Host is a host of fake processes. It is safe for concurrent use.
type Host struct {
	mu      sync.Mutex
	procs   map[int]*Proc
	calls   map[call]int // by method and pid (0: the host's, as a listing)
	vias    map[int][]reader.Via
	release chan struct{} // closed by Unblock
	unblock sync.Once
	entries []procfs.PidEntry
	listErr error
	access  error
	// kernelTime is what KernelTime answers.
	kernelTime uint64
}

// Proc is one fake process. Change it through Host.Set once the host is in
// use.
type Proc struct {
	Start uint64
	Ino   uint64
	// Ctx is the published context; nil: no context mapping.
	Ctx  *otep.Context
	Addr uint64
	// Env is what its environment holds of the SDK variables.
	Env sdkenv.Vars
	// Errs makes a method fail for this process.
	Errs map[string]error
	// Block makes a method block until Host.Unblock.
	Block       string
	Exe         string
	ContainerID string
	PodUID      string
	NSpid       []int
	// Why is what ExplainDenied says.
	Why string
	// Kernel makes it a kernel thread.
	Kernel bool
	// Age is how long ago Stat says it started; 0: an hour (not a
	// newborn).
	Age time.Duration
}

// vsize is the size of its address space: a context mapping makes it a
// page larger.
func (p *Proc) vsize() uint64 {
	if p.Ctx != nil {
		return 1<<30 + 4096
	}
	return 1 << 30
}

var _ tracker.Host = (*Host)(nil)

// NewHost returns a host without processes.
func NewHost() *Host {
	return &Host{procs: map[int]*Proc{}, calls: map[call]int{}, vias: map[int][]reader.Via{}, release: make(chan struct{})}
}

// Add adds a process without a context.
func (h *Host) Add(pid int) *Proc {
	p := &Proc{
		Start: uint64(1000 + pid),
		Ino:   uint64(pid)*10 + 1,
		Addr:  0x7f0000000000 + uint64(pid)<<12,
		Errs:  map[string]error{},
		Exe:   fmt.Sprintf("proc-%d", pid),
		NSpid: []int{pid},
	}
	h.with(func() { h.procs[pid] = p })
	return p
}

// Publish makes pid publish service.name = service, a new version each
// call.
func (h *Host) Publish(pid int, service string) {
	res := pcommon.NewMap()
	res.PutStr("service.name", service)
	h.PublishResource(pid, res)
}

// PublishResource makes pid publish res (a copy), a new version each call.
func (h *Host) PublishResource(pid int, res pcommon.Map) {
	c := pcommon.NewMap()
	res.CopyTo(c)
	h.Set(pid, func(p *Proc) {
		ts := uint64(1)
		if p.Ctx != nil {
			ts = p.Ctx.PublishedAt + 1
		}
		p.Ctx = &otep.Context{PublishedAt: ts, Resource: c, Attributes: pcommon.NewMap()}
	})
}

// Unpublish removes pid's context.
func (h *Host) Unpublish(pid int) { h.Set(pid, func(p *Proc) { p.Ctx = nil }) }

// Remove makes pid exit.
func (h *Host) Remove(pid int) { h.with(func() { delete(h.procs, pid) }) }

// Reuse makes pid name a new process without a context (a new start time
// and inode).
func (h *Host) Reuse(pid int) *Proc {
	var old Proc
	h.Set(pid, func(p *Proc) { old = *p })
	p := h.Add(pid)
	h.Set(pid, func(p *Proc) { p.Start, p.Ino = old.Start+7, old.Ino+7 })
	return p
}

// Set changes pid under the host's lock.
func (h *Host) Set(pid int, fn func(*Proc)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fn(h.procs[pid])
}

// with calls fn under the host's lock.
func (h *Host) with(fn func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fn()
}

// locked returns what fn returns, called under the host's lock.
func locked[T any](h *Host, fn func() T) T {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fn()
}

// Count returns the calls of a method since the last ResetCounts;
// CountOf those for pid.
func (h *Host) Count(method string) int {
	return locked(h, func() int {
		n := 0
		for c, calls := range h.calls {
			if c.method == method {
				n += calls
			}
		}
		return n
	})
}

func (h *Host) CountOf(method string, pid int) int {
	return locked(h, func() int { return h.calls[call{method, pid}] })
}

type call struct {
	method string
	pid    int
}

// Vias returns how each ReadContext of pid read memory, in order.
func (h *Host) Vias(pid int) []reader.Via {
	return locked(h, func() []reader.Via { return append([]reader.Via(nil), h.vias[pid]...) })
}

// ResetCounts forgets the calls so far.
func (h *Host) ResetCounts() { h.with(func() { clear(h.calls); clear(h.vias) }) }

// Unblock releases every blocked read, for good.
func (h *Host) Unblock() { h.unblock.Do(func() { close(h.release) }) }

// enter counts a call of method and returns what answer says of the
// process, after blocking when the method is to block. The process is
// looked up again after the block: it may have exited meanwhile. answer
// runs under the host's lock: the test may change the process meanwhile.
func enter[T any](h *Host, method string, pid int, answer func(*Proc) (T, error)) (res T, err error) {
	h.mu.Lock()
	h.calls[call{method, pid}]++
	p := h.procs[pid]
	block := p != nil && p.Block == method
	h.mu.Unlock()
	if block {
		<-h.release
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	p = h.procs[pid]
	if p == nil {
		return res, fmt.Errorf("pid %d: %w", pid, procfs.ErrProcessGone)
	}
	if err := p.Errs[method]; err != nil {
		return res, err
	}
	return answer(p)
}

// ListPids implements tracker.Host.
func (h *Host) ListPids() ([]procfs.PidEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[call{method: "list"}]++
	if h.listErr != nil {
		return nil, h.listErr
	}
	h.entries = h.entries[:0]
	for pid, p := range h.procs {
		h.entries = append(h.entries, procfs.PidEntry{Pid: pid, Ino: p.Ino})
	}
	sort.Slice(h.entries, func(i, j int) bool { return h.entries[i].Pid < h.entries[j].Pid })
	return h.entries, nil
}

// Stat implements tracker.Host.
func (h *Host) Stat(pid int) (procfs.Stat, error) {
	return enter(h, MethodStart, pid, func(p *Proc) (procfs.Stat, error) {
		age := p.Age
		if age == 0 {
			age = time.Hour
		}
		return procfs.Stat{StartTicks: p.Start, KernelThread: p.Kernel, Age: age, VSize: p.vsize()}, nil
	})
}

// FindMapping implements tracker.Host.
func (h *Host) FindMapping(pid int) (otep.Mapping, error) {
	return enter(h, MethodMaps, pid, func(p *Proc) (otep.Mapping, error) {
		if p.Ctx == nil {
			return otep.Mapping{}, fmt.Errorf("pid %d: %w", pid, otep.ErrNoContext)
		}
		return otep.Mapping{Start: p.Addr, End: p.Addr + 4096, Name: otep.MappingMemfd}, nil
	})
}

// ReadContext implements tracker.Host.
func (h *Host) ReadContext(pid int, addr, last uint64, via reader.Via) (otep.Context, bool, error) {
	h.with(func() { h.vias[pid] = append(h.vias[pid], via) })
	ctx, err := enter(h, MethodRead, pid, func(p *Proc) (*otep.Context, error) {
		if p.Ctx == nil || addr != p.Addr {
			return nil, fmt.Errorf("header of pid %d: mapping gone: %w", pid, otep.ErrNoContext)
		}
		if last != 0 && last == p.Ctx.PublishedAt {
			return nil, nil // unchanged
		}
		return p.Ctx, nil
	})
	if ctx == nil {
		return otep.Context{}, false, err
	}
	return *ctx, true, nil
}

// SetEnv gives pid the SDK variables OTEL_SERVICE_NAME = service (when
// not empty) and OTEL_RESOURCE_ATTRIBUTES = attrs (when not empty), raw.
func (h *Host) SetEnv(pid int, service, attrs string) {
	h.Set(pid, func(p *Proc) {
		p.Env = sdkenv.Vars{ServiceName: service, HasServiceName: service != "",
			ResourceAttributes: attrs, HasResourceAttributes: attrs != ""}
	})
}

// Environment implements tracker.Host.
func (h *Host) Environment(pid int) (sdkenv.Vars, error) {
	return enter(h, MethodEnviron, pid, func(p *Proc) (sdkenv.Vars, error) { return p.Env, nil })
}

// Identity implements tracker.Host.
func (h *Host) Identity(pid int) (procfs.Identity, error) {
	return enter(h, MethodIdentity, pid, func(p *Proc) (procfs.Identity, error) {
		return procfs.Identity{PID: pid, StartTicks: p.Start, ExecutableName: p.Exe,
			ContainerID: p.ContainerID, PodUID: p.PodUID, NSpid: append([]int(nil), p.NSpid...), UID: -1}, nil
	})
}

// Executable implements tracker.Host.
func (h *Host) Executable(pid int) string {
	return locked(h, func() string {
		if p := h.procs[pid]; p != nil {
			return p.Exe
		}
		return "?"
	})
}

// SetListError makes ListPids fail with err; nil: list again.
func (h *Host) SetListError(err error) { h.with(func() { h.listErr = err }) }

// SetAccess sets what Access reports.
func (h *Host) SetAccess(err error) { h.with(func() { h.access = err }) }

// CheckProcfs implements tracker.Host: it fails as ListPids does.
func (h *Host) CheckProcfs() error { return locked(h, func() error { return h.listErr }) }

// KernelTime implements tracker.Host: 0 (no kernel clock: tests give
// events the times they choose) unless SetKernelTime set one.
func (h *Host) KernelTime() uint64 { return locked(h, func() uint64 { return h.kernelTime }) }

// SetKernelTime sets what KernelTime answers from now on.
func (h *Host) SetKernelTime(ns uint64) { h.with(func() { h.kernelTime = ns }) }

// Access implements tracker.Host.
func (h *Host) Access() error { return locked(h, func() error { return h.access }) }

// ExplainDenied implements tracker.Host.
func (h *Host) ExplainDenied(pid int) string {
	return locked(h, func() string {
		if p := h.procs[pid]; p != nil {
			return p.Why
		}
		return ""
	})
}

// Clock is a clock that moves only when told.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at a fixed time.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
