// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"iter"
	"maps"
)

// registry is the processes the tracker knows: one proc per pid, an
// incarnation of it (proc.serial: an exec or the reuse of the pid makes
// another, and reads of the one before are of the past), and the index of
// those with an identity (proc.identity), from which snapshots are built
// without going through every process (5x the cost with 5,000 processes,
// BenchmarkSnapshotRebuild). It alone adds, renews and drops procs and
// gives or takes their identity, so the index and the procs agree. The
// loop calls it; the scheduler looks procs up in it.
type registry struct {
	procs      map[int]*proc
	serials    uint32 // names incarnations
	identified map[int]struct{}
}

func newRegistry() registry {
	return registry{procs: map[int]*proc{}, identified: map[int]struct{}{}}
}

func (r *registry) get(pid int) *proc          { return r.procs[pid] }
func (r *registry) all() iter.Seq2[int, *proc] { return maps.All(r.procs) }
func (r *registry) size() int                  { return len(r.procs) }
func (r *registry) drop(pid int)               { delete(r.procs, pid) } // its identity taken

func (r *registry) add(pid int, listedIn uint32) *proc {
	r.serials++
	p := &proc{serial: r.serials, listedIn: listedIn}
	r.procs[pid] = p
	return p
}

// renew makes p, whose identity was taken, a new incarnation of its pid,
// whose start time is start (0: not known yet). What is the pid's rather
// than the image's stays: its listing and inode, the time of its last
// publication event (an older exit is a previous process's) and what its
// schedule keeps (schedule.renewed).
func (r *registry) renew(p *proc, start uint64, sameProcess bool) {
	r.serials++
	*p = proc{serial: r.serials, listedIn: p.listedIn, ino: p.ino, start: start, imageAt: p.imageAt,
		sched: p.sched.renewed(sameProcess)}
}

// identify gives p the identity pub; unidentify takes it and returns it.
func (r *registry) identify(pid int, p *proc, pub *Publication) {
	p.identity = pub
	r.identified[pid] = struct{}{}
}

func (r *registry) unidentify(pid int, p *proc) *Publication {
	pub := p.identity
	p.identity = nil
	delete(r.identified, pid)
	return pub
}

// publication returns the live publication (identity) of pid, or nil.
func (r *registry) publication(pid int) *Publication {
	if p := r.procs[pid]; p != nil {
		return p.identity
	}
	return nil
}

// publications calls yield for every live publication (every identity).
func (r *registry) publications(yield func(int, *Publication) bool) {
	for pid := range r.identified {
		if !yield(pid, r.procs[pid].identity) {
			return
		}
	}
}

// contexts returns the number of live publications of contexts (not
// identities from an environment).
func (r *registry) contexts() int {
	n := 0
	for pid := range r.identified {
		if r.procs[pid].hasContext() {
			n++
		}
	}
	return n
}

// rewrite replaces every identity p by fn(p) (with the views' values).
func (r *registry) rewrite(fn func(*Publication) *Publication) {
	for pid := range r.identified {
		p := r.procs[pid]
		p.identity = fn(p.identity)
	}
}
