// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"hash/maphash"

	"github.com/benbjohnson/immutable"

	"github.com/processctx/otelcol-processctx/internal/pidtable"
)

// Snapshot is what the tracker knew at one moment: the publications and
// what the reads of the other pids found. It is immutable: the tracker
// publishes a new one after every change, atomically, and a lookup on one
// snapshot always gives the same answer. Readers take no lock.
//
// Its tables are persistent: a new snapshot shares with the one before it
// everything a change did not touch, so that a change costs the logarithm
// of the host's publications, not their number (outputs.publish).
type Snapshot struct {
	// byPID holds every live publication and the ended ones within their
	// grace period (unless the pid names another process since).
	byPID pidtable.Trie[*Publication]
	// byContainer indexes byPID by (container.id, pid in the container).
	byContainer *immutable.Map[ContainerPid, *Publication]
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
	if p, ok := s.byPID.Get(pid); ok {
		return p, AnswerOK
	}
	return nil, Answer(s.answers.Get(pid))
}

// InContainer returns the publication of the process that is vpid in the
// container cid, or nil.
func (s *Snapshot) InContainer(cid string, vpid int) *Publication {
	if s.byContainer == nil {
		return nil
	}
	p, _ := s.byContainer.Get(ContainerPid{cid, vpid})
	return p
}

// Len returns the number of publications (live and ended).
func (s *Snapshot) Len() int { return s.byPID.Len() }

// All calls fn for every publication, by pid, until fn returns false.
func (s *Snapshot) All(fn func(*Publication) bool) {
	for _, p := range s.byPID.All() {
		if !fn(p) {
			return
		}
	}
}

// emptySnapshot is the snapshot before the first: no publication, no
// answer.
func emptySnapshot() *Snapshot {
	return &Snapshot{
		byContainer: immutable.NewMap[ContainerPid, *Publication](containerPidHasher{maphash.MakeSeed()}),
	}
}

// containerPidHasher hashes the keys of Snapshot.byContainer.
type containerPidHasher struct{ seed maphash.Seed }

func (h containerPidHasher) Hash(k ContainerPid) uint32 {
	x := maphash.Comparable(h.seed, k)
	return uint32(x ^ x>>32)
}

func (containerPidHasher) Equal(a, b ContainerPid) bool { return a == b }
