// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pidtable

import (
	"iter"
	"math/bits"
)

// Trie maps pids to values of type V persistently: With and Without
// return a new trie that shares with the old one every node they did not
// change, so that a change costs the few nodes on one pid's path (a copy
// of each, at most 64 entries) and a trie, once made, never changes: any
// number of goroutines may read it without a lock while another makes
// the next. The tracker's snapshot of publications by pid is one; a
// lookup is four loads and popcounts, no hashing.
//
// Pids are the keys from 1 to MaxTriePID; others are never found and
// never added. The zero value is an empty trie.
type Trie[V any] struct {
	root *trieNode[V]
	n    int
}

// MaxTriePID is the largest pid a Trie holds: 2^24-1, above Linux's
// PID_MAX_LIMIT (2^22).
const MaxTriePID = 1<<(trieLevels*trieBits) - 1

const (
	trieBits   = 6 // a node's 64 children, one bit each in its bitmap
	trieLevels = 4
	trieTop    = (trieLevels - 1) * trieBits // the shift of the root's bits
)

// trieNode is a node of trieLevels-1 levels above the values: kids holds a
// child per bit of bits, in order; on the last level, vals a value.
type trieNode[V any] struct {
	bits uint64
	kids []*trieNode[V]
	vals []V
}

// Len returns the number of pids in the trie.
func (t Trie[V]) Len() int { return t.n }

// Get returns the value of pid and whether pid is in the trie.
func (t Trie[V]) Get(pid int) (V, bool) {
	n := t.root
	if pid <= 0 || pid > MaxTriePID {
		n = nil
	}
	for shift := trieTop; n != nil; shift -= trieBits {
		bit := uint64(1) << (pid >> shift & (1<<trieBits - 1))
		if n.bits&bit == 0 {
			break
		}
		i := bits.OnesCount64(n.bits & (bit - 1))
		if shift == 0 {
			return n.vals[i], true
		}
		n = n.kids[i]
	}
	var zero V
	return zero, false
}

// With returns a trie where pid has the value v; t is unchanged.
func (t Trie[V]) With(pid int, v V) Trie[V] {
	if pid <= 0 || pid > MaxTriePID {
		return t
	}
	root, added := t.root.with(pid, trieTop, v)
	if added {
		t.n++
	}
	t.root = root
	return t
}

// Without returns a trie without pid; t is unchanged.
func (t Trie[V]) Without(pid int) Trie[V] {
	if _, ok := t.Get(pid); !ok {
		return t
	}
	t.root = t.root.without(pid, trieTop)
	t.n--
	return t
}

// All yields every pid and its value, in increasing pid order.
func (t Trie[V]) All() iter.Seq2[int, V] {
	return func(yield func(int, V) bool) { t.root.all(0, trieTop, yield) }
}

// with returns a copy of n (nil: an empty node) with pid's value v below
// it, and whether pid was added rather than replaced.
func (n *trieNode[V]) with(pid, shift int, v V) (*trieNode[V], bool) {
	var was trieNode[V]
	if n != nil {
		was = *n
	}
	bit := uint64(1) << (pid >> shift & (1<<trieBits - 1))
	i, had := bits.OnesCount64(was.bits&(bit-1)), was.bits&bit != 0
	c := &trieNode[V]{bits: was.bits | bit}
	if shift == 0 {
		c.vals = copyWith(was.vals, i, had, v)
		return c, !had
	}
	var kid *trieNode[V]
	if had {
		kid = was.kids[i]
	}
	kid, added := kid.with(pid, shift-trieBits, v)
	c.kids = copyWith(was.kids, i, had, kid)
	return c, added
}

// without returns a copy of n without pid, which is below it; nil when
// nothing is left.
func (n *trieNode[V]) without(pid, shift int) *trieNode[V] {
	bit := uint64(1) << (pid >> shift & (1<<trieBits - 1))
	i := bits.OnesCount64(n.bits & (bit - 1))
	c := &trieNode[V]{bits: n.bits}
	if shift == 0 {
		c.bits &^= bit
		c.vals = copyWithout(n.vals, i)
	} else if kid := n.kids[i].without(pid, shift-trieBits); kid != nil {
		c.kids = copyWith(n.kids, i, true, kid)
	} else {
		c.bits &^= bit
		c.kids = copyWithout(n.kids, i)
	}
	if c.bits == 0 {
		return nil
	}
	return c
}

func (n *trieNode[V]) all(prefix, shift int, yield func(int, V) bool) bool {
	if n == nil {
		return true
	}
	for b, i := n.bits, 0; b != 0; b &= b - 1 {
		pid := prefix | bits.TrailingZeros64(b)<<shift
		if shift == 0 && !yield(pid, n.vals[i]) || shift > 0 && !n.kids[i].all(pid, shift-trieBits, yield) {
			return false
		}
		i++
	}
	return true
}

// copyWith returns a copy of s with x at i, replacing what is there if
// replace, else inserted.
func copyWith[T any](s []T, i int, replace bool, x T) []T {
	if replace {
		c := make([]T, len(s))
		copy(c, s)
		c[i] = x
		return c
	}
	c := make([]T, len(s)+1)
	copy(c, s[:i])
	c[i] = x
	copy(c[i+1:], s[i:])
	return c
}

// copyWithout returns a copy of s without its element i.
func copyWithout[T any](s []T, i int) []T {
	c := make([]T, len(s)-1)
	copy(c, s[:i])
	copy(c[i:], s[i+1:])
	return c
}
