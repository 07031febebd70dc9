// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package trackertest

import (
	"sync"

	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Source is an event source whose events the test sends. It also records
// what the tracker tells it to watch (tracker.PublicationFilter).
type Source struct {
	sources tracker.Sources
	started chan struct{}
	closed  chan struct{}
	failed  chan error
	once    sync.Once

	// notify is set by Run before it closes started.
	notify func(tracker.Event)

	mu      sync.Mutex
	tracked map[int]uint64
}

var (
	_ tracker.EventSource       = (*Source)(nil)
	_ tracker.PublicationFilter = (*Source)(nil)
)

// NewSource returns a source of the given classes of events.
func NewSource(sources tracker.Sources) *Source {
	return &Source{sources: sources, started: make(chan struct{}), closed: make(chan struct{}),
		failed: make(chan error, 1), tracked: map[int]uint64{}}
}

// Sources implements tracker.EventSource.
func (s *Source) Sources() tracker.Sources { return s.sources }

// Run implements tracker.EventSource.
func (s *Source) Run(notify func(tracker.Event)) error {
	s.notify = notify
	close(s.started)
	select {
	case <-s.closed:
		return nil
	case err := <-s.failed:
		return err
	}
}

// Close implements tracker.EventSource.
func (s *Source) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// Send delivers ev, once the tracker runs the source.
func (s *Source) Send(ev tracker.Event) {
	<-s.started
	s.notify(ev)
}

// Fail makes Run return err, as a source that broke.
func (s *Source) Fail(err error) { s.failed <- err }

// Track implements tracker.PublicationFilter.
func (s *Source) Track(pid int, addr, _ uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tracked[pid] = addr
	return nil
}

// Untrack implements tracker.PublicationFilter.
func (s *Source) Untrack(pid int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tracked, pid)
	return nil
}

// Tracked returns the address the tracker watches for pid, 0 for none.
func (s *Source) Tracked(pid int) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tracked[pid]
}

// WithoutUnmaps returns s as a source that reports no unmaps, as the
// kprobe mechanism's: it is no tracker.PublicationFilter.
func (s *Source) WithoutUnmaps() tracker.EventSource { return withoutUnmaps{s} }

type withoutUnmaps struct{ s *Source }

func (w withoutUnmaps) Sources() tracker.Sources             { return w.s.Sources() }
func (w withoutUnmaps) Run(notify func(tracker.Event)) error { return w.s.Run(notify) }
func (w withoutUnmaps) Close() error                         { return w.s.Close() }
