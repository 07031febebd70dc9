// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/reader"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

// harness runs a tracker on a fake host with a fake clock; scans happen
// only when the test asks (Rescan).
type harness struct {
	t     *testing.T
	host  *trackertest.Host
	clock *trackertest.Clock
	tr    *tracker.Tracker
	sub   *trackertest.Recorder
	logs  *observer.ObservedLogs
}

func testConfig() tracker.Config {
	cfg := tracker.DefaultConfig()
	cfg.CollectionInterval = time.Hour // the test drives the scans
	cfg.ReadTimeout = 40 * time.Millisecond
	return cfg
}

func newHarness(t *testing.T, cfg tracker.Config, host *trackertest.Host, opts ...tracker.Option) *harness {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	clock := trackertest.NewClock()
	tr, err := tracker.New(host, cfg, zap.New(core), append([]tracker.Option{tracker.WithClock(clock.Now)}, opts...)...)
	require.NoError(t, err)
	tr.Start()
	t.Cleanup(func() {
		host.Unblock() // stuck readers exit
		require.NoError(t, tr.Stop(context.Background()))
	})
	sub := trackertest.Subscribe(t, tr)
	h := &harness{t: t, host: host, clock: clock, tr: tr, sub: sub, logs: logs}
	h.rescan() // the first scan started with the tracker; wait for one after it
	h.take()
	return h
}

func (h *harness) rescan() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(h.t, h.tr.Rescan(ctx))
}

// take returns the changes so far, in order, as "kind pid service".
func (h *harness) take() []string {
	h.t.Helper()
	changes, _ := h.sub.Take()
	return describeChanges(changes)
}

// describeChanges describes each change as "kind pid service".
func describeChanges(changes []tracker.Change) []string {
	var out []string
	for _, c := range changes {
		svc, _ := c.Publication.Context.Resource.Get("service.name")
		out = append(out, fmt.Sprintf("%s %d %s", kindName(c.Kind), c.Publication.PID, svc.Str()))
	}
	return out
}

func kindName(k tracker.ChangeKind) string {
	return map[tracker.ChangeKind]string{tracker.Published: "published", tracker.Updated: "updated", tracker.Unpublished: "unpublished", tracker.Invalidated: "invalidated", tracker.Exited: "exited"}[k]
}

func (h *harness) lookup(pid int) (string, tracker.Answer) {
	p, o := h.tr.Snapshot().Lookup(pid)
	if p == nil {
		return "", o
	}
	v, _ := p.Context.Resource.Get("service.name")
	return v.Str(), o
}

func TestLifecycle(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(10)
	host.Add(11)
	host.Publish(11, "checkout")
	h := newHarness(t, testConfig(), host)

	// The harness's first scans found the publisher.
	svc, o := h.lookup(11)
	assert.Equal(t, "checkout", svc)
	assert.Equal(t, tracker.AnswerOK, o)
	_, o = h.lookup(10)
	assert.Equal(t, tracker.AnswerNoContext, o)
	_, o = h.lookup(12)
	assert.Equal(t, tracker.AnswerUnknown, o)

	// Steady state: one timestamp read for the publisher, nothing else.
	host.ResetCounts()
	h.rescan()
	assert.Equal(t, 1, host.Count("read"))
	assert.Zero(t, host.Count("maps"))
	assert.Zero(t, host.Count("start"))
	assert.Zero(t, host.Count("identity"))
	assert.Empty(t, h.take())

	host.Publish(11, "checkout-v2")
	h.rescan()
	assert.Equal(t, []string{"updated 11 checkout-v2"}, h.take())

	host.Unpublish(11)
	h.rescan()
	assert.Equal(t, []string{"unpublished 11 checkout-v2"}, h.take())
	// Retained for late telemetry, then gone.
	svc, _ = h.lookup(11)
	assert.Equal(t, "checkout-v2", svc)
	h.clock.Advance(testConfig().GracePeriod)
	h.rescan()
	_, o = h.lookup(11)
	assert.Equal(t, tracker.AnswerNoContext, o)

	host.Publish(11, "again")
	h.clock.Advance(testConfig().RescanInterval)
	h.rescan()
	assert.Equal(t, []string{"published 11 again"}, h.take())

	host.Remove(11)
	h.rescan()
	assert.Equal(t, []string{"exited 11 again"}, h.take())
	svc, _ = h.lookup(11)
	assert.Equal(t, "again", svc, "retained after exit")
	h.clock.Advance(testConfig().GracePeriod)
	h.rescan()
	_, o = h.lookup(11)
	assert.Equal(t, tracker.AnswerGone, o, "known to be gone, without a read")
}

func TestPidReuse(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(20)
	host.Publish(20, "old")
	h := newHarness(t, testConfig(), host)
	first, _ := h.tr.Snapshot().Lookup(20)
	require.NotNil(t, first)

	host.Reuse(20)
	host.Publish(20, "new")
	h.rescan()
	assert.Equal(t, []string{"exited 20 old", "published 20 new"}, h.take())
	p, _ := h.tr.Snapshot().Lookup(20)
	require.NotNil(t, p)
	assert.NotEqual(t, first.StartTicks, p.StartTicks)
	assert.True(t, p.Live())

	// Reused by a process without a context: the old publication no longer
	// answers for the pid.
	host.Reuse(20)
	h.rescan()
	assert.Equal(t, []string{"exited 20 new"}, h.take())
	_, o := h.lookup(20)
	assert.Equal(t, tracker.AnswerNoContext, o)
}

// A publisher that is exiting has lost its address space before the kernel
// reports its exit (a zombie's maps are empty, its stat says Z): the read
// that finds its context gone reports an exit, not an unpublish.
func TestExitingPublisherExits(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(30)
	host.Publish(30, "leaving")
	host.Add(31)
	host.Publish(31, "staying")
	h := newHarness(t, testConfig(), host)

	host.Set(30, func(p *trackertest.Proc) {
		p.Ctx = nil
		p.Errs = map[string]error{trackertest.MethodStart: fmt.Errorf("stat of pid 30: state Z: %w", procfs.ErrProcessGone)}
	})
	host.Unpublish(31)
	h.rescan()
	assert.ElementsMatch(t, []string{"exited 30 leaving", "unpublished 31 staying"}, h.take())
}

func TestReadOutcomes(t *testing.T) {
	tests := []struct {
		name   string
		method string
		err    error
		want   tracker.Outcome
	}{
		{"permission denied", "maps", fmt.Errorf("open maps of pid 30: %w", procfs.ErrPermissionDenied), tracker.OutcomePermissionDenied},
		{"invalid", "read", fmt.Errorf("header: %w", otep.ErrInvalid), tracker.OutcomeInvalid},
		{"too large", "read", fmt.Errorf("header: %w", otep.ErrTooLarge), tracker.OutcomeTooLarge},
		{"malformed stat", "start", fmt.Errorf("stat: %w", procfs.ErrMalformed), tracker.OutcomeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := trackertest.NewHost()
			host.Add(30).Errs[tt.method] = tt.err
			host.Publish(30, "x")
			h := newHarness(t, testConfig(), host)
			_, o := h.lookup(30)
			assert.Equal(t, tracker.Answer(tt.want), o)
			assert.Empty(t, h.take())
		})
	}
}

func TestInvalidatedPublication(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(31)
	host.Publish(31, "fine")
	h := newHarness(t, testConfig(), host)
	host.Set(31, func(p *trackertest.Proc) { p.Errs["read"] = fmt.Errorf("payload: %w", otep.ErrInvalid) })
	h.rescan()
	assert.Equal(t, []string{"invalidated 31 fine"}, h.take())
	// Like an exit or an unpublish: the last context serves late telemetry
	// for the retention period.
	svc, _ := h.lookup(31)
	assert.Equal(t, "fine", svc)
}

func TestTornAndPermissionKeepThePublication(t *testing.T) {
	for _, err := range []error{otep.ErrTorn, procfs.ErrPermissionDenied} {
		t.Run(err.Error(), func(t *testing.T) {
			host := trackertest.NewHost()
			host.Add(32)
			host.Publish(32, "kept")
			h := newHarness(t, testConfig(), host)
			host.Publish(32, "newer")
			host.Set(32, func(p *trackertest.Proc) { p.Errs["read"] = err })
			h.rescan()
			assert.Empty(t, h.take())
			p, _ := h.tr.Snapshot().Lookup(32)
			require.NotNil(t, p)
			assert.True(t, p.Live())
		})
	}
}

// A mapping unmapped and its address reused reads as zeros: "being
// updated" on every try. The maps say the context is gone.
func TestTornWithoutMappingEndsThePublication(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(33)
	host.Publish(33, "gone")
	h := newHarness(t, testConfig(), host)
	host.Unpublish(33)
	host.Set(33, func(p *trackertest.Proc) { p.Errs["read"] = fmt.Errorf("header: timestamp 0: %w", otep.ErrTorn) })
	h.rescan()
	assert.Equal(t, []string{"unpublished 33 gone"}, h.take())
}

func TestRescanSchedule(t *testing.T) {
	cfg := testConfig()
	cfg.RescanInterval = 30 * time.Second
	cfg.RescanMaxInterval = 4 * time.Minute
	host := trackertest.NewHost()
	host.Add(40)
	h := newHarness(t, cfg, host)

	// A look: its stat (the address space unchanged, not its maps),
	// or, at the longest wait, its maps whatever the stat says.
	maps := func() int {
		host.ResetCounts()
		h.rescan()
		return host.Count(trackertest.MethodStart) + host.Count(trackertest.MethodMaps)
	}
	assert.Zero(t, maps(), "not due yet")
	// Four re-reads at the rescan interval, then the wait doubles.
	for i := range 4 {
		h.clock.Advance(30 * time.Second)
		assert.Equal(t, 1, maps(), "re-read %d", i)
	}
	h.clock.Advance(30 * time.Second)
	assert.Zero(t, maps(), "now every minute")
	h.clock.Advance(30 * time.Second)
	assert.Equal(t, 1, maps())
	for _, d := range []time.Duration{2 * time.Minute, 4 * time.Minute, 4 * time.Minute} {
		h.clock.Advance(d - time.Second)
		assert.Zero(t, maps(), "before %s", d)
		h.clock.Advance(time.Second)
		assert.Equal(t, 1, maps(), "after %s", d)
	}

	// A late publisher is found at its next re-read.
	host.Publish(40, "late")
	h.clock.Advance(4 * time.Minute)
	h.rescan()
	assert.Equal(t, []string{"published 40 late"}, h.take())
}

func TestRescanBudget(t *testing.T) {
	cfg := testConfig()
	cfg.RescanBudget = 3
	host := trackertest.NewHost()
	for pid := 100; pid < 110; pid++ {
		host.Add(pid)
	}
	h := newHarness(t, cfg, host)
	h.clock.Advance(cfg.RescanInterval)
	for _, want := range []int{3, 3, 3, 1} {
		host.ResetCounts()
		h.rescan()
		assert.Equal(t, want, host.Count(trackertest.MethodStart), "looks: their stat (their maps unchanged)")
	}
}

func TestProbe(t *testing.T) {
	host := trackertest.NewHost()
	h := newHarness(t, testConfig(), host)
	host.Add(50)
	host.Publish(50, "new")
	host.Add(51)

	done := h.tr.Probe([]int{50, 51, 52}, time.Minute)
	require.NotNil(t, done)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("probe did not finish")
	}
	svc, o := h.lookup(50)
	assert.Equal(t, "new", svc)
	assert.Equal(t, tracker.AnswerOK, o)
	_, o = h.lookup(51)
	assert.Equal(t, tracker.AnswerNoContext, o)
	_, o = h.lookup(52)
	assert.Equal(t, tracker.AnswerGone, o, "no such process")

	// A known pid answers at once, without a read.
	host.ResetCounts()
	done = h.tr.Probe([]int{51}, time.Minute)
	<-done
	assert.Zero(t, host.Count("start")+host.Count("maps"))
}

// checkpointHost stops the tracker's loop in the middle of applying a job:
// its CheckProcfs (called for a read that found the process gone) waits
// until the test lets it go on.
type checkpointHost struct {
	*trackertest.Host
	entered chan struct{}
	resume  chan struct{}
}

func (h *checkpointHost) CheckProcfs() error {
	select {
	case h.entered <- struct{}{}:
		<-h.resume
	case <-h.resume:
	}
	return h.Host.CheckProcfs()
}

// Between applying a read that found a publication and publishing the
// snapshot with it, the current snapshot does not claim the pid publishes
// nothing: a batch enriching it then would pass it through.
func TestLookupWhilePublicationIsApplied(t *testing.T) {
	fake := trackertest.NewHost()
	fake.Add(60)
	fake.Publish(60, "applied")
	fake.Add(61).Errs[trackertest.MethodStart] = procfs.ErrProcessGone // after 60 in the job
	host := &checkpointHost{Host: fake, entered: make(chan struct{}), resume: make(chan struct{})}
	tr, err := tracker.New(host, testConfig(), zap.NewNop(), tracker.WithClock(trackertest.NewClock().Now))
	require.NoError(t, err)
	tr.Start()
	t.Cleanup(func() { require.NoError(t, tr.Stop(context.Background())) })

	<-host.entered // 60 applied, the snapshot not published yet
	p, o := tr.Snapshot().Lookup(60)
	assert.Nil(t, p)
	assert.Equal(t, tracker.AnswerUnknown, o, "not known yet: a batch probes it")
	probed := tr.Probe([]int{60}, time.Minute)
	close(host.resume)
	<-probed
	p, o = tr.Snapshot().Lookup(60)
	require.NotNil(t, p, "the probe ends with the snapshot that has the publication")
	assert.Equal(t, tracker.AnswerOK, o)
}

// Whoever Ready wakes finds the first scan in the snapshot. (Ready was
// closed before the snapshot was published: 2 starts in 2,000 missed it.)
func TestReadySnapshotHasTheFirstScan(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(70)
	host.Publish(70, "first")
	for i := range 500 {
		tr, err := tracker.New(host, testConfig(), zap.NewNop())
		require.NoError(t, err)
		tr.Start()
		<-tr.Ready()
		snap := tr.Snapshot()
		p, _ := snap.Lookup(70)
		require.NoError(t, tr.Stop(context.Background()))
		require.True(t, p != nil && snap.Scanned, "start %d: the snapshot after Ready lacks the first scan", i)
	}
}

// A process read without a context is known for RecheckInterval: a probe
// of it reads nothing. Then its lookup says a read is due, and a probe
// reads it and waits for that read: telemetry naming a late publisher
// waits for its context, and a pid named again and again is read once per
// RecheckInterval.
func TestProbeRechecksWhenDue(t *testing.T) {
	cfg := testConfig()
	cfg.RecheckInterval = 5 * time.Second
	host := trackertest.NewHost()
	host.Add(60)
	h := newHarness(t, cfg, host)
	host.Publish(60, "late")
	_, o := h.lookup(60)
	require.Equal(t, tracker.AnswerNoContext, o, "read at discovery")

	host.ResetCounts()
	probeDone(t, h.tr.Probe([]int{60}, time.Minute))
	assert.Zero(t, host.Count(trackertest.MethodMaps), "checked just now: not read")

	// Rechecks fall due on the loop's quarter-second grid: at most 250 ms
	// after the interval.
	h.clock.Advance(cfg.RecheckInterval + 250*time.Millisecond)
	h.rescan() // the loop notes for the snapshot that the read fell due
	_, o = h.lookup(60)
	require.Equal(t, tracker.AnswerUnknown, o, "a read is due")
	probeDone(t, h.tr.Probe([]int{60}, time.Minute))
	svc, o := h.lookup(60)
	assert.Equal(t, tracker.AnswerOK, o, "the probe waited for the read")
	assert.Equal(t, "late", svc)
	assert.Equal(t, []string{"published 60 late"}, h.take())
}

// probeDone waits for a probe that must end.
func probeDone(t *testing.T, done <-chan struct{}) {
	t.Helper()
	require.NotNil(t, done)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("probe did not finish")
	}
}

func TestContainerIndex(t *testing.T) {
	host := trackertest.NewHost()
	cid := "4f3c2b1a0f9e8d7c6b5a4f3c2b1a0f9e8d7c6b5a4f3c2b1a0f9e8d7c6b5a4f3c"
	host.Add(70).ContainerID = cid
	host.Set(70, func(p *trackertest.Proc) { p.NSpid = []int{70, 1} })
	host.Publish(70, "in-a-container")
	h := newHarness(t, testConfig(), host)
	p := h.tr.Snapshot().InContainer(cid, 1)
	require.NotNil(t, p)
	assert.Equal(t, 70, p.PID)
	assert.Nil(t, h.tr.Snapshot().InContainer(cid, 70))
	assert.Nil(t, h.tr.Snapshot().InContainer("other", 1))

	// Its exit keeps it for the grace period; a live process of the same
	// container pid wins over it, and stays when the grace period ends.
	before := h.tr.Snapshot()
	host.Remove(70)
	h.rescan()
	ended := h.tr.Snapshot().InContainer(cid, 1)
	require.NotNil(t, ended)
	assert.False(t, ended.Live())
	host.Add(71).ContainerID = cid
	host.Set(71, func(p *trackertest.Proc) { p.NSpid = []int{71, 1} })
	host.Publish(71, "its successor")
	h.rescan()
	assert.Equal(t, 71, h.tr.Snapshot().InContainer(cid, 1).PID, "the live one wins")
	h.clock.Advance(testConfig().GracePeriod)
	h.rescan()
	assert.Equal(t, 71, h.tr.Snapshot().InContainer(cid, 1).PID)
	_, o := h.tr.Snapshot().Lookup(70)
	assert.Equal(t, tracker.AnswerGone, o)
	host.Remove(71)
	h.rescan()
	h.clock.Advance(testConfig().GracePeriod)
	h.rescan()
	assert.Nil(t, h.tr.Snapshot().InContainer(cid, 1))
	assert.Zero(t, h.tr.Snapshot().Len())

	// A snapshot is immutable: the one taken first still says what it did.
	assert.Equal(t, 70, before.InContainer(cid, 1).PID)
	assert.True(t, before.InContainer(cid, 1).Live())
	p, o = before.Lookup(70)
	assert.Equal(t, tracker.AnswerOK, o)
	assert.Equal(t, 70, p.PID)
	assert.Equal(t, 1, before.Len())
}

func TestViews(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(80)
	host.Publish(80, "a")
	h := newHarness(t, testConfig(), host)
	ctx := context.Background()
	computed := 0
	viewOf := func(p *tracker.Publication) any {
		computed++ // on the tracker's loop only
		s, _ := p.Context.Resource.Get("service.name")
		return "view of " + s.Str()
	}
	v, err := h.tr.AddView(ctx, "key", viewOf)
	require.NoError(t, err)
	p, _ := h.tr.Snapshot().Lookup(80)
	assert.Equal(t, "view of a", v.Of(p))

	// A second user of the key shares the view: one computation per
	// publication.
	shared, err := h.tr.AddView(ctx, "key", viewOf)
	require.NoError(t, err)
	assert.Equal(t, v, shared)
	host.Publish(80, "b")
	h.rescan()
	p, _ = h.tr.Snapshot().Lookup(80)
	assert.Equal(t, "view of b", v.Of(p))
	require.NoError(t, h.tr.WaitIdle(ctx))
	assert.Equal(t, 2, computed)

	// Computed until its last user removes it.
	require.NoError(t, h.tr.RemoveView(ctx, v))
	host.Publish(80, "c")
	h.rescan()
	p, _ = h.tr.Snapshot().Lookup(80)
	assert.Equal(t, "view of c", v.Of(p))
	require.NoError(t, h.tr.RemoveView(ctx, shared))
	host.Publish(80, "d")
	h.rescan()
	p, _ = h.tr.Snapshot().Lookup(80)
	assert.Nil(t, v.Of(p))
}

// quarantineMin is the first backoff of a quarantined process.
const quarantineMin = 30 * time.Second

// startWithClock starts a tracker of host on a fake clock, without the
// harness's first scan: for hosts whose reads block, which scanPastStuck
// moves past.
func startWithClock(t *testing.T, host *trackertest.Host, cfg tracker.Config, logger *zap.Logger) (*tracker.Tracker, *trackertest.Clock) {
	t.Helper()
	clock := trackertest.NewClock()
	tr, err := tracker.New(host, cfg, logger, tracker.WithClock(clock.Now))
	require.NoError(t, err)
	tr.Start()
	t.Cleanup(func() {
		host.Unblock() // stuck readers exit
		require.NoError(t, tr.Stop(context.Background()))
	})
	return tr, clock
}

// scanPastStuck runs a scan in which a read of method blocks: once that
// read has begun, it moves the clock past the read's deadline, and
// returns when the scan has ended, which it must within 10 s.
func scanPastStuck(t *testing.T, tr *tracker.Tracker, clock *trackertest.Clock, host *trackertest.Host, method string, cfg tracker.Config) {
	t.Helper()
	scanned := make(chan error, 1)
	go func() { scanned <- tr.Rescan(context.Background()) }()
	require.Eventually(t, func() bool { return host.Count(method) >= 1 }, 10*time.Second, time.Millisecond)
	clock.Advance(cfg.ReadTimeout + time.Millisecond)
	select {
	case err := <-scanned:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatalf("the scan waits for a stuck read of %s", method)
	}
}

func TestStalledReadIsQuarantined(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(90).Block = "maps"
	host.Publish(90, "hostile")
	host.Add(91)
	host.Publish(91, "good")
	cfg := testConfig()
	core, logs := observer.New(zap.DebugLevel)
	tr, clock := startWithClock(t, host, cfg, zap.New(core))

	// The first scan cannot finish until the stuck read is abandoned: its
	// deadline passes when the clock moves past it.
	scanPastStuck(t, tr, clock, host, "maps", cfg)
	p, _ := tr.Snapshot().Lookup(91)
	require.NotNil(t, p, "the good publisher is read")
	_, o := tr.Snapshot().Lookup(90)
	assert.Equal(t, tracker.Answer(tracker.OutcomeStalled), o)

	// Reported once, with its pid and executable.
	require.Eventually(t, func() bool { return logs.FilterMessageSnippet("quarantined").Len() == 1 }, 10*time.Second, time.Millisecond)
	entry := logs.FilterMessageSnippet("quarantined").All()[0]
	assert.Equal(t, "90 (proc-90)", entry.ContextMap()["pids"])

	// After the backoff it is read again, through the mem file (which
	// fails at once where process_vm_readv waits). Here that read is stuck
	// too: then the process is not read again, even once its backoff has
	// passed, until one of its reads returns.
	host.ResetCounts()
	clock.Advance(quarantineMin)
	scanPastStuck(t, tr, clock, host, "maps", cfg)
	require.Eventually(t, func() bool { return tr.StuckReads() == 2 }, 10*time.Second, time.Millisecond)
	// (That read is not the scan's: the loop may still be quarantining it,
	// at the clock it reads then. A scan comes after that.)
	require.NoError(t, tr.Rescan(context.Background()))
	host.ResetCounts()
	clock.Advance(4 * quarantineMin)
	require.NoError(t, tr.Rescan(context.Background()))
	assert.Zero(t, host.CountOf("maps", 90))

	// Once the reads return, its backoff having passed, it is read again
	// at once (no scan needed), through the mem file. (The abandoned reads
	// go on as they return, their results discarded: they count too.)
	host.ResetCounts()
	host.Set(90, func(p *trackertest.Proc) { p.Block = "" })
	host.Unblock()
	require.Eventually(t, func() bool {
		p, _ := tr.Snapshot().Lookup(90)
		return p != nil
	}, 10*time.Second, time.Millisecond)
	assert.Contains(t, host.Vias(90), reader.ViaMemFile)
	assert.Equal(t, 1, logs.FilterMessageSnippet("quarantined").Len(), "one warning per report interval")
}

// A stalled read that returns late (a host short of CPU slows every
// read) ends its process's quarantine after as long again as it took, not
// after the backoff: a healthy process is not hidden for the backoff by a
// moment's starvation.
func TestLateAnswerEndsTheQuarantineSooner(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(92).Block = "maps"
	host.Publish(92, "slow")
	cfg := testConfig()
	tr, clock := startWithClock(t, host, cfg, zap.NewNop())
	scanPastStuck(t, tr, clock, host, "maps", cfg)
	_, o := tr.Snapshot().Lookup(92)
	require.Equal(t, tracker.Answer(tracker.OutcomeStalled), o)

	// The read returns a second after its deadline: it took about
	// ReadTimeout + 1 s.
	clock.Advance(time.Second)
	host.Set(92, func(p *trackertest.Proc) { p.Block = "" })
	host.Unblock()
	require.Eventually(t, func() bool { return tr.StuckReads() == 0 }, 10*time.Second, time.Millisecond)
	took := cfg.ReadTimeout + time.Second

	// Not before as long again has passed...
	host.ResetCounts()
	clock.Advance(took - 10*time.Millisecond)
	require.NoError(t, tr.Rescan(context.Background()))
	assert.Zero(t, host.Count("maps"), "read again before as long as the late read took")

	// ...then, well before the backoff, it is read (its planned read,
	// which the scan starts and does not wait for).
	clock.Advance(20 * time.Millisecond)
	require.Less(t, 2*took, quarantineMin)
	require.NoError(t, tr.Rescan(context.Background()))
	require.Eventually(t, func() bool {
		p, _ := tr.Snapshot().Lookup(92)
		return p != nil
	}, 10*time.Second, time.Millisecond, "its publication, read once the quarantine ended")
	assert.Equal(t, 1, host.Count("maps"))
}

// With every reader stuck and none left to replace them, scans still end
// (their reads are handed back, not run) and every memory read goes
// through the mem file; once a stuck read returns, its reader reads again.
func TestNoReaderLeft(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(97).Block = "maps"
	host.Add(98)
	host.Publish(98, "waits")
	cfg := testConfig()
	cfg.Readers = 1
	cfg.MaxStalled = 1
	tr, clock := startWithClock(t, host, cfg, zap.NewNop())
	scanPastStuck(t, tr, clock, host, "maps", cfg) // the scan ends without a reader
	assert.Equal(t, 1, tr.StuckReads())

	// The stuck read returns: its reader resumes, and reads 98 (through
	// the mem file while no reader could be replaced).
	host.Set(97, func(p *trackertest.Proc) { p.Block = "" })
	host.Unblock()
	require.Eventually(t, func() bool { return tr.StuckReads() == 0 }, 10*time.Second, time.Millisecond)
	require.NoError(t, tr.Rescan(context.Background()))
	p, _ := tr.Snapshot().Lookup(98)
	require.NotNil(t, p)
}

// A scan that overruns ScanTimeout ends without the reads still out; their
// processes keep their place and the results are applied when they come.
func TestScanTimeout(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(80).Block = trackertest.MethodMaps
	host.Add(81)
	host.Publish(81, "good")
	cfg := testConfig()
	cfg.ReadTimeout = time.Hour // the fake clock never reaches it
	cfg.Timeout = 20 * time.Millisecond
	tr, err := tracker.New(host, cfg, zap.NewNop(), tracker.WithClock(trackertest.NewClock().Now))
	require.NoError(t, err)
	tr.Start()
	t.Cleanup(func() {
		host.Unblock()
		require.NoError(t, tr.Stop(context.Background()))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tr.Rescan(ctx), "the scan ends at its timeout")
	snap := tr.Snapshot()
	assert.True(t, snap.Scanned)
	_, o := snap.Lookup(80)
	assert.NotEqual(t, tracker.AnswerGone, o, "a process whose read is out is not swept")

	host.Set(80, func(p *trackertest.Proc) { p.Block = "" })
	host.Publish(80, "late")
	host.Unblock()
	require.Eventually(t, func() bool {
		p80, _ := tr.Snapshot().Lookup(80)
		p81, _ := tr.Snapshot().Lookup(81)
		return p80 != nil && p81 != nil
	}, 10*time.Second, time.Millisecond)
}

// The first scan waits for InitialDelay; stopping meanwhile returns at once.
func TestInitialDelay(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(1)
	cfg := testConfig()
	cfg.InitialDelay = time.Hour
	tr, err := tracker.New(host, cfg, zap.NewNop())
	require.NoError(t, err)
	tr.Start()
	select {
	case <-tr.Ready():
		t.Fatal("scanned before the initial delay")
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, tr.Stop(ctx))
	assert.Zero(t, host.Count(trackertest.MethodStart))
}

func TestStopWithAStuckRead(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(95).Block = "start"
	tr, err := tracker.New(host, testConfig(), zap.NewNop())
	require.NoError(t, err)
	tr.Start()
	require.Eventually(t, func() bool { return host.Count("start") == 1 }, 10*time.Second, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	require.NoError(t, tr.Stop(ctx))
	assert.Less(t, time.Since(began), 5*time.Second)
	host.Unblock()
}

func TestPermissionWarnings(t *testing.T) {
	host := trackertest.NewHost()
	for pid := 1; pid <= 7; pid++ {
		p := host.Add(pid)
		p.Errs["maps"] = fmt.Errorf("open maps of pid %d: %w", pid, procfs.ErrPermissionDenied)
		p.Why = "because"
	}
	host.Set(1, func(p *trackertest.Proc) { p.Why = "pid 1 is special" })
	cfg := testConfig()
	h := newHarness(t, cfg, host)
	warnings := func() []observer.LoggedEntry {
		return h.logs.FilterMessageSnippet("permission denied").All()
	}
	require.Eventually(t, func() bool { return len(warnings()) == 1 }, 10*time.Second, time.Millisecond)
	w := warnings()[0].ContextMap()
	assert.Equal(t, int64(7), w["processes"])
	assert.Equal(t, "1 (proc-1), 2 (proc-2), 3 (proc-3), 4 (proc-4), 5 (proc-5)", w["pids"])
	assert.Equal(t, "pid 1 is special", w["reason"])
	assert.Equal(t, "because", w["reason_pid_2"])

	// No second warning within the report interval, however many scans.
	for range 3 {
		h.clock.Advance(cfg.RescanInterval)
		h.rescan()
	}
	assert.Len(t, warnings(), 1)
	h.clock.Advance(cfg.WarningInterval)
	h.rescan()
	require.Eventually(t, func() bool { return len(warnings()) == 2 }, 10*time.Second, time.Millisecond)
}

func TestHealth(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(1)
	h := newHarness(t, testConfig(), host)
	changed, err := h.tr.Health()
	require.NoError(t, err)

	// A procfs that cannot be listed, logged once however many scans.
	host.SetListError(errors.New("open /hostfs/proc: no such file or directory"))
	h.rescan()
	h.rescan()
	<-changed
	changed, err = h.tr.Health()
	require.ErrorIs(t, err, tracker.ErrCannotList)
	assert.ErrorContains(t, err, "/hostfs/proc")
	assert.Equal(t, 1, h.logs.FilterMessageSnippet("Cannot list").Len())
	host.SetListError(nil)
	h.rescan()
	<-changed
	changed, err = h.tr.Health()
	require.NoError(t, err)
	assert.Equal(t, 1, h.logs.FilterMessageSnippet("listed again").Len())

	// Processes denied: a problem only when the collector's privileges are
	// why (no setting fixes a VM's init).
	host.Add(2).Errs[trackertest.MethodMaps] = procfs.ErrPermissionDenied
	h.rescan()
	_, err = h.tr.Health()
	require.NoError(t, err, "denied, but not for lack of privileges")
	host.SetAccess(fmt.Errorf("the collector lacks CAP_SYS_PTRACE: %w", procfs.ErrPermissionDenied))
	h.clock.Advance(time.Hour) // its rescan is due
	h.rescan()
	<-changed
	changed, err = h.tr.Health()
	require.ErrorIs(t, err, tracker.ErrCannotRead)
	require.ErrorIs(t, err, procfs.ErrPermissionDenied)
	host.Remove(2)
	h.rescan()
	<-changed
	_, err = h.tr.Health()
	require.NoError(t, err, "recovered once no process is denied")
}

// Subscribers are told every change, in order; a late one starts with the
// live publications.
func TestSubscribers(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(5)
	host.Publish(5, "v1")
	h := newHarness(t, testConfig(), host)
	for _, v := range []string{"v2", "v3"} {
		host.Publish(5, v)
		h.rescan()
	}
	host.Remove(5)
	h.rescan()
	assert.Equal(t, []string{"updated 5 v2", "updated 5 v3", "exited 5 v3"}, h.take())

	host.Add(6)
	host.Publish(6, "live")
	h.clock.Advance(time.Hour)
	h.rescan()
	late := trackertest.Subscribe(t, h.tr)
	changes, _ := late.Take()
	require.Len(t, changes, 1)
	assert.Equal(t, tracker.Published, changes[0].Kind)
	assert.Equal(t, 6, changes[0].Publication.PID)
}

func TestScanStats(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(1)
	host.Add(2)
	host.Publish(2, "x")
	h := newHarness(t, testConfig(), host)
	h.rescan()
	_, stats := h.sub.Take()
	require.NotEmpty(t, stats)
	last := stats[len(stats)-1]
	assert.Equal(t, 2, last.Processes)
	assert.Equal(t, 1, last.Publishers)
	assert.Equal(t, int64(1), last.Reads[tracker.OutcomeUnchanged])
	assert.Equal(t, 2, last.Tracked)
	assert.Zero(t, last.Retained)

	// What the tracker keeps returns to its level once the retention of
	// the ended publication has passed.
	lastStats := func() tracker.ScanStats {
		h.rescan()
		_, stats := h.sub.Take()
		require.NotEmpty(t, stats)
		return stats[len(stats)-1]
	}
	host.Remove(2)
	after := lastStats()
	assert.Equal(t, 1, after.Retained, "the exited publisher is retained")
	assert.Equal(t, 2, after.Tracked, "one process and one retained publication")
	h.clock.Advance(testConfig().GracePeriod)
	after = lastStats()
	assert.Zero(t, after.Retained)
	assert.Equal(t, 1, after.Tracked)
}

func TestOutcomeOf(t *testing.T) {
	for err, want := range map[error]tracker.Outcome{
		nil:                          tracker.OutcomeOK,
		tracker.ErrStalled:           tracker.OutcomeStalled,
		procfs.ErrProcessGone:        tracker.OutcomeGone,
		procfs.ErrPermissionDenied:   tracker.OutcomePermissionDenied,
		procfs.ErrMalformed:          tracker.OutcomeError,
		otep.ErrNoContext:            tracker.OutcomeNoContext,
		otep.ErrTorn:                 tracker.OutcomeTorn,
		otep.ErrInvalid:              tracker.OutcomeInvalid,
		otep.ErrTooLarge:             tracker.OutcomeTooLarge,
		errors.New("something else"): tracker.OutcomeError,
	} {
		assert.Equal(t, want, tracker.OutcomeOf(err), "%v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	def := tracker.DefaultConfig()
	require.NoError(t, def.Validate())
	bad := tracker.Config{RescanMaxInterval: -1, GracePeriod: -1, InitialDelay: -1}
	err := bad.Validate()
	require.Error(t, err)
	for _, want := range []string{"max_payload_size",
		"collection_interval must be positive", "initial_delay must not be negative", "rescan_interval", "rescan_budget", "read_timeout",
		"reconcile_interval", "grace_period must not be negative", "recheck_interval", "warning_interval", "readers", "max stalled", "quarantine backoff"} {
		assert.Contains(t, err.Error(), want)
	}
}

// A kernel thread has no user memory: its maps are never read.
func TestKernelThreadsNotRead(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(2).Kernel = true
	h := newHarness(t, testConfig(), host)
	_, o := h.tr.Snapshot().Lookup(2)
	assert.Equal(t, tracker.AnswerNoContext, o)
	h.clock.Advance(time.Hour)
	h.rescan()
	probeDone(t, h.tr.Probe([]int{2}, time.Minute))
	h.rescan()
	assert.Zero(t, host.Count(trackertest.MethodMaps))
}

// A read that a probe or a publication event waits for does not wait
// behind a read that may take until its deadline: the first scan puts both
// processes in one job, the first one's memory never answers, and the
// second one's read is taken out of that job and read at once.
func TestReadNeededNowIsTakenOutOfAHeldJob(t *testing.T) {
	for _, tt := range []struct {
		name    string
		sources tracker.Sources
		ask     func(*tracker.Tracker, *trackertest.Source) <-chan struct{}
	}{
		{"probe", 0, func(tr *tracker.Tracker, _ *trackertest.Source) <-chan struct{} {
			return tr.Probe([]int{11}, time.Hour)
		}},
		{"publication event", bothSources, func(tr *tracker.Tracker, src *trackertest.Source) <-chan struct{} {
			src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 11})
			return nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			host := trackertest.NewHost()
			host.Add(10).Block = trackertest.MethodMaps // listed first: the job's first read
			host.Add(11)
			host.Publish(11, "behind")
			cfg := testConfig()
			cfg.ReadTimeout = time.Hour // nothing but taking it out ends the wait
			src := trackertest.NewSource(tt.sources)
			tr, err := tracker.New(host, cfg, zap.NewNop(), tracker.WithEventSources(src))
			require.NoError(t, err)
			tr.Start()
			t.Cleanup(func() {
				host.Unblock() // the blocked reader exits
				require.NoError(t, tr.Stop(context.Background()))
			})
			require.Eventually(t, func() bool { return host.Count(trackertest.MethodMaps) >= 1 }, 10*time.Second, time.Millisecond,
				"the first scan's job is held by pid 10")
			if done := tt.ask(tr, src); done != nil {
				probeDone(t, done)
			}
			require.Eventually(t, func() bool {
				p, _ := tr.Snapshot().Lookup(11)
				return p != nil
			}, 10*time.Second, time.Millisecond, "pid 11 read while pid 10's read holds its job")
			_, o := tr.Snapshot().Lookup(10)
			assert.Equal(t, tracker.AnswerUnknown, o, "pid 10's read is still out")
		})
	}
}
