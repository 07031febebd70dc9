// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package sharedtrackertest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Fake is a tracker as the components see it, the processor's
// sharedtracker.Lookup and the receiver's sharedtracker.Feed, for unit
// tests of their logic without processes: its snapshot is empty (no
// publication, every pid unknown), its probes and scans end at once and
// read nothing, and the test hands the subscriber the changes it wants
// (Send). The tests with real processes use a real tracker (Host).
type Fake struct {
	Identity     procfs.HostIdentity // what HostIdentity returns
	AddViewErr   error               // what AddView fails with
	SubscribeErr error               // what Subscribe fails with

	mu     sync.Mutex
	probed [][]int
	scans  int
	views  int                // added and not removed
	sub    tracker.Subscriber // nil once unsubscribed
}

var (
	_ sharedtracker.Lookup  = (*Fake)(nil)
	_ sharedtracker.Feed    = (*Fake)(nil)
	_ sharedtracker.Tracker = (*Fake)(nil)
)

// Snapshot returns an empty snapshot.
func (*Fake) Snapshot() *tracker.Snapshot { return &tracker.Snapshot{} }

// Probe records pids and returns a closed channel.
func (f *Fake) Probe(pids []int, _ time.Duration) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probed = append(f.probed, slices.Clone(pids))
	return closed()
}

// ScanSoon counts the call and returns a closed channel.
func (f *Fake) ScanSoon() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scans++
	return closed()
}

func closed() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// AddView fails with AddViewErr, or counts the view; its values are never
// computed (the snapshot has no publication).
func (f *Fake) AddView(context.Context, any, func(*tracker.Publication) any) (tracker.View, error) {
	if f.AddViewErr != nil {
		return tracker.View{}, f.AddViewErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.views++
	return tracker.View{}, nil
}

// RemoveView counts the view removed.
func (f *Fake) RemoveView(context.Context, tracker.View) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.views--
	return nil
}

// Health says the tracker can do its job, for good.
func (*Fake) Health() (<-chan struct{}, error) { return nil, nil }

// Subscribe fails with SubscribeErr, or keeps fn for Send.
func (f *Fake) Subscribe(_ context.Context, fn tracker.Subscriber) (func(), error) {
	if f.SubscribeErr != nil {
		return nil, f.SubscribeErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sub = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.sub = nil
	}, nil
}

// HostIdentity returns Identity.
func (f *Fake) HostIdentity() procfs.HostIdentity { return f.Identity }

// Send hands changes and scan (nil: none) to the subscriber, as the
// tracker's loop does, and reports whether there was one to hand them to.
func (f *Fake) Send(changes []tracker.Change, scan *tracker.ScanStats) bool {
	f.mu.Lock()
	sub := f.sub
	f.mu.Unlock()
	if sub == nil {
		return false
	}
	sub(changes, scan)
	return true
}

// Probed returns the pids of each Probe call, in order.
func (f *Fake) Probed() [][]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.probed)
}

// Scans returns how many times ScanSoon was called.
func (f *Fake) Scans() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.scans
}

// Views returns how many views were added and not removed.
func (f *Fake) Views() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.views
}
