// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

// scans is the scans of the host: the one in progress and who waits for
// it or the next, the reads counted between scans, and whether the first
// finished (first: closed after the flush that publishes it, Ready). The
// loop starts and finishes scans (below); Rescan and ScanSoon wait here.
type scans struct {
	gen   uint32 // counts the scans
	cur   *scan
	after []chan struct{} // Rescan calls waiting for a scan to start after cur
	reads [NumOutcomes]int64
	first chan struct{}
}

// scan is the scan in progress.
type scan struct {
	gen     uint32
	pending int             // its jobs not back yet
	stats   ScanStats       // Began, and Listed when it listed the host, from the start
	waiters []chan struct{} // Rescan and ScanSoon calls waiting for it
}

func (s *scans) ready() <-chan struct{} { return s.first }
func (s *scans) announceFirst()         { close(s.first) }

func (s *scans) scanned() bool {
	select {
	case <-s.first:
		return true
	default:
		return false
	}
}

func (s *scans) begin(stats ScanStats) *scan {
	s.gen++
	s.cur = &scan{gen: s.gen, stats: stats}
	return s.cur
}

// inProgress returns the generation of the scan in progress, 0 for none.
func (s *scans) inProgress() uint32 {
	if s.cur == nil {
		return 0
	}
	return s.cur.gen
}

func (s *scans) pending() int    { return s.cur.pending }
func (s *scans) count(o Outcome) { s.reads[o]++ }

// sent and back count the jobs of the scan in progress; back reports
// whether j was its last.
func (s *scans) sent(j *job) {
	if j.Scan != 0 && j.Scan == s.inProgress() {
		s.cur.pending++
	}
}

func (s *scans) back(j *job) bool {
	if j.Scan == 0 || j.Scan != s.inProgress() {
		return false
	}
	s.cur.pending--
	return s.cur.pending == 0
}

// end ends the scan in progress and returns it, with the reads counted
// since the last one, and what waits for a scan to start after it.
func (s *scans) end() (*scan, []chan struct{}) {
	c, next := s.cur, s.after
	s.cur, s.after = nil, nil
	c.stats.Reads, s.reads = s.reads, [NumOutcomes]int64{}
	return c, next
}

// wait closes done when the scan in progress finishes, at once when none
// is; waitNext queues done for the scan after it (false: none is).
func (s *scans) wait(done chan struct{}) {
	if s.cur == nil {
		close(done)
		return
	}
	s.cur.waiters = append(s.cur.waiters, done)
}

func (s *scans) waitNext(done chan struct{}) bool {
	if s.cur != nil {
		s.after = append(s.after, done)
	}
	return s.cur != nil
}

// startScan starts a scan: it lists the host's pids (or, while process
// events tell of every fork and exit, takes those it knows) and queues the
// reads they need, as the scheduler says (see planner.scanReads), or,
// while publication events tell the rest, only ends grace periods and
// reports.
func (l *loop) startScan() {
	l.sched.runDue()
	now := l.clock()
	list, full := l.sched.scanReads(now)
	if !list {
		if err := l.host.CheckProcfs(); err != nil {
			l.reports.noteListing(err)
			l.sched.relist() // list once it is back: reads failed meanwhile
			return
		}
		if l.reports.cannotList() {
			// It is back: the listing clears the problem.
			l.sched.relist()
			list, full = l.sched.scanReads(now)
		}
	}
	switch {
	case !list && !full:
		l.scans.begin(ScanStats{Began: l.now()})
		l.finishScan()
		return
	case !list:
		l.scanKnown(now)
		return
	}
	entries, err := l.host.ListPids()
	l.reports.noteListing(err)
	if err != nil {
		return
	}
	s := l.scans.begin(ScanStats{Began: l.now(), Listed: true, Processes: len(entries)})
	l.sched.noteListing(now, full)
	pl := l.sched.planner()
	var rescans []rescan
	for _, e := range entries {
		p := l.reg.get(e.Pid)
		if p == nil {
			p = l.newProc(e.Pid)
		}
		p.listedIn = s.gen
		if p.ino == 0 && pl.procEvents {
			p.ino = e.Ino // known from its events, which tell when it goes: a listing adds its inode
		}
		c := pl.scanRead(p, trigger{kind: onListing, ino: e.Ino, full: full}, now)
		if c == causeListing || p.ino == 0 && p.start == 0 && p.found == OutcomeNoContext {
			p.ino = e.Ino // read for it, or known from its fork or exec event
		}
		rescans = l.startScanRead(s, e.Pid, p, c, now, rescans)
	}
	l.gatherScanReads(s, rescans, now)
}

// scanKnown is a scan that does not list the host (process events tell of
// every fork and exit): the reads of the processes it knows.
func (l *loop) scanKnown(now int64) {
	s := l.scans.begin(ScanStats{Began: l.now()})
	pl := l.sched.planner()
	var rescans []rescan
	for pid, p := range l.reg.all() {
		rescans = l.startScanRead(s, pid, p, pl.scanRead(p, trigger{kind: onScan, full: true}, now), now, rescans)
	}
	l.gatherScanReads(s, rescans, now)
}

// startScanRead starts the read c the scan s asks of p: gathered now, or,
// a rescan, added to rescans for the scan's budget (gatherScanReads).
func (l *loop) startScanRead(s *scan, pid int, p *proc, c cause, now int64, rescans []rescan) []rescan {
	switch c {
	case causeNone:
	case causeRescan:
		return append(rescans, rescan{pid, p})
	default:
		l.sched.gather(pid, p, c, now, s.gen)
	}
	return rescans
}

// gatherScanReads queues the rescans the budget takes beside the reads
// gathered, and finishes the scan when it has none.
func (l *loop) gatherScanReads(s *scan, rescans []rescan, now int64) {
	pl := l.sched.planner()
	for _, r := range pl.fitBudget(rescans) {
		l.sched.gather(r.pid, r.p, causeRescan, now, s.gen)
	}
	l.sched.flushGathered()
	if s.pending == 0 {
		l.finishScan()
	}
}

// sweep forgets the processes a listing did not list and counts those
// that cannot be read, for the scan's stats and reports.
func (l *loop) sweep(s *scan) {
	for pid, p := range l.reg.all() {
		if p.listedIn != s.gen && p.sched.idle() {
			l.forget(pid, p)
			continue
		}
		switch {
		case p.sched.quarantined():
			s.stats.Quarantined++
			l.reports.countStalled(pid)
		case p.identity == nil && p.found == OutcomePermissionDenied:
			s.stats.Denied++
			if !p.deniedForGood {
				l.reports.countDenied(pid)
			}
		}
	}
}

// finishScan sweeps the processes the scan's listing did not list, ends
// the grace periods that passed, reports, and wakes who waited for it.
func (l *loop) finishScan() {
	first := !l.scans.scanned()
	s, next := l.scans.end()
	if s.stats.Listed { // nothing listed: nothing to sweep or count
		l.sweep(s)
		l.reports.noteScan(l.clock(), s.stats.Denied, l.host.Access)
	}
	s.stats.Retained = l.out.expire(l.clock())
	s.stats.Publishers = l.reg.contexts()
	s.stats.Tracked = l.reg.size() + s.stats.Retained
	s.stats.Duration = l.now().Sub(s.stats.Began)
	l.out.handScan(&s.stats)
	if j := l.reports.takeDue(l.clock()); j != nil {
		l.sched.queue(j)
	}
	l.flush()
	if first {
		l.scans.announceFirst() // after the flush: whoever it wakes finds the first scan in the snapshot
	}
	for _, done := range s.waiters {
		close(done)
	}
	if len(next) > 0 {
		l.startScan()
		for _, done := range next {
			l.scans.wait(done)
		}
	}
}
