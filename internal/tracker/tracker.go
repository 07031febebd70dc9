// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/readpool"
)

// Tracker tracks the processes of one host. See the package documentation.
type Tracker struct {
	hostID procfs.HostIdentity // the identity of the host the tracker reads
	loop   *loop
}

// Option changes how New makes a tracker.
type Option func(*Tracker)

// WithClock makes the tracker read time from now (tests move it).
func WithClock(now func() time.Time) Option {
	return func(t *Tracker) { t.loop.now = now }
}

// WithScanStats makes the tracker call fn with the summary of every scan,
// the first included, on its loop: fn must be quick and must not block.
// Unlike a subscriber (Subscribe, which a started tracker takes), it misses
// no scan.
func WithScanStats(fn func(ScanStats)) Option {
	return func(t *Tracker) { t.loop.out.callOnScan(fn) }
}

// WithHostIdentity says which host the tracker reads (hostopen.Open reads
// it from the root path).
func WithHostIdentity(h procfs.HostIdentity) Option {
	return func(t *Tracker) { t.hostID = h }
}

// HostIdentity returns the identity of the host the tracker reads (fields
// "" where it could not be read).
func (t *Tracker) HostIdentity() procfs.HostIdentity { return t.hostID }

// New returns a tracker that reads host. Start starts it; Stop releases
// its event sources, started or not.
func New(host Host, cfg Config, logger *zap.Logger, opts ...Option) (*Tracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tracker: %w", err)
	}
	l := &loop{
		cfg:     cfg,
		host:    host,
		log:     logger,
		reports: newReports(logger, cfg),
		now:     time.Now,
		reg:     newRegistry(),
		probes:  probes{waiting: map[int][]*probeWait{}},
		probeC:  make(chan *probeWait, 64),
		scanC:   make(chan chan struct{}, 1),
		control: make(chan func()),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		scans:   scans{first: make(chan struct{})},
	}
	l.out.init()
	t := &Tracker{loop: l}
	for _, o := range opts {
		o(t)
	}
	l.pool = readpool.New(func(r *request) { read(host, r) }, cfg.ReadTimeout, cfg.MaxStalled, l.now)
	l.events.add() // the channels, for the sources the options added
	l.sched = scheduler{cfg: &l.cfg, clock: l.clock, reg: &l.reg, pool: l.pool, out: &l.out, events: &l.events, scans: &l.scans}
	return t, nil
}

// StuckReads returns how many reads were abandoned at their deadline and
// have not returned yet (each holds a reader goroutine).
func (t *Tracker) StuckReads() int { return t.loop.pool.Stuck() }

// Host returns the host the tracker reads.
func (t *Tracker) Host() Host { return t.loop.host }

// Start starts the readers, the event sources and the loop; the first
// scan begins after Config.InitialDelay (at once by default).
func (t *Tracker) Start() {
	if !t.loop.started.CompareAndSwap(false, true) {
		return
	}
	t.loop.epoch = t.loop.now()
	t.loop.pool.Start(t.loop.cfg.Readers)
	t.loop.events.run(t.loop.stop)
	go t.loop.run()
}

// Stop stops the tracker and closes its event sources (hostopen.Open's
// netlink socket and eBPF programs), started or not: whoever gets a
// tracker calls Stop, and Start does nothing after it. It returns once
// the loop has stopped, or with ctx's error; readers blocked in a read
// exit when the read returns.
func (t *Tracker) Stop(ctx context.Context) error {
	t.loop.stopOnce.Do(func() { close(t.loop.stop) })
	if t.loop.started.CompareAndSwap(false, true) {
		// Never started: no loop, reader or source runs.
		close(t.loop.done)
		t.loop.events.release(t.loop.log)
		return nil
	}
	select {
	case <-t.loop.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-returned(func() { t.loop.events.release(t.loop.log) }):
	case <-ctx.Done():
		return fmt.Errorf("stop event sources: %w", ctx.Err())
	}
	// Readers not blocked in a read exit right away.
	t.loop.pool.Quiesce(ctx)
	return nil
}

// returned runs fn on a goroutine and returns a channel closed when it returns.
func returned(fn func()) <-chan struct{} {
	c := make(chan struct{})
	go func() { fn(); close(c) }()
	return c
}

// Ready is closed once the first scan of the host has finished.
func (t *Tracker) Ready() <-chan struct{} { return t.loop.scans.ready() }

// Snapshot returns the current view of the publications. It takes no lock.
func (t *Tracker) Snapshot() *Snapshot { return t.loop.out.snapshot() }

// Rescan starts a scan now (or after the one in progress) and waits until
// it has finished.
func (t *Tracker) Rescan(ctx context.Context) error {
	done := make(chan struct{})
	start := func() {
		if !t.loop.scans.waitNext(done) {
			t.loop.startScan()
			t.loop.scans.wait(done)
		}
	}
	if err := t.loop.onLoop(ctx, start); err != nil {
		return err
	}
	return await(ctx, t.loop, done)
}

// WaitIdle waits until the tracker has nothing to read: no scan in progress,
// no request queued or running, no warning waiting for its descriptions.
func (t *Tracker) WaitIdle(ctx context.Context) error {
	for {
		idle := false
		if err := t.loop.onLoop(ctx, func() {
			idle = t.loop.scans.inProgress() == 0 && !t.loop.pool.Busy() && !t.loop.reports.describing()
		}); err != nil || idle {
			return err
		}
		if err := await(ctx, t.loop, time.After(5*time.Millisecond)); err != nil {
			return err
		}
	}
}

// AddView adds a view computed once per publication by fn (on the
// tracker's goroutine: fn must be quick and must not keep p), or returns
// the view added under the same key, which fn would compute alike (the
// pipelines of one processor share one). Every snapshot taken after
// AddView returns has it.
func (t *Tracker) AddView(ctx context.Context, key any, fn func(*Publication) any) (View, error) {
	var v View
	l := t.loop
	err := l.onLoop(ctx, func() {
		var added bool
		if v, added = l.out.addView(key, fn); added {
			l.reg.rewrite(l.out.withViews)
			l.out.recomputeViews()
			l.flush() // before AddView returns
		}
	})
	return v, err
}

// RemoveView stops computing v once every AddView of it is removed.
func (t *Tracker) RemoveView(ctx context.Context, v View) error {
	return t.loop.onLoop(ctx, func() { t.loop.out.removeView(v) })
}

// onLoop runs fn on the loop and waits for it.
func (l *loop) onLoop(ctx context.Context, fn func()) error {
	if !l.started.Load() {
		return errors.New("tracker not started")
	}
	ran := make(chan struct{})
	select {
	case l.control <- func() { fn(); close(ran) }:
	case <-l.done:
		return errStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	return await(ctx, l, ran)
}

// errStopped is what a call of a stopped tracker returns.
var errStopped = errors.New("tracker stopped")

// await waits for c, or returns errStopped or ctx's error when the loop
// stops or ctx ends first.
func await[T any](ctx context.Context, l *loop, c <-chan T) error {
	select {
	case <-c:
		return nil
	case <-l.done:
		return errStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// clock is the loop's time: nanoseconds since Start (never 0 after it).
func (l *loop) clock() int64 { return l.at(l.now()) }

// at is t on the loop's clock.
func (l *loop) at(t time.Time) int64 { return int64(t.Sub(l.epoch)) + 1 }

// flush publishes a new snapshot when something changed, hands the last
// scan's summary to the WithScanStats functions and it and the changes to
// the subscribers, then wakes the probes it ends: a probe returns once
// both the snapshot and the subscribers know what its reads found.
func (l *loop) flush() {
	l.sched.markRechecks()
	now := l.clock()
	l.out.publish(l.reg.publication, func(pid int) Answer {
		if p := l.reg.get(pid); p != nil {
			return l.sched.answer(p, now)
		}
		return AnswerGone
	})
	l.out.tell()
	l.probes.wake()
}
