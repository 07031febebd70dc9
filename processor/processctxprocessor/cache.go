package processctxprocessor

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/procmem"
	"github.com/processctx/otelcol-processctx/internal/registry"
)

// entry is what the cache knows of one pid: a context (outcome ==
// outcomeEnriched) or why there is none (a negative entry).
type entry struct {
	// Set at creation, never modified: readers use them without the lock.
	key registry.Key
	// attrs are the published resource attributes after include/exclude.
	// Read-only: it is copied into telemetry, never modified.
	attrs       pcommon.Map
	outcome     outcome
	addr        uint64 // header address, 0 when unknown (registry entries)
	publishedAt uint64 // the change key
	// Where the process lives: its container ("" when none) and its pid in
	// its innermost pid namespace (key.PID when not nested).
	containerID string
	vpid        int
	// The service identity the process published (before include/exclude),
	// to tell apart telemetry of another process with the same pid number.
	identity serviceIdentity

	// Guarded by cache.mu.
	// regProc is the registry record attrs were copied from, if any: the
	// same pointer in the registry means the same record, no copy needed.
	regProc    *registry.Process
	checkedAt  time.Time // last validation (creation for negative entries)
	goneAt     time.Time // the process exited or unpublished; zero while live
	refreshing bool      // a lookup is re-validating it without the lock

	lastUsed atomic.Int64 // unix ns; for eviction, updated under the read lock
}

// touchResolution bounds how often lastUsed is written: the hot path then
// mostly reads the word instead of bouncing its cache line between cores.
const touchResolution = int64(time.Second)

func (e *entry) touch(now time.Time) {
	ns := now.UnixNano()
	if ns-e.lastUsed.Load() >= touchResolution {
		e.lastUsed.Store(ns)
	}
}

func (e *entry) membership() procmem.Membership {
	return procmem.Membership{ContainerID: e.containerID, VPID: e.vpid}
}

// result returns the entry when it holds a context, and the outcome.
func (e *entry) result() (*entry, outcome) {
	if e.outcome != outcomeEnriched {
		return nil, e.outcome
	}
	return e, outcomeEnriched
}

// cache maps pids to entries, bounded by max entries.
type cache struct {
	mu      sync.RWMutex
	entries map[int]*entry
	max     int
	scratch []int64 // eviction scratch, guarded by mu
}

func newCache(maxEntries int) *cache {
	return &cache{entries: make(map[int]*entry), max: maxEntries}
}

// putLocked stores e for pid, evicting when the cache is full.
func (c *cache) putLocked(pid int, e *entry) {
	if _, ok := c.entries[pid]; !ok && len(c.entries) >= c.max {
		c.evictLocked()
	}
	c.entries[pid] = e
}

// evictLocked drops the least recently used eighth of the entries at once,
// so that a stream of new pids pays for one sort per max/8 insertions rather
// than a scan per insertion.
func (c *cache) evictLocked() {
	n := max(len(c.entries)/8, 1)
	c.scratch = c.scratch[:0]
	for _, e := range c.entries {
		c.scratch = append(c.scratch, e.lastUsed.Load())
	}
	slices.Sort(c.scratch)
	cutoff := c.scratch[n-1]
	for pid, e := range c.entries {
		if n == 0 {
			break
		}
		if e.lastUsed.Load() <= cutoff {
			delete(c.entries, pid)
			n--
		}
	}
}

// len returns the number of entries.
func (c *cache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
