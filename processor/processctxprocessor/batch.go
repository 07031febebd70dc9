package processctxprocessor

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// batch holds what one call of the processor learns: the tracker's
// snapshot, pids resolved so far (so that each pid is looked up once per
// batch), the pids to read before the batch leaves, item counts per
// outcome, and scratch space for regrouping.
type batch struct {
	c     *core
	st    *coreState
	snap  *tracker.Snapshot
	begun time.Time
	// final: the batch no longer waits: pids still unknown pass through.
	final bool

	memoIdx pidIndex
	memo    []resolved // parallel to memoIdx
	// unknown lists the pids to probe; wantScan asks for a scan (a
	// container's pid the snapshot does not know).
	unknown  []int
	wantScan bool
	// deferred lists the resources (by index) to look at again once the
	// unknown pids are read.
	deferred []int
	count    [numOutcomes]int64

	regroup regroupScratch
}

// resolved is a pid looked up: its publication (nil when none), the host
// pid, the outcome and, for regrouping, the group of its items.
type resolved struct {
	p       *tracker.Process
	e       *enrichment
	host    int
	outcome outcome
	group   int32
}

// newBatch returns nil when the processor is not started: data then passes
// through. Batches are reused from pool (the instance's): their scratch
// memory survives from call to call.
func (c *core) newBatch(pool *sync.Pool) *batch {
	st := c.state.Load()
	if st == nil {
		return nil
	}
	b, _ := pool.Get().(*batch)
	if b == nil {
		b = &batch{c: c}
	}
	b.st, b.snap, b.begun = st, st.src.Snapshot(), c.now()
	return b
}

// lookup returns what the snapshot says of pid.
func (b *batch) lookup(pid int) (*tracker.Process, *enrichment, outcome) {
	p, o := b.snap.Lookup(pid)
	if p != nil {
		if e, ok := b.st.view.Of(p).(*enrichment); ok {
			return p, e, outcomeEnriched
		}
		// Published before the view was added: the next snapshot has it.
		return nil, nil, b.pending(pid)
	}
	switch oc := outcomeOfLookup(o); oc {
	case outcomePending:
		return nil, nil, b.pending(pid)
	default:
		if o == tracker.OutcomeNoContext {
			// Telemetry names it: the tracker reads it again if due, for
			// processes that publish late.
			b.st.src.Hint(pid)
		}
		return nil, nil, oc
	}
}

// pending notes pid to be read, or gives up on it in the final pass.
func (b *batch) pending(pid int) outcome {
	if b.final {
		return outcomeTimeout
	}
	b.unknown = append(b.unknown, pid)
	return outcomePending
}

// resolveFor resolves the pid found on (or under) a resource: the
// publication, its enrichment, the outcome and the host pid.
func (b *batch) resolveFor(facts *resourceFacts, pid int) resolved {
	if facts.containerID != "" {
		return b.resolveInContainer(facts.containerID, pid)
	}
	p, e, o := b.lookup(pid)
	return resolved{p: p, e: e, host: pid, outcome: o}
}

// resolveInContainer resolves pid as seen by container cid: a host pid of a
// process in that container (as host agents report it), else the pid of a
// process inside the container's pid namespace.
func (b *batch) resolveInContainer(cid string, pid int) resolved {
	if p, _ := b.snap.Lookup(pid); p != nil && p.Identity.ContainerID == cid {
		p, e, o := b.lookup(pid)
		return resolved{p: p, e: e, host: pid, outcome: o}
	}
	if p := b.snap.InContainer(cid, pid); p != nil {
		p, e, o := b.lookup(p.PID)
		return resolved{p: p, e: e, host: p.PID, outcome: o}
	}
	if b.final {
		return resolved{host: pid, outcome: outcomeNoContext}
	}
	// Only a scan finds a new process by its namespace pid.
	b.wantScan = true
	return resolved{host: pid, outcome: outcomePending}
}

// resolveMemo is resolveFor for the pids of records and samples, which
// repeat: each is resolved once per batch.
func (b *batch) resolveMemo(facts *resourceFacts, pid int) *resolved {
	if i := b.memoIdx.find(pid); i >= 0 {
		return &b.memo[i]
	}
	r := b.resolveFor(facts, pid)
	r.group = -1
	b.memoIdx.add(pid)
	b.memo = append(b.memo, r)
	return &b.memo[len(b.memo)-1]
}

// resetMemo forgets the pids resolved, for another resource (whose
// container.id may differ) or another pass.
func (b *batch) resetMemo() {
	b.memoIdx.reset()
	clear(b.memo)
	b.memo = b.memo[:0]
}

// enrichResource enriches a resource that names its pid, counting items.
// It returns false when the pid is being read: the resource is looked at
// again once it is. A pid without container.id is verified (unless
// unqualified_pids is "host"): the resource's own service attributes
// describe the pid's process, and must not name another service.
func (b *batch) enrichResource(attrs pcommon.Map, facts *resourceFacts, items int) bool {
	var e *enrichment
	var o outcome
	host := facts.pid
	if facts.containerID != "" {
		r := b.resolveInContainer(facts.containerID, facts.pid)
		e, o, host = r.e, r.outcome, r.host
	} else {
		_, e, o = b.lookup(facts.pid)
	}
	if o == outcomePending {
		return false
	}
	if e != nil {
		verify := facts.containerID == "" && !b.c.trustHostPids
		if !b.c.enrich(attrs, e, verify) {
			b.count[outcomeMismatch] += int64(items)
			return true
		}
		// The common case needs no stamp: the pid came as process.pid and
		// is the host's, of a process not in a nested pid namespace.
		if host != facts.pid || e.vpid != host || !b.c.pidIsHostPidKey {
			stampPids(attrs, e, facts.pid, host)
		}
	}
	b.count[o] += int64(items)
	return true
}

// enrichResources enriches each of n resources that names its pid, as
// metrics and traces have them; resource returns the attributes and item
// count of resource i.
func (b *batch) enrichResources(ctx context.Context, n int, resource func(i int) (pcommon.Map, int)) {
	enrich := func(i int) bool {
		attrs, items := resource(i)
		facts := b.c.factsOf(attrs)
		return facts.pid == 0 || b.enrichResource(attrs, &facts, items)
	}
	for i := range n {
		if !enrich(i) {
			b.deferred = append(b.deferred, i)
		}
	}
	if b.wait(ctx) {
		for _, i := range b.deferred {
			enrich(i)
		}
	}
}

// wait waits, within lookup_timeout of the batch's start, for the tracker
// to read the pids the batch did not know, then takes its new snapshot and
// makes the batch final. It reports whether there are resources to look
// at again.
func (b *batch) wait(ctx context.Context) bool {
	b.final = true
	if len(b.deferred) == 0 {
		return false
	}
	var probed, scanned <-chan struct{}
	if len(b.unknown) > 0 {
		probed = b.st.src.Probe(b.unknown)
	}
	if b.wantScan {
		scanned = b.st.src.ScanSoon()
	}
	timer := time.NewTimer(b.c.cfg.LookupTimeout - b.c.now().Sub(b.begun))
	defer timer.Stop()
	for probed != nil || scanned != nil {
		select {
		case <-probed:
			probed = nil
		case <-scanned:
			scanned = nil
		case <-timer.C:
			probed, scanned = nil, nil
		case <-ctx.Done():
			probed, scanned = nil, nil
		}
	}
	b.snap = b.st.src.Snapshot()
	b.resetMemo()
	return true
}

// finish records the batch's telemetry and returns the batch to the
// instance's pool.
func (b *batch) finish(tel *telemetry, pool *sync.Pool) {
	tel.add(&b.count)
	b.st, b.snap, b.final, b.wantScan = nil, nil, false, false
	b.count = [numOutcomes]int64{}
	b.resetMemo()
	b.unknown, b.deferred = b.unknown[:0], b.deferred[:0]
	pool.Put(b)
}

// pidIndex maps pids to positions 0, 1, 2, ... in the order they were added:
// by linear search while there are few (the common case: a handful of pids
// per batch), through a map once there are many (e.g. a profile of every
// process on a host). The last pid found is remembered: consecutive items
// mostly share a pid.
type pidIndex struct {
	pids     []int
	m        map[int]int32
	mapped   bool
	lastPid  int
	lastSlot int32
}

// linearPIDs is where a linear search stops being cheaper than a map.
const linearPIDs = 16

func (x *pidIndex) find(pid int) int32 {
	if pid == x.lastPid && x.lastPid != 0 {
		return x.lastSlot
	}
	i := int32(-1)
	if x.mapped {
		if j, ok := x.m[pid]; ok {
			i = j
		}
	} else {
		for j, p := range x.pids {
			if p == pid {
				i = int32(j)
				break
			}
		}
	}
	if i >= 0 {
		x.lastPid, x.lastSlot = pid, i
	}
	return i
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
	x.lastPid, x.lastSlot = pid, i
	return i
}

func (x *pidIndex) reset() {
	x.pids = x.pids[:0]
	if x.mapped {
		clear(x.m)
		x.mapped = false
	}
	x.lastPid, x.lastSlot = 0, 0
}
