// Package registry shares what the process_context receiver learns with the
// process_context processor of the same collector: the receiver scans the
// host and stores every publisher it reads; the processor consults the
// registry before reading a process itself. The processor works without a
// receiver (the registry is then empty), and one registry is shared per
// procfs root path.
package registry

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/processctx/otelcol-processctx/internal/procmem"
)

// Key identifies a process: pids are reused, (pid, start time) are not.
type Key struct {
	PID        int
	StartTicks uint64
}

// Process is a publisher as the receiver last read it. Stored values are
// never modified: readers must treat the maps as read-only.
type Process struct {
	Key
	Identity procmem.Identity
	Context  procmem.Context
	// ExitedAt is set once the process exited or unpublished.
	ExitedAt time.Time
}

// Registry maps pids to the publishers last seen on a host.
type Registry struct {
	mu    sync.RWMutex
	byPID map[int]*Process
	// size mirrors len(byPID) so that Lookup on an empty registry (a
	// processor without a receiver) takes no lock.
	size atomic.Int64
}

// New returns an empty registry (for tests and single components).
func New() *Registry { return &Registry{byPID: map[int]*Process{}} }

// Store records a publisher's current context, replacing what the pid held.
func (r *Registry) Store(p *Process) {
	r.mu.Lock()
	r.byPID[p.PID] = p
	r.size.Store(int64(len(r.byPID)))
	r.mu.Unlock()
}

// Exited marks the process gone (exited, or its context unpublished) at t.
// The entry stays for consumers that resolve late telemetry, until Forget.
func (r *Registry) Exited(k Key, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.byPID[k.PID]; ok && p.Key == k && p.ExitedAt.IsZero() {
		exited := *p
		exited.ExitedAt = t
		r.byPID[k.PID] = &exited
	}
}

// Forget drops the entry of k.
func (r *Registry) Forget(k Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.byPID[k.PID]; ok && p.Key == k {
		delete(r.byPID, k.PID)
		r.size.Store(int64(len(r.byPID)))
	}
}

// Lookup returns what is known of pid.
func (r *Registry) Lookup(pid int) (*Process, bool) {
	if r.size.Load() == 0 {
		return nil, false
	}
	r.mu.RLock()
	p, ok := r.byPID[pid]
	r.mu.RUnlock()
	return p, ok
}

// Len returns the number of entries.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.byPID)
}

// shared holds one registry per root path for the components of a
// collector: the only package-level state, as for the collector's shared
// components.
var shared = struct {
	sync.Mutex
	byRoot map[string]*sharedEntry
}{byRoot: map[string]*sharedEntry{}}

type sharedEntry struct {
	reg  *Registry
	refs int
}

// Acquire returns the registry shared by the components reading rootPath,
// and the function that releases it; the last release drops the registry.
func Acquire(rootPath string) (*Registry, func()) {
	shared.Lock()
	defer shared.Unlock()
	e, ok := shared.byRoot[rootPath]
	if !ok {
		e = &sharedEntry{reg: New()}
		shared.byRoot[rootPath] = e
	}
	e.refs++
	var once sync.Once
	return e.reg, func() {
		once.Do(func() {
			shared.Lock()
			defer shared.Unlock()
			if e.refs--; e.refs == 0 {
				delete(shared.byRoot, rootPath)
			}
		})
	}
}
