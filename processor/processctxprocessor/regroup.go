// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// itemTree is one resource's items — log records, or profile samples — in
// their containers, as regrouping sees them: a sequence of leaves (a
// scope's records; a profile's samples). logsTree and profilesTree
// implement it; regroupResource is the one algorithm over both.
type itemTree interface {
	leaves() int
	// items returns the number of items of a leaf.
	items(leaf int) int
	// pid returns the pid of item i of a leaf, 0 when it names none.
	pid(leaf, i int) int
	// noteKeys notes the pid-like keys of item i of a leaf, which names
	// no pid (profiles note their dictionary's once per batch instead).
	noteKeys(leaf, i int, seen *missKeys)
	// newResource appends the next group's resource (a copy of the
	// original's) to the signal's resources and returns it; pid is the
	// group's host pid.
	newResource(pid int) pcommon.Resource
	// moveLeaf moves item i of a leaf to group groups[i] (-1: it stays),
	// into copies of its containers under the group's resource, made with
	// room for counts[g] items.
	moveLeaf(leaf int, groups []int32, counts []int)
	// prune removes the containers regrouping emptied.
	prune()
}

// regroupScratch is the memory regrouping reuses from resource to
// resource within a batch.
type regroupScratch struct {
	groups []int32    // group of each item, in order; -1: it stays
	procs  []resolved // the process of each group
	counts []int      // items of each group in the current leaf
	noPID  int        // items that name no pid
}

// regroupResource looks at the pids of the items of a resource without a
// pid of its own. When they all belong to one process the resource is
// enriched in place; otherwise each process's items move to a resource of
// their own (the original resource's attributes plus the context), in
// copies of their containers, and items without a context stay. It
// returns waiting when a pid is being read (nothing was changed or
// counted), and emptied when the resource lost every item (the caller
// removes it).
func (b *batch) regroupResource(res pcommon.Resource, facts *resourceFacts, t itemTree) (waiting, emptied bool) {
	s := &b.regroup
	b.groupItems(facts, t)
	moved := 0
	for _, r := range b.memo.resolved {
		if b.waiting(r.outcome) {
			return true, false
		}
		if r.e != nil {
			moved += r.items
		}
	}
	b.missed(res.Attributes(), s.noPID)
	for i := range b.memo.resolved {
		if r := &b.memo.resolved[i]; r.e != nil {
			b.countEnriched(r.e, r.items)
		} else {
			b.count(r.outcome, r.items)
		}
	}
	switch {
	case moved == 0:
		return false, false
	case len(s.procs) == 1 && moved == len(s.groups):
		// Every item is of one process: enrich in place.
		b.enrichGroup(res, &s.procs[0])
		return false, false
	}
	b.split(t)
	return false, moved == len(s.groups)
}

// groupItems resolves the pid of every item and notes its group: one per
// process with a context, keyed by host pid (a container pid and the host
// pid of one process are one group).
func (b *batch) groupItems(facts *resourceFacts, t itemTree) {
	s := &b.regroup
	s.groups, s.procs, s.noPID = s.groups[:0], s.procs[:0], 0
	b.memo.reset()
	for leaf := range t.leaves() {
		for i := range t.items(leaf) {
			g := int32(-1)
			if pid := t.pid(leaf, i); pid != 0 {
				g = b.groupOf(b.resolveMemo(facts, pid))
			} else {
				s.noPID++
				if b.missDue {
					t.noteKeys(leaf, i, &b.missKeys)
				}
			}
			s.groups = append(s.groups, g)
		}
	}
}

// groupOf counts an item of a resolved pid and returns its group, -1 for
// none.
func (b *batch) groupOf(r *resolved) int32 {
	r.items++
	if r.e == nil || r.group >= 0 {
		return r.group
	}
	s := &b.regroup
	i := slices.IndexFunc(s.procs, func(p resolved) bool { return p.host == r.host })
	if i < 0 {
		i = len(s.procs)
		s.procs = append(s.procs, *r)
	}
	r.group = int32(i)
	return r.group
}

// enrichGroup enriches the resource of one process's group: its items'
// pids are a host agent's, not verified, and the resource had no pid.
func (b *batch) enrichGroup(res pcommon.Resource, r *resolved) {
	b.enrichWith(res, r.e, false, true, r.host, r.host)
}

// split moves each group's items into its own resource.
func (b *batch) split(t itemTree) {
	s := &b.regroup
	for g := range s.procs {
		b.enrichGroup(t.newResource(s.procs[g].host), &s.procs[g])
	}
	s.counts = slices.Grow(s.counts[:0], len(s.procs))[:len(s.procs)]
	next := 0
	for leaf := range t.leaves() {
		groups := s.groups[next : next+t.items(leaf)]
		next += len(groups)
		clear(s.counts)
		for _, g := range groups {
			if g >= 0 {
				s.counts[g]++
			}
		}
		if slices.ContainsFunc(s.counts, func(n int) bool { return n > 0 }) {
			t.moveLeaf(leaf, groups, s.counts)
		}
	}
	t.prune()
}

// itemSlice is a pdata slice of items (plog.LogRecordSlice,
// pprofile.SampleSlice) of element type E.
type itemSlice[E any, S any] interface {
	At(i int) E
	AppendEmpty() E
	RemoveIf(f func(E) bool)
	MoveAndAppendTo(dest S)
}

// moveItems moves item i of src to the end of dst[groups[i]] for every
// item with a group (>= 0), through pdata's API: each moved item is a new
// element (MoveTo(AppendEmpty()): make dst's room first), and src keeps
// the others in their order. A leaf all of whose items go to one group
// moves at once.
func moveItems[E interface{ MoveTo(E) }, S itemSlice[E, S]](src S, groups []int32, dst []S) {
	if g := groups[0]; g >= 0 && !slices.ContainsFunc(groups, func(h int32) bool { return h != g }) {
		src.MoveAndAppendTo(dst[g])
		return
	}
	for i, g := range groups {
		if g >= 0 {
			src.At(i).MoveTo(dst[g].AppendEmpty())
		}
	}
	i := 0
	src.RemoveIf(func(E) bool {
		moved := groups[i] >= 0
		i++
		return moved
	})
}

// marks flags containers (by index in their slice) emptied by regrouping.
type marks []bool

func (m *marks) set(i int) {
	for len(*m) <= i {
		*m = append(*m, false)
	}
	(*m)[i] = true
}

// removeMarked returns a RemoveIf predicate removing the marked elements,
// the first element being the first-th of m: RemoveIf calls it once per
// element, in order.
func removeMarked[T any](m marks, first int) func(T) bool {
	i := first
	return func(T) bool {
		r := i < len(m) && m[i]
		i++
		return r
	}
}
