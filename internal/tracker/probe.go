// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

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

// probes is the Probe calls waiting for reads: the loop makes a call wait
// for the reads it needs (wait), counts each read in (resolve), and wakes
// the calls whose reads are all in with the flush that publishes what they
// found (wake).
type probes struct {
	waiting map[int][]*probeWait // by pid
	// ended are the calls whose reads are all applied: closed once the
	// snapshot with them is published.
	ended []chan struct{}
}

// Probe asks for the pids whose lookup says AnswerUnknown to be read now,
// before any scan work: pids not known, and processes without a context
// with a read due (their environment not read since their exec, or their
// maps not for Config.RecheckInterval while no publication events come).
// The returned channel is closed once each of them has been read (or its
// read abandoned) and the snapshot and the subscribers have what the reads
// found; nil means the tracker cannot take the request now.
// within is how long the caller waits: the reads go on after that, and a
// later snapshot has their results, but a later Probe does not wait for a
// read that every call waiting for it has given up on (a batch naming
// 1,000 pids whose reads take seconds holds one caller for within, not
// each that comes while the reads go on).
func (t *Tracker) Probe(pids []int, within time.Duration) <-chan struct{} {
	if len(pids) == 0 || !t.loop.started.Load() {
		return nil
	}
	w := &probeWait{pids: slices.Clone(pids), within: within, done: make(chan struct{})}
	select {
	case t.loop.probeC <- w:
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
	if !t.loop.started.Load() {
		return nil
	}
	done := make(chan struct{})
	select {
	case t.loop.scanC <- done:
		return done
	default:
		return nil
	}
}

// probe handles a Probe call: a pid whose lookup cannot answer is read
// now, and the call waits for the reads that may tell it.
func (l *loop) probe(w *probeWait) {
	now := l.clock()
	w.until = now + int64(w.within)
	for _, pid := range w.pids {
		if !ValidPID(pid) {
			continue
		}
		p := l.reg.get(pid)
		if p == nil {
			p = l.newProc(pid)
		}
		l.sched.act(pid, p, trigger{kind: onProbe})
		if l.sched.answer(p, now) == AnswerUnknown && p.sched.busy() && l.probes.wait(w, pid, now) {
			l.sched.expedite(pid, p)
		}
	}
	l.probes.waited(w)
}

// wait makes w wait for the read of pid, unless every probe waiting for
// it has given up on it; it reports whether w waits.
func (ps *probes) wait(w *probeWait, pid int, now int64) bool {
	ws := ps.waiting[pid]
	if len(ws) > 0 && !slices.ContainsFunc(ws, func(o *probeWait) bool { return o.until > now }) {
		return false
	}
	ps.waiting[pid] = append(ws, w)
	w.left++
	return true
}

// waited ends w with the next snapshot when it waits for no read.
func (ps *probes) waited(w *probeWait) {
	if w.left == 0 {
		ps.ended = append(ps.ended, w.done)
	}
}

// waitsFor reports whether a probe waits for pid.
func (ps *probes) waitsFor(pid int) bool { return len(ps.waiting[pid]) > 0 }

// resolve counts pid as read for the probes waiting for it.
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
func (l *loop) scanSoon(done chan struct{}) {
	if l.sched.allowScanSoon(l.scans.inProgress() != 0) {
		l.startScan()
	}
	l.scans.wait(done)
}
