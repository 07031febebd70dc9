// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package trackertest

import (
	"context"
	"sync"
	"testing"

	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Recorder keeps what a tracker tells its subscribers, for a test to take.
type Recorder struct {
	mu      sync.Mutex
	changes []tracker.Change
	scans   []tracker.ScanStats
	c       chan struct{}
}

// Subscribe returns a Recorder subscribed to tr until the test ends.
func Subscribe(tb testing.TB, tr *tracker.Tracker) *Recorder {
	tb.Helper()
	r := &Recorder{c: make(chan struct{}, 1)}
	unsubscribe, err := tr.Subscribe(context.Background(), r.record)
	if err != nil {
		tb.Fatalf("subscribe: %v", err)
	}
	tb.Cleanup(unsubscribe)
	return r
}

func (r *Recorder) record(changes []tracker.Change, scan *tracker.ScanStats) {
	r.mu.Lock()
	r.changes = append(r.changes, changes...)
	if scan != nil {
		r.scans = append(r.scans, *scan)
	}
	r.mu.Unlock()
	select {
	case r.c <- struct{}{}:
	default:
	}
}

// C is signaled when there is something to take.
func (r *Recorder) C() <-chan struct{} { return r.c }

// Take returns the changes and scan summaries recorded since the last
// Take, in order.
func (r *Recorder) Take() ([]tracker.Change, []tracker.ScanStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changes, scans := r.changes, r.scans
	r.changes, r.scans = nil, nil
	return changes, scans
}
