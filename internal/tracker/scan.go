package tracker

import (
	"cmp"
	"slices"
	"time"
)

const (
	// jobSize is the most requests one job of a scan carries.
	jobSize = 128
	// maxFreeJobs is how many done jobs are kept for reuse: enough for a
	// steady scan, not a discovery's worth of memory.
	maxFreeJobs = 2
	// eventsListInterval is how often, while process and publication
	// events both come, scans list the host: the events tell of every fork
	// and exit, the listing finds those they could not (a message the
	// kernel dropped without saying so).
	eventsListInterval = time.Minute
)

// scan is the scan in progress.
type scan struct {
	gen     uint32
	pending int             // its jobs not back yet
	stats   ScanStats       // Began, and Listed when it listed the host, from the start
	waiters []chan struct{} // Rescan and ScanSoon calls waiting for it
}

// discoveryState is what decides the next scans' work.
type discoveryState struct {
	// fullScan: the next scan reads every publisher's timestamp even when
	// events would say what changed (events were dropped).
	fullScan bool
	// lastFull is the clock of the last scan that read every publisher.
	lastFull int64
	// pubLostAt is the clock when publication events were last dropped:
	// processes looked at before then are due for a read.
	pubLostAt int64
	// lastListed is the clock of the last listing of the host; listNext
	// makes the next scan list it.
	lastListed int64
	listNext   bool
	// lastMissed and lastSoon are the clocks of the last scans started for
	// dropped events and by ScanSoon.
	lastMissed, lastSoon int64
}

// startScan starts a scan: it lists the host's pids and queues the reads
// they need, as decide says for each process.
//
// While process and publication events both come, a scan only finds what
// they could not tell (processes that started or ended unannounced), lists
// the host once per eventsListInterval and reads the publishers'
// timestamps once per Config.ReconcileInterval, or at once after events
// were dropped.
func (t *Tracker) startScan() {
	t.runPlans()
	now := t.clock()
	d := &t.discovery
	bothEvents := t.events.live == ProcessEvents|PublicationEvents
	if bothEvents && !d.fullScan && !d.listNext && d.lastListed != 0 && now-d.lastListed < int64(eventsListInterval) {
		t.scanWithoutListing()
		return
	}
	d.listNext = false
	entries, err := t.host.ListPids()
	t.setListed(err)
	if err != nil {
		return
	}
	t.scans.gen++
	s := &scan{gen: t.scans.gen, stats: ScanStats{Began: t.now(), Listed: true, Processes: len(entries)}}
	t.scans.cur = s
	d.lastListed = now
	full := d.fullScan || !bothEvents || d.lastFull == 0 || now-d.lastFull >= int64(t.cfg.ReconcileInterval)
	if full {
		d.fullScan, d.lastFull = false, now
	}
	b, pl := batcher{t: t, now: now}, t.planner()
	var rescans []int
	for _, e := range entries {
		p := t.procs[e.Pid]
		if p == nil {
			p = t.newProc(e.Pid)
		}
		p.listedIn = s.gen
		rp := pl.next(p, trigger{kind: onListing, ino: e.Ino, full: full}, now)
		if rp.cause == causeListing || p.ino == 0 && p.start == 0 && p.found == OutcomeNoContext {
			p.ino = e.Ino // read for it, or known from its fork or exec event
		}
		switch {
		case rp.cause == causeNone || rp.at > now:
		case rp.cause == causeRescan:
			rescans = append(rescans, e.Pid)
		default:
			b.add(e.Pid, p, rp.cause)
		}
	}
	// Late publishers: the longest-waiting first, within the budget.
	slices.SortFunc(rescans, func(a, b int) int { return cmp.Compare(t.procs[a].lookedAt, t.procs[b].lookedAt) })
	for _, pid := range rescans[:min(len(rescans), t.cfg.RescanBudget)] {
		b.add(pid, t.procs[pid], causeRescan)
	}
	b.flush()
	if s.pending == 0 {
		t.finishScan()
	}
}

// scanWithoutListing is a scan while events tell of every fork and exit:
// it ends ended publications' grace periods and reports.
func (t *Tracker) scanWithoutListing() {
	if err := t.host.CheckProcfs(); err != nil {
		t.setListed(err)
		t.discovery.listNext = true // list once it is back: reads failed meanwhile
		return
	}
	if t.health.listErr != nil {
		t.discovery.listNext = true
		t.startScan() // it is back: the listing clears the problem
		return
	}
	t.scans.gen++
	t.scans.cur = &scan{gen: t.scans.gen, stats: ScanStats{Began: t.now()}}
	t.finishScan()
}

// waitForScan closes done when the scan in progress finishes, at once
// when none is.
func (t *Tracker) waitForScan(done chan struct{}) {
	if t.scans.cur == nil {
		close(done)
		return
	}
	t.scans.cur.waiters = append(t.scans.cur.waiters, done)
}

// batcher groups the requests of a scan into jobs.
type batcher struct {
	t   *Tracker
	now int64
	cur *job
}

func (b *batcher) add(pid int, p *proc, c cause) {
	if b.cur == nil {
		b.cur = b.t.newJob()
		b.cur.scan = b.t.scans.cur.gen
	}
	b.cur.reqs = append(b.cur.reqs, b.t.startRead(pid, p, c, b.now))
	if len(b.cur.reqs) == jobSize {
		b.flush()
	}
}

func (b *batcher) flush() {
	if b.cur != nil {
		b.t.enqueue(b.cur)
		b.cur = nil
	}
}

// newJob returns an empty job, reusing one whose reads are done.
func (t *Tracker) newJob() *job {
	if n := len(t.jobs.free); n > 0 {
		j := t.jobs.free[n-1]
		t.jobs.free = t.jobs.free[:n-1]
		return j
	}
	return &job{reqs: make([]request, 0, jobSize)}
}

// recycle keeps a job whose reads are all done for reuse. A stalled job is
// not: its reader may still write into it.
func (t *Tracker) recycle(j *job) {
	if j.state != jobDone || cap(j.reqs) != jobSize || len(t.jobs.free) >= maxFreeJobs {
		return
	}
	clear(j.reqs)
	*j = job{reqs: j.reqs[:0]}
	t.jobs.free = append(t.jobs.free, j)
}

// enqueue queues a job for the pool, counting it in the scan it belongs
// to.
func (t *Tracker) enqueue(j *job) {
	if j.scan != 0 && t.scans.cur != nil && j.scan == t.scans.cur.gen {
		t.scans.cur.pending++
	}
	if j.urgent {
		t.jobs.urgent = append(t.jobs.urgent, j)
	} else {
		t.jobs.backlog = append(t.jobs.backlog, j)
	}
}

// jobBack counts a job of a scan as back; the scan finishes with its last.
func (t *Tracker) jobBack(j *job) {
	if j.scan != 0 && t.scans.cur != nil && j.scan == t.scans.cur.gen {
		if t.scans.cur.pending--; t.scans.cur.pending == 0 {
			t.finishScan()
		}
	}
}

// sweep forgets the processes a listing did not list and counts those
// that cannot be read, for the scan's stats and reports.
func (t *Tracker) sweep(s *scan) {
	for pid, p := range t.procs {
		if p.listedIn != s.gen && p.reading == causeNone {
			t.forget(pid, p)
			continue
		}
		switch {
		case p.quarantined():
			s.stats.Quarantined++
			t.reports.stalled.add(pid)
		case p.identity == nil && p.found == OutcomePermissionDenied:
			s.stats.Denied++
			if !p.deniedForGood {
				t.reports.denied.add(pid)
			}
		}
	}
}

// finishScan sweeps the processes the scan's listing did not list, ends
// the grace periods that passed, reports, and wakes who waited for it.
func (t *Tracker) finishScan() {
	s := t.scans.cur
	if s.stats.Listed { // nothing listed: nothing to sweep or count
		t.sweep(s)
		t.setScanned(s.stats.Denied)
	}
	t.endGracePeriods()
	s.stats.Publishers = t.out.liveContexts
	s.stats.Retained = len(t.out.ended.queue)
	s.stats.Tracked = len(t.procs) + s.stats.Retained
	// Every read since the last scan: the scan's, and those of events and
	// probes between scans.
	s.stats.Reads, t.scans.reads = t.scans.reads, [NumOutcomes]int64{}
	s.stats.Duration = t.now().Sub(s.stats.Began)
	first := !t.scans.scanned
	if first {
		t.scans.scanned = true
		t.out.changed = true // snapshots say Scanned from now on
	}
	t.scans.cur = nil
	t.scans.pending = &s.stats
	if j := t.reports.due(t.now(), t.cfg); j != nil {
		t.enqueue(j)
	}
	t.flush()
	if first {
		close(t.ready) // after the flush: whoever it wakes finds the first scan in the snapshot
	}
	for _, done := range s.waiters {
		close(done)
	}
	if next := t.scans.after; len(next) > 0 {
		t.scans.after = nil
		t.startScan()
		for _, done := range next {
			t.waitForScan(done)
		}
	}
}

// endGracePeriods drops the ended publications whose grace period passed.
func (t *Tracker) endGracePeriods() {
	now := t.clock()
	q := t.out.ended.queue
	for len(q) > 0 && now >= q[0].until {
		if e, ok := t.out.ended.byPID[q[0].pid]; ok && e.until == q[0].until {
			delete(t.out.ended.byPID, q[0].pid)
			t.out.changed = true
		}
		q = q[1:]
	}
	t.out.ended.queue = q
}
