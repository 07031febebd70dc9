// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/otep"
)

// events is the tracker's event sources and what comes of them: it runs
// them from Start to Stop (run, release), queues their events for the loop
// (notify: never blocking; what does not fit is counted lost), and says
// which classes running sources deliver (live). The loop receives from
// queue, wake and done; other goroutines read its counts.
type events struct {
	sources         []EventSource
	filter          PublicationFilter // the source that reports unmaps, if any
	on              atomic.Uint32     // the classes running sources deliver: set by run, less those stopped
	queue           chan Event
	wake            chan struct{} // wakes the loop when events were dropped; lost says of which classes
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
				select {
				case e.done <- sourceStopped{sources: s.Sources(), err: err}:
				case <-stop:
				}
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
