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

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/sdkenv"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

const bothSources = tracker.ProcessEvents | tracker.PublicationEvents

// eventHarness is a harness whose tracker gets events from src.
func eventHarness(t *testing.T, host *trackertest.Host, sources tracker.Sources) (*harness, *trackertest.Source) {
	t.Helper()
	src := trackertest.NewSource(sources)
	h := newHarness(t, testConfig(), host, tracker.WithEventSources(src))
	return h, src
}

// waitChanges waits until the subscription has n changes and returns them
// as take does.
func (h *harness) waitChanges(n int) []string {
	h.t.Helper()
	return describeChanges(h.takeChanges(n))
}

// settle waits until the tracker has handled what was sent before (a
// Rescan is queued behind the events) without moving the clock.
func (h *harness) settle() { h.t.Helper(); h.rescan() }

func TestEventsExitAndPublish(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(10)
	host.Publish(10, "early")
	host.Add(11)
	h, src := eventHarness(t, host, bothSources)
	h.take()
	require.Equal(t, uint64(0x7f0000000000+10<<12), src.Tracked(10), "the publication is watched for unmapping")

	// A late publisher is read at its event, with no scan.
	host.ResetCounts()
	host.Publish(11, "late")
	src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 11, Addr: 0x7f0000000000 + 11<<12})
	assert.Equal(t, []string{"published 11 late"}, h.waitChanges(1))
	assert.Equal(t, 1, host.Count(trackertest.MethodMaps))

	// An update likewise (events of one process are paced).
	h.clock.Advance(time.Second)
	host.Publish(11, "late-v2")
	src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 11, Addr: 0x7f0000000000 + 11<<12})
	assert.Equal(t, []string{"updated 11 late-v2"}, h.waitChanges(1))

	// An exit ends the publication at once.
	host.Remove(10)
	src.Send(tracker.Event{Kind: tracker.EventExit, PID: 10})
	assert.Equal(t, []string{"exited 10 early"}, h.waitChanges(1))
	assert.Zero(t, src.Tracked(10))
}

// With both sources, a scan reads neither the publishers' timestamps nor
// the maps of processes without a context, until the reconcile interval.
func TestEventsSteadyScans(t *testing.T) {
	host := trackertest.NewHost()
	for pid := 20; pid < 30; pid++ {
		host.Add(pid)
	}
	host.Publish(20, "a")
	h, _ := eventHarness(t, host, bothSources)
	cfg := testConfig()
	host.ResetCounts()
	for range 3 {
		h.clock.Advance(cfg.RescanMaxInterval) // any rescan would be due
		h.rescan()
	}
	assert.Zero(t, host.Count(trackertest.MethodRead), "no timestamp reads")
	assert.Zero(t, host.Count(trackertest.MethodMaps), "no rescans")

	h.clock.Advance(cfg.ReconcileInterval)
	h.rescan()
	assert.Equal(t, 1, host.Count(trackertest.MethodRead), "the reconcile scan reads the timestamp")
	assert.Equal(t, 9, host.Count(trackertest.MethodMaps), "and rescans the others")
}

// Without publication events, every scan reads every publisher's
// timestamp and rescans the others; while process events come, it lists
// the host only once a minute, or after events were lost.
func TestProcessEventsOnlyPoll(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(20)
	host.Publish(20, "a")
	host.Add(21)
	h, src := eventHarness(t, host, tracker.ProcessEvents)
	host.ResetCounts()
	h.rescan()
	assert.Equal(t, 1, host.Count(trackertest.MethodRead), "the publisher's timestamp")
	assert.Zero(t, host.Count("list"), "listed a moment ago")

	host.Publish(20, "a-v2")
	host.Publish(21, "late")
	h.clock.Advance(time.Hour) // the rescan is due
	assert.ElementsMatch(t, []string{"updated 20 a-v2", "published 21 late"}, h.advanceUntilChanges(2))
	assert.Equal(t, 1, host.Count("list"), "once a minute")

	host.ResetCounts()
	h.rescan()
	assert.Zero(t, host.Count("list"))
	src.Send(tracker.Event{Kind: tracker.EventLost, Source: tracker.ProcessEvents})
	require.Eventually(t, func() bool { return host.Count("list") == 1 }, 10*time.Second, time.Millisecond,
		"events lost: the next scan lists the host")
}

func TestForkAndExec(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(1)
	host.Publish(1, "parent")
	h, src := eventHarness(t, host, bothSources)
	h.take()

	// A forked child is not read by the scans.
	host.ResetCounts()
	host.Add(40)
	src.Send(tracker.Event{Kind: tracker.EventFork, PID: 40, Parent: 1})
	h.settle()
	h.rescan()
	assert.Zero(t, host.Count(trackertest.MethodMaps))
	assert.Zero(t, host.Count(trackertest.MethodStart))
	// Publication events tell of its context; its environment is not read
	// yet: a lookup waits for a probe, which reads only that.
	_, o := h.tr.Snapshot().Lookup(40)
	assert.Equal(t, tracker.AnswerUnknown, o)
	probeDone(t, h.tr.Probe([]int{40}, time.Minute))
	_, o = h.tr.Snapshot().Lookup(40)
	assert.Equal(t, tracker.AnswerNoContext, o)
	assert.Zero(t, host.Count(trackertest.MethodMaps))
	assert.Equal(t, 1, host.Count(trackertest.MethodEnviron))

	// It execs into a publisher: found at the publication event.
	src.Send(tracker.Event{Kind: tracker.EventExec, PID: 40})
	host.Publish(40, "child")
	src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 40, Addr: 0x7f0000000000 + 40<<12})
	assert.Equal(t, []string{"published 40 child"}, h.waitChanges(1))

	// A publisher that execs loses its publication with its image.
	host.Unpublish(1)
	src.Send(tracker.Event{Kind: tracker.EventExec, PID: 1})
	assert.Equal(t, []string{"unpublished 1 parent"}, h.waitChanges(1))
}

// Without publication events, an exec makes the process young: its maps
// are read again on a short schedule.
func TestExecYoungReads(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(50)
	h, src := eventHarness(t, host, tracker.ProcessEvents)
	host.ResetCounts()
	src.Send(tracker.Event{Kind: tracker.EventExec, PID: 50})
	h.settle()
	assert.Zero(t, host.Count(trackertest.MethodMaps), "nothing before the first delay")
	h.clock.Advance(time.Second)
	h.rescan() // a scan starts what is due
	require.Eventually(t, func() bool { return host.Count(trackertest.MethodMaps) == 1 }, 10*time.Second, time.Millisecond,
		"maps read %d times", host.Count(trackertest.MethodMaps))
	host.Publish(50, "slow-start")
	assert.Equal(t, []string{"published 50 slow-start"}, h.advanceUntilChanges(1))
}

// A young process whose read meets its first publication mid-update (the
// timestamp 0) is read again within tens of milliseconds, not at the next
// young read seconds later: without publication events nothing else would
// tell the tracker when the update ends.
func TestYoungReadMidUpdateRetriedSoon(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(51)
	h, src := eventHarness(t, host, tracker.ProcessEvents)
	host.Publish(51, "mid-update")
	host.Set(51, func(p *trackertest.Proc) { p.Errs["read"] = fmt.Errorf("header: timestamp 0: %w", otep.ErrTorn) })
	src.Send(tracker.Event{Kind: tracker.EventExec, PID: 51})
	h.settle()
	host.ResetCounts()
	h.clock.Advance(time.Second)
	h.rescan()
	require.Eventually(t, func() bool { return host.Count(trackertest.MethodMaps) >= 1 }, 10*time.Second, time.Millisecond)
	// The young read may have been started by the plan timer rather than
	// by the scan, which then does not wait for it: wait until its torn
	// result is applied, so that its retry is planned before the clock moves.
	require.NoError(t, h.tr.WaitIdle(context.Background()))
	host.Set(51, func(p *trackertest.Proc) { delete(p.Errs, "read") })
	h.clock.Advance(100 * time.Millisecond) // the next young read is 2 s away
	h.rescan()
	assert.Equal(t, []string{"published 51 mid-update"}, h.waitChanges(1))
}

// advanceUntilChanges moves the clock by seconds, scanning each time, until
// n changes came (scheduled reads fall due whenever their scheduling ran),
// and says how far the clock moved; at most a rescan interval: the changes
// must come from the short schedules, not the rescans.
func (h *harness) advanceUntilChanges(n int) []string {
	h.t.Helper()
	var got []string
	for range testConfig().RescanInterval/time.Second - 1 {
		h.clock.Advance(time.Second)
		h.rescan()
		got = append(got, h.take()...)
		if len(got) >= n {
			return got
		}
		time.Sleep(time.Millisecond)
	}
	h.t.Fatalf("want %d changes within a rescan interval, got %v", n, got)
	return nil
}

// In poll mode, a process a scan meets for the first time (it may be
// between fork and exec, showing its parent's image) is read again soon.
func TestPollYoungReads(t *testing.T) {
	host := trackertest.NewHost()
	h := newHarness(t, testConfig(), host)
	host.Add(60)
	h.rescan()
	host.ResetCounts()
	host.Publish(60, "after-exec")
	assert.Equal(t, []string{"published 60 after-exec"}, h.advanceUntilChanges(1))
}

func TestUnmapEvent(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(70)
	host.Publish(70, "x")
	h, src := eventHarness(t, host, bothSources)
	h.take()
	host.Unpublish(70)
	src.Send(tracker.Event{Kind: tracker.EventUnmap, PID: 70, Addr: 0x7f0000000000 + 70<<12})
	assert.Equal(t, []string{"unpublished 70 x"}, h.waitChanges(1))
}

// A publication source that reports no unmaps (the kprobe mechanism
// leaves munmap alone): an unpublish is found by the next scan, which
// lists the host and reads every publisher's header, as without events.
func TestUnpublishFoundByScansWithoutUnmapEvents(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(75)
	host.Publish(75, "x")
	src := trackertest.NewSource(bothSources)
	h := newHarness(t, testConfig(), host, tracker.WithEventSources(src.WithoutUnmaps()))
	h.take()
	host.Unpublish(75)
	h.clock.Advance(time.Second) // not an eventsListInterval, nor a ReconcileInterval
	h.rescan()
	assert.Equal(t, []string{"unpublished 75 x"}, h.waitChanges(1))
}

// Telemetry sent right after a publish names a pid the tracker read
// without a context: while the publication event's read is out, lookups
// say "not known yet" (a batch probes and waits for it), not "no context".
func TestPublicationEventAwaited(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(140)
	host.Add(141)
	h, src := eventHarness(t, host, bothSources)
	_, o := h.lookup(140)
	require.Equal(t, tracker.AnswerNoContext, o)

	host.Publish(140, "just-published")
	host.Set(140, func(p *trackertest.Proc) { p.Block = trackertest.MethodMaps })
	host.ResetCounts()
	src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 140})
	require.Eventually(t, func() bool { return host.Count(trackertest.MethodMaps) > 0 }, 10*time.Second, time.Millisecond)
	_, o = h.lookup(140)
	assert.Equal(t, tracker.AnswerUnknown, o, "the event's read is out")
	probed := h.tr.Probe([]int{140}, time.Minute)
	require.NotNil(t, probed)
	select {
	case <-probed:
		t.Fatal("the probe ended before the read")
	case <-time.After(10 * time.Millisecond):
	}
	host.Set(140, func(p *trackertest.Proc) { p.Block = "" })
	host.Unblock()
	select {
	case <-probed:
	case <-time.After(10 * time.Second):
		t.Fatal("the probe did not end with the read")
	}
	svc, o := h.lookup(140)
	assert.Equal(t, "just-published", svc)
	assert.Equal(t, tracker.AnswerOK, o)

	// A publication event of a pid whose read finds nothing leaves it
	// "no context" again.
	host.ResetCounts()
	src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 141})
	require.Eventually(t, func() bool { return host.Count(trackertest.MethodMaps) > 0 }, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { _, o = h.lookup(141); return o == tracker.AnswerNoContext }, 10*time.Second, time.Millisecond)
}

// A quarantined process's publication events read nothing sooner, so
// nothing is awaited: lookups keep saying it stalled (batches naming it do
// not wait for a read that is not coming).
func TestQuarantinedPublisherNotAwaited(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(150).Block = trackertest.MethodMaps
	host.Publish(150, "hostile")
	host.Add(151)
	tr, src, _ := stalledAtStart(t, host, 150)

	host.ResetCounts()
	src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 150})
	src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 151}) // handled after 150's
	require.Eventually(t, func() bool { return host.Count(trackertest.MethodMaps) > 0 }, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { _, o := tr.Snapshot().Lookup(151); return o == tracker.AnswerNoContext }, 10*time.Second, time.Millisecond)
	_, o := tr.Snapshot().Lookup(150)
	assert.Equal(t, tracker.Answer(tracker.OutcomeStalled), o)
	assert.Equal(t, 1, host.Count(trackertest.MethodMaps), "151's read only")
}

// A publication event whose read finds nothing yet (a memfd not written)
// is retried.
func TestPublishRetried(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(80)
	h, src := eventHarness(t, host, bothSources)
	src.Send(tracker.Event{Kind: tracker.EventMemfd, PID: 80})
	h.settle()
	host.Publish(80, "written")
	assert.Equal(t, []string{"published 80 written"}, h.advanceUntilChanges(1))
}

// A read in progress when the process exits is of the past: its result is
// dropped, even when the pid names a new process by then.
func TestExitDuringRead(t *testing.T) {
	host := trackertest.NewHost()
	h, src := eventHarness(t, host, bothSources)
	host.Add(90).Block = trackertest.MethodMaps
	host.Publish(90, "old")
	src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 90})
	require.Eventually(t, func() bool { return host.Count(trackertest.MethodMaps) == 1 }, 10*time.Second, time.Millisecond)
	src.Send(tracker.Event{Kind: tracker.EventExit, PID: 90})
	src.Send(tracker.Event{Kind: tracker.EventFork, PID: 90, Parent: 1})
	h.settle()
	host.Set(90, func(p *trackertest.Proc) { p.Block = "" })
	host.Unblock()
	h.settle()
	h.settle()
	p, o := h.tr.Snapshot().Lookup(90)
	assert.Nil(t, p, "the old process's context is not the new one's")
	assert.Equal(t, tracker.AnswerUnknown, o, "the new one's environment is not read yet")
}

// Dropped events make the next scan read everything events would have
// told.
func TestLostEvents(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(100)
	host.Add(101)
	host.Publish(101, "pub")
	h, src := eventHarness(t, host, bothSources)
	h.take()
	host.ResetCounts()
	host.Publish(100, "missed")
	host.Publish(101, "missed-update")
	src.Send(tracker.Event{Kind: tracker.EventLost, Source: tracker.PublicationEvents})
	got := h.waitChanges(2)
	assert.ElementsMatch(t, []string{"published 100 missed", "updated 101 missed-update"}, got)
	assert.Equal(t, uint64(1), h.tr.Events().Lost)
}

// A source that stops hands its events back to polling.
func TestSourceStopped(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(110)
	host.Publish(110, "pub")
	procSrc, src := trackertest.NewSource(tracker.ProcessEvents), trackertest.NewSource(tracker.PublicationEvents)
	h := newHarness(t, testConfig(), host, tracker.WithEventSources(procSrc, src))
	src.Fail(errors.New("ring buffer reader broke"))
	require.Eventually(t, func() bool { return h.tr.LiveSources() == tracker.ProcessEvents }, 10*time.Second, time.Millisecond)
	// The stop starts a make-up scan; a rescan during it waits for the
	// scan after it, so count the reads of a scan started once both ended.
	h.rescan()
	host.ResetCounts()
	h.rescan()
	assert.Equal(t, 1, host.Count(trackertest.MethodRead), "timestamps are polled again")
	assert.Equal(t, 1, h.logs.FilterMessageSnippet("event source stopped").Len())
}

// A process calling prctl in a loop is read at most once per gap.
func TestPublishEventsPaced(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(120)
	host.Publish(120, "spam")
	h, src := eventHarness(t, host, bothSources)
	h.take()
	host.ResetCounts()
	for range 100 {
		src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 120, Addr: 0x7f0000000000 + 120<<12})
	}
	h.settle()
	h.settle()
	assert.LessOrEqual(t, host.Count(trackertest.MethodRead), 2, "one read, and one after it for the events during it")
}

func TestIdentityErrorsKeepKinds(t *testing.T) {
	// The permission kinds of procfs still classify event reads.
	host := trackertest.NewHost()
	host.Add(130).Errs[trackertest.MethodMaps] = procfs.ErrPermissionDenied
	h, src := eventHarness(t, host, bothSources)
	host.ResetCounts()
	src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 130})
	require.Eventually(t, func() bool { return host.Count(trackertest.MethodMaps) > 0 }, 10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool {
		_, o := h.tr.Snapshot().Lookup(130)
		return o == tracker.Answer(tracker.OutcomePermissionDenied)
	}, 10*time.Second, time.Millisecond, "the event's read")
}

// Events of the two sources come on two paths: an exec or an exit older
// than a publication event is not allowed to undo it.
func TestEventsOrderedByTime(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(140)
	h, src := eventHarness(t, host, bothSources)
	host.Publish(140, "new-image")
	src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 140, Time: 2000})
	assert.Equal(t, []string{"published 140 new-image"}, h.waitChanges(1))
	src.Send(tracker.Event{Kind: tracker.EventExec, PID: 140, Time: 1000})
	src.Send(tracker.Event{Kind: tracker.EventExit, PID: 140, Time: 1500})
	h.settle()
	p, _ := h.tr.Snapshot().Lookup(140)
	require.NotNil(t, p)
	assert.True(t, p.Live())
	assert.Empty(t, h.take())

	// A later exec ends it.
	src.Send(tracker.Event{Kind: tracker.EventExec, PID: 140, Time: 3000})
	assert.Equal(t, []string{"unpublished 140 new-image"}, h.waitChanges(1))
}

// An exec the kernel reported before a read that found the new image's
// publication began came late (cmd.Start returns once the exec is done,
// its event may be read after a listing read the process): it does not
// end the publication. One reported after the read does.
func TestLateExecAfterARead(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(145)
	h, src := eventHarness(t, host, bothSources)
	host.Publish(145, "read-first")
	host.SetKernelTime(5000) // the read that finds it begins after the exec
	src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 145, Time: 4000})
	assert.Equal(t, []string{"published 145 read-first"}, h.waitChanges(1))
	src.Send(tracker.Event{Kind: tracker.EventExec, PID: 145, Time: 4500})
	src.Send(tracker.Event{Kind: tracker.EventExit, PID: 145, Time: 4600})
	h.settle()
	p, _ := h.tr.Snapshot().Lookup(145)
	require.NotNil(t, p)
	assert.True(t, p.Live())
	assert.Empty(t, h.take())

	src.Send(tracker.Event{Kind: tracker.EventExec, PID: 145, Time: 6000})
	assert.Equal(t, []string{"unpublished 145 read-first"}, h.waitChanges(1))
}

// While events make most scans skip the listing, a procfs that went away
// is still noticed at the next scan, and the reads that fail meanwhile do
// not make processes "exited".
func TestEventsProcfsGone(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(150)
	host.Publish(150, "stays")
	h, src := eventHarness(t, host, bothSources)
	h.take()
	changed, err := h.tr.Health()
	require.NoError(t, err)

	gone := fmt.Errorf("procfs at /hostfs/proc: %w", procfs.ErrNoProcfs)
	host.SetListError(gone)
	host.Set(150, func(p *trackertest.Proc) { p.Errs[trackertest.MethodRead] = procfs.ErrProcessGone })
	h.rescan()
	<-changed
	changed, err = h.tr.Health()
	require.ErrorIs(t, err, tracker.ErrCannotList)
	src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 150, Addr: 0x7f0000000000 + 150<<12})
	h.settle()
	h.settle()
	assert.Empty(t, h.take(), "not exited: the procfs is gone, not the process")

	host.SetListError(nil)
	host.Set(150, func(p *trackertest.Proc) { delete(p.Errs, trackertest.MethodRead) })
	h.rescan()
	<-changed
	_, err = h.tr.Health()
	require.NoError(t, err)
	p, _ := h.tr.Snapshot().Lookup(150)
	require.NotNil(t, p)
	assert.True(t, p.Live())
}

// A flood of dropped events (a process flooding the ring buffer with
// prctl calls) is one scan: the drops are coalesced, and the scans they
// start paced by the hint interval.
func TestLostEventsPaced(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(160)
	h, src := eventHarness(t, host, bothSources)
	host.ResetCounts()
	for range 50 {
		src.Send(tracker.Event{Kind: tracker.EventLost, Source: tracker.PublicationEvents})
	}
	h.settle() // itself a listing: the drops asked for a full scan
	assert.LessOrEqual(t, host.Count("list"), 2)
}

// A young process is looked at again five times in its first 38 s (1, 3,
// 8, 18 and 38 s after a scan met it), then only on the rescan schedule:
// the cost of the exec race's cure without events. Each look reads its
// stat, and its maps only when its address space changed since they were
// read (a context mapped).
func TestPollYoungReadsBounded(t *testing.T) {
	host := trackertest.NewHost()
	cfg := testConfig()
	cfg.RescanInterval, cfg.RescanMaxInterval = time.Hour, time.Hour
	h := newHarness(t, cfg, host)
	host.Add(170)
	host.ResetCounts()
	// Each second's reads are applied before the clock moves on: the next
	// young read is planned when the last one returns.
	step := func() {
		h.rescan()
		require.NoError(t, h.tr.WaitIdle(context.Background()))
	}
	step() // meets it: the first read
	for range 120 {
		h.clock.Advance(time.Second)
		step()
	}
	require.Equal(t, 6, host.Count(trackertest.MethodStart))
	require.Equal(t, 1, host.Count(trackertest.MethodMaps), "its address space never changed")
	for range 10 {
		h.clock.Advance(time.Second)
		step()
	}
	assert.Equal(t, 6, host.Count(trackertest.MethodStart))

	// Another, that publishes 5 s after it was met: the look at 8 s reads
	// its maps, and finds the context.
	host.Add(171)
	host.ResetCounts()
	h.take()
	step()
	for s := 1; s <= 10; s++ {
		h.clock.Advance(time.Second)
		if s == 5 {
			host.Publish(171, "late")
		}
		step()
	}
	assert.Equal(t, []string{"published 171 late"}, h.take())
	assert.Equal(t, 2, host.Count(trackertest.MethodMaps), "at its first read, and at the look after it published")
}

// With process events, a process known from its fork and exec, and read
// since, is not read again when a listing first names it: the listing
// only adds its inode (the events tell when it goes).
func TestListingAddsInodeOfProcessKnownFromEvents(t *testing.T) {
	host := trackertest.NewHost()
	h, src := eventHarness(t, host, tracker.ProcessEvents)
	host.Add(180)
	src.Send(tracker.Event{Kind: tracker.EventFork, PID: 180, Parent: 1})
	src.Send(tracker.Event{Kind: tracker.EventExec, PID: 180})
	require.NoError(t, h.tr.WaitIdle(context.Background())) // a call sees the events before it; no listing
	host.ResetCounts()
	h.clock.Advance(time.Second) // its first young read
	require.Eventually(t, func() bool { return host.Count(trackertest.MethodMaps) == 1 }, 10*time.Second, time.Millisecond, "its first young read")
	require.NoError(t, h.tr.WaitIdle(context.Background()))

	h.rescan() // a listing names it
	require.NoError(t, h.tr.WaitIdle(context.Background()))
	assert.Equal(t, 1, host.Count(trackertest.MethodStart), "not read again")
	assert.Equal(t, 1, host.Count(trackertest.MethodMaps))
}

// A young read that does not return in time (a host short of CPU: the
// kernel matrix's emulated guests) does not end the young series: once
// the quarantine ends, the reads go on at their times, and a publication
// made after the stall is found by the next of them, not by a rescan an
// hour later.
func TestPollYoungReadsSurviveAStall(t *testing.T) {
	host := trackertest.NewHost()
	cfg := testConfig()
	cfg.RescanInterval, cfg.RescanMaxInterval = time.Hour, time.Hour
	h := newHarness(t, cfg, host)
	host.Add(172)
	step := func() {
		h.rescan()
		require.NoError(t, h.tr.WaitIdle(context.Background()))
	}
	step() // meets it: young reads 1, 3, 8, 18 and 38 s later

	// The first young read sticks (in its stat, which it reads first),
	// then returns a second after its deadline: a quarantine of as long
	// again.
	host.Set(172, func(p *trackertest.Proc) { p.Block = trackertest.MethodStart })
	host.ResetCounts()
	h.clock.Advance(time.Second)
	h.rescan()
	require.Eventually(t, func() bool { return host.CountOf(trackertest.MethodStart, 172) > 0 }, 10*time.Second, time.Millisecond)
	h.clock.Advance(cfg.ReadTimeout + time.Second)
	host.Set(172, func(p *trackertest.Proc) { p.Block = "" })
	host.Unblock()
	require.Eventually(t, func() bool { return h.tr.StuckReads() == 0 }, 10*time.Second, time.Millisecond)
	step()
	// The read that ends the quarantine finds no context either.
	for host.CountOf(trackertest.MethodStart, 172)+host.CountOf(trackertest.MethodMaps, 172) < 2 {
		h.clock.Advance(time.Second)
		step()
	}

	host.Publish(172, "after-the-stall")
	var got []string
	for range 40 {
		h.clock.Advance(time.Second)
		step()
		if got = append(got, h.take()...); len(got) > 0 {
			break
		}
	}
	assert.Equal(t, []string{"published 172 after-the-stall"}, got)
}

// A process met mid-exec (its environment reads empty: the kernel
// matrix's emulated guests catch Go publishers there) is read again soon
// for its environment; the young series goes on after those retries, and
// a publication made seconds later is found by it, not by a rescan an
// hour later.
func TestPollYoungReadsAfterAnEmptyEnvironment(t *testing.T) {
	host := trackertest.NewHost()
	cfg := testConfig()
	cfg.RescanInterval, cfg.RescanMaxInterval = time.Hour, time.Hour
	h := newHarness(t, cfg, host)
	h.rescan()
	host.Add(173).Errs[trackertest.MethodEnviron] = sdkenv.ErrEmpty
	step := func(d time.Duration) {
		h.clock.Advance(d)
		h.rescan()
		require.NoError(t, h.tr.WaitIdle(context.Background()))
	}
	step(0) // meets it mid-exec
	// The exec is over a few retries later.
	for range 3 {
		step(100 * time.Millisecond)
	}
	host.Set(173, func(p *trackertest.Proc) { delete(p.Errs, trackertest.MethodEnviron) })
	for range 50 {
		step(100 * time.Millisecond)
	}
	host.Publish(173, "published-after-the-exec")
	var got []string
	for range 40 {
		step(time.Second)
		if got = append(got, h.take()...); len(got) > 0 {
			break
		}
	}
	assert.Equal(t, []string{"published 173 published-after-the-exec"}, got)
}

// On a host with pid_max 32768 and churn, a pid is reused before the old
// process's exit is reported: the new process's exec and publication come
// first, the old exit last. The read at the publication finds the pid
// naming another process than the one the tracker knew: the new one is
// read and published, and the late exit does not end it.
func TestEventsPidReusedBeforeItsExitIsReported(t *testing.T) {
	for _, oldPublished := range []bool{false, true} {
		t.Run(fmt.Sprintf("old publisher %v", oldPublished), func(t *testing.T) {
			host := trackertest.NewHost()
			host.Add(40)
			if oldPublished {
				host.Publish(40, "old")
			}
			h, src := eventHarness(t, host, bothSources)
			h.take()

			host.Reuse(40)
			host.Publish(40, "new")
			src.Send(tracker.Event{Kind: tracker.EventFork, PID: 40, Time: 150})
			src.Send(tracker.Event{Kind: tracker.EventExec, PID: 40, Time: 200})
			src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 40, Time: 300, Addr: 0x7f0000000000 + 40<<12})
			want := []string{"published 40 new"}
			if oldPublished {
				// The exec, taken for the old process's, ended its
				// publication: its exit was not known yet.
				want = []string{"unpublished 40 old", "published 40 new"}
			}
			assert.Equal(t, want, h.waitChanges(len(want)))

			src.Send(tracker.Event{Kind: tracker.EventExit, PID: 40, Time: 100})
			h.settle()
			assert.Empty(t, h.take(), "the old process's exit, reported late, is not the new one's")
			svc, o := h.lookup(40)
			assert.Equal(t, tracker.AnswerOK, o)
			assert.Equal(t, "new", svc)
		})
	}
}

// A quarantined process is read again when its backoff ends, also while
// events make the scans read nothing.
func TestQuarantineEndsWithARead(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(160).Block = trackertest.MethodMaps
	host.Publish(160, "slow")
	tr, _, clock := stalledAtStart(t, host, 160)
	cfg := testConfig()

	host.Set(160, func(p *trackertest.Proc) { p.Block = "" })
	host.Unblock()
	require.Eventually(t, func() bool { return tr.StuckReads() == 0 }, 10*time.Second, time.Millisecond)
	require.NoError(t, tr.Rescan(context.Background()))
	_, o := tr.Snapshot().Lookup(160)
	require.Equal(t, tracker.Answer(tracker.OutcomeStalled), o, "not before its backoff")

	clock.Advance(cfg.QuarantineBackoff)
	require.NoError(t, tr.Rescan(context.Background())) // runs what is due
	require.Eventually(t, func() bool { p, _ := tr.Snapshot().Lookup(160); return p != nil }, 10*time.Second, time.Millisecond)
}

// stalledAtStart starts a tracker with both event sources on host, whose
// process pid blocks its maps read: the first scan quarantines it.
func stalledAtStart(t *testing.T, host *trackertest.Host, pid int) (*tracker.Tracker, *trackertest.Source, *trackertest.Clock) {
	t.Helper()
	src := trackertest.NewSource(bothSources)
	cfg := testConfig()
	clock := trackertest.NewClock()
	tr, err := tracker.New(host, cfg, zap.NewNop(), tracker.WithClock(clock.Now), tracker.WithEventSources(src))
	require.NoError(t, err)
	tr.Start()
	t.Cleanup(func() {
		host.Unblock()
		require.NoError(t, tr.Stop(context.Background()))
	})
	require.Eventually(t, func() bool { return host.Count(trackertest.MethodMaps) >= 1 }, 10*time.Second, time.Millisecond)
	clock.Advance(cfg.ReadTimeout + time.Millisecond)
	<-tr.Ready()
	_, o := tr.Snapshot().Lookup(pid)
	require.Equal(t, tracker.Answer(tracker.OutcomeStalled), o)
	return tr, src, clock
}

// A publication event that comes while a read of the process is out waits
// for that read; when that read stalls instead of returning, the process
// is still read after its quarantine (the event's read was once left
// waiting for a read no longer out, and the publisher never read again:
// 1 of 120 publishers in a burst under an emulator).
func TestPublicationEventDuringAStalledRead(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(160)
	h, src := eventHarness(t, host, bothSources)
	_, o := h.lookup(160)
	require.Equal(t, tracker.AnswerNoContext, o)

	host.Publish(160, "published-meanwhile")
	host.Set(160, func(p *trackertest.Proc) { p.Block = trackertest.MethodMaps })
	host.ResetCounts()
	src.Send(tracker.Event{Kind: tracker.EventMemfd, PID: 160})
	h.settle()
	h.clock.Advance(10 * time.Millisecond) // the memfd event's read
	require.Eventually(t, func() bool { return host.Count(trackertest.MethodMaps) > 0 }, 10*time.Second, time.Millisecond)
	src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 160}) // waits for the read out
	h.settle()
	h.clock.Advance(testConfig().ReadTimeout + time.Millisecond)
	require.Eventually(t, func() bool { _, o := h.tr.Snapshot().Lookup(160); return o == tracker.Answer(tracker.OutcomeStalled) },
		10*time.Second, time.Millisecond, "quarantined, not waiting for a read no longer out")

	host.Set(160, func(p *trackertest.Proc) { p.Block = "" })
	host.Unblock()
	h.clock.Advance(testConfig().QuarantineBackoff)
	h.rescan() // runs the plans due
	assert.Equal(t, []string{"published 160 published-meanwhile"}, h.waitChanges(1))
}

// takeChanges waits until the subscription has n changes and returns them.
func (h *harness) takeChanges(n int) []tracker.Change {
	h.t.Helper()
	var got []tracker.Change
	deadline := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case <-h.sub.C():
			changes, _ := h.sub.Take()
			got = append(got, changes...)
		case <-deadline:
			h.t.Fatalf("want %d changes, got %v", n, describeChanges(got))
		}
	}
	return got
}

// What the kernel told of is Prompt (subscribers pass it on at once); what
// the polls found is not.
func TestChangesPromptWhenEventsTellThem(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(10)
	host.Publish(10, "polled")
	host.Add(11)
	h, src := eventHarness(t, host, bothSources) // its first scan found pid 10's

	host.Publish(11, "told")
	src.Send(tracker.Event{Kind: tracker.EventPublish, PID: 11, Addr: 0x7f0000000000 + 11<<12})
	changes := h.takeChanges(1)
	assert.Equal(t, tracker.Published, changes[0].Kind)
	assert.True(t, changes[0].Prompt, "read at its publication event")

	host.Remove(10)
	src.Send(tracker.Event{Kind: tracker.EventExit, PID: 10})
	changes = h.takeChanges(1)
	assert.Equal(t, tracker.Exited, changes[0].Kind)
	assert.True(t, changes[0].Prompt, "an exit event")

	host.Unpublish(11)
	h.clock.Advance(time.Hour)
	h.rescan()
	changes = h.takeChanges(1)
	assert.Equal(t, tracker.Unpublished, changes[0].Kind)
	assert.False(t, changes[0].Prompt, "found by a scan")
}
