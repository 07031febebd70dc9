// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"context"
	"time"
)

// ChangeKind says what happened to a publication.
type ChangeKind uint8

// Published is a context the subscriber has not seen (first sight, or
// again after it ended); Invalidated, something unreadable (invalid, or
// over a limit) published instead.
const (
	Published   ChangeKind = iota
	Updated                // a new version of the context
	Unpublished            // the process lives on but its context is gone
	Invalidated
	Exited // the process exited (or its pid names another process)
)

// Ends reports whether the change ends the publication.
func (k ChangeKind) Ends() bool { return k >= Unpublished }

// Change is one change of a publication: the publication after it (the
// last one read, with EndedAt set, for a change that ends it).
type Change struct {
	Kind        ChangeKind
	Publication *Publication
	// Prompt: the kernel told of it (a process or publication event) or a
	// lookup asked for it, and it is passed on at once; the others, found
	// by polling (scans, young re-reads), may wait to go with the next.
	Prompt bool
}

// ScanStats summarizes one scan of the host.
type ScanStats struct {
	// Began is when the scan started; Duration how long its reads took.
	Began    time.Time
	Duration time.Duration
	// Listed says whether the scan listed the host: while events tell of
	// every fork and exit, most scans do not (Processes is then 0).
	Listed     bool
	Processes  int // pids listed
	Publishers int // live publications after the scan
	// Reads counts, by outcome, the reads since the previous scan finished:
	// the scan's, and those events and probes caused meanwhile.
	Reads [NumOutcomes]int64
	// Denied and Quarantined count the processes that cannot be read for
	// lack of permission, and those quarantined after a stalled read.
	Denied, Quarantined int
	// Tracked is what the tracker keeps after the scan: every process it
	// knows plus the ended publications within their grace period
	// (Retained of them). On a host whose processes come and go it returns
	// to its level once the grace period has passed.
	Tracked, Retained int
}

// Subscriber receives a tracker's changes, in order, and the summary of
// each scan (nil between scans). It is called on the tracker's loop: it
// must keep what it needs and return, never block. The slice is shared
// and must not be modified.
type Subscriber func(changes []Change, scan *ScanStats)

// Subscribe calls fn with a Published change for every live publication,
// then with every change and scan summary, until unsubscribe is called.
func (t *Tracker) Subscribe(ctx context.Context, fn Subscriber) (unsubscribe func(), err error) {
	err = t.loop.onLoop(ctx, func() {
		var initial []Change
		for _, p := range t.loop.reg.publications {
			initial = append(initial, Change{Kind: Published, Publication: p})
		}
		unsubscribe = t.loop.out.subscribe(&subscriber{fn: fn})
		if len(initial) > 0 {
			fn(initial, nil)
		}
	})
	if err != nil {
		return nil, err
	}
	return unsubscribe, nil
}
