package tracker

import (
	"time"

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
			t.sources = append(t.sources, s)
			t.live |= s.Sources()
			if f, ok := s.(PublicationFilter); ok {
				t.filter = f
			}
		}
	}
}

const (
	// eventQueueSize bounds the events waiting for the loop; beyond, they
	// are dropped and counted, and scans make up for them.
	eventQueueSize = 8192
	// minEventGap is the least time between two reads of one process
	// caused by its events: a process cannot make the tracker read it in
	// a loop by calling prctl in a loop.
	minEventGap = 10 * time.Millisecond
	// eventsListInterval is how often, while process and publication
	// events both come, scans list the host: the events tell of every fork
	// and exit, the listing finds those they could not (a dropped message
	// the kernel does not report).
	eventsListInterval = time.Minute
	// publishRetries bounds the reads of a process whose publication event
	// found no readable context yet (a memfd not written, an update in
	// progress).
	publishRetries = 4
)

// youngDelays are the waits between the reads of a young process: one
// that exec'd, or one a scan met for the first time, while no publication
// events are coming. SDKs publish during start-up, often seconds in; the
// rescan schedule takes over after the last.
var youngDelays = [...]time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second}

// EventStats counts the events a tracker received.
type EventStats struct {
	Received uint64
	// Lost are events dropped: by a source (its buffer overflowed) or
	// because the tracker's queue was full.
	Lost uint64
}

// Events returns the tracker's event counts.
func (t *Tracker) Events() EventStats {
	return EventStats{Received: t.eventsIn.Load(), Lost: t.eventsLost.Load()}
}

// LiveSources says which classes of events the tracker gets from running
// sources; the rest is polled for.
func (t *Tracker) LiveSources() Sources { return Sources(t.liveNow.Load()) }

// notify queues ev for the loop without blocking; what does not fit is
// counted lost and made up for by a scan.
func (t *Tracker) notify(ev Event) {
	if ev.Kind == EventLost {
		t.markLost(ev.Source)
		return
	}
	t.eventsIn.Add(1)
	select {
	case t.events <- ev:
	default:
		t.markLost(sourceOf(ev.Kind))
	}
}

func (t *Tracker) markLost(s Sources) {
	t.eventsLost.Add(1)
	for {
		old := t.lostBits.Load()
		if t.lostBits.CompareAndSwap(old, old|uint32(s)) {
			break
		}
	}
	select {
	case t.lostWake <- struct{}{}:
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
	t.liveNow.Store(uint32(t.live))
	for _, s := range t.sources {
		t.sourcesWG.Add(1)
		go func() {
			defer t.sourcesWG.Done()
			if err := s.Run(t.notify); err != nil {
				select {
				case t.stoppedSources <- sourceStopped{sources: s.Sources(), err: err}:
				case <-t.stop:
				}
			}
		}()
	}
}

// closeSources stops the sources and waits for their Run to return.
func (t *Tracker) closeSources() {
	for _, s := range t.sources {
		if err := s.Close(); err != nil {
			t.log.Debug("Closing an event source failed", zap.Error(err))
		}
	}
	t.sourcesWG.Wait()
}

// onSourceStopped falls back to polling for what a stopped source
// delivered.
func (t *Tracker) onSourceStopped(s sourceStopped) {
	t.live &^= s.sources
	t.liveNow.Store(uint32(t.live))
	t.log.Warn("An event source stopped: polling takes over its events",
		zap.String("events", s.sources.String()), zap.Error(s.err))
	t.missed(s.sources)
}

// onLost makes up for dropped events.
func (t *Tracker) onLost() {
	lost := Sources(t.lostBits.Swap(0))
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
// Those scans start at once, but at most once per Config.HintInterval: a
// process that floods the ring buffer with prctl calls gets a full scan
// every few seconds, not a scan loop.
func (t *Tracker) missed(s Sources) {
	t.fullScan = true
	now := t.clock()
	if s&PublicationEvents != 0 {
		t.pubLostAt = now
	}
	if t.scan == nil && (t.lastMissed == 0 || now-t.lastMissed >= int64(t.cfg.HintInterval)) {
		t.lastMissed = now
		t.startScan()
	}
}

// handle acts on one event.
func (t *Tracker) handle(ev Event) {
	if ev.PID <= 0 || ev.PID >= maxPID {
		return
	}
	switch ev.Kind {
	case EventFork:
		t.forked(ev.PID)
	case EventExec:
		t.execed(ev.PID, ev.Time)
	case EventExit:
		// An exit older than a publication event of the pid came late: the
		// publication is a later process's (the pid was reused).
		if p := t.procs[ev.PID]; p != nil && (ev.Time == 0 || p.pubEventAt <= ev.Time) {
			t.forget(ev.PID, p)
		}
	case EventPublish, EventUnmap:
		t.publicationEvent(ev.PID, ev.Time, ev.Kind == EventUnmap)
	case EventMemfd:
		if p := t.procs[ev.PID]; p != nil {
			p.pubEventAt = max(p.pubEventAt, ev.Time)
			if t.schedule(p, ev.PID, duePublication, minEventGap) {
				t.await(ev.PID, p)
			}
		} else {
			t.publicationEvent(ev.PID, ev.Time, false)
		}
	}
}

// forked records a new process without a context: no read, until it execs.
func (t *Tracker) forked(pid int) {
	if t.procs[pid] != nil {
		return // known already (a scan or a publication event came first)
	}
	p := t.newProc()
	p.forked = true
	p.checked = t.clock()
	t.procs[pid] = p
	t.setStatus(pid, p, OutcomeNoContext)
}

// execed: the process's publication, if any, is gone with its image; it is
// young again. An exec older than a publication event of the process came
// late (the two sources are two paths): the publication is the new image's.
func (t *Tracker) execed(pid int, at uint64) {
	p := t.procs[pid]
	if p != nil && at != 0 && p.pubEventAt > at {
		return
	}
	if p == nil {
		p = t.newProc()
		t.procs[pid] = p
	} else {
		t.endPublication(pid, p, Unpublished)
		p.renew(t)
	}
	p.forked = false
	p.checked = t.clock()
	t.setStatus(pid, p, OutcomeNoContext)
	if t.live&PublicationEvents == 0 {
		p.young = 0
		t.schedule(p, pid, dueYoung, youngDelays[0])
	}
}

// publicationEvent reads pid soon: it published, updated or unmapped its
// context.
func (t *Tracker) publicationEvent(pid int, at uint64, unmap bool) {
	p := t.procs[pid]
	if p == nil {
		if unmap {
			return
		}
		p = t.newProc()
		t.procs[pid] = p
	} else if unmap && p.pub == nil {
		return
	}
	p.pubEventAt = max(p.pubEventAt, at)
	p.retries = 0
	t.readForEvent(pid, p)
}

// readForEvent reads p now, or as soon as minEventGap since its last
// event read has passed; a read in progress is followed by another.
func (t *Tracker) readForEvent(pid int, p *proc) {
	now := t.clock()
	switch {
	case p.q != nil && now < p.q.until, p.stuck && p.stuckMemFile:
		// Quarantined, or its read still stuck: no event makes it read
		// sooner, and nothing is awaited.
		t.unawait(pid, p)
		return
	case p.inflight:
		p.again = true
		t.await(pid, p)
		return
	case p.lastEvent != 0 && now-p.lastEvent < int64(minEventGap):
		if t.schedule(p, pid, duePublication, time.Duration(int64(minEventGap)-(now-p.lastEvent))) {
			t.await(pid, p)
		}
		return
	}
	p.lastEvent = now
	t.readNow(pid, p)
	t.await(pid, p)
}

// await: a read of p for a publication event is queued, scheduled or
// follows the one in progress. A process without a publication is "not
// known yet" until it is applied (it may have just published).
func (t *Tracker) await(pid int, p *proc) {
	if p.pub == nil && !p.awaited {
		p.awaited = true
		t.outcomes.set(pid, OutcomeUnknown)
	}
}

// unawait: nothing is awaited for p any more; lookups say its status
// again (until the read being applied, if any, sets another).
func (t *Tracker) unawait(pid int, p *proc) {
	if p.awaited {
		p.awaited = false
		t.outcomes.set(pid, p.status)
	}
}

// readNow queues the read that tells what p publishes, before scan work.
func (t *Tracker) readNow(pid int, p *proc) {
	r := request{pid: pid, serial: p.serial, via: p.via(), event: true}
	switch {
	case p.start == 0:
		r.op = opDiscover
	case p.pub != nil:
		r.op, r.start, r.addr, r.last = opRefresh, p.start, p.pub.Addr, p.pub.Context.PublishedAt
	default:
		r.op, r.start = opLocate, p.start
	}
	p.inflight = true
	t.enqueue(&job{urgent: true, reqs: []request{r}})
}

// afterRead follows up a read of p: the read an event asked for while it
// ran, the retries of a publication event that found nothing yet, the next
// read of a young process.
func (t *Tracker) afterRead(pid int, p *proc, r *request, o Outcome) {
	if p.again {
		p.again = false
		t.readForEvent(pid, p)
		return
	}
	if p.pub != nil || p.kernel {
		p.retries, p.young = 0, youngDone
		return
	}
	switch {
	case r.event && p.retries < publishRetries && (o == OutcomeNoContext || o == OutcomeTorn):
		// A memfd not written yet, or an update in progress.
		p.retries++
		t.schedule(p, pid, duePublication, minEventGap<<(2*p.retries))
	case o == OutcomeNoContext && p.young < youngDone && t.live&PublicationEvents == 0 &&
		(r.young || (r.op == opDiscover && t.scanned)):
		// A process a scan met for the first time (it may be between fork
		// and exec), or one that exec'd: young, read again soon.
		if r.young {
			p.young++
		}
		if p.young < youngDone {
			t.schedule(p, pid, dueYoung, youngDelays[p.young])
		}
	}
}

// youngDone marks a process past its young reads.
const youngDone = uint8(len(youngDelays))

func (s Sources) String() string {
	switch s {
	case 0:
		return "none"
	case ProcessEvents:
		return "process"
	case PublicationEvents:
		return "publication"
	case ProcessEvents | PublicationEvents:
		return "process, publication"
	}
	return "unknown"
}
