package tracker

import (
	"slices"
	"time"
)

// probeWait is one Probe call waiting for its pids.
type probeWait struct {
	pids   []int
	within time.Duration
	until  int64 // clock: the caller gives up then
	left   int
	done   chan struct{}
}

// probes are the Probe calls waiting for reads.
type probes struct {
	waiting map[int][]*probeWait // by pid
	// ended are the calls whose reads are all applied: closed once the
	// snapshot with them is published.
	ended []chan struct{}
}

// Probe asks for the pids whose lookup says OutcomeUnknown to be read now,
// before any scan work: pids not known, and processes without a context
// with a read due (their environment not read since their exec, or their
// maps not for Config.RecheckInterval while no publication events come).
// The returned channel is closed once each of them has been read (or its
// read abandoned); nil means the tracker cannot take the request now.
// within is how long the caller waits: the reads go on after that, and a
// later snapshot has their results, but a later Probe does not wait for a
// read that every call waiting for it has given up on (a batch naming
// 1,000 pids whose reads take seconds holds one caller for within, not
// each that comes while the reads go on).
func (t *Tracker) Probe(pids []int, within time.Duration) <-chan struct{} {
	if len(pids) == 0 || !t.started.Load() {
		return nil
	}
	w := &probeWait{pids: slices.Clone(pids), within: within, done: make(chan struct{})}
	select {
	case t.probeC <- w:
		return w.done
	default:
		return nil
	}
}

// ScanSoon asks for a scan with a listing now, for a process the snapshot
// should know but does not (a container's process known only by its
// namespace pid: only a listing finds it). Scans it starts are at most one
// per Config.RecheckInterval. The channel is closed when the scan in
// progress, or the one started, finishes; nil when none is (it never
// blocks).
func (t *Tracker) ScanSoon() <-chan struct{} {
	if !t.started.Load() {
		return nil
	}
	done := make(chan struct{})
	select {
	case t.scanC <- done:
		return done
	default:
		return nil
	}
}

// probe handles a Probe call: a pid whose lookup cannot answer is read
// now; the call waits for the reads that may tell what the snapshot does
// not know yet.
func (t *Tracker) probe(w *probeWait) {
	now := t.clock()
	w.until = now + int64(w.within)
	for _, pid := range w.pids {
		if !ValidPID(pid) {
			continue
		}
		p := t.procs[pid]
		if p == nil {
			p = t.newProc(pid)
		}
		t.act(pid, p, trigger{kind: onProbe})
		if t.planner().lookupOutcome(p, now) == OutcomeUnknown && (p.reading != causeNone || p.planned != causeNone) &&
			!t.probes.givenUp(pid, now) {
			t.probes.waiting[pid] = append(t.probes.waiting[pid], w)
			w.left++
		}
	}
	if w.left == 0 {
		t.probes.ended = append(t.probes.ended, w.done)
	}
}

// givenUp reports whether every probe waiting for pid has given up on it.
func (ps *probes) givenUp(pid int, now int64) bool {
	ws := ps.waiting[pid]
	for _, w := range ws {
		if w.until > now {
			return false
		}
	}
	return len(ws) > 0
}

// waitsFor reports whether a probe waits for pid.
func (ps *probes) waitsFor(pid int) bool { return len(ps.waiting[pid]) > 0 }

// resolve counts pid as read for the probes waiting for it; those it ends
// are woken with the next snapshot.
func (ps *probes) resolve(pid int) {
	ws := ps.waiting[pid]
	delete(ps.waiting, pid)
	for _, w := range ws {
		if w.left--; w.left == 0 {
			ps.ended = append(ps.ended, w.done)
		}
	}
}

// wake ends the probes whose reads are in the snapshot just published.
func (ps *probes) wake() {
	for _, done := range ps.ended {
		close(done)
	}
	ps.ended = ps.ended[:0]
}

// cancel ends every probe (the tracker stops).
func (ps *probes) cancel() {
	for pid := range ps.waiting {
		ps.resolve(pid)
	}
	ps.wake()
}

// scanSoon handles a ScanSoon call.
func (t *Tracker) scanSoon(done chan struct{}) {
	if now := t.clock(); t.scans.cur == nil && (t.discovery.lastSoon == 0 || now-t.discovery.lastSoon >= int64(t.cfg.RecheckInterval)) {
		t.discovery.lastSoon = now
		t.discovery.listNext = true
		t.startScan()
	}
	t.waitForScan(done)
}
