// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import "go.uber.org/zap"

// EventKind is what an Event says of a process.
type EventKind uint8

// A forked process has no context: publishers map theirs with
// MADV_DONTFORK. EventPublish comes of the prctl naming call publishers
// issue on every publication; EventUnmap only of the contexts the tracker
// told the source about (PublicationFilter).
const (
	EventFork    EventKind = iota + 1 // PID is a new process forked from Parent
	EventExec                         // PID replaced its image; any context it published is gone
	EventExit                         // PID exited
	EventPublish                      // PID published or updated the context mapped at Addr
	EventMemfd                        // PID created the memfd of a context it is about to publish
	EventUnmap                        // PID unmapped (part of) its context
	EventLost                         // the source of Source dropped events
)

// Sources says which classes of events sources deliver.
type Sources uint8

const (
	ProcessEvents     Sources = 1 << iota // fork, exec and exit (the proc connector)
	PublicationEvents                     // publish, memfd and unmap (an eBPF program)
)

func (s Sources) String() string {
	names := [...]string{0: "none", ProcessEvents: "process", PublicationEvents: "publication",
		ProcessEvents | PublicationEvents: "process, publication"}
	if int(s) < len(names) {
		return names[s]
	}
	return "unknown"
}

// Event is what the kernel said of a process, as an EventSource delivers it.
// Pids are those of the host's procfs (the initial pid namespace).
type Event struct {
	Kind   EventKind
	PID    int
	Parent int     // EventFork
	Addr   uint64  // EventPublish, EventUnmap
	Source Sources // EventLost
	// Time is when it happened, in nanoseconds of CLOCK_MONOTONIC; 0 when
	// unknown. Events of two sources come on two paths: their times order
	// them (an exec reported after the publication that followed it).
	Time uint64
}

// EventSource delivers events to a tracker.
type EventSource interface {
	// Sources says which events the source delivers.
	Sources() Sources
	// Run delivers events to notify until Close, which makes it return
	// nil; an error means the source stopped on its own. notify never
	// blocks.
	Run(notify func(Event)) error
	// Close stops Run.
	Close() error
}

// PublicationFilter is implemented by a source that reports EventUnmap
// only for the mappings it is told of: the tracker tells it every
// publication it holds. A publication source that does not implement it
// reports no unmaps: the tracker then reads its publishers at every scan.
type PublicationFilter interface {
	Track(pid int, addr, length uint64) error
	Untrack(pid int) error
}

// WithEventSources makes the tracker run the sources from Start to Stop and
// act on their events; what they deliver need not be polled for (see the
// package documentation).
func WithEventSources(sources ...EventSource) Option {
	return func(t *Tracker) { t.loop.events.add(sources...) }
}

// EventStats counts the events a tracker received.
type EventStats struct {
	Received uint64
	// Lost are events dropped: by a source (its buffer overflowed) or
	// because the tracker's queue was full.
	Lost uint64
}

// Events returns the tracker's event counts.
func (t *Tracker) Events() EventStats { return t.loop.events.stats() }

// LiveSources says which classes of events the tracker gets from running
// sources; the rest is polled for.
func (t *Tracker) LiveSources() Sources { return t.loop.events.live() }

// onSourceStopped falls back to polling for what a stopped source
// delivered.
func (l *loop) onSourceStopped(s sourceStopped) {
	l.events.drop(s.sources)
	l.log.Warn("An event source stopped: polling takes over its events",
		zap.String("events", s.sources.String()), zap.Error(s.err))
	l.makeUpFor(s.sources)
}

// onLost makes up for dropped events.
func (l *loop) onLost() {
	lost := l.events.takeLost()
	if lost == 0 {
		return
	}
	l.log.Debug("Events were dropped: a scan makes up for them", zap.String("events", lost.String()))
	l.makeUpFor(lost)
}

// makeUpFor: events of these classes may have been dropped. A scan finds
// the exits and forks (the listing) and, reading every publisher's
// timestamp, the execs and updates; the scheduler says when (lost).
func (l *loop) makeUpFor(s Sources) {
	if l.sched.noteLost(s, l.scans.inProgress() != 0) {
		l.startScan()
	}
}

// handle acts on one event.
func (l *loop) handle(ev Event) {
	if !ValidPID(ev.PID) {
		return
	}
	pid, p := ev.PID, l.reg.get(ev.PID)
	l.out.prompt = true
	defer func() { l.out.prompt = false }()
	switch ev.Kind {
	case EventFork:
		if p == nil { // else known already: a listing or a publication event came first
			p = l.newProc(pid)
			l.markExec(p)
			l.sched.act(pid, p, trigger{kind: onFork})
		}
	case EventExec:
		l.applyExec(pid, p, ev.Time)
	case EventExit:
		// An exit older than the pid's image (imageAt) came late: the
		// publication is a later process's (the pid was reused).
		if p != nil && (ev.Time == 0 || p.imageAt <= ev.Time) {
			l.forget(pid, p)
		}
	case EventPublish, EventMemfd, EventUnmap:
		l.applyPublicationEvent(pid, p, ev)
	}
}

// applyExec: the process's publication, if any, is gone with its image; it
// is young again. An exec older than the process's image (imageAt: a
// publication event, or a read that found its identity) came late: the
// publication is the new image's.
func (l *loop) applyExec(pid int, p *proc, at uint64) {
	switch {
	case p == nil:
		p = l.newProc(pid)
	case at != 0 && p.imageAt > at:
		return
	default:
		l.newIncarnation(pid, p, Unpublished, p.start)
	}
	l.markExec(p)
	l.sched.act(pid, p, trigger{kind: onExec})
}

// markExec records what a fork or exec tells of the new image: it
// publishes nothing yet (and when it is looked at: scheduler.noteExec).
func (l *loop) markExec(p *proc) {
	p.found = OutcomeNoContext
	l.sched.noteExec(p)
}

// applyPublicationEvent reads p soon: it published, updated or unmapped its
// context, or created the memfd of one (read a little later: its header
// is not written yet).
func (l *loop) applyPublicationEvent(pid int, p *proc, ev Event) {
	unmap := ev.Kind == EventUnmap
	switch {
	case p == nil && unmap, p != nil && unmap && p.identity == nil:
		return
	case p == nil:
		p = l.newProc(pid)
	}
	p.imageAt = max(p.imageAt, ev.Time)
	l.sched.act(pid, p, trigger{kind: publicationTriggers[ev.Kind-EventPublish]})
}

var publicationTriggers = [...]triggerKind{onPublish, onMemfd, onUnmap}
