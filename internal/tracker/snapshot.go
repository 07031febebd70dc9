// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
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
	answers pidtable.Nibbles
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
	return nil, Answer(s.answers.Get(pid))
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
