package tracker

import (
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

// EventKind is what an Event says of a process.
type EventKind uint8

const (
	// EventFork: PID is a new process forked from Parent. It has no
	// context: publishers map theirs with MADV_DONTFORK.
	EventFork EventKind = iota + 1
	// EventExec: PID replaced its image; any context it published is gone.
	EventExec
	// EventExit: PID exited.
	EventExit
	// EventPublish: PID published or updated the context mapped at Addr
	// (the prctl naming call publishers issue every time).
	EventPublish
	// EventMemfd: PID created the memfd of a context it is about to
	// publish.
	EventMemfd
	// EventUnmap: PID unmapped (part of) the context the tracker told the
	// source about (PublicationFilter).
	EventUnmap
	// EventLost: the source of Source dropped events.
	EventLost
)

// Sources says which classes of events sources deliver.
type Sources uint8

const (
	// ProcessEvents: fork, exec and exit (the proc connector).
	ProcessEvents Sources = 1 << iota
	// PublicationEvents: publish, memfd and unmap (an eBPF program).
	PublicationEvents
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
// publication it holds.
type PublicationFilter interface {
	Track(pid int, addr, length uint64) error
	Untrack(pid int) error
}

// WithEventSources makes the tracker run the sources from Start to Stop and
// act on their events; what they deliver need not be polled for (see the
// package documentation).
func WithEventSources(sources ...EventSource) Option {
	return func(t *Tracker) {
		for _, s := range sources {
			t.events.sources = append(t.events.sources, s)
			t.events.live |= s.Sources()
			if f, ok := s.(PublicationFilter); ok {
				t.events.filter = f
			}
		}
	}
}

// eventQueueSize bounds the events waiting for the loop; beyond, they are
// dropped and counted, and a scan makes up for them.
const eventQueueSize = 8192

// eventState is the tracker's event sources and what came of them.
type eventState struct {
	sources []EventSource
	filter  PublicationFilter // the source that reports unmaps, if any
	live    Sources           // the classes running sources deliver; the loop's
	liveNow atomic.Uint32     // live, for other goroutines
	queue   chan Event
	// lostWake wakes the loop when events were dropped; lostBits says of
	// which sources.
	lostWake       chan struct{}
	lostBits       atomic.Uint32
	received, lost atomic.Uint64
	stopped        chan sourceStopped
	wg             sync.WaitGroup
}

// EventStats counts the events a tracker received.
type EventStats struct {
	Received uint64
	// Lost are events dropped: by a source (its buffer overflowed) or
	// because the tracker's queue was full.
	Lost uint64
}

// Events returns the tracker's event counts.
func (t *Tracker) Events() EventStats {
	return EventStats{Received: t.events.received.Load(), Lost: t.events.lost.Load()}
}

// LiveSources says which classes of events the tracker gets from running
// sources; the rest is polled for.
func (t *Tracker) LiveSources() Sources { return Sources(t.events.liveNow.Load()) }

// notify queues ev for the loop without blocking; what does not fit is
// counted lost and made up for by a scan.
func (t *Tracker) notify(ev Event) {
	if ev.Kind == EventLost {
		t.markLost(ev.Source)
		return
	}
	t.events.received.Add(1)
	select {
	case t.events.queue <- ev:
	default:
		t.markLost(sourceOf(ev.Kind))
	}
}

func (t *Tracker) markLost(s Sources) {
	t.events.lost.Add(1)
	t.events.lostBits.Or(uint32(s))
	select {
	case t.events.lostWake <- struct{}{}:
	default:
	}
}

func sourceOf(k EventKind) Sources {
	if k == EventFork || k == EventExec || k == EventExit {
		return ProcessEvents
	}
	return PublicationEvents
}

// sourceStopped is a source whose Run returned an error.
type sourceStopped struct {
	sources Sources
	err     error
}

// runSources starts the sources' Run goroutines.
func (t *Tracker) runSources() {
	t.events.liveNow.Store(uint32(t.events.live))
	for _, s := range t.events.sources {
		t.events.wg.Go(func() {
			if err := s.Run(t.notify); err != nil {
				send(t.events.stopped, sourceStopped{sources: s.Sources(), err: err}, t.stop)
			}
		})
	}
}

// releaseSources closes the event sources, once, and waits for their Run
// to return.
func (t *Tracker) releaseSources() {
	t.sourcesOnce.Do(func() {
		for _, s := range t.events.sources {
			if err := s.Close(); err != nil {
				t.log.Debug("Closing an event source failed", zap.Error(err))
			}
		}
		t.events.wg.Wait()
	})
}

// onSourceStopped falls back to polling for what a stopped source
// delivered.
func (t *Tracker) onSourceStopped(s sourceStopped) {
	t.events.live &^= s.sources
	t.events.liveNow.Store(uint32(t.events.live))
	t.log.Warn("An event source stopped: polling takes over its events",
		zap.String("events", s.sources.String()), zap.Error(s.err))
	t.missed(s.sources)
}

// onLost makes up for dropped events.
func (t *Tracker) onLost() {
	lost := Sources(t.events.lostBits.Swap(0))
	if lost == 0 {
		return
	}
	t.log.Debug("Events were dropped: a scan makes up for them", zap.String("events", lost.String()))
	t.missed(lost)
}

// missed: events of these classes may have been dropped. A scan finds the
// exits and forks (the listing) and, reading every publisher's timestamp,
// the execs and updates; processes without a context read before now are
// due again when publications may have been missed.
//
// Those scans start at once, but at most once per Config.RecheckInterval:
// a process that floods the ring buffer with prctl calls gets a full scan
// every few seconds, not a scan loop.
func (t *Tracker) missed(s Sources) {
	d := &t.discovery
	d.fullScan = true
	now := t.clock()
	if s&PublicationEvents != 0 {
		d.pubLostAt = now
	}
	if t.scans.cur == nil && (d.lastMissed == 0 || now-d.lastMissed >= int64(t.cfg.RecheckInterval)) {
		d.lastMissed = now
		t.startScan()
	}
}

// handle acts on one event.
func (t *Tracker) handle(ev Event) {
	if !ValidPID(ev.PID) {
		return
	}
	pid, p := ev.PID, t.procs[ev.PID]
	switch ev.Kind {
	case EventFork:
		if p == nil { // else known already: a listing or a publication event came first
			p = t.newProc(pid)
			t.lookedAtExec(p)
			t.act(pid, p, trigger{kind: onFork})
		}
	case EventExec:
		t.execed(pid, p, ev.Time)
	case EventExit:
		// An exit older than the pid's image (imageAt) came late: the
		// publication is a later process's (the pid was reused).
		if p != nil && (ev.Time == 0 || p.imageAt <= ev.Time) {
			t.forget(pid, p)
		}
	case EventPublish, EventMemfd, EventUnmap:
		t.publicationEvent(pid, p, ev)
	}
}

// execed: the process's publication, if any, is gone with its image; it is
// young again. An exec older than the process's image (imageAt: a
// publication event, or a read that found its identity) came late: the
// publication is the new image's.
func (t *Tracker) execed(pid int, p *proc, at uint64) {
	switch {
	case p == nil:
		p = t.newProc(pid)
	case at != 0 && p.imageAt > at:
		return
	default:
		t.newIncarnation(pid, p, Unpublished, p.start)
	}
	t.lookedAtExec(p)
	t.act(pid, p, trigger{kind: onExec})
}

// lookedAtExec records what a fork or exec tells of the new image: it
// publishes nothing yet. While publication events come, they tell when it
// does: the event is as good as a look at its maps. Without them, its maps
// are not looked at yet (contextDue).
func (t *Tracker) lookedAtExec(p *proc) {
	p.found = OutcomeNoContext
	if t.events.live&PublicationEvents != 0 {
		p.lookedAt = t.clock()
	}
}

// publicationEvent reads p soon: it published, updated or unmapped its
// context, or created the memfd of one (read a little later: its header
// is not written yet).
func (t *Tracker) publicationEvent(pid int, p *proc, ev Event) {
	unmap := ev.Kind == EventUnmap
	switch {
	case p == nil && unmap, p != nil && unmap && p.identity == nil:
		return
	case p == nil:
		p = t.newProc(pid)
	}
	p.imageAt = max(p.imageAt, ev.Time)
	t.act(pid, p, trigger{kind: publicationTriggers[ev.Kind-EventPublish]})
}

var publicationTriggers = [...]triggerKind{onPublish, onMemfd, onUnmap}
