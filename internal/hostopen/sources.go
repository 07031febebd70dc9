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
type processSource struct {
	l *procevents.Listener
	// publishes reports whether pid has a publication the tracker holds
	// (nil: every pid has): an exec or exit of such a process is delivered
	// with the next read, the others are held up to processHoldMax (set
	// by Open before the tracker starts the source).
	publishes func(pid int) bool
}

func openProcessEvents() (tracker.EventSource, error) {
	l, err := procevents.Listen()
	if err != nil {
		return nil, err
	}
	return &processSource{l: l}, nil
}

func (s *processSource) Sources() tracker.Sources { return tracker.ProcessEvents }

// processBatchWait is how long the process source lets events gather
// after a read while they come (Listener.Gather, on a kernel timer): the
// first event after a quiet spell is read at once, those that come within
// processBatchWait of a read with the next. Meanwhile the socket, out of
// the runtime's poller (procevents.Listener), holds them (some 5,000) and
// wakes nothing: a host starting hundreds of processes a second costs the
// collector at most 1/processBatchWait wake-ups a second, not some for
// each event; a publisher's exit is acted on at most that late (its
// entity delete well within issue 12's 100 ms).
//
// Events that change no publication (the forks, execs and exits of
// processes that publish nothing: nearly all of a busy host's) are held
// further, up to processHoldMax, or until the socket is quiet: each
// delivery wakes the tracker's loop on another thread, and what the loop
// does with them waits anyway: a young read a second after the exec, or,
// with publication events, an environment read (an entity named by its
// environment comes up to processHoldMax later; a lookup of the pid reads
// it at once). An exec or exit of a publisher is delivered with the read
// that found it, with whatever is held, in order: its entity delete is
// as prompt as before.
const (
	processBatchWait = 50 * time.Millisecond
	processHoldMax   = 250 * time.Millisecond
	processHeldMax   = 4096 // events held at most, whatever their age
)

func (s *processSource) Run(notify func(tracker.Event)) error {
	var buf [256]procevents.Event
	held := heldEvents{publishes: s.publishes}
	gather := func(events []procevents.Event) (int, bool, error) { return s.l.Gather(events, processBatchWait) }
	read := s.l.Read // waits for an event
	for {
		n, lost, err := read(buf[:])
		now := time.Now()
		urgent := held.add(buf[:n], now)
		quiet := n == 0 && !lost
		if urgent || lost || quiet || err != nil || held.due(now) {
			held.deliver(notify)
		}
		if lost {
			notify(tracker.Event{Kind: tracker.EventLost, Source: tracker.ProcessEvents})
		}
		switch {
		case errors.Is(err, procevents.ErrClosed):
			return nil
		case err != nil:
			return fmt.Errorf("proc connector: %w", err)
		case quiet:
			read = s.l.Read // quiet: wait for the next
		case n < len(buf):
			read = gather // what comes meanwhile
		default:
			read = s.l.ReadQueued // more queued
		}
	}
}

// heldEvents are the process events a processSource read and has not
// delivered yet (processHoldMax).
type heldEvents struct {
	events    []tracker.Event
	since     time.Time          // when the first of them was read
	publishes func(pid int) bool // processSource.publishes
}

// add holds the events read at now that the tracker acts on, and reports
// whether one must be delivered at once: an exec or exit of a publisher.
func (h *heldEvents) add(read []procevents.Event, now time.Time) (urgent bool) {
	for _, e := range read {
		k := kindOf(processKinds[:], e.Kind)
		if k == 0 {
			continue
		}
		if len(h.events) == 0 {
			h.since = now
		}
		h.events = append(h.events, tracker.Event{Kind: k, PID: e.PID, Parent: e.Parent, Time: e.Time})
		urgent = urgent || k != tracker.EventFork && (h.publishes == nil || h.publishes(e.PID))
	}
	return urgent
}

// due reports whether the events held must be delivered at now whatever
// they are: the first was read processHoldMax ago, or they are too many.
func (h *heldEvents) due(now time.Time) bool {
	return len(h.events) >= processHeldMax || len(h.events) > 0 && now.Sub(h.since) >= processHoldMax
}

// deliver hands the events held to notify, in the order they were read.
func (h *heldEvents) deliver(notify func(tracker.Event)) {
	for _, ev := range h.events {
		notify(ev)
	}
	h.events = h.events[:0]
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
