package processctxprocessor

import "math/bits"

// pidMemo is the pids of one resource's records or samples resolved so
// far.
type pidMemo struct {
	index    pidIndex
	resolved []resolved // by the index's positions
}

// find returns what pid resolved to, nil when it was not resolved yet.
func (m *pidMemo) find(pid int) *resolved {
	if i := m.index.find(pid); i >= 0 {
		return &m.resolved[i]
	}
	return nil
}

// add notes what pid resolved to.
func (m *pidMemo) add(pid int, r resolved) *resolved {
	m.index.add(pid)
	m.resolved = append(m.resolved, r)
	return &m.resolved[len(m.resolved)-1]
}

// reset forgets every pid: the next resource's container.id may differ.
func (m *pidMemo) reset() {
	m.index.reset()
	clear(m.resolved)
	m.resolved = m.resolved[:0]
}

// pidIndex maps pids to positions 0, 1, 2, ... in the order they were
// added: an open-addressing table (a multiply, a shift and mostly one
// probe, where a batch may name every process of a host), grown as pids
// are added. The last pid found is remembered: consecutive items mostly
// share a pid.
type pidIndex struct {
	slots    []pidSlot // a power of two, at most half full; pid 0: free
	shift    uint
	n        int
	lastPid  int
	lastSlot int32
}

type pidSlot struct {
	pid int
	pos int32
}

func (x *pidIndex) find(pid int) int32 {
	if pid == x.lastPid && pid != 0 {
		return x.lastSlot
	}
	if x.n == 0 {
		return -1
	}
	for i := x.home(pid); ; i = (i + 1) & (len(x.slots) - 1) {
		switch s := x.slots[i]; s.pid {
		case pid:
			x.lastPid, x.lastSlot = pid, s.pos
			return s.pos
		case 0:
			return -1
		}
	}
}

func (x *pidIndex) add(pid int) int32 {
	if 2*(x.n+1) > len(x.slots) {
		x.grow()
	}
	pos := int32(x.n)
	x.n++
	x.insert(pid, pos)
	x.lastPid, x.lastSlot = pid, pos
	return pos
}

func (x *pidIndex) insert(pid int, pos int32) {
	i := x.home(pid)
	for x.slots[i].pid != 0 {
		i = (i + 1) & (len(x.slots) - 1)
	}
	x.slots[i] = pidSlot{pid: pid, pos: pos}
}

func (x *pidIndex) grow() {
	old := x.slots
	size := max(32, 2*len(old))
	x.slots, x.shift = make([]pidSlot, size), uint(64-bits.TrailingZeros(uint(size)))
	for _, s := range old {
		if s.pid != 0 {
			x.insert(s.pid, s.pos)
		}
	}
}

// home is pid's first slot (Fibonacci hashing).
func (x *pidIndex) home(pid int) int { return int(uint64(pid) * 0x9E3779B97F4A7C15 >> x.shift) }

func (x *pidIndex) reset() {
	if x.n > 0 {
		clear(x.slots)
	}
	x.n, x.lastPid, x.lastSlot = 0, 0, 0
}
