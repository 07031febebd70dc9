package tracker

import (
	"container/heap"
	"time"
)

// triggerKind is what may ask for a read of a process.
type triggerKind uint8

const (
	onListing triggerKind = iota + 1 // a scan listed the pid
	onFork                           // a fork event made the process
	onExec                           // an exec event gave it a new image
	onPublish                        // a publish event
	onUnmap                          // an unmap event
	onMemfd                          // a memfd event: a context is about to be published
	onReused                         // a read found the pid naming another process
	onProbe                          // telemetry names the pid, or waits for what a read did not look at
	onStall                          // a read of it did not return in time: quarantine
	onDue                            // the read planned fell due
	onRead                           // a read of it returned
)

// trigger is one thing that may ask for a read, handed to the planner.
// onListing: the inode listed, whether the scan is full; onRead: the read
// that returned, what it found, whether it discovered the start time (of
// a newborn process: less than youngDelays[0] old) and whether the
// environment it asked for read empty (mid-exec); due: the read planned
// that fell due (onDue, or onRead), taken out of the plan.
type trigger struct {
	kind                          triggerKind
	ino                           uint64
	full                          bool
	read, due                     cause
	found                         Outcome
	discovered, newborn, envEmpty bool
}

// readPlan is what the planner says: a read for cause at at (at most now:
// now, or once the read out returns), or none (causeNone: what is planned
// stands); retries and young are the process's series counters after.
type readPlan struct {
	cause          cause
	at             int64
	retries, young uint8
}

// planner says which read a trigger asks of a process and when, from what
// is known of it, the settings and the event sources; it changes nothing.
type planner struct {
	cfg                *Config
	pubEvents, scanned bool  // publication events come; the first scan finished
	pubLostAt          int64 // the clock when publication events were last dropped
}

func (t *Tracker) planner() planner {
	return planner{&t.cfg, t.events.live&PublicationEvents != 0, t.scans.scanned, t.discovery.pubLostAt}
}

// next is the one place that chooses the cause and the time of a read.
func (pl planner) next(p *proc, tr trigger, now int64) readPlan {
	rp := readPlan{retries: p.retries, young: p.young}
	switch tr.kind {
	case onListing:
		rp.cause, rp.at = pl.decide(p, listingCause(p, tr.ino, tr.full), now)
	case onFork:
		// Its environment, unless it execs first (most forks do, at once:
		// the exec plans again).
		if pl.cfg.uses(SourceEnvironment) {
			rp.cause, rp.at = causeEnviron, now+int64(youngDelays[0])
		}
	case onExec:
		if !pl.pubEvents {
			// The young reads look for a context, and read the environment
			// with the first.
			rp.cause, rp.at = causeYoung, now+int64(youngDelays[0])
		} else if pl.cfg.uses(SourceEnvironment) {
			// Read once per exec; a process that exits at once is not read.
			rp.cause, rp.at = causeEnviron, now+int64(minEventGap)
		}
	case onPublish, onUnmap, onReused:
		rp.retries = 0
		rp.cause, rp.at = pl.decide(p, causeEvent, now)
	case onMemfd:
		// Read a little later: the header is not written yet.
		rp.retries = 0
		if c, _ := pl.decide(p, causeEvent, now); c != causeNone {
			rp.cause, rp.at = causeEvent, now+int64(minEventGap)
		}
	case onProbe:
		rp.cause, rp.at = pl.decide(p, causeProbe, now)
	case onStall:
		rp.cause, rp.at = causeQuarantine, p.stall.until
	case onDue:
		rp.cause, rp.at = pl.decide(p, tr.due, now)
		if s := p.stall; rp.cause == causeNone && s != nil && s.until > now {
			// Read when its quarantine ends, whatever this plan was.
			rp.cause, rp.at = causeQuarantine, s.until
		}
	case onRead:
		rp = pl.afterRead(p, tr, now)
	}
	// A read for later gives way to one planned sooner, unless it is an
	// event's (lookups wait for it).
	if rp.cause != causeNone && (rp.at > now || p.reading != causeNone) && p.planned != causeNone &&
		p.plannedAt <= rp.at && (p.planned == causeEvent || rp.cause != causeEvent) {
		rp.cause, rp.at = causeNone, 0
	}
	return rp
}

// afterRead is what follows a read: the read planned while it was out, the
// next of a retry or young series.
func (pl planner) afterRead(p *proc, tr trigger, now int64) readPlan {
	rp, o := readPlan{retries: p.retries, young: p.young}, tr.found
	switch {
	case tr.due != causeNone:
		rp.cause, rp.at = pl.decide(p, tr.due, now)
	case p.hasContext() || p.kernel:
		rp.retries, rp.young = publishRetries, youngReads
	case rp.retries < publishRetries && (o == OutcomeTorn || tr.envEmpty ||
		(tr.read == causeEvent || tr.read == causeRetry) && o == OutcomeNoContext):
		// A publication event's read that came too early, a first
		// publication met mid-update or an environment mid-exec (whatever
		// read it): again soon.
		rp.retries++
		rp.cause, rp.at = causeRetry, now+int64(minEventGap<<(2*rp.retries))
	case o == OutcomeNoContext && !pl.pubEvents && rp.young < youngReads &&
		(tr.read == causeYoung || tr.discovered && (pl.scanned || tr.newborn)):
		// A process met for the first time after the first scan, or a
		// newborn one in it (it may be between fork and exec, showing its
		// parent's image and environment), or one that exec'd: young, read
		// again soon.
		if tr.read == causeYoung {
			rp.young++
		}
		if rp.young < youngReads {
			rp.cause, rp.at = causeYoung, now+int64(youngDelays[rp.young])
		}
	}
	return rp
}

// decide says whether, and when, a read for c may happen: causeNone for
// no read; at now, or later (as soon as the read out returns when at is
// now).
func (pl planner) decide(p *proc, c cause, now int64) (cause, int64) {
	switch {
	case c == causeNone, p.kernel && c != causeListing, p.stall.blocks(now):
		// Quarantined, or its read stuck where another would stick too.
		// A kernel thread is read only when its /proc entry changed: the
		// pid may name another process.
		return causeNone, 0
	case p.reading != causeNone:
		if c == causeEvent || c == causeRetry || c == causeYoung {
			return c, now // what it tells may be newer than the read out
		}
		return causeNone, 0
	}
	skip := false
	switch c {
	case causeRescan:
		skip = p.hasContext() || now-p.lookedAt < int64(pl.rescanDelay(p)) || pl.nothingToFind(p)
	case causeProbe:
		skip = pl.lookupOutcome(p, now) != OutcomeUnknown // known meanwhile: nothing a read could tell yet
	case causeYoung:
		skip = p.hasContext() || p.young >= youngReads || pl.nothingToFind(p)
	case causeEnviron:
		skip = p.env == envRead || p.hasContext() || !pl.cfg.uses(SourceEnvironment)
	case causeEvent, causeRetry:
		if at := p.eventReadAt + int64(minEventGap); p.eventReadAt != 0 && at > now {
			return c, at
		}
	}
	if skip {
		return causeNone, 0
	}
	return c, now
}

// listingCause says what a listing that found p's pid with the inode ino
// asks of it: causeListing (a new /proc entry: a new process, or only a
// new inode for the same one, which procfs may drop and make again; its
// start time tells), causeRefresh (a publisher, in a full scan),
// causeRescan (a process without a context) or causeNone.
func listingCause(p *proc, ino uint64, full bool) cause {
	switch {
	case p.start == 0 && p.found == OutcomeNoContext && (p.ino == 0 || p.ino == ino):
		// Known from its fork or exec event to publish nothing.
		return causeNone
	case p.ino != ino || ino == 0 || p.start == 0:
		return causeListing
	case p.hasContext() && full:
		return causeRefresh
	case !p.hasContext():
		// Without a context (named by its environment or not): looked at
		// again on the rescan schedule, for late publishers.
		return causeRescan
	}
	return causeNone
}

// lookupOutcome is what a lookup of the pid says now while the snapshot
// has no publication of it: OutcomeUnknown while a read may tell what the
// lookup should wait for (a publication event's, or a read due).
func (pl planner) lookupOutcome(p *proc, now int64) Outcome {
	switch {
	case p.identity != nil:
		return OutcomeOK // in the snapshot
	case p.awaitsEvent():
		return OutcomeUnknown
	case p.kernel:
		return OutcomeNoContext
	case p.found == OutcomeNoContext && (pl.envDue(p) || pl.contextDue(p, now)):
		return OutcomeUnknown
	}
	return p.found
}

// envDue reports whether p's environment, a source, was not read since
// its exec: telemetry that names it waits for that read (Probe), a small
// one.
func (pl planner) envDue(p *proc) bool {
	return p.env == envUnread && pl.cfg.uses(SourceEnvironment)
}

// contextDue reports whether, while no publication events come, p's maps
// were not read since its exec or for Config.RecheckInterval: telemetry
// naming it waits for that read (Probe), so its first batch gets the
// context its SDK published at start-up, and a pid named again and again is
// read once per RecheckInterval (noteRecheck tells the snapshot).
func (pl planner) contextDue(p *proc, now int64) bool {
	return pl.cfg.uses(SourceContext) && !pl.pubEvents &&
		(p.lookedAt == 0 || now-p.lookedAt >= int64(pl.cfg.RecheckInterval))
}

// nothingToFind reports whether reading p again cannot tell anything new:
// its environment is read and contexts are not a source.
func (pl planner) nothingToFind(p *proc) bool {
	return p.env == envRead && !pl.cfg.uses(SourceContext)
}

// rescanDelay is how long a process without a context waits before its
// maps are read again: RescanInterval for rescanFastChecks re-reads, then
// doubling up to RescanMaxInterval (SDKs publish soon after start). With
// publication events, ReconcileInterval, or none when events were dropped.
func (pl planner) rescanDelay(p *proc) time.Duration {
	if pl.pubEvents {
		if p.lookedAt <= pl.pubLostAt {
			return 0
		}
		return pl.cfg.ReconcileInterval
	}
	d := pl.cfg.RescanInterval
	for i := rescanFastChecks; i <= int(p.rechecks); i++ {
		if d >= pl.cfg.RescanMaxInterval/2 {
			return pl.cfg.RescanMaxInterval
		}
		d *= 2
	}
	return min(d, pl.cfg.RescanMaxInterval)
}

// act hands tr to the planner and carries out what it says: the read
// starts now, or is planned. With startRead and endRead, the one place
// that changes a process's reads.
func (t *Tracker) act(pid int, p *proc, tr trigger) {
	now := t.clock()
	if (tr.kind == onDue || tr.kind == onRead) && p.planned != causeNone && p.plannedAt <= now {
		tr.due = p.planned // taken out: the planner says what becomes of it
		t.setPlan(pid, p, causeNone, 0, now)
	}
	rp := t.planner().next(p, tr, now)
	p.retries, p.young = rp.retries, rp.young
	switch {
	case rp.cause == causeNone:
	case rp.at <= now && p.reading == causeNone:
		t.enqueue(&job{urgent: rp.cause.urgent(), reqs: []request{t.startRead(pid, p, rp.cause, now)}})
	default:
		t.setPlan(pid, p, rp.cause, rp.at, now)
	}
}

// startRead marks a read of p for c out and returns its request: what to
// read follows from what is known of p.
func (t *Tracker) startRead(pid int, p *proc, c cause, now int64) request {
	r := request{pid: pid, serial: p.serial, cause: c, start: p.start, stalled: p.stall != nil,
		// A young read looks at the environment again: the one read may
		// have been its parent's, before its exec.
		env: (p.env != envRead || c == causeYoung && p.identity == nil) && t.cfg.uses(SourceEnvironment),
		// A probe of a process whose maps are not due reads only what is.
		noMaps: c == causeEnviron || !t.cfg.uses(SourceContext) ||
			c == causeProbe && p.found == OutcomeNoContext && !t.planner().contextDue(p, now)}
	switch {
	case p.start == 0 || c == causeListing:
		r.op = opDiscover
	case p.hasContext():
		r.op, r.addr, r.last = opRefresh, p.identity.Addr, p.identity.Context.PublishedAt
	default:
		r.op = opLocate
	}
	if c == causeEvent || p.planned == causeEvent {
		t.touch(pid) // awaitsEvent may change
	}
	p.reading = c
	if c == causeEvent || c == causeRetry {
		p.eventReadAt = now
	}
	if p.planned == c {
		p.planned = causeNone // this read is the one planned
	}
	return r
}

// endRead notes that the read r is no longer out, and returns the process
// it was for, nil when that exited or became another incarnation
// meanwhile (the read is of the past: the probes waiting for it are done),
// and what lookups said of it while the read was out.
func (t *Tracker) endRead(r *request) (*proc, Outcome) {
	p := t.procs[r.pid]
	if p == nil || p.serial != r.serial {
		if p == nil || p.reading == causeNone {
			t.probes.resolve(r.pid)
		}
		return nil, OutcomeUnknown
	}
	now := t.clock()
	before := t.planner().lookupOutcome(p, now)
	p.reading = causeNone
	if p.planned != causeNone && p.plannedAt <= now {
		// A plan that waited for this read falls due now, however the read
		// ended (applied, stalled, not run): queued, it cannot be left
		// waiting for a read no longer out.
		t.setPlan(r.pid, p, p.planned, now, now)
	}
	return p, before
}

// plannedRead is an entry of the plan queue, which only orders: the plan
// is the process's (proc.planned, plannedAt); an entry that does not match
// it when it falls due is dropped.
type plannedRead struct {
	at     int64 // clock
	pid    int32
	serial uint32
}

// planQueue orders the planned reads by time.
type planQueue []plannedRead

func (q planQueue) Len() int           { return len(q) }
func (q planQueue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q planQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *planQueue) Push(x any)        { *q = append(*q, x.(plannedRead)) }
func (q *planQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// maxPlanned bounds the queue; beyond, plans are dropped and the scans'
// schedule covers those processes.
const maxPlanned = 1 << 16

// setPlan stores the read the planner planned for p at now (causeNone:
// none). It is queued for its time unless it waits for the read out (due
// now: endRead queues it when that read ends, whatever ended it). Later
// and now are the planner's: read the clock again and a plan a few
// microseconds ahead would be neither queued nor waiting.
func (t *Tracker) setPlan(pid int, p *proc, c cause, at, now int64) {
	if c != causeNone && (at > now || p.reading == causeNone) {
		if len(t.plan.queue) >= maxPlanned {
			return
		}
		heap.Push(&t.plan.queue, plannedRead{at: at, pid: int32(pid), serial: p.serial})
	}
	if c == causeEvent || p.planned == causeEvent {
		t.touch(pid) // awaitsEvent may change
	}
	p.planned, p.plannedAt = c, at
}

// nextPlanned returns the clock of the earliest planned read or recheck,
// false when none is.
func (t *Tracker) nextPlanned() (int64, bool) {
	at, ok := t.plan.rechecks.next()
	if q := t.plan.queue; len(q) > 0 && (!ok || q[0].at < at) {
		at, ok = q[0].at, true
	}
	return at, ok
}

// runPlans starts the planned reads that are due.
func (t *Tracker) runPlans() {
	now := t.clock()
	for len(t.plan.queue) > 0 && t.plan.queue[0].at <= now {
		e := heap.Pop(&t.plan.queue).(plannedRead)
		pid := int(e.pid)
		if p := t.procs[pid]; p != nil && p.serial == e.serial && p.planned != causeNone && p.plannedAt == e.at {
			t.act(pid, p, trigger{kind: onDue})
		}
	}
}

// recheckQueue holds, in the order they fall due, the times when
// processes read without a context are due for a read again
// (contextDue): the snapshot must say so then, for lookups to wait for
// that read. An entry whose process was read again since is only a
// snapshot update for nothing.
type recheckQueue struct {
	q    []plannedRead
	head int
}

// noteRecheck notes that p's maps were just read without finding a
// context: due again after Config.RecheckInterval.
func (t *Tracker) noteRecheck(pid int, p *proc) {
	q := &t.plan.rechecks
	if !t.cfg.uses(SourceContext) || t.events.live&PublicationEvents != 0 || len(q.q)-q.head >= maxPlanned {
		return
	}
	q.q = append(q.q, plannedRead{at: p.lookedAt + int64(t.cfg.RecheckInterval), pid: int32(pid), serial: p.serial})
}

func (q *recheckQueue) next() (int64, bool) {
	if q.head == len(q.q) {
		return 0, false
	}
	return q.q[q.head].at, true
}

// markRechecks notes for the snapshot the processes whose rechecks fell
// due.
func (t *Tracker) markRechecks() {
	q, now := &t.plan.rechecks, t.clock()
	for ; q.head < len(q.q) && q.q[q.head].at <= now; q.head++ {
		e := q.q[q.head]
		if p := t.procs[int(e.pid)]; p != nil && p.serial == e.serial {
			t.touch(int(e.pid))
		}
	}
	// Reuse the space of the entries gone: at once when none is left,
	// else once they are most of it.
	if q.head == len(q.q) || q.head > len(q.q)/2 && q.head > 1024 {
		q.q, q.head = append(q.q[:0], q.q[q.head:]...), 0
	}
}
