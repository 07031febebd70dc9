// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"cmp"
	"slices"
	"time"
)

// triggerKind is what may ask for a read of a process.
type triggerKind uint8

const (
	onListing triggerKind = iota + 1 // a scan listed the pid
	onScan                           // a scan that did not list the host met it in the registry (process events tell of every fork and exit)
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

// planner is every decision of what to read and when, from what is known
// of the process or the host, the settings and the event sources; it
// changes nothing (the scheduler carries it out, and paces what is done
// at most once per interval). Per process: next; of the host: scanReads,
// fitBudget, backoff, recheckAt.
type planner struct {
	cfg *Config
	// Publication events and process events come, unmaps among the
	// former; the first scan finished.
	pubEvents, procEvents, unmapEvents, scanned bool
	pubLostAt                                   int64 // the clock when publication events were last dropped
}

// next chooses the cause and the time of a process's read.
func (pl planner) next(p *proc, tr trigger, now int64) readPlan {
	rp := readPlan{retries: p.sched.retries, young: p.sched.young}
	switch tr.kind {
	case onListing:
		rp.cause, rp.at = pl.decide(p, listingCause(p, tr.ino, tr.full), now)
	case onScan:
		rp.cause, rp.at = pl.decide(p, scanCause(p, tr.full), now)
	case onFork:
		// Its environment, unless it execs first (most forks do, at once:
		// the exec plans again).
		if pl.cfg.uses(SourceEnvironment) {
			rp.cause, rp.at = causeEnviron, onGrid(now+int64(youngDelays[0]))
		}
	case onExec:
		if !pl.pubEvents {
			// The young reads look for a context, and read the environment
			// with the first.
			rp.cause, rp.at = causeYoung, onGrid(now+int64(youngDelays[0]))
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
		rp.cause, rp.at = causeQuarantine, p.sched.stall.until
	case onDue:
		rp.cause, rp.at = pl.decide(p, tr.due, now)
		if s := p.sched.stall; rp.cause == causeNone && s != nil && s.until > now {
			// Read when its quarantine ends, whatever this plan was.
			rp.cause, rp.at = causeQuarantine, s.until
		}
	case onRead:
		rp = pl.afterRead(p, tr, now)
	}
	// A read for later gives way to one planned sooner, unless it is an
	// event's (lookups wait for it).
	if rp.cause != causeNone && (rp.at > now || p.sched.reading != causeNone) && p.sched.planned != causeNone &&
		p.sched.plannedAt <= rp.at && (p.sched.planned == causeEvent || rp.cause != causeEvent) {
		rp.cause, rp.at = causeNone, 0
	}
	return rp
}

// afterRead is what follows a read: the read planned while it was out, the
// next of a retry or young series.
func (pl planner) afterRead(p *proc, tr trigger, now int64) readPlan {
	rp, o := readPlan{retries: p.sched.retries, young: p.sched.young}, tr.found
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
		(tr.read == causeYoung || tr.read == causeRetry || tr.discovered && (pl.scanned || tr.newborn)):
		// A process met for the first time after the first scan, or a
		// newborn one in it (it may be between fork and exec, showing its
		// parent's image and environment), or one that exec'd: young, read
		// again soon. Retries (an environment mid-exec, a first
		// publication mid-update) come first, and the series goes on
		// after them: a process met mid-exec is young too.
		if tr.read == causeYoung {
			rp.young++
		}
		if rp.young < youngReads {
			rp.cause, rp.at = causeYoung, onGrid(now+int64(youngDelays[rp.young]))
		}
	}
	return rp
}

// decide says whether, and when, a read for c may happen: causeNone for
// no read; at now, or later (as soon as the read out returns when at is
// now).
func (pl planner) decide(p *proc, c cause, now int64) (cause, int64) {
	switch {
	case c == causeNone, p.kernel && c != causeListing, p.sched.stall.blocks(now):
		// Quarantined, or its read stuck where another would stick too.
		// A kernel thread is read only when its /proc entry changed: the
		// pid may name another process.
		return causeNone, 0
	case p.sched.reading != causeNone:
		if c == causeEvent || c == causeRetry || c == causeYoung {
			return c, now // what it tells may be newer than the read out
		}
		return causeNone, 0
	}
	skip := false
	switch c {
	case causeRescan:
		skip = p.hasContext() || now-p.sched.lookedAt < int64(pl.rescanDelay(p)) || pl.nothingToFind(p)
	case causeProbe:
		skip = pl.answer(p, now) != AnswerUnknown // known meanwhile: nothing a read could tell yet
	case causeYoung:
		skip = p.hasContext() || p.sched.young >= youngReads || pl.nothingToFind(p)
	case causeEnviron:
		skip = p.env == envRead || p.hasContext() || !pl.cfg.uses(SourceEnvironment)
	case causeEvent, causeRetry:
		if at := p.sched.eventReadAt + int64(minEventGap); p.sched.eventReadAt != 0 && at > now {
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
	}
	return scanCause(p, full)
}

// scanCause says what a scan asks of p, whose /proc entry is as it was
// (listed again, or not listed: process events tell of every fork, exec
// and exit): as listingCause.
func scanCause(p *proc, full bool) cause {
	switch {
	case p.start == 0 && p.found == OutcomeNoContext:
		return causeNone // known from its fork or exec event to publish nothing
	case p.start == 0:
		return causeListing // its start time first
	case p.hasContext() && full:
		return causeRefresh
	case !p.hasContext():
		// Without a context (named by its environment or not): looked at
		// again on the rescan schedule, for late publishers.
		return causeRescan
	}
	return causeNone
}

// answer is what a lookup of the pid answers now: AnswerUnknown while a
// read may tell what the lookup should wait for (a publication event's or
// one due).
func (pl planner) answer(p *proc, now int64) Answer {
	switch {
	case p.identity != nil:
		return AnswerOK // in the snapshot
	case p.awaitsEvent():
		return AnswerUnknown
	case p.kernel:
		return AnswerNoContext
	case p.found == OutcomeNoContext && (pl.envDue(p) || pl.contextDue(p, now)):
		return AnswerUnknown
	}
	return Answer(p.found)
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
// read once per RecheckInterval (the recheck queue tells the snapshot).
func (pl planner) contextDue(p *proc, now int64) bool {
	return pl.cfg.uses(SourceContext) && !pl.pubEvents &&
		(p.sched.lookedAt == 0 || now-p.sched.lookedAt >= int64(pl.cfg.RecheckInterval))
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
		if p.sched.lookedAt <= pl.pubLostAt {
			return 0
		}
		return pl.cfg.ReconcileInterval
	}
	d := pl.cfg.RescanInterval
	for i := rescanFastChecks; i <= int(p.sched.rechecks); i++ {
		if d >= pl.cfg.RescanMaxInterval/2 {
			return pl.cfg.RescanMaxInterval
		}
		d *= 2
	}
	return min(d, pl.cfg.RescanMaxInterval)
}

// eventsListInterval is how often, while process and publication events
// both come, scans list the host: the events tell of every fork and exit,
// the listing finds those they could not (a message the kernel dropped
// without saying so).
const eventsListInterval = time.Minute

// scanReads says what a scan starting at now reads of the host: whether
// it lists it, and whether it reads every publisher's timestamp (full).
// While process events come, they tell of every fork, exec and exit: a
// scan lists the host once per eventsListInterval, or at once after
// events were dropped (reconcile) or when asked (relist), for what they
// could not tell (a message the kernel dropped without saying so), and
// otherwise reads what it reads of the processes the tracker knows
// (listing /proc costs a microsecond or so a process). While
// publication events (unmaps among them) come too, a scan reads the
// publishers' timestamps only with a listing, once per
// Config.ReconcileInterval; else every scan reads them.
func (pl planner) scanReads(h *hostState, now int64) (list, full bool) {
	list = !pl.procEvents || h.reconcile || h.relist || h.listedAt == 0 || now-h.listedAt >= int64(eventsListInterval)
	full = true
	if pl.pubEvents && pl.procEvents && pl.unmapEvents {
		full = list && (h.reconcile || h.reconciledAt == 0 || now-h.reconciledAt >= int64(pl.cfg.ReconcileInterval))
	}
	return list, full
}

// scanRead says which read a scan that met p (tr: onListing, with the
// inode listed, or onScan) starts now (causeRescan: one its budget may
// take), causeNone for none.
func (pl planner) scanRead(p *proc, tr trigger, now int64) cause {
	if rp := pl.next(p, tr, now); rp.at <= now {
		return rp.cause
	}
	return causeNone
}

// rescan is a process without a context due for a rescan.
type rescan struct {
	pid int
	p   *proc
}

// fitBudget returns the rescans a scan reads: the longest-waiting first,
// Config.RescanBudget of them. It sorts due.
func (pl planner) fitBudget(due []rescan) []rescan {
	slices.SortFunc(due, func(a, b rescan) int { return cmp.Compare(a.p.sched.lookedAt, b.p.sched.lookedAt) })
	return due[:min(len(due), pl.cfg.RescanBudget)]
}

// backoff is how long a process is not read after its strikes-th stalled
// read in a row: Config.QuarantineBackoff, doubling with each strike, up
// to quarantineGrowth times as long.
func (pl planner) backoff(strikes uint8) time.Duration {
	b := pl.cfg.QuarantineBackoff << (strikes - 1)
	if limit := quarantineGrowth * pl.cfg.QuarantineBackoff; b > limit || b <= 0 {
		b = limit
	}
	return b
}

// recheckAt says when p, whose maps were just read without a context, is
// due for a read again (contextDue: the snapshot must say so then, for
// lookups to wait for that read), on planGrid: at most a grid step after
// Config.RecheckInterval, never before; false while publication events
// tell when it publishes, or contexts are not a source.
func (pl planner) recheckAt(p *proc) (int64, bool) {
	if !pl.cfg.uses(SourceContext) || pl.pubEvents {
		return 0, false
	}
	return upToGrid(p.sched.lookedAt + int64(pl.cfg.RecheckInterval)), true
}
