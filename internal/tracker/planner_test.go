// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"github.com/processctx/otelcol-processctx/internal/readpool"

	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// The planner, case by case: every trigger, on every kind of process
// state, gives the read planned (cause, time, series step) or none.
func TestPlanner(t *testing.T) {
	const now = int64(time.Hour)
	ms := int64(time.Millisecond)
	sec := int64(time.Second)

	fresh := func() *proc { return &proc{} }
	silent := func() *proc { // read, publishes nothing, environment read, looked at long ago
		return &proc{start: 100, ino: 7, found: OutcomeNoContext, env: envRead, sched: schedule{lookedAt: now - int64(30*time.Minute)}}
	}
	with := func(p *proc, f func(*proc)) *proc { f(p); return p }
	publisher := with(silent(), func(p *proc) { p.identity, p.found = &Publication{Source: SourceContext}, OutcomeOK })
	envNamed := with(silent(), func(p *proc) { p.identity, p.found = &Publication{Source: SourceEnvironment}, OutcomeOK })
	kernel := with(silent(), func(p *proc) { p.kernel = true })
	reading := with(silent(), func(p *proc) { p.sched.reading = causeRescan })
	quarantined := with(silent(), func(p *proc) { p.sched.stall = &stall{until: now + 30*sec, strikes: 1} })
	stuck := with(silent(), func(p *proc) { p.sched.stall = &stall{stuck: stuckMemFile} })
	eventGap := with(silent(), func(p *proc) { p.sched.eventReadAt = now - 4*ms })
	forked := &proc{found: OutcomeNoContext} // known from a fork event only
	recent := with(silent(), func(p *proc) { p.sched.lookedAt = now - sec })
	envUnread := with(silent(), func(p *proc) { p.env, p.sched.lookedAt = envUnread, now-sec })
	retried := func(n uint8) *proc { return with(silent(), func(p *proc) { p.sched.retries = n }) }
	young := func(n uint8) *proc { return with(silent(), func(p *proc) { p.sched.young = n }) }
	plannedAs := func(p *proc, c cause, at int64) *proc {
		q := *p
		q.sched.planned, q.sched.plannedAt = c, at
		return &q
	}

	cfg := DefaultConfig()
	contextOnly := DefaultConfig()
	contextOnly.Sources = []Source{SourceContext}
	envOnly := DefaultConfig()
	envOnly.Sources = []Source{SourceEnvironment}
	polling := planner{cfg: &cfg, scanned: true}   // no publication events
	evented := planner{cfg: &cfg, pubEvents: true} // publication events come
	noEnv := planner{cfg: &contextOnly, pubEvents: true}
	unscanned := planner{cfg: &cfg}

	none := readPlan{}
	at := func(c cause, t int64) readPlan { return readPlan{cause: c, at: t} }
	series := func(rp readPlan, retries, young uint8) readPlan { rp.retries, rp.young = retries, young; return rp }
	listing := func(ino uint64, full bool) trigger { return trigger{kind: onListing, ino: ino, full: full} }
	read := func(c cause, o Outcome, discovered bool) trigger {
		return trigger{kind: onRead, read: c, found: o, discovered: discovered}
	}

	tests := []struct {
		name string
		pl   planner
		p    *proc
		tr   trigger
		want readPlan
	}{
		// A scan's listing.
		{"listing: a new pid", polling, fresh(), listing(7, false), at(causeListing, now)},
		{"listing: a new inode", polling, silent(), listing(8, false), at(causeListing, now)},
		{"listing: no inode", polling, silent(), listing(0, false), at(causeListing, now)},
		{"listing: silent, rescan due", polling, silent(), listing(7, false), at(causeRescan, now)},
		{"listing: silent, looked at recently", polling, recent, listing(7, false), none},
		{"listing: silent, events, not dropped since", evented, silent(), listing(7, false), none},
		{"listing: silent, events dropped since", planner{cfg: &cfg, pubEvents: true, pubLostAt: now - sec}, silent(), listing(7, false), at(causeRescan, now)},
		{"listing: environment-named, rescan due", polling, envNamed, listing(7, false), at(causeRescan, now)},
		{"listing: publisher, full scan", polling, publisher, listing(7, true), at(causeRefresh, now)},
		{"listing: publisher, not a full scan", polling, publisher, listing(7, false), none},
		{"listing: known from its fork", polling, forked, listing(7, false), none},
		{"listing: kernel thread", polling, kernel, listing(7, false), none},
		{"listing: kernel thread, a new inode", polling, kernel, listing(8, false), at(causeListing, now)},
		{"listing: a read out", polling, reading, listing(8, false), none},
		{"listing: quarantined", polling, quarantined, listing(8, false), none},
		{"listing: stuck in the mem file", polling, stuck, listing(8, false), none},

		// Process events.
		{"fork", evented, fresh(), trigger{kind: onFork}, at(causeEnviron, now+sec)},
		{"fork: environment not a source", noEnv, fresh(), trigger{kind: onFork}, none},
		{"exec: polling", polling, fresh(), trigger{kind: onExec}, at(causeYoung, now+sec)},
		{"exec: publication events", evented, fresh(), trigger{kind: onExec}, at(causeEnviron, now+10*ms)},
		{"exec: publication events, environment not a source", noEnv, fresh(), trigger{kind: onExec}, none},

		// Publication events: a new retry series.
		{"publish: a new retry series", evented, retried(3), trigger{kind: onPublish}, at(causeEvent, now)},
		{"publish: a read out", evented, with(retried(3), func(p *proc) { p.sched.reading = causeRescan }), trigger{kind: onPublish}, at(causeEvent, now)},
		{"publish: read an instant ago", evented, eventGap, trigger{kind: onPublish}, at(causeEvent, now+6*ms)},
		{"publish: kernel thread", evented, kernel, trigger{kind: onPublish}, none},
		{"publish: quarantined", evented, quarantined, trigger{kind: onPublish}, none},
		{"unmap", evented, publisher, trigger{kind: onUnmap}, at(causeEvent, now)},
		{"memfd", evented, retried(2), trigger{kind: onMemfd}, at(causeEvent, now+10*ms)},
		{"memfd: read an instant ago", evented, eventGap, trigger{kind: onMemfd}, at(causeEvent, now+10*ms)},
		{"memfd: quarantined", evented, quarantined, trigger{kind: onMemfd}, none},
		{"pid reused", evented, fresh(), trigger{kind: onReused}, at(causeEvent, now)},

		// Probes.
		{"probe: not read", polling, fresh(), trigger{kind: onProbe}, at(causeProbe, now)},
		{"probe: maps due", polling, silent(), trigger{kind: onProbe}, at(causeProbe, now)},
		{"probe: environment due", evented, envUnread, trigger{kind: onProbe}, at(causeProbe, now)},
		{"probe: nothing due", evented, silent(), trigger{kind: onProbe}, none},
		{"probe: maps read recently", polling, recent, trigger{kind: onProbe}, none},
		{"probe: publisher", polling, publisher, trigger{kind: onProbe}, none},
		{"probe: an event's read planned: lookups wait", evented, plannedAs(silent(), causeEvent, now+5*ms), trigger{kind: onProbe}, at(causeProbe, now)},
		{"probe: a read out", polling, with(fresh(), func(p *proc) { p.sched.reading = causeListing }), trigger{kind: onProbe}, none},

		// Quarantine.
		{"stall", polling, quarantined, trigger{kind: onStall}, at(causeQuarantine, now+30*sec)},
		{"stall: an event's read planned sooner stands", polling, plannedAs(quarantined, causeEvent, now+5*ms), trigger{kind: onStall}, none},
		{"stall: a read planned later gives way", polling, plannedAs(quarantined, causeYoung, now+time.Hour.Nanoseconds()), trigger{kind: onStall}, at(causeQuarantine, now+30*sec)},

		// A plan falls due.
		{"due: young", polling, young(1), trigger{kind: onDue, due: causeYoung}, series(at(causeYoung, now), 0, 1)},
		{"due: young, series over", polling, young(youngReads), trigger{kind: onDue, due: causeYoung}, series(none, 0, youngReads)},
		{"due: young, publisher", polling, publisher, trigger{kind: onDue, due: causeYoung}, none},
		{"due: young, nothing to find", planner{cfg: &envOnly}, silent(), trigger{kind: onDue, due: causeYoung}, none},
		{"due: environment", evented, envUnread, trigger{kind: onDue, due: causeEnviron}, at(causeEnviron, now)},
		{"due: environment read already", evented, silent(), trigger{kind: onDue, due: causeEnviron}, none},
		{"due: quarantine over", polling, with(silent(), func(p *proc) { p.sched.stall = &stall{until: now} }), trigger{kind: onDue, due: causeQuarantine}, at(causeQuarantine, now)},
		{"due: quarantined still", polling, quarantined, trigger{kind: onDue, due: causeYoung}, at(causeQuarantine, now+30*sec)},
		{"due: an event's, read an instant ago", evented, eventGap, trigger{kind: onDue, due: causeEvent}, at(causeEvent, now+6*ms)},
		{"due: retry, a read out", evented, with(retried(1), func(p *proc) { p.sched.reading = causeProbe }), trigger{kind: onDue, due: causeRetry}, series(at(causeRetry, now), 1, 0)},

		// A read returned: the retry and young series.
		{"read: a plan fell due meanwhile", evented, silent(), trigger{kind: onRead, read: causeRescan, found: OutcomeNoContext, due: causeEvent}, at(causeEvent, now)},
		{"read: publisher ends the series", polling, publisher, read(causeYoung, OutcomeOK, false), series(none, publishRetries, youngReads)},
		{"read: kernel thread ends the series", polling, kernel, read(causeListing, OutcomeNoContext, true), series(none, publishRetries, youngReads)},
		{"read: an event's found nothing yet", evented, silent(), read(causeEvent, OutcomeNoContext, false), series(at(causeRetry, now+40*ms), 1, 0)},
		{"read: a retry found nothing yet", evented, retried(2), read(causeRetry, OutcomeNoContext, false), series(at(causeRetry, now+640*ms), 3, 0)},
		{"read: torn", polling, retried(3), read(causeRescan, OutcomeTorn, false), series(at(causeRetry, now+int64(10*time.Millisecond<<8)), 4, 0)},
		{"read: environment mid-exec", evented, fresh(), trigger{kind: onRead, read: causeListing, found: OutcomeNoContext, discovered: true, envEmpty: true}, series(at(causeRetry, now+40*ms), 1, 0)},
		{"read: environment mid-exec, polling", polling, silent(), trigger{kind: onRead, read: causeRescan, found: OutcomeNoContext, envEmpty: true}, series(at(causeRetry, now+40*ms), 1, 0)},
		{"read: environment empty, retries spent", evented, retried(publishRetries), trigger{kind: onRead, read: causeRetry, found: OutcomeNoContext, envEmpty: true}, series(none, publishRetries, 0)},
		{"read: retries spent", evented, retried(publishRetries), read(causeRetry, OutcomeNoContext, false), series(none, publishRetries, 0)},
		{"read: young", polling, young(1), read(causeYoung, OutcomeNoContext, false), series(at(causeYoung, now+5*sec), 0, 2)},
		{"read: young, the last", polling, young(youngReads - 1), read(causeYoung, OutcomeNoContext, false), series(none, 0, youngReads)},
		{"read: met first after the first scan", polling, fresh(), read(causeListing, OutcomeNoContext, true), at(causeYoung, now+sec)},
		{"read: met first in the first scan", unscanned, fresh(), read(causeListing, OutcomeNoContext, true), none},
		{"read: met first in the first scan, a newborn", unscanned, fresh(), trigger{kind: onRead, read: causeListing, found: OutcomeNoContext, discovered: true, newborn: true}, at(causeYoung, now+sec)},
		{"read: met first, publication events", evented, fresh(), read(causeListing, OutcomeNoContext, true), none},
		{"read: a rescan found nothing", polling, silent(), read(causeRescan, OutcomeNoContext, false), none},
		{"read: young series planned sooner stands", polling, plannedAs(young(1), causeYoung, now+sec), read(causeYoung, OutcomeNoContext, false), series(none, 0, 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.pl.next(tt.p, tt.tr, now))
		})
	}
}

// A read planned for a moment ahead is queued for that moment, however
// the clock moves while it is planned: a publication event's read due a
// few microseconds after the event was once neither queued nor taken by
// a read out, and the publisher was never read again (the kernel matrix
// met it, 1 of 120 publishers, under an emulator's slow clock). Here the
// clock moves a microsecond at each reading; the event's read is planned
// from 100 µs before its event to 100 µs after.
func TestPlanQueuedWhileTheClockMoves(t *testing.T) {
	base := time.Unix(1000, 0)
	ticks := 0
	trk, err := New(nil, DefaultConfig(), zap.NewNop(), WithClock(func() time.Time {
		ticks++
		return base.Add(time.Duration(ticks) * time.Microsecond)
	}))
	require.NoError(t, err)
	tr := trk.loop
	tr.epoch = base
	tr.events.on.Store(uint32(PublicationEvents))
	for d := -100; d <= 100; d++ {
		pid := 1000 + d
		p := tr.newProc(pid)
		p.start, p.found, p.env = 100, OutcomeNoContext, envRead
		// The last event's read began almost minEventGap ago: the next
		// may start minEventGap after it.
		p.sched.eventReadAt = tr.clock() - int64(minEventGap) + int64(d)*int64(time.Microsecond)
		tr.sched.act(pid, p, trigger{kind: onPublish})
		if p.sched.reading != causeNone {
			continue // read at once
		}
		require.Equal(t, causeEvent, p.sched.planned, "offset %d µs", d)
		queued := false
		for _, e := range tr.sched.plans {
			queued = queued || int(e.pid) == pid && e.serial == p.serial && e.at == p.sched.plannedAt
		}
		assert.True(t, queued, "offset %d µs: a read planned at %d is not queued", d, p.sched.plannedAt)
	}
}

// The planner's decisions of the host, case by case: whether a scan lists
// it and reads every publisher, which late publishers fit the rescan
// budget, the quarantine backoff, the pace of the scans dropped events and
// ScanSoon start, of warnings and of the reads of the collector's own
// privileges, and when a process read without a context is due again.
func TestPlannerHost(t *testing.T) {
	const now = int64(10 * time.Hour)
	sec := int64(time.Second)
	cfg := DefaultConfig()
	polling := planner{cfg: &cfg}
	both := planner{cfg: &cfg, pubEvents: true, procEvents: true, unmapEvents: true}
	noUnmaps := planner{cfg: &cfg, pubEvents: true, procEvents: true}
	procOnly := planner{cfg: &cfg, procEvents: true}

	// What a scan reads.
	listedNow := hostState{listedAt: now - sec, reconciledAt: now - sec}
	scanTests := []struct {
		name       string
		pl         planner
		h          hostState
		list, full bool
	}{
		{"polling: every scan lists and reads every publisher", polling, listedNow, true, true},
		{"process events only: listed a second ago, every scan reads every publisher", procOnly, listedNow, false, true},
		{"process events only: listed a minute ago", procOnly, hostState{listedAt: now - int64(eventsListInterval), reconciledAt: now - sec}, true, true},
		{"process events only: events dropped", procOnly, hostState{listedAt: now - sec, reconciledAt: now - sec, reconcile: true}, true, true},
		{"process events only: asked to list", procOnly, hostState{listedAt: now - sec, reconciledAt: now - sec, relist: true}, true, true},
		{"both events: the first scan", both, hostState{}, true, true},
		{"both events: listed a second ago", both, listedNow, false, false},
		{"both events: listed a minute ago", both, hostState{listedAt: now - int64(eventsListInterval), reconciledAt: now - sec}, true, false},
		{"both events: reconciled an hour ago", both, hostState{listedAt: now - int64(eventsListInterval), reconciledAt: now - int64(cfg.ReconcileInterval)}, true, true},
		{"both events: events dropped", both, hostState{listedAt: now - sec, reconciledAt: now - sec, reconcile: true}, true, true},
		{"both events: asked to list (ScanSoon, procfs back)", both, hostState{listedAt: now - sec, reconciledAt: now - sec, relist: true}, true, false},
		{"both events, but no unmaps (kprobe): as process events only", noUnmaps, listedNow, false, true},
	}
	for _, tt := range scanTests {
		t.Run(tt.name, func(t *testing.T) {
			list, full := tt.pl.scanReads(&tt.h, now)
			assert.Equal(t, []bool{tt.list, tt.full}, []bool{list, full})
		})
	}

	t.Run("rescan budget: the longest-waiting first, within the budget", func(t *testing.T) {
		small := DefaultConfig()
		small.RescanBudget = 2
		due := []rescan{{1, &proc{sched: schedule{lookedAt: 30}}}, {2, &proc{sched: schedule{lookedAt: 10}}}, {3, &proc{sched: schedule{lookedAt: 20}}}}
		var pids []int
		for _, r := range (planner{cfg: &small}).fitBudget(due) {
			pids = append(pids, r.pid)
		}
		assert.Equal(t, []int{2, 3}, pids)
	})

	t.Run("quarantine backoff: doubling, bounded", func(t *testing.T) {
		b := cfg.QuarantineBackoff
		for strikes, want := range map[uint8]time.Duration{1: b, 2: 2 * b, 5: 16 * b, 6: quarantineGrowth * b, 16: quarantineGrowth * b} {
			assert.Equal(t, want, polling.backoff(strikes), "strikes %d", strikes)
		}
	})

	t.Run("rechecks: while polling for contexts only", func(t *testing.T) {
		p := &proc{sched: schedule{lookedAt: now}}
		at, ok := polling.recheckAt(p)
		assert.True(t, ok)
		assert.Equal(t, now+int64(cfg.RecheckInterval), at, "on the grid already")
		// Off the grid: the next grid point, never before the interval.
		off := &proc{sched: schedule{lookedAt: now + int64(time.Millisecond)}}
		at, _ = polling.recheckAt(off)
		assert.Equal(t, now+int64(cfg.RecheckInterval)+int64(planGrid), at)
		_, ok = both.recheckAt(p)
		assert.False(t, ok, "publication events tell when it publishes")
		envOnly := DefaultConfig()
		envOnly.Sources = []Source{SourceEnvironment}
		_, ok = planner{cfg: &envOnly}.recheckAt(p)
		assert.False(t, ok, "contexts are not a source")
	})
}

// The young reads, a fork's environment read and the rechecks fall due on
// the loop clock's planGrid: a young read at the grid point nearest its
// time (within half a step), a recheck at the first at or after its time.
// Processes that exec'd within a few milliseconds of one another are read
// at the same grid point, and runDue starts their reads in one job, not
// one job each; an urgent read due then still goes out on its own.
func TestPlanGrid(t *testing.T) {
	g := int64(planGrid)
	for _, at := range []int64{0, 1, g/2 - 1, g / 2, g - 1, g, 7*g + 3, 7*g + g/2 + 1} {
		near, up := onGrid(at), upToGrid(at)
		assert.Zero(t, near%g, "onGrid(%d)", at)
		assert.LessOrEqual(t, max(near-at, at-near), g/2, "onGrid(%d): within half a step", at)
		assert.Zero(t, up%g, "upToGrid(%d)", at)
		assert.True(t, up >= at && up-at < g, "upToGrid(%d) = %d: the first grid point at or after", at, up)
	}

	const sec = int64(time.Second)
	var clock time.Duration
	l := clockedLoop(t, &clock)
	pl := l.sched.planner()

	// The young series: every read on the grid, near its time.
	p := &proc{start: 100, found: OutcomeNoContext, env: envRead}
	now := 3*sec + 37*int64(time.Millisecond) + 11 // off the grid
	rp := pl.next(p, trigger{kind: onExec}, now)
	require.Equal(t, causeYoung, rp.cause)
	for i, d := range youngDelays {
		assert.Zero(t, rp.at%g, "young read %d on the grid", i)
		assert.LessOrEqual(t, max(rp.at-(now+int64(d)), now+int64(d)-rp.at), g/2, "young read %d within half a step of its time", i)
		now = rp.at + 3*int64(time.Millisecond) // read a little after it fell due
		p.sched.young = rp.young
		rp = pl.next(p, trigger{kind: onRead, read: causeYoung, found: OutcomeNoContext}, now)
	}
	assert.Equal(t, causeNone, rp.cause, "the series ends")
	fork := pl.next(&proc{}, trigger{kind: onFork}, now)
	assert.Equal(t, onGrid(now+int64(youngDelays[0])), fork.at, "a fork's environment read")

	// Processes exec'd over 100 ms, and one whose publication event asks
	// for an urgent read due at the same point: one job of the young reads
	// (jobSize at most), the event's on its own.
	const n = readpool.JobSize + 10
	clock = 5*time.Second + 10*time.Millisecond
	for pid := 100; pid < 100+n; pid++ {
		clock += 100 * time.Millisecond / n
		q := l.newProc(pid)
		q.start, q.found, q.env = 100, OutcomeNoContext, envRead
		l.sched.act(pid, q, trigger{kind: onExec})
		require.Equal(t, causeYoung, q.sched.planned)
	}
	at := l.reg.get(100).sched.plannedAt
	for pid := 100; pid < 100+n; pid++ {
		require.Equal(t, at, l.reg.get(pid).sched.plannedAt, "pid %d: every young read at one grid point", pid)
	}
	ev := l.newProc(99)
	ev.start, ev.found, ev.env = 100, OutcomeNoContext, envRead
	ev.sched.eventReadAt = at - int64(minEventGap) // its next event read may start at the grid point
	l.sched.act(99, ev, trigger{kind: onPublish})
	require.Equal(t, causeEvent, ev.sched.planned)

	clock = time.Duration(at) // the loop clock is 1 ns ahead of the time since the epoch
	l.sched.runDue()
	var sizes []int
	urgent, normal := l.pool.Waiting()
	for _, j := range normal {
		sizes = append(sizes, len(j.Reqs))
	}
	assert.Equal(t, []int{readpool.JobSize, n - readpool.JobSize}, sizes, "the young reads due together: in jobs of up to JobSize")
	require.Len(t, urgent, 1, "the event's read on its own, before them")
	assert.Equal(t, 99, urgent[0].Reqs[0].pid)
	for pid := 99; pid < 100+n; pid++ {
		assert.NotEqual(t, causeNone, l.reg.get(pid).sched.reading, "pid %d read", pid)
	}
}

// A planned read or a recheck whose process exited, or was read or
// planned again since, no longer stands: the loop is not woken for it
// (nextDue), nor is the snapshot told (markRechecks). Most processes a
// host starts exit before their first young read.
func TestNextDueSkipsWhatNoLongerStands(t *testing.T) {
	var clock time.Duration
	l := clockedLoop(t, &clock)
	young := func(pid int) *proc {
		p := l.newProc(pid)
		p.start, p.found, p.env = 100, OutcomeNoContext, envRead
		l.sched.act(pid, p, trigger{kind: onExec})
		require.Equal(t, causeYoung, p.sched.planned)
		return p
	}

	p := young(10)
	at, ok := l.sched.nextDue()
	require.True(t, ok)
	assert.Equal(t, p.sched.plannedAt, at)
	l.forget(10, p) // it exited
	_, ok = l.sched.nextDue()
	assert.False(t, ok, "the plan of a process gone")
	assert.Empty(t, l.sched.plans, "dropped")

	q := young(11)
	first := q.sched.plannedAt
	l.sched.plan(11, q, causeYoung, first+int64(time.Minute), l.clock()) // planned again, later
	at, _ = l.sched.nextDue()
	assert.Equal(t, first+int64(time.Minute), at, "the plan that stands")
	l.forget(11, q)

	// A recheck: due RecheckInterval after a look at a process's maps,
	// unless it was looked at again since, or exited.
	r := young(12)
	l.sched.plan(12, r, causeNone, 0, l.clock())
	l.sched.noteLook(12, r, false)
	at, ok = l.sched.nextDue()
	require.True(t, ok)
	clock += time.Second
	l.sched.noteLook(12, r, false) // looked at again
	again, _ := l.sched.nextDue()
	assert.Greater(t, again, at, "the first recheck no longer stands")
	l.out.touched = nil
	clock = time.Duration(again)
	l.sched.markRechecks()
	assert.Equal(t, []int{12}, l.out.touched, "the snapshot told once, of the recheck that stands")
	l.forget(12, r)
	_, ok = l.sched.nextDue()
	assert.False(t, ok)
}

// clockedLoop is the loop of a tracker of no host, not started, whose
// clock reads *clock after its epoch: a test moves the clock by hand.
func clockedLoop(t *testing.T, clock *time.Duration) *loop {
	t.Helper()
	base := time.Unix(1000, 0)
	trk, err := New(nil, DefaultConfig(), zap.NewNop(), WithClock(func() time.Time { return base.Add(*clock) }))
	require.NoError(t, err)
	trk.loop.epoch = base
	return trk.loop
}
