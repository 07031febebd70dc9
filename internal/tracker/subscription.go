package tracker

import (
	"sync"
	"time"
)

// ChangeKind says what happened to a publication.
type ChangeKind uint8

const (
	// Published: a process published a context the subscriber has not
	// seen (first sight, or again after it ended).
	Published ChangeKind = iota
	// Updated: a process published a new version of its context.
	Updated
	// Unpublished: the process lives on but its context is gone.
	Unpublished
	// Invalidated: the process now publishes something unreadable
	// (invalid, or over a limit).
	Invalidated
	// Exited: the process exited (or its pid names another process).
	Exited
)

// Ends reports whether the change ends the publication.
func (k ChangeKind) Ends() bool { return k >= Unpublished }

// Change is one change of a publication. Process is the publication after
// it (for a change that ends it, the last one read, with EndedAt set).
type Change struct {
	Kind    ChangeKind
	Process *Process
}

// ScanStats summarizes one scan of the host.
type ScanStats struct {
	// Began is when the scan started; Duration how long its reads took.
	Began    time.Time
	Duration time.Duration
	// Listed says whether the scan listed the host: while events tell of
	// every fork and exit, most scans do not (Processes is then 0).
	Listed bool
	// Processes is the number of pids listed.
	Processes int
	// Publishers is the number of live publications after the scan.
	Publishers int
	// Reads counts, by outcome, the reads since the previous scan finished:
	// the scan's, and those events and probes caused meanwhile.
	Reads [numOutcomes]int64
	// Denied and Quarantined count the processes that cannot be read for
	// lack of permission, and those quarantined after a stalled read.
	Denied, Quarantined int
	// Tracked is what the tracker keeps after the scan: every process it
	// knows plus the ended publications it retains (Retained of them). On a
	// host whose processes come and go it returns to its level once the
	// retention has passed.
	Tracked, Retained int
}

// maxPendingStats bounds the scan summaries a slow subscriber has not
// taken; the oldest are dropped.
const maxPendingStats = 16

// Subscription delivers a tracker's changes to one consumer: wait on C,
// then Take. Changes are kept until taken, coalesced per process (a newer
// version of a context replaces an older one not taken yet), so that a slow
// consumer costs memory bounded by the number of publications.
type Subscription struct {
	t *Tracker
	c chan struct{}

	mu      sync.Mutex
	changes []Change
	// latest indexes, per process, its pending Published or Updated change.
	latest map[Key]int
	stats  []ScanStats
	closed bool
}

func newSubscription(t *Tracker) *Subscription {
	return &Subscription{t: t, c: make(chan struct{}, 1), latest: map[Key]int{}}
}

// C is signaled when there is something to take.
func (s *Subscription) C() <-chan struct{} { return s.c }

// Take returns the pending changes, in order, and the summaries of the
// scans finished since the last Take.
func (s *Subscription) Take() ([]Change, []ScanStats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changes, stats := s.changes, s.stats
	s.changes, s.stats = nil, nil
	clear(s.latest)
	return changes, stats
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.mu.Lock()
	s.closed = true
	s.changes, s.stats = nil, nil
	s.mu.Unlock()
	s.t.unsubscribe(s)
}

func (s *Subscription) push(changes []Change, stats *ScanStats) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	for _, c := range changes {
		s.add(c)
	}
	if stats != nil {
		if len(s.stats) == maxPendingStats {
			s.stats = append(s.stats[:0], s.stats[1:]...)
		}
		s.stats = append(s.stats, *stats)
	}
	s.mu.Unlock()
	select {
	case s.c <- struct{}{}:
	default:
	}
}

func (s *Subscription) add(c Change) {
	k := c.Process.Key
	if c.Kind.Ends() {
		delete(s.latest, k)
		s.changes = append(s.changes, c)
		return
	}
	if i, ok := s.latest[k]; ok {
		// Not taken yet: the newer context replaces it; a Published not
		// taken stays a Published.
		s.changes[i].Process = c.Process
		return
	}
	s.latest[k] = len(s.changes)
	s.changes = append(s.changes, c)
}
