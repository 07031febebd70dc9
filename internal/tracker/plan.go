package tracker

import (
	"container/heap"
)

// plannedRead is a read planned for later (proc.planned). An entry whose
// process has another plan or incarnation by the time it falls due is
// dropped then.
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

// plan makes c's read of p due at at (at most now: as soon as the read out
// returns). A plan due sooner stands, but an event's replaces any other:
// lookups wait for it.
func (t *Tracker) plan(pid int, p *proc, c cause, at int64) {
	if p.planned != causeNone && p.plannedAt <= at && (p.planned == causeEvent || c != causeEvent) {
		return
	}
	if at > t.clock() {
		if len(t.plans) >= maxPlanned {
			return
		}
		heap.Push(&t.plans, plannedRead{at: at, pid: int32(pid), serial: p.serial})
	}
	if c == causeEvent || p.planned == causeEvent {
		t.touch(pid) // awaitsEvent may change
	}
	p.planned, p.plannedAt = c, at
}

// nextPlanned returns the clock of the earliest planned read or recheck,
// false when none is.
func (t *Tracker) nextPlanned() (int64, bool) {
	at, ok := t.rechecks.next()
	if len(t.plans) > 0 && (!ok || t.plans[0].at < at) {
		at, ok = t.plans[0].at, true
	}
	return at, ok
}

// recheckQueue holds, in the order they fall due, the times when
// processes read without a context are due for a read again
// (contextDue): the snapshot must say so then, for lookups to wait for
// that read. An entry whose process was read again since is only a
// snapshot update for nothing.
type recheckQueue struct {
	q    []plannedRead
	head int
}

// noteRecheck notes that p's maps were just read without finding a
// context: due again after Config.RecheckInterval.
func (t *Tracker) noteRecheck(pid int, p *proc) {
	q := &t.rechecks
	if !t.cfg.uses(SourceContext) || t.events.live&PublicationEvents != 0 || len(q.q)-q.head >= maxPlanned {
		return
	}
	q.q = append(q.q, plannedRead{at: p.lookedAt + int64(t.cfg.RecheckInterval), pid: int32(pid), serial: p.serial})
}

func (q *recheckQueue) next() (int64, bool) {
	if q.head == len(q.q) {
		return 0, false
	}
	return q.q[q.head].at, true
}

// markRechecks notes for the snapshot the processes whose rechecks fell
// due.
func (t *Tracker) markRechecks() {
	q, now := &t.rechecks, t.clock()
	for ; q.head < len(q.q) && q.q[q.head].at <= now; q.head++ {
		e := q.q[q.head]
		if p := t.procs[int(e.pid)]; p != nil && p.serial == e.serial {
			t.touch(int(e.pid))
		}
	}
	// Reuse the space of the entries gone: at once when none is left,
	// else once they are most of it.
	if q.head == len(q.q) || q.head > len(q.q)/2 && q.head > 1024 {
		q.q, q.head = append(q.q[:0], q.q[q.head:]...), 0
	}
}

// runPlans starts the planned reads that are due.
func (t *Tracker) runPlans() {
	now := t.clock()
	for len(t.plans) > 0 && t.plans[0].at <= now {
		e := heap.Pop(&t.plans).(plannedRead)
		pid := int(e.pid)
		p := t.procs[pid]
		if p == nil || p.serial != e.serial || p.planned == causeNone || p.plannedAt != e.at {
			continue
		}
		c := p.planned
		p.planned = causeNone
		if c == causeEvent {
			t.touch(pid) // awaitsEvent may change
		}
		t.want(pid, p, c)
		if s := p.stall; p.planned == causeNone && s != nil && s.until > now {
			// Read when its quarantine ends, whatever this plan was.
			t.plan(pid, p, causeQuarantine, s.until)
		}
	}
}
