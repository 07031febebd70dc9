// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package pidtable holds the tables keyed by pid on the hot path of every
// resource and record the processor enriches: a hash table (Table, the
// pids a batch resolved so far), and the persistent tables of the
// tracker's snapshots, which a change copies only in part (Trie, the
// publications; Nibbles, 4-bit answers). The hash table is open addressing with Fibonacci hashing
// (a multiply, a shift and mostly one probe), at most half full; pids are
// dense small integers, which a general-purpose map hashes at far greater
// cost.
//
// A Table is not safe for concurrent writes; once built it may be read
// concurrently.
package pidtable

import "math/bits"

// Table maps pids (any int but 0) to values of type V. The zero value is an
// empty table.
type Table[V any] struct {
	slots []slot[V] // a power of two, at most half full; pid 0: free
	shift uint
	n     int
}

type slot[V any] struct {
	pid int
	v   V
}

// minSlots is the size of a table's first allocation.
const minSlots = 8

// New returns a table with room for n pids without growing.
func New[V any](n int) Table[V] {
	var t Table[V]
	t.resize(n)
	return t
}

// Len returns the number of pids in the table.
func (t *Table[V]) Len() int { return t.n }

// Get returns the value of pid and whether pid is in the table.
func (t *Table[V]) Get(pid int) (V, bool) {
	if len(t.slots) == 0 {
		var zero V
		return zero, false
	}
	for i := t.home(pid); ; i = (i + 1) & (len(t.slots) - 1) {
		// A free slot holds pid 0 and the zero value: pid 0 is never
		// found.
		if s := &t.slots[i]; s.pid == pid || s.pid == 0 {
			return s.v, s.pid != 0
		}
	}
}

// Add adds pid, which must not be 0 nor in the table already, with value
// v.
func (t *Table[V]) Add(pid int, v V) {
	if 2*(t.n+1) > len(t.slots) {
		t.resize(t.n + 1)
	}
	t.n++
	t.insert(pid, v)
}

// Reset empties the table, keeping its memory.
func (t *Table[V]) Reset() {
	if t.n > 0 {
		clear(t.slots)
	}
	t.n = 0
}

// resize makes the table at least twice as large as n pids, rehashing
// those it holds.
func (t *Table[V]) resize(n int) {
	size := max(minSlots, len(t.slots))
	for size < 2*n {
		size *= 2
	}
	if size == len(t.slots) {
		return
	}
	old := t.slots
	t.slots, t.shift = make([]slot[V], size), uint(64-bits.TrailingZeros(uint(size)))
	for i := range old {
		if old[i].pid != 0 {
			t.insert(old[i].pid, old[i].v)
		}
	}
}

func (t *Table[V]) insert(pid int, v V) {
	i := t.home(pid)
	for t.slots[i].pid != 0 {
		i = (i + 1) & (len(t.slots) - 1)
	}
	t.slots[i] = slot[V]{pid, v}
}

// home is pid's first slot (Fibonacci hashing).
func (t *Table[V]) home(pid int) int {
	return int(uint64(pid) * 0x9E3779B97F4A7C15 >> t.shift)
}
