// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package hostopen

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/processctx/otelcol-processctx/internal/procevents"
	"github.com/processctx/otelcol-processctx/internal/pubevents"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// processSource delivers the proc connector's events (fork, exec, exit).
type processSource struct{ l *procevents.Listener }

func openProcessEvents() (tracker.EventSource, error) {
	l, err := procevents.Listen()
	if err != nil {
		return nil, err
	}
	return &processSource{l: l}, nil
}

func (s *processSource) Sources() tracker.Sources { return tracker.ProcessEvents }

// processBatchWait is how long the process source lets events gather
// after a delivery while they come: the first event after a quiet spell
// is delivered at once, those that come within processBatchWait of a
// delivery together with the next. Meanwhile the socket, out of the
// runtime's poller (procevents.Listener), holds them (some 5,000) and
// wakes nothing: a host starting hundreds of processes a second costs the
// collector at most 1/processBatchWait wake-ups a second, not some for
// each event; an exit is acted on at most that late (its entity delete
// well within issue 12's 100 ms).
const processBatchWait = 50 * time.Millisecond

func (s *processSource) Run(notify func(tracker.Event)) error {
	var buf [256]procevents.Event
	read := s.l.Read // waits for an event
	for {
		n, lost, err := read(buf[:])
		for _, e := range buf[:n] {
			if k := kindOf(processKinds[:], e.Kind); k != 0 {
				notify(tracker.Event{Kind: k, PID: e.PID, Parent: e.Parent, Time: e.Time})
			}
		}
		if lost {
			notify(tracker.Event{Kind: tracker.EventLost, Source: tracker.ProcessEvents})
		}
		switch {
		case errors.Is(err, procevents.ErrClosed):
			return nil
		case err != nil:
			return fmt.Errorf("proc connector: %w", err)
		case n == 0 && !lost:
			read = s.l.Read // quiet: wait for the next
		case n < len(buf):
			time.Sleep(processBatchWait)
			read = s.l.ReadQueued // what came meanwhile
		default:
			read = s.l.ReadQueued // more queued
		}
	}
}

func (s *processSource) Close() error { return s.l.Close() }

// processKinds and publicationKinds are the tracker's kinds of the
// sources' events, by their kind (0: none the tracker acts on).
var (
	processKinds     = [...]tracker.EventKind{procevents.Fork: tracker.EventFork, procevents.Exec: tracker.EventExec, procevents.Exit: tracker.EventExit}
	publicationKinds = [...]tracker.EventKind{pubevents.Publish: tracker.EventPublish, pubevents.Memfd: tracker.EventMemfd, pubevents.Unmap: tracker.EventUnmap}
)

// kindOf returns kinds[k], 0 beyond it.
func kindOf[K ~uint8](kinds []tracker.EventKind, k K) tracker.EventKind {
	if int(k) < len(kinds) {
		return kinds[k]
	}
	return 0
}

// publicationSource delivers the eBPF program's events (publish, memfd,
// and unmap where the mechanism reports it: unmapWatchingSource).
type publicationSource struct {
	w *pubevents.Watcher
	// lost is the watcher's drop count last seen.
	lost uint64
}

// lostCheck is how often the ring buffer's drop count is looked at (a
// map read per CPU).
const lostCheck = 500 * time.Millisecond

// openPublicationEvents loads the eBPF source publication_events names
// and says, for the start-up line, which runs. "auto" takes the sources
// that cost the host's other syscalls nothing: fexit, else a kretprobe on
// the same entry points (arm64 before Linux 6.4 has no trampolines for
// them); "none" returns no source and no error.
func openPublicationEvents(name string) (tracker.EventSource, string, error) {
	if name == NoPublicationEvents {
		return nil, "", nil
	}
	if name == AutoPublicationEvents {
		s, what, err := loadPublicationEvents(pubevents.Fexit)
		if !errors.Is(err, pubevents.ErrUnsupported) {
			return s, what, err
		}
		s, what, kerr := loadPublicationEvents(pubevents.Kprobe)
		if kerr != nil {
			return nil, "", fmt.Errorf("%w; %w", err, kerr)
		}
		return s, what, nil
	}
	m, err := pubevents.ParseMechanism(name)
	if err != nil {
		return nil, "", err
	}
	return loadPublicationEvents(m)
}

func loadPublicationEvents(m pubevents.Mechanism) (tracker.EventSource, string, error) {
	w, err := pubevents.Load(pubevents.Options{Mechanism: m})
	if err != nil {
		return nil, "", err
	}
	s := &publicationSource{w: w}
	if m.ReportsUnmaps() {
		return unmapWatchingSource{s}, "eBPF " + m.String(), nil
	}
	return s, "eBPF " + m.String(), nil
}

func (s *publicationSource) Sources() tracker.Sources { return tracker.PublicationEvents }

func (s *publicationSource) Run(notify func(tracker.Event)) error {
	var ev pubevents.Event
	next := time.Now().Add(lostCheck)
	s.w.SetDeadline(next)
	for {
		err := s.w.Read(&ev)
		switch {
		case err == nil:
			if k := kindOf(publicationKinds[:], ev.Kind); k != 0 {
				notify(tracker.Event{Kind: k, PID: ev.PID, Addr: ev.Addr, Time: ev.Time})
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
				notify(tracker.Event{Kind: tracker.EventLost, Source: tracker.PublicationEvents})
			}
			next = now.Add(lostCheck)
			s.w.SetDeadline(next)
		}
	}
}

func (s *publicationSource) Close() error { return s.w.Close() }

// unmapWatchingSource is a publicationSource whose mechanism reports
// unmaps: it watches the unmapping of the publications the tracker tells
// it of (tracker.PublicationFilter). Without it, the tracker reads its
// publishers at every scan.
type unmapWatchingSource struct{ *publicationSource }

func (s unmapWatchingSource) Track(pid int, addr, length uint64) error {
	return s.w.Track(pid, addr, length)
}

func (s unmapWatchingSource) Untrack(pid int) error { return s.w.Untrack(pid) }
