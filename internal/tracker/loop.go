package tracker

import (
	"time"

	"go.uber.org/zap"
)

// run is the tracker's loop: it owns the tracker's state, and acts on one
// thing at a time (a tick, a result, an event, a call), then publishes
// what changed (flush).
func (t *Tracker) run() {
	defer close(t.done)
	defer t.pool.close()
	if t.cfg.InitialDelay > 0 {
		select {
		case <-time.After(t.cfg.InitialDelay):
		case <-t.stop:
			return
		}
	}
	t.startScan()
	ticker := time.NewTicker(t.cfg.CollectionInterval)
	defer ticker.Stop()
	var tm loopTimers
	defer tm.stop()
	for {
		tm.armScanTimeout(t)
		var normal, urgent chan<- *job
		var nextNormal, nextUrgent *job
		if len(t.jobs.backlog) > 0 {
			normal, nextNormal = t.pool.normal, t.jobs.backlog[0]
		}
		if len(t.jobs.urgent) > 0 {
			urgent, nextUrgent = t.pool.urgent, t.jobs.urgent[0]
		}
		select {
		case <-t.stop:
			t.probes.cancel()
			return
		case <-ticker.C:
			if t.scans.cur == nil {
				t.startScan()
			}
		case j := <-t.pool.results:
			t.applyJob(j)
		case pid := <-t.pool.released:
			t.released(pid)
		case w := <-t.probeC:
			t.probe(w)
		case done := <-t.scanC:
			t.scanSoon(done)
		case fn := <-t.control:
			// A call sees the events received before it: select picks
			// among ready channels at random.
			t.drainEvents()
			fn()
		case normal <- nextNormal:
			t.jobs.backlog = pop(t.jobs.backlog)
			t.jobs.out++
		case urgent <- nextUrgent:
			t.jobs.urgent = pop(t.jobs.urgent)
			t.jobs.out++
		case <-tm.superviseC:
			tm.superviseC = nil
			for _, j := range t.pool.abandonOverdue() {
				t.applyJob(j)
			}
		case ev := <-t.events.queue:
			// And whatever else is queued: a burst costs one snapshot, not
			// one per event.
			t.handle(ev)
			t.drainEvents()
		case <-t.events.lostWake:
			t.onLost()
		case st := <-t.events.stopped:
			t.onSourceStopped(st)
		case <-tm.planC:
			tm.planC = nil
			t.runPlans()
		case <-tm.scanTimeoutC:
			tm.scanTimeoutC = nil
			t.scanTimedOut(tm.timeoutFor)
		}
		tm.armPlans(t)
		tm.armSupervise(t)
		t.flush()
	}
}

// drainEvents handles the events queued now.
func (t *Tracker) drainEvents() {
	for range eventQueueSize {
		select {
		case ev := <-t.events.queue:
			t.handle(ev)
		default:
			return
		}
	}
}

// scanTimedOut ends the scan gen that overran Config.Timeout; its reads
// still out are applied when they come back.
func (t *Tracker) scanTimedOut(gen uint32) {
	if t.scans.cur != nil && t.scans.cur.gen == gen {
		t.log.Debug("Scan timed out: the reads still out are applied when they come back",
			zap.Duration("timeout", t.cfg.Timeout), zap.Int("jobs_out", t.scans.cur.pending))
		t.finishScan()
	}
}

func pop(q []*job) []*job {
	q[0] = nil
	if len(q) == 1 {
		return q[:0]
	}
	return q[1:]
}

// loopTimers are the loop's timers; a nil channel is a timer not armed.
type loopTimers struct {
	// plans fires when the earliest planned read or recheck falls due (at
	// planAt);
	// supervise, while jobs are out, to abandon overdue reads; scanTimeout
	// when the scan timeoutFor overran Config.Timeout.
	plans, supervise, scanTimeout   *time.Timer
	planC, superviseC, scanTimeoutC <-chan time.Time
	planAt                          int64
	timeoutFor                      uint32
}

// arm (re)starts *tm, made on first use, to fire after d.
func arm(tm **time.Timer, d time.Duration) <-chan time.Time {
	if *tm == nil {
		*tm = time.NewTimer(d)
	} else {
		(*tm).Reset(d)
	}
	return (*tm).C
}

func (tm *loopTimers) armScanTimeout(t *Tracker) {
	if t.cfg.Timeout > 0 && t.scans.cur != nil && t.scans.cur.gen != tm.timeoutFor {
		tm.timeoutFor = t.scans.cur.gen
		tm.scanTimeoutC = arm(&tm.scanTimeout, t.cfg.Timeout)
	}
}

func (tm *loopTimers) armPlans(t *Tracker) {
	if at, ok := t.nextPlanned(); ok && (tm.planC == nil || at < tm.planAt) {
		// With a fake clock (tests) the timer fires after the fake delay
		// and finds nothing due until the clock moves.
		tm.planC, tm.planAt = arm(&tm.plans, max(time.Duration(at-t.clock()), time.Millisecond)), at
	}
}

func (tm *loopTimers) armSupervise(t *Tracker) {
	switch {
	case t.jobs.out > 0 && tm.superviseC == nil:
		tm.superviseC = arm(&tm.supervise, t.pool.superviseTick())
	case t.jobs.out == 0 && tm.superviseC != nil:
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
