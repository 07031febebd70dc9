// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"container/heap"
	"time"

	"github.com/processctx/otelcol-processctx/internal/ratelimit"
	"github.com/processctx/otelcol-processctx/internal/reader"
	"github.com/processctx/otelcol-processctx/internal/readpool"
)

// scheduler carries out the planner's decisions: it starts the reads due
// now and queues the others (runDue) and the rechecks. It alone writes
// each proc's schedule, the plan and recheck queues and hostState. The
// loop hands it every trigger and asks it what scans read; its reads go to
// the pool, and it tells the outputs the pids whose answers may change.
type scheduler struct {
	cfg    *Config
	clock  func() int64 // the loop's
	reg    *registry
	pool   *pool
	out    *outputs
	events *events // which events come
	scans  *scans  // whether the first scan finished

	plans    planQueue
	rechecks []plannedRead // recheck times, in order (noteLook)
	host     hostState
	// lostScan and soonScan pace the scans started for dropped events and
	// by ScanSoon.
	lostScan, soonScan ratelimit.Limiter
	// gathered collects reads started together into jobs of up to
	// readpool.JobSize: a scan's, and, while runDue runs (gathering), the
	// reads due that are not urgent (those planned for one grid point,
	// planGrid, go out together).
	gathered  *job
	gathering bool
}

// hostState is what the scheduler knows of the reads of the host as a
// whole: the loop's clocks of the last listing, of the last scan that
// read every publisher, of the last drop of publication events (processes
// looked at before are due); and whether the next scan lists the host
// (relist) and reads every publisher (reconcile).
type hostState struct {
	listedAt, reconciledAt, pubLostAt int64
	relist, reconcile                 bool
}

// schedule is the scheduler's record of one process's reads.
type schedule struct {
	reading, planned cause // the read out and the read planned
	// retries and young count the reads of its retry and young series,
	// rechecks its maps reads without a context since it last changed.
	retries, young, rechecks uint8
	plannedAt                int64 // clock; at most now: once the read out returns
	// lookedAt is the clock of its last maps read, or of the fork or exec
	// event that told without one, while publication events come, that it
	// publishes nothing; 0: not looked at since its exec.
	lookedAt int64
	// eventReadAt is the clock of the last read a publication event
	// caused: a process calling prctl in a loop is read once per
	// minEventGap, not in a loop.
	eventReadAt int64
	stall       *stall // nil until a read of it stalled
	job         *job   // the job its read out is in (expedite)
}

// stall is the record of a process whose reads did not return in time.
type stall struct {
	until   int64 // clock before which it is not read; 0: it answered since
	strikes uint8 // stalls since it last answered: the backoff doubles with each
	stuck   stuckRead
}

// stuckRead is a read of the process abandoned at its deadline that has
// not returned yet.
type stuckRead uint8

// Stuck in process_vm_readv (or another file), the mem file, which fails
// at once on userfaultfd pages, may still be read; stuck even through it,
// the process is not read again until that read returns.
const (
	notStuck stuckRead = iota
	stuckVMReadv
	stuckMemFile
)

// blocks reports whether the stall keeps the process from being read now.
func (s *stall) blocks(now int64) bool {
	return s != nil && (now < s.until || s.stuck == stuckMemFile)
}

// renewed is the schedule of a new incarnation of the process: after an
// exec (sameProcess), the record of its stalled reads stays.
func (ps *schedule) renewed(sameProcess bool) schedule {
	if sameProcess {
		return schedule{stall: ps.stall}
	}
	return schedule{}
}

func (ps *schedule) idle() bool        { return ps.reading == causeNone } // no read out
func (ps *schedule) busy() bool        { return ps.reading != causeNone || ps.planned != causeNone }
func (ps *schedule) quarantined() bool { return ps.stall != nil && ps.stall.strikes > 0 } // none answered since

func (s *scheduler) planner() planner {
	live := s.events.live()
	return planner{cfg: s.cfg, pubEvents: live&PublicationEvents != 0, procEvents: live&ProcessEvents != 0,
		unmapEvents: live&PublicationEvents != 0 && s.events.filter != nil,
		scanned:     s.scans.scanned(), pubLostAt: s.host.pubLostAt}
}

func (s *scheduler) answer(p *proc, now int64) Answer { return s.planner().answer(p, now) }

// act hands tr to the planner and carries out what it says: the read
// starts now, or is planned. With start and finish, the one place that
// changes a process's reads.
func (s *scheduler) act(pid int, p *proc, tr trigger) {
	now, ps := s.clock(), &p.sched
	if (tr.kind == onDue || tr.kind == onRead) && ps.planned != causeNone && ps.plannedAt <= now {
		tr.due = ps.planned // taken out: the planner says what becomes of it
		s.plan(pid, p, causeNone, 0, now)
	}
	rp := s.planner().next(p, tr, now)
	ps.retries, ps.young = rp.retries, rp.young
	switch {
	case rp.cause == causeNone:
	case rp.at <= now && ps.reading == causeNone && s.gathering && !rp.cause.urgent():
		s.gather(pid, p, rp.cause, now, 0)
	case rp.at <= now && ps.reading == causeNone:
		s.queue(&job{Urgent: rp.cause.urgent(), Reqs: []request{s.start(pid, p, rp.cause, now)}})
	default:
		s.plan(pid, p, rp.cause, rp.at, now)
		if rp.at <= now && rp.cause.urgent() {
			s.expedite(pid, p) // the plan waits for the read out
		}
	}
}

// expedite makes p's read out an urgent job of its own when it has not
// begun: queued behind scan work, or in a job behind a read that may take
// until its deadline (a process whose memory never answers holds the rest
// of its job that long). A probe or an event waits for that read.
func (s *scheduler) expedite(pid int, p *proc) {
	j := p.sched.job
	if j == nil || j.Urgent && len(j.Reqs) == 1 {
		return
	}
	for i := range j.Reqs {
		// By index, not by value: a reader may be writing another
		// request's result.
		if j.Reqs[i].pid == pid && j.Reqs[i].serial == p.serial {
			if j.Take(i) {
				r := j.Reqs[i]
				r.taken = false
				s.queue(&job{Urgent: true, Reqs: []request{r}})
			}
			return
		}
	}
}

// gather starts a read of p for c in the job being gathered for the scan
// scan (0: none), and queues the job once it is full.
func (s *scheduler) gather(pid int, p *proc, c cause, now int64, scan uint32) {
	if s.gathered == nil {
		s.gathered = s.pool.NewJob()
		s.gathered.Scan = scan
	}
	s.gathered.Reqs = append(s.gathered.Reqs, s.start(pid, p, c, now))
	if len(s.gathered.Reqs) == readpool.JobSize {
		s.flushGathered()
	}
}

// flushGathered queues the job being gathered, if any.
func (s *scheduler) flushGathered() {
	if s.gathered != nil {
		s.queue(s.gathered)
		s.gathered = nil
	}
}

// queue hands j to the pool, counting it in the scan it belongs to, and
// notes in each process read where its read is.
func (s *scheduler) queue(j *job) {
	s.scans.sent(j)
	for i := range j.Reqs {
		if r := &j.Reqs[i]; r.op != opDescribe {
			if p := s.reg.get(r.pid); p != nil && p.serial == r.serial {
				p.sched.job = j
			}
		}
	}
	s.pool.Enqueue(j)
}

// start marks a read of p for c out and returns its request: what to read
// follows from what is known of p.
func (s *scheduler) start(pid int, p *proc, c cause, now int64) request {
	ps := &p.sched
	r := request{pid: pid, serial: p.serial, cause: c, start: p.start, stalled: ps.stall != nil,
		// A young read looks at the environment again: the one read may
		// have been its parent's, before its exec.
		env: (p.env != envRead || c == causeYoung && p.identity == nil) && s.cfg.uses(SourceEnvironment),
		// A probe of a process whose maps are not due reads only what is.
		noMaps: c == causeEnviron || !s.cfg.uses(SourceContext) ||
			c == causeProbe && p.found == OutcomeNoContext && !s.planner().contextDue(p, now)}
	// A young re-read, or a rescan before the longest wait (one that reads
	// the maps whatever the stat says, every RescanMaxInterval), reads the
	// stat first: its maps only when its address space changed (read).
	r.gate = c == causeYoung || c == causeRescan && s.planner().rescanDelay(p) < s.cfg.RescanMaxInterval
	if r.gate && p.env == envRead {
		r.vsize = p.vsize
	}
	switch {
	case p.start == 0 || c == causeListing:
		r.op = opDiscover
	case p.hasContext():
		r.op, r.addr, r.last = opRefresh, p.identity.Addr, p.identity.Context.PublishedAt
	default:
		r.op = opLocate
	}
	if c == causeEvent || ps.planned == causeEvent {
		s.out.touch(pid) // awaitsEvent may change
	}
	ps.reading = c
	if c == causeEvent || c == causeRetry {
		ps.eventReadAt = now
	}
	if ps.planned == c {
		ps.planned = causeNone // this read is the one planned
	}
	return r
}

// finish notes that the read r is no longer out, and returns the process
// it was for, nil when that exited or became another incarnation
// meanwhile (the read is of the past), and what lookups answered while
// the read was out.
func (s *scheduler) finish(r *request) (*proc, Answer) {
	p := s.reg.get(r.pid)
	if p == nil || p.serial != r.serial {
		return nil, AnswerUnknown
	}
	now, ps := s.clock(), &p.sched
	was := s.answer(p, now)
	ps.reading, ps.job = causeNone, nil
	if ps.planned != causeNone && ps.plannedAt <= now {
		// A plan that waited for this read falls due now, however the read
		// ended (applied, stalled, not run): queued, it cannot be left
		// waiting for a read no longer out.
		s.plan(r.pid, p, ps.planned, now, now)
	}
	return p, was
}

// reading reports whether a read of pid's process is out.
func (s *scheduler) reading(pid int) bool {
	p := s.reg.get(pid)
	return p != nil && p.sched.reading != causeNone
}

// plannedRead is an entry of the plan queue, which only orders: the plan
// is the process's (schedule.planned, plannedAt); an entry that does not
// match it when it falls due is dropped.
type plannedRead struct {
	at     int64 // clock
	pid    int32
	serial uint32
}

// planQueue orders the planned reads by time.
type planQueue []plannedRead

func (q planQueue) Len() int           { return len(q) }
func (q planQueue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q planQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *planQueue) Push(x any)        { *q = append(*q, x.(plannedRead)) }
func (q *planQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// maxPlanned bounds the queue; beyond, plans are dropped and the scans'
// schedule covers those processes.
const maxPlanned = 1 << 16

// plan stores the read the planner planned for p at now (causeNone:
// none). It is queued for its time unless it waits for the read out (due
// now: finish queues it when that read ends, whatever ended it). Later
// and now are the planner's: read the clock again and a plan a few
// microseconds ahead would be neither queued nor waiting.
func (s *scheduler) plan(pid int, p *proc, c cause, at, now int64) {
	ps := &p.sched
	if c != causeNone && (at > now || ps.reading == causeNone) {
		if len(s.plans) >= maxPlanned {
			return
		}
		heap.Push(&s.plans, plannedRead{at: at, pid: int32(pid), serial: p.serial})
	}
	if c == causeEvent || ps.planned == causeEvent {
		s.out.touch(pid) // awaitsEvent may change
	}
	ps.planned, ps.plannedAt = c, at
}

// nextDue returns the clock of the earliest planned read or recheck,
// false when none is. It first drops the entries at the head of either
// queue that no longer stand (their process exited, or was read or
// planned again since), so that the loop does not wake for them: most
// processes a host starts exit before their first planned read.
func (s *scheduler) nextDue() (int64, bool) {
	for len(s.plans) > 0 && !s.stands(s.plans[0], false) {
		heap.Pop(&s.plans)
	}
	for len(s.rechecks) > 0 && !s.stands(s.rechecks[0], true) {
		s.rechecks = s.rechecks[1:]
	}
	at, ok := int64(0), len(s.rechecks) > 0
	if ok {
		at = s.rechecks[0].at
	}
	if q := s.plans; len(q) > 0 && (!ok || q[0].at < at) {
		at, ok = q[0].at, true
	}
	return at, ok
}

// stands reports whether e, an entry of the plan queue (or of the recheck
// queue: recheck), is still its process's plan (recheck).
func (s *scheduler) stands(e plannedRead, recheck bool) bool {
	p := s.reg.get(int(e.pid))
	switch {
	case p == nil || p.serial != e.serial:
		return false
	case recheck:
		at, ok := s.planner().recheckAt(p)
		return ok && at == e.at
	}
	return p.sched.planned != causeNone && p.sched.plannedAt == e.at
}

// runDue starts the planned reads that are due: those not urgent
// together, in jobs of up to readpool.JobSize (gather).
func (s *scheduler) runDue() {
	now := s.clock()
	s.gathering = true
	for len(s.plans) > 0 && s.plans[0].at <= now {
		if e := heap.Pop(&s.plans).(plannedRead); s.stands(e, false) {
			s.act(int(e.pid), s.reg.get(int(e.pid)), trigger{kind: onDue})
		}
	}
	s.flushGathered()
	s.gathering = false
}

// noteLook notes that p's maps were just read and what it publishes is not
// a context (afresh: it just stopped publishing one; its rescans start
// over), and queues its recheck (planner.recheckAt): when it is due for a
// read again (contextDue), the snapshot must say so, for lookups to wait
// for that read. A recheck of a process read again since, or gone, no
// longer stands: it neither wakes the loop nor touches the snapshot.
func (s *scheduler) noteLook(pid int, p *proc, afresh bool) {
	ps := &p.sched
	switch {
	case afresh:
		ps.rechecks = 0
	case ps.lookedAt != 0 && ps.rechecks < 255:
		ps.rechecks++
	}
	ps.lookedAt = s.clock()
	if at, ok := s.planner().recheckAt(p); ok && len(s.rechecks) < maxPlanned {
		s.rechecks = append(s.rechecks, plannedRead{at: at, pid: int32(pid), serial: p.serial})
	}
}

func (s *scheduler) lookSoon(p *proc) { p.sched.lookedAt = 0 } // the next scan looks at p again

// noteExec notes what a fork or exec tells of p's new image: while
// publication events come, they tell when it publishes, and the event is
// as good as a look at its maps; without them, its maps are not looked at
// yet (contextDue).
func (s *scheduler) noteExec(p *proc) {
	if s.events.live()&PublicationEvents != 0 {
		p.sched.lookedAt = s.clock()
	}
}

// markRechecks tells the outputs the processes whose rechecks fell due.
func (s *scheduler) markRechecks() {
	now := s.clock()
	for ; len(s.rechecks) > 0 && s.rechecks[0].at <= now; s.rechecks = s.rechecks[1:] {
		if e := s.rechecks[0]; s.stands(e, true) {
			s.out.touch(int(e.pid))
		}
	}
}

// quarantine notes that p's read through via did not return in time: it
// is read again once the backoff it returns has passed (through the mem
// file), and not while the read is stuck in the mem file too.
func (s *scheduler) quarantine(pid int, p *proc, via reader.Via) time.Duration {
	if p.sched.stall == nil {
		p.sched.stall = &stall{}
	}
	st := p.sched.stall
	st.stuck = max(st.stuck, stuckVMReadv)
	if via == reader.ViaMemFile {
		st.stuck = stuckMemFile
	}
	st.strikes = min(st.strikes+1, 16)
	backoff := s.planner().backoff(st.strikes)
	st.until = s.clock() + int64(backoff)
	s.act(pid, p, trigger{kind: onStall})
	return backoff
}

// release notes that p answered a read: it is no longer quarantined, but
// its memory is still read through the mem file.
func (s *scheduler) release(p *proc) {
	if st := p.sched.stall; st != nil {
		st.until, st.strikes = 0, 0
	}
}

// unstick notes that the abandoned read of pid returned at returned (the
// loop's clock), took after it began. A read that returns late shows a
// process that answers, slowly: most often a host (or the collector)
// short of CPU, which slows every read. Its quarantine then ends after as
// long again as that read took, doubling with each strike, when that is
// sooner than its backoff: a moment's starvation does not hide a healthy
// process for the backoff, and one that always answers late is read less
// and less often.
func (s *scheduler) unstick(pid int, returned int64, took time.Duration) {
	p := s.reg.get(pid)
	if p == nil || p.sched.stall == nil {
		return
	}
	st := p.sched.stall
	blocked := st.stuck == stuckMemFile
	st.stuck = notStuck
	if st.strikes == 0 {
		return
	}
	sooner := false
	if wait := int64(took) << (st.strikes - 1); wait > 0 && returned+wait < st.until {
		st.until, sooner = returned+wait, true
	}
	if sooner || blocked {
		// Read when the quarantine ends, at once if it has.
		s.act(pid, p, trigger{kind: onStall})
	}
}

// scanReads says what a scan starting at now reads of the host
// (planner.scanReads); noteListing notes that it listed it.
func (s *scheduler) scanReads(now int64) (list, full bool) {
	list, full = s.planner().scanReads(&s.host, now)
	if list {
		s.host.relist = false
	}
	return list, full
}

func (s *scheduler) noteListing(now int64, full bool) {
	s.host.listedAt = now
	if full {
		s.host.reconcile, s.host.reconciledAt = false, now
	}
}

func (s *scheduler) relist() { s.host.relist = true } // the next scan lists the host

// noteLost notes that events of the classes lost were dropped: the next
// scan lists the host and reads every publisher, and processes without a
// context looked at before now are due again when publications may have
// been missed. It reports whether a scan starts now (scanning: one is in
// progress): at most one per Config.RecheckInterval, so that a process
// flooding the ring buffer with prctl calls gets a full scan every few
// seconds, not a scan loop.
func (s *scheduler) noteLost(lost Sources, scanning bool) bool {
	now := s.clock()
	s.host.reconcile = true
	if lost&PublicationEvents != 0 {
		s.host.pubLostAt = now
	}
	return !scanning && s.lostScan.Allow(now, s.cfg.RecheckInterval)
}

// allowScanSoon reports whether ScanSoon starts a scan, with a listing,
// now: at most one per Config.RecheckInterval.
func (s *scheduler) allowScanSoon(scanning bool) bool {
	if scanning || !s.soonScan.Allow(s.clock(), s.cfg.RecheckInterval) {
		return false
	}
	s.host.relist = true
	return true
}
