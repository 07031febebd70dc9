package tracker

import (
	"time"
)

// proc is what the tracker knows of one process: one incarnation of a pid,
// until an exec or the pid's reuse makes another (newIncarnation). Kept
// small: a host runs thousands, most publishing nothing.
type proc struct {
	// Who it is.
	serial uint32 // names this incarnation: a read of another is of the past
	listed uint32 // the generation of the last listing that found the pid
	start  uint64 // start time in clock ticks, (pid, start) the key; 0 until read
	ino    uint64 // inode of /proc/<pid> when last listed; another one: maybe another process

	// Who it says it is: pub while it publishes a context, or while its
	// environment names it; otherwise found says what its last read found
	// (OutcomeUnknown: not read yet).
	pub    *Process
	found  Outcome
	kernel bool // a kernel thread: no user memory, never read again
	// env says whether its environment, fixed at exec, was read: what it
	// said is pub, unless a context replaced it. A context published makes
	// it unread: when the context ends, the environment is read again, in
	// the same read.
	env envState

	// Its reads: the one out, the one planned (decide says which).
	reading, planned cause
	// steps counts the reads of its young or retry series; rechecks its
	// maps reads without a context since it last changed (the rescan
	// backoff).
	steps, rechecks uint8
	plannedAt       int64 // clock; at most now: once the read out returns
	// lookedAt is the clock of its last maps read, or of the fork or exec
	// event that told without one, while publication events come, that it
	// publishes nothing; 0: not looked at since its exec.
	lookedAt int64
	// eventReadAt is the clock of the last read a publication event
	// caused: a process calling prctl in a loop is read once per
	// minEventGap, not in a loop.
	eventReadAt int64
	// imageAt is the kernel time (Event.Time's clock) of the newest look
	// at its current image: its last publication event, or the start of a
	// read that found its identity. An exec or exit reported older than
	// that is a previous image's or process's, late (the sources are
	// other paths than the reads).
	imageAt uint64
	stall   *stall // nil until a read of it stalled
	// deniedForGood: its denial was said, once, to be one no setting
	// lifts; the reports leave it out.
	deniedForGood bool
}

// cause is why a process is read. Every cause asks decide whether and
// when; they differ in what follows the read (followUp).
type cause uint8

const (
	causeNone cause = iota
	// causeListing: a listing found a pid not known, or its /proc entry
	// changed: its start time tells whether it is still the same process.
	causeListing
	// causeRefresh: a scan checks a publisher's timestamp.
	causeRefresh
	// causeRescan: a scan reads the maps of a process without a context
	// again, for late publishers.
	causeRescan
	// causeProbe: telemetry names a pid whose lookup cannot answer yet:
	// not read, or a read due (envDue, contextDue).
	causeProbe
	// causeEvent: a publication event (publish, memfd, unmap).
	causeEvent
	// causeRetry: a publication event's read found nothing yet (a memfd
	// not written, an update in progress).
	causeRetry
	// causeYoung: a young process's next read, while no publication events
	// come (after an exec, or when a scan first met it).
	causeYoung
	// causeQuarantine: a quarantined process's backoff has passed.
	causeQuarantine
	// causeExec: a fork or exec event: the environment of the new image
	// is read, not its maps (publication events tell of its context).
	causeExec
)

// urgent reports whether reads for c go before scan work: something is
// waiting for them, or the kernel just said the process changed.
func (c cause) urgent() bool {
	return c == causeProbe || c == causeEvent || c == causeRetry
}

const (
	// minEventGap is the least time between two reads of one process
	// caused by its events.
	minEventGap = 10 * time.Millisecond
	// publishRetries bounds the reads of a process whose publication event
	// found no readable context yet.
	publishRetries = 4
	// rescanFastChecks is how many re-reads happen at RescanInterval
	// before the wait starts doubling.
	rescanFastChecks = 4
	// quarantineGrowth bounds the quarantine backoff, which doubles from
	// Config.QuarantineBackoff.
	quarantineGrowth = 20
)

// youngDelays are the waits between the reads of a young process: one
// that exec'd, or one a scan met for the first time, while no publication
// events come. SDKs publish during start-up, often seconds in; the rescan
// schedule takes over after the last.
var youngDelays = [...]time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second}

// youngReads is the length of the young series: steps at it ends it.
const youngReads = uint8(len(youngDelays))

// envState says whether a process's environment was read.
type envState uint8

const (
	envUnread envState = iota
	// envTried: a read asked for it and did not read it (it was empty:
	// mid-exec, or none at all; or the read ended before it, at a context
	// mapping it could not read): the next read asks again, but lookups
	// do not wait for that.
	envTried
	envRead
)

// stall is the record of a process whose reads did not return in time.
type stall struct {
	until   int64 // clock before which it is not read; 0: it answered since
	strikes uint8 // stalls since it last answered: the backoff doubles with each
	stuck   stuckRead
}

// stuckRead is a read of the process abandoned at its deadline that has
// not returned yet.
type stuckRead uint8

const (
	notStuck stuckRead = iota
	// stuckVMReadv: stuck in process_vm_readv (or another file): the mem
	// file, which fails at once on userfaultfd pages, may still be read.
	stuckVMReadv
	// stuckMemFile: stuck even through the mem file: not read again until
	// that read returns.
	stuckMemFile
)

// blocks reports whether the stall keeps the process from being read now.
func (s *stall) blocks(now int64) bool {
	return s != nil && (now < s.until || s.stuck == stuckMemFile)
}

// quarantined reports whether its last read stalled and none answered
// since.
func (p *proc) quarantined() bool { return p.stall != nil && p.stall.strikes > 0 }

// awaitsEvent reports whether a publication event's read of a process
// without a publication is out or planned: it may have just published, so
// lookups say it is not known yet and probes wait for that read.
func (p *proc) awaitsEvent() bool {
	return p.pub == nil && (p.reading == causeEvent || p.planned == causeEvent)
}

// publishes reports whether p publishes a context (and is not only named
// by its environment).
func (p *proc) publishes() bool { return p.pub != nil && p.pub.Source == SourceContext }

// lookupOutcome is what a lookup of the pid says now while the snapshot
// has no publication of it: OutcomeUnknown while a read may tell what the
// lookup should wait for (a publication event's, or a read due).
func (t *Tracker) lookupOutcome(p *proc, now int64) Outcome {
	switch {
	case p.pub != nil:
		return OutcomeOK // in the snapshot
	case p.awaitsEvent():
		return OutcomeUnknown
	case p.kernel:
		return OutcomeNoContext
	case p.found == OutcomeNoContext && (t.envDue(p) || t.contextDue(p, now)):
		return OutcomeUnknown
	}
	return p.found
}

// envDue reports whether p's environment, a source, was not read since
// its exec: telemetry that names it waits for that read (Probe), a small
// one.
func (t *Tracker) envDue(p *proc) bool {
	return p.env == envUnread && t.cfg.uses(SourceEnvironment)
}

// contextDue reports whether a read of p's maps may find a context that
// its last read did not, while no publication events tell of contexts:
// its maps were not read since its exec, or not for
// Config.RecheckInterval. Telemetry that names it waits for that read
// (Probe): its first batch gets the context its SDK published at start-up,
// and a pid named again and again is read at most once per
// RecheckInterval. The pid is noted for the snapshot when the interval
// has passed (noteRecheck).
func (t *Tracker) contextDue(p *proc, now int64) bool {
	return t.cfg.uses(SourceContext) && t.events.live&PublicationEvents == 0 &&
		(p.lookedAt == 0 || now-p.lookedAt >= int64(t.cfg.RecheckInterval))
}

// decision is what a cause asks of a process now.
type decision uint8

const (
	skip      decision = iota // no read
	readNow                   // read it now
	readLater                 // at the time decide returns, or once the read out returns
)

// decide is the one place that says whether, and when, a cause reads a
// process, from what the tracker knows of it.
func (t *Tracker) decide(p *proc, c cause, now int64) (decision, int64) {
	switch {
	case p.kernel && c != causeListing, p.stall.blocks(now):
		// Quarantined, or its read stuck where another would stick too.
		// A kernel thread is read only when its /proc entry changed: the
		// pid may name another process.
		return skip, 0
	case p.reading != causeNone:
		if c == causeEvent || c == causeRetry || c == causeYoung {
			return readLater, now // what it tells may be newer than the read out
		}
		return skip, 0
	}
	switch c {
	case causeRescan:
		if p.publishes() || now-p.lookedAt < int64(t.rescanDelay(p)) || t.nothingToFind(p) {
			return skip, 0
		}
	case causeProbe:
		if t.lookupOutcome(p, now) != OutcomeUnknown {
			return skip, 0 // known meanwhile: nothing a read could tell yet
		}
	case causeYoung:
		if p.publishes() || p.steps >= youngReads || t.nothingToFind(p) {
			return skip, 0
		}
	case causeExec:
		if p.env == envRead || p.publishes() || !t.cfg.uses(SourceEnvironment) {
			return skip, 0
		}
	case causeEvent, causeRetry:
		if at := p.eventReadAt + int64(minEventGap); p.eventReadAt != 0 && at > now {
			return readLater, at
		}
	}
	return readNow, now
}

// nothingToFind reports whether reading p again cannot tell anything new:
// its environment is read and contexts are not a source.
func (t *Tracker) nothingToFind(p *proc) bool {
	return p.env == envRead && !t.cfg.uses(SourceContext)
}

// want reads p for c now, plans the read, or does nothing, as decide says.
func (t *Tracker) want(pid int, p *proc, c cause) {
	now := t.clock()
	switch d, at := t.decide(p, c, now); d {
	case readNow:
		t.enqueue(&job{urgent: c.urgent(), reqs: []request{t.request(pid, p, c, now)}})
	case readLater:
		t.plan(pid, p, c, at)
	}
}

// request starts a read of p for c: what to read follows from what is
// known of it.
func (t *Tracker) request(pid int, p *proc, c cause, now int64) request {
	r := request{pid: pid, serial: p.serial, cause: c, start: p.start, via: p.via(),
		env: p.env != envRead && t.cfg.uses(SourceEnvironment),
		// A probe of a process whose maps are not due reads only what is.
		noMaps: c == causeExec || !t.cfg.uses(SourceContext) ||
			c == causeProbe && p.found == OutcomeNoContext && !t.contextDue(p, now)}
	switch {
	case p.start == 0 || c == causeListing:
		r.op = opDiscover
	case p.publishes():
		r.op, r.addr, r.last = opRefresh, p.pub.Addr, p.pub.Context.PublishedAt
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

// followUp plans what comes after a read of p for c that found o: the
// read planned while it was out, the next of a retry or young series.
func (t *Tracker) followUp(pid int, p *proc, c cause, o Outcome, discovered bool) {
	now := t.clock()
	switch {
	case p.planned != causeNone && p.plannedAt <= now:
		next := p.planned
		p.planned = causeNone
		t.want(pid, p, next)
	case p.publishes() || p.kernel:
		p.steps = youngReads
	case p.steps < publishRetries && (o == OutcomeTorn || (c == causeEvent || c == causeRetry) && o == OutcomeNoContext):
		// A publication event's read that came too early, or a first
		// publication met mid-update (whatever read it): again soon.
		p.steps++
		t.plan(pid, p, causeRetry, now+int64(minEventGap<<(2*p.steps)))
	case o == OutcomeNoContext && t.events.live&PublicationEvents == 0 && p.steps < youngReads &&
		(c == causeYoung || (discovered && t.scanned)):
		// A process met for the first time (it may be between fork and
		// exec), or one that exec'd: young, read again soon.
		if c == causeYoung {
			p.steps++
		}
		if p.steps < youngReads {
			t.plan(pid, p, causeYoung, now+int64(youngDelays[p.steps]))
		}
	}
}

// rescanDelay is how long a process without a context waits before its
// maps are read again: RescanInterval for the first rescanFastChecks
// re-reads, then doubled after each one that found nothing, up to
// RescanMaxInterval. SDKs publish soon after start; a process that did not
// for an hour is unlikely to in the next minute. With publication events,
// only after ReconcileInterval, or at once when events were dropped since.
func (t *Tracker) rescanDelay(p *proc) time.Duration {
	if t.events.live&PublicationEvents != 0 {
		if p.lookedAt <= t.discovery.pubLostAt {
			return 0
		}
		return t.cfg.ReconcileInterval
	}
	d := t.cfg.RescanInterval
	for i := rescanFastChecks; i <= int(p.rechecks); i++ {
		if d >= t.cfg.RescanMaxInterval/2 {
			return t.cfg.RescanMaxInterval
		}
		d *= 2
	}
	return min(d, t.cfg.RescanMaxInterval)
}

// newProc records a pid not known before.
func (t *Tracker) newProc(pid int) *proc {
	t.serials++
	p := &proc{serial: t.serials, listed: t.gen}
	t.procs[pid] = p
	t.touch(pid)
	return p
}

// newIncarnation makes p a new incarnation of its pid, after an exec (the
// same process with a new image: ended Unpublished) or when the pid names
// another process (ended Exited). Its publication ends, and reads out or
// planned for the old incarnation are of the past (a new serial). What is
// the pid's rather than the image's stays: its listing and inode, the time
// of its last publication event (an older exit is a previous process's)
// and, after an exec, the record of a stalled read. start is the new
// incarnation's, 0 when not known yet.
func (t *Tracker) newIncarnation(pid int, p *proc, ended ChangeKind, start uint64) {
	t.endPublication(pid, p, ended)
	old := *p
	t.serials++
	*p = proc{serial: t.serials, listed: old.listed, ino: old.ino, start: start, imageAt: old.imageAt}
	if ended == Unpublished {
		p.stall = old.stall
	}
	t.touch(pid)
}

// forget drops a process that exited. Lookups of its pid say so (without a
// read) until a listing or an event names the pid again.
func (t *Tracker) forget(pid int, p *proc) {
	t.endPublication(pid, p, Exited)
	delete(t.procs, pid)
	t.touch(pid)
}
