// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// loop is the tracker's goroutine and the parts it wires: it hands each
// trigger (a tick, a read back, an event, a probe, a call) to the parts
// that own what it changes, through their methods only, then publishes
// what changed (flush). The parts (docs/internals.md draws them): reg
// (registry.go), sched (schedule.go, plan.go: every "when"), scans
// (scan.go), pool (internal/readpool, of read.go's requests), out
// (outputs.go), probes (probe.go), events (sources.go), reports
// (reports.go, health.go). The loop's own code is wiring: apply.go
// applies what reads found, events.go what events tell, scan.go starts
// and finishes scans.
type loop struct {
	cfg   Config
	host  Host
	log   *zap.Logger
	now   func() time.Time
	epoch time.Time // the clock's zero: Start

	reg     registry
	sched   scheduler
	scans   scans
	pool    *pool
	out     outputs
	probes  probes
	events  events
	reports reports

	// From other goroutines: Probe, ScanSoon, calls that run on the loop
	// (onLoop), Stop.
	probeC   chan *probeWait
	scanC    chan chan struct{}
	control  chan func()
	stop     chan struct{}
	done     chan struct{}
	started  atomic.Bool
	stopOnce sync.Once
}

// run is the loop's goroutine.
func (l *loop) run() {
	defer close(l.done)
	defer l.pool.Close()
	if l.cfg.InitialDelay > 0 {
		select {
		case <-time.After(l.cfg.InitialDelay):
		case <-l.stop:
			return
		}
	}
	l.startScan()
	ticker := time.NewTicker(l.cfg.CollectionInterval)
	defer ticker.Stop()
	var tm loopTimers
	defer tm.stop()
	for {
		tm.arm(l)
		select {
		case <-l.stop:
			l.probes.cancel()
			return
		case <-ticker.C:
			if l.scans.inProgress() == 0 {
				l.startScan()
			}
		case j := <-l.pool.Results():
			l.applyJob(j)
		case r := <-l.pool.Released():
			l.sched.unstick(r.PID, l.at(r.Returned), r.Took)
		case w := <-l.probeC:
			l.probe(w)
		case done := <-l.scanC:
			l.scanSoon(done)
		case fn := <-l.control:
			// A call sees the events received before it: select picks
			// among ready channels at random.
			l.drainEvents()
			fn()
		case <-tm.superviseC:
			tm.superviseC = nil
			for _, j := range l.pool.AbandonOverdue() {
				l.applyJob(j)
			}
		case ev := <-l.events.queue:
			// And whatever else is queued: a burst costs one snapshot, not
			// one per event.
			l.handle(ev)
			l.drainEvents()
		case <-l.events.wake:
			l.onLost()
		case st := <-l.events.done:
			l.onSourceStopped(st)
		case <-tm.planC:
			tm.planC = nil
			l.sched.runDue()
		case <-tm.scanTimeoutC:
			tm.scanTimeoutC = nil
			l.scanTimedOut(tm.timeoutFor)
		}
		l.flush()
	}
}

// drainEvents handles the events queued now.
func (l *loop) drainEvents() {
	for range eventQueueSize {
		select {
		case ev := <-l.events.queue:
			l.handle(ev)
		default:
			return
		}
	}
}

// scanTimedOut ends the scan gen that overran Config.Timeout; its reads
// still out are applied when they come back.
func (l *loop) scanTimedOut(gen uint32) {
	if l.scans.inProgress() == gen {
		l.log.Debug("Scan timed out: the reads still out are applied when they come back",
			zap.Duration("timeout", l.cfg.Timeout), zap.Int("jobs_out", l.scans.pending()))
		l.finishScan()
	}
}

// loopTimers are the loop's timers; a nil channel is a timer not armed.
type loopTimers struct {
	// plans fires when the earliest planned read or recheck falls due (at
	// planAt); supervise, while jobs are out, to abandon overdue reads;
	// scanTimeout when the scan timeoutFor overran Config.Timeout.
	plans, supervise, scanTimeout   *time.Timer
	planC, superviseC, scanTimeoutC <-chan time.Time
	planAt                          int64
	timeoutFor                      uint32
}

// set (re)starts *tm, made on first use, to fire after d.
func set(tm **time.Timer, d time.Duration) <-chan time.Time {
	if *tm == nil {
		*tm = time.NewTimer(d)
	} else {
		(*tm).Reset(d)
	}
	return (*tm).C
}

// arm arms the timers for what the loop waits for now.
func (tm *loopTimers) arm(l *loop) {
	if gen := l.scans.inProgress(); l.cfg.Timeout > 0 && gen != 0 && gen != tm.timeoutFor {
		tm.timeoutFor = gen
		tm.scanTimeoutC = set(&tm.scanTimeout, l.cfg.Timeout)
	}
	switch at, ok := l.sched.nextDue(); {
	case !ok && tm.planC != nil:
		tm.plans.Stop() // what it was for is gone
		tm.planC = nil
	case ok && (tm.planC == nil || at != tm.planAt):
		// With a fake clock (tests) the timer fires after the fake delay
		// and finds nothing due until the clock moves.
		tm.planC, tm.planAt = set(&tm.plans, max(time.Duration(at-l.clock()), time.Millisecond)), at
	}
	switch {
	case l.pool.Busy() && tm.superviseC == nil:
		tm.superviseC = set(&tm.supervise, l.pool.SuperviseTick())
	case !l.pool.Busy() && tm.superviseC != nil:
		tm.supervise.Stop()
		tm.superviseC = nil
	}
}

func (tm *loopTimers) stop() {
	for _, timer := range []*time.Timer{tm.plans, tm.supervise, tm.scanTimeout} {
		if timer != nil {
			timer.Stop()
		}
	}
}
