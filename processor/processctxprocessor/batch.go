// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// batch holds what one call of the processor learns: the tracker's
// snapshot, pids resolved so far (so that each pid is looked up once per
// resource), the pids to read before the batch leaves, item counts, and
// scratch space for regrouping.
type batch struct {
	p     *instance
	tv    *trackerView
	snap  *tracker.Snapshot
	begun time.Time
	// final: the batch no longer waits: pids still unknown pass through.
	final bool

	memo pidMemo
	// unknown lists the pids to probe; wantScan asks for a scan (a
	// container's pid the snapshot does not know).
	unknown  []int
	wantScan bool
	// deferred lists the resources (by index) to look at again once the
	// unknown pids are read.
	deferred []int
	counts   itemCounts
	// missDue: the log line about items without a pid is due, so the
	// batch notes the pid-like keys such items carry, in missKeys.
	missDue  bool
	missKeys missKeys
	// present is enrich's list of the keys a resource had already.
	present []string

	regroup regroupScratch
}

// resolved is a pid looked up: the enrichment of its publication (nil when
// none), the host pid, what the lookup found (tracker.AnswerUnknown: not
// read yet) and, for regrouping, the number of items naming it and their
// group.
type resolved struct {
	e       *enrichment
	host    int
	outcome tracker.Answer
	items   int
	group   int32
}

// newBatch returns nil when the processor is not started: data then passes
// through. Batches are reused from the instance's pool: their scratch
// memory survives from call to call.
func (p *instance) newBatch() *batch {
	tv := p.started.Load()
	if tv == nil {
		return nil
	}
	b, _ := p.batches.Get().(*batch)
	if b == nil {
		b = &batch{p: p}
	}
	b.tv, b.snap, b.begun = tv, tv.tracker.Snapshot(), time.Now()
	b.missDue = p.misses.Due(b.begun.UnixNano(), missLogInterval)
	return b
}

// lookupOrQueue returns the enrichment of pid's publication, or nil and what the
// snapshot knows of pid. A pid the snapshot cannot answer for yet (not
// read, or a read due that may find its identity: a process that exec'd
// and was not read since, one whose maps were last read recheck_interval
// ago) is noted to be probed, unless the batch is final.
func (b *batch) lookupOrQueue(pid int) (*enrichment, tracker.Answer) {
	if pid == invalidPID {
		return nil, outcomeInvalidPID
	}
	proc, o := b.snap.Lookup(pid)
	if proc != nil {
		if e, ok := b.tv.view.Of(proc).(*enrichment); ok {
			return e, tracker.AnswerOK
		}
		// Published before the view was added: the next snapshot has it.
		o = tracker.AnswerUnknown
	}
	if o == tracker.AnswerUnknown && !b.final {
		b.unknown = append(b.unknown, pid)
	}
	return nil, o
}

// waiting reports whether an outcome is a read the batch still waits for.
func (b *batch) waiting(o tracker.Answer) bool { return o == tracker.AnswerUnknown && !b.final }

// count counts n items not enriched by the outcome of their pid's lookup:
// a pid still unknown when the batch leaves was not read in time.
func (b *batch) count(o tracker.Answer, n int) {
	if o == tracker.AnswerUnknown {
		b.counts.outcomes[timedOut] += int64(n)
		return
	}
	b.counts.outcomes[o] += int64(n)
}

// countEnriched counts n items enriched with e, by the source of its
// process's identity.
func (b *batch) countEnriched(e *enrichment, n int) {
	b.counts.enriched[sourceIndex(e.source)] += int64(n)
}

// resolve resolves a pid found on (or under) a resource whose container.id
// is cid ("" for none): the enrichment, the lookup's outcome and the host
// pid.
func (b *batch) resolve(cid string, pid int) (*enrichment, tracker.Answer, int) {
	if cid != "" {
		return b.resolveInContainer(cid, pid)
	}
	e, o := b.lookupOrQueue(pid)
	return e, o, pid
}

// resolveInContainer resolves pid as seen by container cid: a host pid of a
// process in that container (as host agents report it), else the pid of a
// process inside the container's pid namespace.
func (b *batch) resolveInContainer(cid string, pid int) (*enrichment, tracker.Answer, int) {
	if pid == invalidPID {
		return nil, outcomeInvalidPID, pid
	}
	if proc, _ := b.snap.Lookup(pid); proc != nil && proc.Identity.ContainerID == cid {
		e, o := b.lookupOrQueue(pid)
		return e, o, pid
	}
	if proc := b.snap.InContainer(cid, pid); proc != nil {
		e, o := b.lookupOrQueue(proc.PID)
		return e, o, proc.PID
	}
	if b.final {
		return nil, tracker.AnswerNoContext, pid
	}
	// Only a scan finds a new process by its namespace pid.
	b.wantScan = true
	return nil, tracker.AnswerUnknown, pid
}

// resolveMemo is resolve for the pids of records and samples, which
// repeat: each is resolved once per resource.
func (b *batch) resolveMemo(facts *resourceFacts, pid int) *resolved {
	if r := b.memo.find(pid); r != nil {
		return r
	}
	e, o, host := b.resolve(facts.containerID, pid)
	return b.memo.add(pid, resolved{e: e, host: host, outcome: o, group: -1})
}

// enrichResource enriches a resource that names its pid, counting items.
// It returns false when the pid is being read: the resource is looked at
// again once it is. A pid without container.id is verified (unless
// unqualified_pids is "host"): the resource's own service attributes
// describe the pid's process, and must not name another service.
func (b *batch) enrichResource(res pcommon.Resource, facts *resourceFacts, items int) bool {
	e, o, host := b.resolve(facts.containerID, facts.pid)
	switch {
	case b.waiting(o):
		return false
	case e == nil:
		b.count(o, items)
		return true
	}
	verify := facts.containerID == "" && !b.p.trustHostPids
	// The common case needs no stamp: the pid came as process.pid and is
	// the host's, of a process not in a nested pid namespace.
	stamp := host != facts.pid || e.vpid != host || !b.p.pidIsHostPidKey
	if !b.enrichWith(res, e, verify, stamp, facts.pid, host) {
		b.counts.outcomes[identityMismatch] += int64(items)
		return true
	}
	b.countEnriched(e, items)
	return true
}

// enrichWith enriches res with e, stamps its pids when stampPid is set (the
// pid the telemetry named, telemetryPid, and the host's) and references
// the entities of what was added (entity_refs). It returns false, having
// changed nothing, when verify finds the resource's service identity
// contradicting e's.
func (b *batch) enrichWith(res pcommon.Resource, e *enrichment, verify, stampPid bool, telemetryPid, host int) bool {
	attrs := res.Attributes()
	var present *[]string
	if len(e.refs) > 0 {
		b.present = b.present[:0]
		present = &b.present
	}
	if !b.p.enrich(attrs, e, verify, present) {
		return false
	}
	vpidStamped := stampPid && stampPids(attrs, e, telemetryPid, host)
	if len(e.refs) > 0 {
		addEntityRefs(res, e, b.present, vpidStamped)
	}
	return true
}

// resourceSlice is a signal's resources (plog.ResourceLogsSlice, ...).
type resourceSlice[R hasResource] interface {
	Len() int
	At(i int) R
	RemoveIf(f func(R) bool)
}

type hasResource interface{ Resource() pcommon.Resource }

// run is every signal's batch: it enriches each resource of rs that names
// its pid, and regroups each other by the pids of its items, removing
// those regrouping emptied. A resource naming a pid the snapshot does not
// know yet is looked at again once the batch has waited for that pid.
// What differs by signal is supplied: items counts a resource's items;
// tree returns its items ready for regrouping, nil when none can name a
// pid (tree itself is nil for signals whose items never do).
func run[R hasResource, S resourceSlice[R]](ctx context.Context, b *batch, rs S, items func(R) int, tree func(R) itemTree) {
	var emptied marks
	visit := func(i int) bool {
		r := rs.At(i)
		facts := b.p.pids.factsOf(r.Resource().Attributes())
		if facts.pid != 0 {
			return b.enrichResource(r.Resource(), &facts, items(r))
		}
		var t itemTree
		if tree != nil {
			t = tree(r)
		}
		if t == nil {
			b.missed(r.Resource().Attributes(), items(r))
			return true
		}
		waiting, gone := b.regroupResource(r.Resource(), &facts, t)
		if gone {
			emptied.set(i)
		}
		return !waiting
	}
	n := rs.Len() // resources appended by regrouping are complete already
	for i := range n {
		if !visit(i) {
			b.deferred = append(b.deferred, i)
		}
	}
	if b.wait(ctx) {
		for _, i := range b.deferred {
			visit(i)
		}
	}
	if len(emptied) > 0 {
		rs.RemoveIf(removeMarked[R](emptied, 0))
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
	left := b.p.lookupTimeout - time.Since(b.begun)
	if len(b.unknown) > 0 {
		probed = b.tv.tracker.Probe(b.unknown, left)
	}
	if b.wantScan {
		scanned = b.tv.tracker.ScanSoon()
	}
	timer := time.NewTimer(left)
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
	b.snap = b.tv.tracker.Snapshot()
	return true
}

// finish records the batch's counts and returns the batch to the
// instance's pool.
func (b *batch) finish() {
	b.reportMisses()
	b.p.tel.add(&b.counts)
	b.tv, b.snap, b.final, b.wantScan = nil, nil, false, false
	b.counts = itemCounts{}
	b.missKeys = b.missKeys[:0]
	b.memo.reset()
	b.unknown, b.deferred, b.present = b.unknown[:0], b.deferred[:0], b.present[:0]
	b.p.batches.Put(b)
}
