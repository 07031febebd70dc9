package tracker

import (
	"math/bits"
	"sync/atomic"
)

// Snapshot is an immutable view of the tracker's publications, published
// atomically after every change: readers take no lock.
type Snapshot struct {
	// byPID holds every live publication and the ended ones within their
	// retention (unless the pid names another process since).
	byPID pidTable
	// byContainer indexes byPID by (container.id, pid in the container).
	byContainer map[ContainerPid]*Process
	// outcomes says what the tracker knows of the pids without a
	// publication. It is shared by every snapshot of a tracker and
	// updated in place (single writer, atomic words), so it can be newer
	// than byPID: a pid read as publishing is OutcomeUnknown there, never
	// a failure, until a snapshot has its publication.
	outcomes *outcomeTable
	// Generation counts the snapshots of a tracker.
	Generation uint64
	// Scanned reports whether the first scan of the host has finished.
	Scanned bool
}

// Lookup returns the publication of pid, or nil and what is known of pid:
// OutcomeNoContext (known to publish nothing), another failure outcome, or
// OutcomeUnknown (not seen yet: Tracker.Probe reads it). It takes no lock
// and does not allocate.
func (s *Snapshot) Lookup(pid int) (*Process, Outcome) {
	if p := s.byPID.get(pid); p != nil {
		return p, OutcomeOK
	}
	return nil, s.outcomes.get(pid)
}

// InContainer returns the publication of the process that is vpid in the
// container cid, or nil.
func (s *Snapshot) InContainer(cid string, vpid int) *Process {
	return s.byContainer[ContainerPid{cid, vpid}]
}

// Len returns the number of publications (live and retained).
func (s *Snapshot) Len() int { return len(s.byPID.all) }

// All calls fn for every publication until fn returns false.
func (s *Snapshot) All(fn func(*Process) bool) {
	for _, p := range s.byPID.all {
		if !fn(p) {
			return
		}
	}
}

// pidTable is an open-addressing hash table from pid to publication, built
// once per snapshot: a lookup is a multiply, a shift and mostly one probe,
// on the hot path of every resource the processor enriches.
type pidTable struct {
	slots []pidSlot // a power of two, at most half full
	shift uint
	all   []*Process
}

type pidSlot struct {
	pid int
	p   *Process
}

func newPidTable(pubs map[int]*Process) pidTable {
	size := 8
	for size < 2*len(pubs) {
		size *= 2
	}
	t := pidTable{slots: make([]pidSlot, size), shift: uint(64 - bits.TrailingZeros(uint(size))), all: make([]*Process, 0, len(pubs))}
	for pid, p := range pubs {
		i := t.slot(pid)
		for t.slots[i].p != nil {
			i = (i + 1) & (len(t.slots) - 1)
		}
		t.slots[i] = pidSlot{pid, p}
		t.all = append(t.all, p)
	}
	return t
}

// slot is the home slot of pid (Fibonacci hashing).
func (t *pidTable) slot(pid int) int {
	return int(uint64(pid) * 0x9E3779B97F4A7C15 >> t.shift)
}

func (t *pidTable) get(pid int) *Process {
	if len(t.slots) == 0 {
		return nil
	}
	for i := t.slot(pid); ; i = (i + 1) & (len(t.slots) - 1) {
		s := &t.slots[i]
		if s.pid == pid || s.p == nil {
			return s.p
		}
	}
}

// outcomeTable maps pids to the Outcome of their last read, 4 bits per pid
// in chunks allocated on first use. One goroutine writes (the tracker's
// loop); any goroutine reads, without a lock.
type outcomeTable struct {
	chunks [maxPID / chunkPids]atomic.Pointer[outcomeChunk]
}

const (
	// maxPID is PID_MAX_LIMIT on 64-bit Linux: no pid is larger.
	maxPID       = 1 << 22
	chunkPids    = 4096
	pidsPerWord  = 16 // 4 bits each
	wordsInChunk = chunkPids / pidsPerWord
)

type outcomeChunk [wordsInChunk]atomic.Uint64

func (t *outcomeTable) get(pid int) Outcome {
	if pid <= 0 || pid >= maxPID {
		return OutcomeUnknown
	}
	c := t.chunks[pid/chunkPids].Load()
	if c == nil {
		return OutcomeUnknown
	}
	i := pid % chunkPids
	return Outcome(c[i/pidsPerWord].Load() >> (4 * (i % pidsPerWord)) & 0xf)
}

// set records o for pid; OutcomeUnknown forgets it. Only the writer calls
// it.
func (t *outcomeTable) set(pid int, o Outcome) {
	if pid <= 0 || pid >= maxPID {
		return
	}
	slot := &t.chunks[pid/chunkPids]
	c := slot.Load()
	if c == nil {
		if o == OutcomeUnknown {
			return
		}
		c = new(outcomeChunk)
		slot.Store(c)
	}
	i := pid % chunkPids
	w := &c[i/pidsPerWord]
	shift := 4 * (i % pidsPerWord)
	w.Store(w.Load()&^(0xf<<shift) | uint64(o&0xf)<<shift)
}
