package tracker

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/processctx/otelcol-processctx/internal/procevents"
	"github.com/processctx/otelcol-processctx/internal/pubevents"
)

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
// and says, for the start-up line, which runs and what it costs the host's
// other processes. "auto" takes fexit alone, the one source that costs
// them nothing; "none" returns no source and no error.
func openPublicationEvents(name string) (*publicationSource, string, error) {
	if name == NoPublicationEvents {
		return nil, "none (publication_events: none)", nil
	}
	m := pubevents.Fexit
	if name != AutoPublicationEvents {
		var err error
		if m, err = pubevents.ParseMechanism(name); err != nil {
			return nil, "", err
		}
	}
	w, err := pubevents.Load(pubevents.Options{Mechanism: m})
	if err != nil && name == AutoPublicationEvents && errors.Is(err, pubevents.ErrUnsupported) {
		// The kernel, not privilege: say what the sources it allows cost.
		return nil, "", fmt.Errorf("%w; auto uses no source that slows the host's other processes: to accept that cost for "+
			"publications seen within milliseconds, set publication_events: %s (%s) or %s (%s)", err,
			pubevents.SyscallTracepoints, pubevents.SyscallTracepoints.HostCost(), pubevents.RawSysExit, pubevents.RawSysExit.HostCost())
	}
	if err != nil {
		return nil, "", err
	}
	return &publicationSource{w: w}, "eBPF " + m.String() + ": " + m.HostCost(), nil
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
