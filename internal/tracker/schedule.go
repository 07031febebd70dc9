package tracker

import (
	"container/heap"
	"time"
)

// dueKind is what a scheduled read is for.
type dueKind uint8

const (
	// duePublication: a publication event's read, paced by minEventGap or
	// retried because it found nothing yet.
	duePublication dueKind = iota
	// dueYoung: the next read of a young process.
	dueYoung
)

// due is one scheduled read. Entries of a process that exited or changed
// since are dropped when they fall due (its serial moved on).
type due struct {
	at     int64 // clock
	pid    int32
	serial uint32
	kind   dueKind
}

// dueHeap orders the scheduled reads by time.
type dueHeap []due

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(due)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// maxScheduled bounds the scheduled reads; beyond, they are dropped and
// the scans' schedule covers those processes.
const maxScheduled = 1 << 16

// schedule reads p after delay; false when the read was dropped.
func (t *Tracker) schedule(p *proc, pid int, kind dueKind, delay time.Duration) bool {
	if len(t.dues) >= maxScheduled {
		t.droppedDues++
		return false
	}
	heap.Push(&t.dues, due{at: t.clock() + int64(delay), pid: int32(pid), serial: p.serial, kind: kind})
	return true
}

// nextDue returns the clock of the earliest scheduled read, false when
// none is.
func (t *Tracker) nextDue() (int64, bool) {
	if len(t.dues) == 0 {
		return 0, false
	}
	return t.dues[0].at, true
}

// runDue starts the scheduled reads that are due.
func (t *Tracker) runDue() {
	now := t.clock()
	for len(t.dues) > 0 && t.dues[0].at <= now {
		d := heap.Pop(&t.dues).(due)
		pid := int(d.pid)
		p := t.procs[pid]
		if p == nil || p.serial != d.serial {
			continue
		}
		switch d.kind {
		case duePublication:
			t.readForEvent(pid, p)
		case dueYoung:
			t.readYoung(pid, p)
		}
	}
}

// readYoung reads a young process's maps again, unless something else
// told what it publishes meanwhile.
func (t *Tracker) readYoung(pid int, p *proc) {
	switch {
	case p.pub != nil, p.young >= youngDone, p.stuck && p.stuckMemFile:
		return
	case p.q != nil && t.clock() < p.q.until:
		return
	case p.inflight:
		t.schedule(p, pid, dueYoung, minEventGap)
		return
	}
	r := request{pid: pid, serial: p.serial, via: p.via(), young: true, op: opLocate, start: p.start}
	if p.start == 0 {
		r.op = opDiscover
	}
	p.inflight = true
	t.enqueue(&job{reqs: []request{r}})
}
