// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"slices"

	"github.com/processctx/otelcol-processctx/internal/pidtable"
)

// Snapshot is what the tracker knew at one moment: the publications and
// what the reads of the other pids found. It is immutable: the tracker
// publishes a new one after every change, atomically, and a lookup on one
// snapshot always gives the same answer. Readers take no lock.
type Snapshot struct {
	// byPID holds every live publication and the ended ones within their
	// grace period (unless the pid names another process since).
	byPID pidTable
	// byContainer indexes byPID by (container.id, pid in the container).
	byContainer map[ContainerPid]*Publication
	// answers is what lookups of the pids without a publication answer.
	answers answerTable
	// Scanned reports whether the first scan of the host has finished.
	Scanned bool
}

// Lookup returns the publication of pid, or nil and what is known of pid:
// AnswerNoContext (known to publish nothing), another failure outcome, or
// AnswerUnknown (not seen yet, or a read that may find a publication is
// under way or due: Tracker.Probe reads it and waits for it). It takes no
// lock and does not allocate.
func (s *Snapshot) Lookup(pid int) (*Publication, Answer) {
	if p := s.byPID.get(pid); p != nil {
		return p, AnswerOK
	}
	return nil, s.answers.get(pid)
}

// InContainer returns the publication of the process that is vpid in the
// container cid, or nil.
func (s *Snapshot) InContainer(cid string, vpid int) *Publication {
	return s.byContainer[ContainerPid{cid, vpid}]
}

// Len returns the number of publications (live and ended).
func (s *Snapshot) Len() int { return len(s.byPID.all) }

// All calls fn for every publication until fn returns false.
func (s *Snapshot) All(fn func(*Publication) bool) {
	for _, p := range s.byPID.all {
		if !fn(p) {
			return
		}
	}
}

// pidTable is a hash table from pid to publication, built once per
// snapshot (a pidtable.Table: on the hot path of every resource the
// processor enriches), and the publications in a list.
type pidTable struct {
	index pidtable.Table[*Publication]
	all   []*Publication
}

func newPidTable(n int) pidTable {
	return pidTable{index: pidtable.New[*Publication](n), all: make([]*Publication, 0, n)}
}

func (t *pidTable) add(pid int, p *Publication) {
	t.index.Add(pid, p)
	t.all = append(t.all, p)
}

func (t *pidTable) get(pid int) *Publication {
	p, _ := t.index.Get(pid)
	return p
}

// answerTable maps pids to what their lookups answer (an Answer), 4 bits
// per pid, in chunks of chunkPids allocated on first use. Snapshots share
// the chunks that did not change between them: a new snapshot copies only
// the chunks of the pids whose answer changed.
type answerTable struct {
	chunks []*answerChunk // by pid / chunkPids; nil: every pid unknown
}

const (
	chunkPids   = 4096
	pidsPerWord = 16 // 4 bits each
)

type answerChunk [chunkPids / pidsPerWord]uint64

func (t *answerTable) get(pid int) Answer {
	ci := pid / chunkPids
	if pid <= 0 || ci >= len(t.chunks) || t.chunks[ci] == nil {
		return AnswerUnknown
	}
	i := pid % chunkPids
	return Answer(t.chunks[ci][i/pidsPerWord] >> (4 * (i % pidsPerWord)) & 0xf)
}

// answerWriter builds a snapshot's table from the previous one's.
type answerWriter struct {
	next   answerTable
	own    bool  // next.chunks is not shared
	copied []int // the chunks of next that are not shared
}

// set records o for pid.
func (w *answerWriter) set(pid int, o Answer) {
	if !ValidPID(pid) {
		return
	}
	ci := pid / chunkPids
	if ci >= len(w.next.chunks) && o == AnswerUnknown {
		return // unknown already
	}
	if !w.own {
		w.next.chunks = append(make([]*answerChunk, 0, max(ci+1, len(w.next.chunks))), w.next.chunks...)
		w.own = true
	}
	if ci >= len(w.next.chunks) {
		w.next.chunks = append(w.next.chunks, make([]*answerChunk, ci+1-len(w.next.chunks))...)
	}
	c := w.next.chunks[ci]
	switch {
	case c == nil && o == AnswerUnknown:
		return
	case c == nil:
		c = new(answerChunk)
		w.copied = append(w.copied, ci)
	case !slices.Contains(w.copied, ci):
		cp := *c
		c = &cp
		w.copied = append(w.copied, ci)
	}
	w.next.chunks[ci] = c
	i := pid % chunkPids
	shift := 4 * (i % pidsPerWord)
	c[i/pidsPerWord] = c[i/pidsPerWord]&^(0xf<<shift) | uint64(o&0xf)<<shift
}
