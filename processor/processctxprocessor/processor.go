package processctxprocessor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

// core is the state the processor instances of one component ID share (the
// collector creates one instance per pipeline): the configuration and the
// resolver with its cache, so that the logs and profiles pipelines read each
// process once.
type core struct {
	cfg      *Config
	pidKeys  []string
	override bool
	// trustHostPids: unqualified_pids is "host".
	trustHostPids bool
	// pidIsHostPidKey: the only pid key is process.pid, so a resource pid
	// is always found under it.
	pidIsHostPidKey bool
	filter          keyFilter
	warn            warner
	now             func() time.Time // a test hook

	mu  sync.Mutex // serializes start and stop
	res atomic.Pointer[resolver]
}

func newCore(cfg *Config) *core {
	return &core{
		cfg:             cfg,
		pidKeys:         slices.Clone(cfg.PIDAttributes),
		override:        cfg.Override,
		trustHostPids:   cfg.UnqualifiedPids == UnqualifiedHost,
		pidIsHostPidKey: len(cfg.PIDAttributes) == 1 && cfg.PIDAttributes[0] == hostPidKey,
		filter:          newKeyFilter(cfg),
		now:             time.Now,
	}
}

// start opens the procfs and the shared registry; later calls are no-ops.
func (c *core) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.res.Load() != nil {
		return nil
	}
	res, err := newResolver(c.cfg, c.filter, &c.warn)
	if err != nil {
		return fmt.Errorf("process_context processor: %w", err)
	}
	c.res.Store(res)
	return nil
}

// stop releases the registry. Batches still running pass through.
func (c *core) stop(logger *zap.Logger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if res := c.res.Swap(nil); res != nil {
		res.close()
		c.warn.flush(logger, c.now(), true)
	}
}

// enrich adds the entry's attributes to a resource's attributes; existing
// keys win unless override is set. The map is grown once up front when the
// first key is missing (the usual case: nothing added yet), so that already
// enriched telemetry costs no allocation.
func (c *core) enrich(dst pcommon.Map, e *entry) {
	first := true
	for k, v := range e.attrs.All() {
		if first {
			if _, exists := dst.Get(k); !exists {
				dst.EnsureCapacity(dst.Len() + e.attrs.Len())
			}
			first = false
		}
		cur, exists := dst.GetOrPutEmpty(k)
		if exists && !c.override {
			continue
		}
		v.CopyTo(cur)
	}
}

// instance is the processor of one pipeline (one signal).
type instance struct {
	core   *core
	logger *zap.Logger
	tel    *metadata.TelemetryBuilder
	// release drops the instance's reference to the shared core, once.
	release func()
	batches sync.Pool // *batch
}

func newInstance(c *core, set component.TelemetrySettings, signal string, release func()) (*instance, error) {
	tel, err := metadata.NewTelemetryBuilder(set, signal)
	if err != nil {
		return nil, fmt.Errorf("process_context processor telemetry: %w", err)
	}
	var once sync.Once
	return &instance{
		core:    c,
		logger:  set.Logger,
		tel:     tel,
		release: func() { once.Do(release) },
	}, nil
}

func (p *instance) start(context.Context, component.Host) error { return p.core.start() }

func (p *instance) shutdown(context.Context) error {
	p.release()
	return nil
}

// batch holds what one call of the processor learns: pids resolved so far
// (so that each pid is looked up once per batch), item counts per outcome,
// and scratch space for regrouping.
type batch struct {
	p     *instance
	res   *resolver
	now   time.Time
	memo  []resolved // parallel to memoIdx
	count [numOutcomes]int64

	memoIdx, groupIdx pidIndex
	groups            []group // parallel to groupIdx
	decisions         []int32 // group of each record or sample of a resource, -1: stays
	// Containers emptied by regrouping, per level.
	emptiedResources, emptiedScopes, emptiedProfiles marks
}

type resolved struct {
	e       *entry
	outcome outcome
}

// pidIndex maps pids to positions 0, 1, 2, ... in the order they were added:
// by linear search while there are few (the common case: a handful of pids
// per batch), through a map once there are many (e.g. a profile of every
// process on a host). Its memory is reused from batch to batch.
type pidIndex struct {
	pids   []int
	m      map[int]int32
	mapped bool
}

// linearPIDs is where a linear search stops being cheaper than a map.
const linearPIDs = 16

func (x *pidIndex) find(pid int) int32 {
	if x.mapped {
		if i, ok := x.m[pid]; ok {
			return i
		}
		return -1
	}
	for i, p := range x.pids {
		if p == pid {
			return int32(i)
		}
	}
	return -1
}

func (x *pidIndex) add(pid int) int32 {
	i := int32(len(x.pids))
	x.pids = append(x.pids, pid)
	switch {
	case x.mapped:
		x.m[pid] = i
	case len(x.pids) > linearPIDs:
		if x.m == nil {
			x.m = make(map[int]int32, 2*linearPIDs)
		}
		for j, p := range x.pids {
			x.m[p] = int32(j)
		}
		x.mapped = true
	}
	return i
}

func (x *pidIndex) reset() {
	x.pids = x.pids[:0]
	if x.mapped {
		clear(x.m)
		x.mapped = false
	}
}

// newBatch returns nil when the processor is not started: data then passes
// through.
func (p *instance) newBatch() *batch {
	res := p.core.res.Load()
	if res == nil {
		return nil
	}
	b, _ := p.batches.Get().(*batch)
	if b == nil {
		b = &batch{p: p}
	}
	b.res = res
	b.now = p.core.now()
	return b
}

// finish records the batch's telemetry and returns it to the pool.
func (b *batch) finish(ctx context.Context) {
	tel := b.p.tel
	tel.RecordEnriched(ctx, b.count[outcomeEnriched])
	tel.RecordNoContext(ctx, b.count[outcomeNoContext])
	for o := outcomePermissionDenied; o < numOutcomes; o++ {
		tel.RecordErrors(ctx, o.kind(), b.count[o])
	}
	b.p.core.warn.flush(b.p.logger, b.now, false)

	b.res = nil
	b.count = [numOutcomes]int64{}
	clear(b.memo)
	b.memo = b.memo[:0]
	b.memoIdx.reset()
	b.resetGroups()
	b.decisions = b.decisions[:0]
	b.emptiedResources.reset()
	b.emptiedScopes.reset()
	b.emptiedProfiles.reset()
	b.p.batches.Put(b)
}

// resolve returns pid's context entry (nil if none) and the outcome.
func (b *batch) resolve(pid int) (*entry, outcome) {
	if i := b.memoIdx.find(pid); i >= 0 {
		return b.memo[i].e, b.memo[i].outcome
	}
	e, o := b.res.lookup(pid, b.now)
	b.memoIdx.add(pid)
	b.memo = append(b.memo, resolved{e: e, outcome: o})
	return e, o
}

// enrichResource enriches a resource that names its pid, counting items.
func (b *batch) enrichResource(attrs pcommon.Map, pid, items int) {
	e, o, host := b.resolveFor(attrs, pid, true)
	b.count[o] += int64(items)
	if e != nil {
		b.p.core.enrich(attrs, e)
		// The common case needs no stamp: the pid came as process.pid and
		// is the host's, of a process not in a nested pid namespace.
		if host != pid || e.vpid != host || !b.p.core.pidIsHostPidKey {
			stampPids(attrs, e, pid, host)
		}
	}
}

// group is one process's share of a resource being regrouped.
type group struct {
	pid int
	e   *entry
	// Containers of the new resource, created as records arrive; scope and
	// profile are valid when scopeIdx / profileIdx match the current one.
	scopeIdx, profileIdx int
}

// groupOf resolves the pid of one record or sample under a resource with
// attributes resAttrs: its group index, or -1 when it has no context and
// stays where it is. Groups are keyed by host pid.
func (b *batch) groupOf(resAttrs pcommon.Map, pid int) int32 {
	e, o, host := b.resolveFor(resAttrs, pid, false)
	b.count[o]++
	if e == nil {
		return -1
	}
	if i := b.groupIdx.find(host); i >= 0 {
		return i
	}
	b.groups = append(b.groups, group{pid: host, e: e, scopeIdx: -1, profileIdx: -1})
	return b.groupIdx.add(host)
}

// enrichGroup enriches the resource of one process's group.
func (b *batch) enrichGroup(attrs pcommon.Map, g *group) {
	b.p.core.enrich(attrs, g.e)
	stampPids(attrs, g.e, g.pid, g.pid)
}

// resetGroups starts the groups of another resource.
func (b *batch) resetGroups() {
	clear(b.groups)
	b.groups = b.groups[:0]
	b.groupIdx.reset()
}

// regroup reports what to do after the decisions of a resource's items:
// nothing (no context found), enrich in place (every item is of one
// process), or move items into per-process resources.
func (b *batch) regroup(resolvedItems, total int) (inPlace *group, split bool) {
	switch {
	case resolvedItems == 0:
		return nil, false
	case len(b.groups) == 1 && resolvedItems == total:
		return &b.groups[0], false
	}
	return nil, true
}

// marks flags containers (by index in their slice) emptied by regrouping.
type marks []bool

func (m *marks) set(i int) {
	for len(*m) <= i {
		*m = append(*m, false)
	}
	(*m)[i] = true
}

func (m *marks) reset() { *m = (*m)[:0] }

// removeMarked returns a RemoveIf predicate removing the marked elements:
// RemoveIf calls it once per element, in order.
func removeMarked[T any](m marks) func(T) bool {
	i := 0
	return func(T) bool {
		r := i < len(m) && m[i]
		i++
		return r
	}
}
