// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procevents"
	"github.com/processctx/otelcol-processctx/internal/pubevents"
)

// events is the tracker's event sources and what comes of them: it runs
// them from Start to Stop (run, release), queues their events for the loop
// (notify: never blocking; what does not fit is counted lost), and says
// which classes running sources deliver (live). The loop receives from
// queue, wake and done; other goroutines read its counts.
type events struct {
	sources []EventSource
	filter  PublicationFilter // the source that reports unmaps, if any
	// on is the classes the running sources deliver: set by run, less a
	// source that stopped on its own.
	on    atomic.Uint32
	queue chan Event
	// wake wakes the loop when events were dropped; lost says of which
	// classes.
	wake            chan struct{}
	lost            atomic.Uint32
	received, drops atomic.Uint64
	done            chan sourceStopped // sources whose Run returned an error
	wg              sync.WaitGroup
	closeOnce       sync.Once
}

// eventQueueSize bounds the events waiting for the loop; beyond, they are
// dropped and counted, and a scan makes up for them.
const eventQueueSize = 8192

// add adds sources (WithEventSources) and makes the channels for all.
func (e *events) add(sources ...EventSource) {
	for _, s := range sources {
		e.sources = append(e.sources, s)
		if f, ok := s.(PublicationFilter); ok {
			e.filter = f
		}
	}
	e.wake, e.done = make(chan struct{}, 1), make(chan sourceStopped, len(e.sources))
	if len(e.sources) > 0 {
		e.queue = make(chan Event, eventQueueSize) // nil without sources: never ready
	}
}

func (e *events) live() Sources { return Sources(e.on.Load()) }
func (e *events) stats() EventStats {
	return EventStats{Received: e.received.Load(), Lost: e.drops.Load()}
}
func (e *events) takeLost() Sources    { return Sources(e.lost.Swap(0)) } // the classes dropped since the last call
func (e *events) drop(stopped Sources) { e.on.And(^uint32(stopped)) }

// run starts the sources' Run goroutines; a source whose Run fails is
// sent on done, unless stop is closed first.
func (e *events) run(stop <-chan struct{}) {
	var on Sources
	for _, s := range e.sources {
		on |= s.Sources()
	}
	e.on.Store(uint32(on))
	for _, s := range e.sources {
		e.wg.Go(func() {
			if err := s.Run(e.notify); err != nil {
				send(e.done, sourceStopped{sources: s.Sources(), err: err}, stop)
			}
		})
	}
}

// release closes the sources, once, and waits for their Run to return.
func (e *events) release(log *zap.Logger) {
	e.closeOnce.Do(func() {
		for _, s := range e.sources {
			if err := s.Close(); err != nil {
				log.Debug("Closing an event source failed", zap.Error(err))
			}
		}
		e.wg.Wait()
	})
}

// notify queues ev for the loop without blocking; what does not fit is
// counted lost and made up for by a scan.
func (e *events) notify(ev Event) {
	if ev.Kind == EventLost {
		e.markLost(ev.Source)
		return
	}
	e.received.Add(1)
	select {
	case e.queue <- ev:
	default:
		e.markLost(sourceOf(ev.Kind))
	}
}

func (e *events) markLost(s Sources) {
	e.drops.Add(1)
	e.lost.Or(uint32(s))
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// track tells the source that reports unmaps, if any, the context
// mapping of pid at addr to watch; untrack to stop watching pid's.
func (e *events) track(pid int, addr uint64) error {
	if e.filter == nil {
		return nil
	}
	return e.filter.Track(pid, addr, otep.HeaderSize)
}

func (e *events) untrack(pid int) {
	if e.filter != nil {
		_ = e.filter.Untrack(pid) // gone already when the process exited
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

// processSource delivers the proc connector's events (fork, exec, exit).
type processSource struct{ l *procevents.Listener }

func openProcessEvents() (EventSource, error) {
	l, err := procevents.Listen()
	if err != nil {
		return nil, err
	}
	return &processSource{l: l}, nil
}

func (s *processSource) Sources() Sources { return ProcessEvents }

// processBatchWait is how long the process source lets events gather
// after a read that found few: under a storm of short-lived processes, one
// read and one wake-up of the tracker for many events instead of one each.
const processBatchWait = 2 * time.Millisecond

func (s *processSource) Run(notify func(Event)) error {
	var buf [256]procevents.Event
	for {
		n, lost, err := s.l.Read(buf[:])
		for _, e := range buf[:n] {
			if k := kindOf(processKinds[:], e.Kind); k != 0 {
				notify(Event{Kind: k, PID: e.PID, Parent: e.Parent, Time: e.Time})
			}
		}
		if lost {
			notify(Event{Kind: EventLost, Source: ProcessEvents})
		}
		switch {
		case errors.Is(err, procevents.ErrClosed):
			return nil
		case err != nil:
			return fmt.Errorf("proc connector: %w", err)
		case n < len(buf)/4:
			time.Sleep(processBatchWait) // the socket holds what comes meanwhile
		}
	}
}

func (s *processSource) Close() error { return s.l.Close() }

// processKinds and publicationKinds are the tracker's kinds of the
// sources' events, by their kind (0: none the tracker acts on).
var (
	processKinds     = [...]EventKind{procevents.Fork: EventFork, procevents.Exec: EventExec, procevents.Exit: EventExit}
	publicationKinds = [...]EventKind{pubevents.Publish: EventPublish, pubevents.Memfd: EventMemfd, pubevents.Unmap: EventUnmap}
)

// kindOf returns kinds[k], 0 beyond it.
func kindOf[K ~uint8](kinds []EventKind, k K) EventKind {
	if int(k) < len(kinds) {
		return kinds[k]
	}
	return 0
}

// publicationSource delivers the eBPF program's events (publish, memfd,
// unmap) and watches the unmapping of the publications it is told of.
type publicationSource struct {
	w *pubevents.Watcher
	// lost is the watcher's drop count last seen.
	lost uint64
}

// lostCheck is how often the ring buffer's drop count is looked at (a
// map read per CPU).
const lostCheck = 500 * time.Millisecond

// openPublicationEvents loads the eBPF source publication_events names
// and says, for the start-up line, which runs. "auto" takes fexit alone,
// the one source that costs the host's other processes nothing; "none"
// returns no source and no error.
func openPublicationEvents(name string) (*publicationSource, string, error) {
	if name == NoPublicationEvents {
		return nil, "", nil
	}
	m := pubevents.Fexit
	if name != AutoPublicationEvents {
		var err error
		if m, err = pubevents.ParseMechanism(name); err != nil {
			return nil, "", err
		}
	}
	w, err := pubevents.Load(pubevents.Options{Mechanism: m})
	if err != nil {
		return nil, "", err
	}
	return &publicationSource{w: w}, "eBPF " + m.String(), nil
}

func (s *publicationSource) Sources() Sources { return PublicationEvents }

func (s *publicationSource) Run(notify func(Event)) error {
	var ev pubevents.Event
	next := time.Now().Add(lostCheck)
	s.w.SetDeadline(next)
	for {
		err := s.w.Read(&ev)
		switch {
		case err == nil:
			if k := kindOf(publicationKinds[:], ev.Kind); k != 0 {
				notify(Event{Kind: k, PID: ev.PID, Addr: ev.Addr, Time: ev.Time})
			}
		case errors.Is(err, os.ErrDeadlineExceeded):
		case errors.Is(err, pubevents.ErrClosed):
			return nil
		default:
			return fmt.Errorf("eBPF publication events: %w", err)
		}
		if now := time.Now(); !now.Before(next) {
			if lost := s.w.Lost(); lost != s.lost {
				s.lost = lost
				notify(Event{Kind: EventLost, Source: PublicationEvents})
			}
			next = now.Add(lostCheck)
			s.w.SetDeadline(next)
		}
	}
}

func (s *publicationSource) Close() error { return s.w.Close() }

func (s *publicationSource) Track(pid int, addr, length uint64) error {
	return s.w.Track(pid, addr, length)
}

func (s *publicationSource) Untrack(pid int) error { return s.w.Untrack(pid) }
