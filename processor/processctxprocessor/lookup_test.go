// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

// resourceLogs builds one resource per pid, each with a record.
func resourceLogs(pids ...int) plog.Logs {
	ld := plog.NewLogs()
	for _, pid := range pids {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutInt("process.pid", int64(pid))
		addRecord(rl.ScopeLogs().AppendEmpty(), "x", nil)
	}
	return ld
}

// serviceNames returns the service.name of each resource ("" when none).
func serviceNames(ld plog.Logs) []string {
	var out []string
	for _, rl := range ld.ResourceLogs().All() {
		out = append(out, serviceOf(rl.Resource().Attributes()))
	}
	return out
}

func TestKnownPidsCostNoRead(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(10)
	host.Publish(10, "cart")
	host.Add(11)
	h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)

	host.ResetCounts()
	for range 5 {
		out := h.consumeLogs(resourceLogs(10, 11))
		assert.Equal(t, []string{"cart", ""}, serviceNames(out))
	}
	md := hostmetricsLike(10)
	h.consumeMetrics(md)
	assert.Equal(t, "cart", serviceOf(md.ResourceMetrics().At(0).Resource().Attributes()))
	for _, m := range []string{trackertest.MethodStart, trackertest.MethodMaps, trackertest.MethodRead, trackertest.MethodIdentity} {
		assert.Zero(t, host.Count(m), "%s: the snapshot answers", m)
	}
}

func TestNewPidIsReadWithinTheBatch(t *testing.T) {
	host := trackertest.NewHost()
	h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)
	host.Add(20)
	host.Publish(20, "new")
	host.Add(21)

	out := h.consumeLogs(resourceLogs(20, 21, 22))
	assert.Equal(t, []string{"new", "", ""}, serviceNames(out), "probed, not waiting for a scan")
	assert.Equal(t, 2, host.Count(trackertest.MethodMaps), "20 and 21 read once each")

	// The next batch knows all three, 22 as gone: no read.
	host.ResetCounts()
	out = h.consumeLogs(resourceLogs(20, 21, 22))
	assert.Equal(t, []string{"new", "", ""}, serviceNames(out))
	assert.Zero(t, host.Count(trackertest.MethodStart)+host.Count(trackertest.MethodMaps))
}

func TestStalledReadDoesNotHoldTheBatch(t *testing.T) {
	host := trackertest.NewHost()
	cfg := testConfig()
	// Long enough for the hundred other reads on a loaded machine: only
	// the stuck one may time out.
	cfg.LookupTimeout = time.Second
	tc := fakeTrackerConfig()
	tc.ReadTimeout = time.Hour // the read stays stuck: only lookup_timeout bounds the batch
	h := newFakeHarness(t, cfg, tc, host)
	host.Add(30)
	host.Publish(30, "good")
	host.Add(31).Block = trackertest.MethodMaps
	pids := []int{31}
	for pid := 100; pid < 200; pid++ { // a hundred never-seen pids
		pids = append(pids, pid)
	}
	began := time.Now()
	out := h.consumeLogs(resourceLogs(append(pids, 30)...))
	took := time.Since(began)
	names := serviceNames(out)
	assert.Equal(t, "good", names[len(names)-1], "the good publisher is enriched")
	assert.Empty(t, names[0], "the stuck one passes through")
	assert.Less(t, took, 5*time.Second, "held %s", took) // far more than lookup_timeout, less than any read deadline
	assert.Equal(t, int64(1), counter(t, h, "otelcol_processor_process_context_errors")["logs/timeout"])
	assert.Equal(t, int64(1), counter(t, h, "otelcol_processor_process_context_enriched")["logs/context"])
}

// A batch waits for a read as long as lookup_timeout; the batches that
// come while that read goes on, once the first gave up, do not wait for it
// again: a slow read holds one batch, not every batch.
func TestReadGivenUpOnHoldsOneBatch(t *testing.T) {
	host := trackertest.NewHost()
	cfg := testConfig()
	cfg.LookupTimeout = time.Second
	tc := fakeTrackerConfig()
	tc.ReadTimeout = time.Hour
	h := newFakeHarness(t, cfg, tc, host)
	host.Add(32).Block = trackertest.MethodMaps

	began := time.Now()
	h.consumeLogs(resourceLogs(32))
	assert.GreaterOrEqual(t, time.Since(began), cfg.LookupTimeout, "the first batch waits")
	h.clock.Advance(2 * cfg.LookupTimeout) // the tracker's clock: the first batch gave up
	began = time.Now()
	h.consumeLogs(resourceLogs(32))
	assert.Less(t, time.Since(began), cfg.LookupTimeout, "the second does not wait for the same read")
	assert.Equal(t, int64(2), counter(t, h, "otelcol_processor_process_context_errors")["logs/timeout"])
	assert.Equal(t, 1, host.Count(trackertest.MethodMaps))
}

// A process read without a context is read again when telemetry names it
// recheck_interval later, and that batch waits for the read: the late
// publisher's telemetry is enriched from then on. Meanwhile, it is counted
// as what it was (no_context), and nothing is read.
func TestLatePublisherFoundAfterRecheckInterval(t *testing.T) {
	host := trackertest.NewHost()
	tc := fakeTrackerConfig()
	h := newFakeHarness(t, testConfig(), tc, host)
	host.Add(40)
	assert.Equal(t, []string{""}, serviceNames(h.consumeLogs(resourceLogs(40))))
	host.Publish(40, "late")
	host.ResetCounts()
	assert.Equal(t, []string{""}, serviceNames(h.consumeLogs(resourceLogs(40))), "within the extension's recheck_interval")
	assert.Zero(t, host.Count(trackertest.MethodMaps))
	assert.Equal(t, int64(2), counter(t, h, "otelcol_processor_process_context_no_context")["logs"])

	// The tracker's rechecks fall due on its quarter-second grid: at most
	// 250 ms after recheck_interval.
	h.clock.Advance(tc.RecheckInterval + 250*time.Millisecond)
	h.rescan() // the tracker notes that the re-read fell due
	assert.Equal(t, []string{"late"}, serviceNames(h.consumeLogs(resourceLogs(40))), "the batch waited for the re-read")
	assert.Equal(t, 1, host.Count(trackertest.MethodMaps))
}

// The first batch of a process that exec'd while no publication events
// come is enriched: the tracker had not looked at it since its exec (its
// first young read is a second later), and the batch waits for the read
// it needs.
func TestFirstBatchAfterExecWithoutPublicationEvents(t *testing.T) {
	host := trackertest.NewHost()
	src := trackertest.NewSource(tracker.ProcessEvents)
	clock := trackertest.NewClock()
	tr, err := tracker.New(host, fakeTrackerConfig(), zap.NewNop(), tracker.WithClock(clock.Now), tracker.WithEventSources(src))
	require.NoError(t, err)
	h := newHarnessOn(t, testConfig(), tr)
	t.Cleanup(host.Unblock)
	h.host, h.clock = host, clock
	h.rescan()

	host.Add(41)
	host.Add(42)
	for _, pid := range []int{41, 42} {
		src.Send(tracker.Event{Kind: tracker.EventExec, PID: pid})
	}
	h.rescan() // the exec events are handled
	host.Publish(41, "started")
	host.SetEnv(42, "env-named", "")
	assert.Equal(t, []string{"started", "env-named"}, serviceNames(h.consumeLogs(resourceLogs(41, 42))))
}

func TestGracePeriodAfterExitAndUnpublish(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(50)
	host.Publish(50, "exits")
	host.Add(51)
	host.Publish(51, "unpublishes")
	tc := fakeTrackerConfig()
	h := newFakeHarness(t, testConfig(), tc, host)
	host.Remove(50)
	host.Unpublish(51)
	h.rescan()
	assert.Equal(t, []string{"exits", "unpublishes"}, serviceNames(h.consumeLogs(resourceLogs(50, 51))), "late telemetry")
	h.clock.Advance(tc.GracePeriod)
	h.rescan()
	assert.Equal(t, []string{"", ""}, serviceNames(h.consumeLogs(resourceLogs(50, 51))))
}

func TestPidReuseDropsTheOldContext(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(60)
	host.Publish(60, "old")
	h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)
	assert.Equal(t, []string{"old"}, serviceNames(h.consumeLogs(resourceLogs(60))))
	host.Reuse(60)
	h.rescan()
	assert.Equal(t, []string{""}, serviceNames(h.consumeLogs(resourceLogs(60))))
}

func TestUpdatedContextEnrichesTheNextBatch(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(70)
	host.Publish(70, "v1")
	h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)
	host.Publish(70, "v2")
	h.rescan()
	assert.Equal(t, []string{"v2"}, serviceNames(h.consumeLogs(resourceLogs(70))))
}

func TestConcurrentBatches(t *testing.T) {
	a := startPublisher(t, pubtest.Go, "concurrent")
	h := newHarness(t, testConfig())
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 50 {
				ld := resourceLogs(a.Pid, noContextPID())
				if _, err := h.direct.processLogs(context.Background(), ld); err != nil {
					errs <- err
					return
				}
				if got := serviceNames(ld); got[0] != "concurrent" || got[1] != "" {
					errs <- fmt.Errorf("got %v", got)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}

func TestRealPidsCostNoProcIOWhenKnown(t *testing.T) {
	a := startPublisher(t, pubtest.Go, "cart")
	b := startPublisher(t, pubtest.C, "payment")
	h := newHarness(t, testConfig())
	pids := []int{a.Pid, b.Pid, noContextPID(), unusedPID(t)}
	out := h.consumeLogs(resourceLogs(pids...))
	assert.Equal(t, []string{"cart", "payment", "", ""}, serviceNames(out))

	before := h.mapsReads.of(a.Pid, b.Pid)
	for range 5 {
		out = h.consumeLogs(resourceLogs(a.Pid, b.Pid, noContextPID()))
		assert.Equal(t, []string{"cart", "payment", ""}, serviceNames(out))
	}
	assert.Equal(t, before, h.mapsReads.of(a.Pid, b.Pid), "no maps read for known publishers")
	a.update(t, withAttrs(a.resource, map[string]any{"service.version": "2"}))
	require.Eventually(t, func() bool {
		out := h.consumeLogs(resourceLogs(a.Pid))
		v, ok := out.ResourceLogs().At(0).Resource().Attributes().Get("service.version")
		return ok && v.Str() == "2"
	}, 30*time.Second, 10*time.Millisecond, "the update is read at the next scan")
}

// With kernel events, a publication is read at its event: telemetry of a
// pid known to publish nothing is enriched from the next batch on, long
// before the extension's recheck_interval would have it read again.
func TestPublicationEventEnrichesTheNextBatch(t *testing.T) {
	pubtest.RequireRoot(t)
	tc := hostopen.DefaultConfig()
	tc.CollectionInterval, tc.RecheckInterval = time.Hour, time.Hour
	tc.Discovery = hostopen.DiscoveryEvents
	tc.PublicationEvents = trackertest.PublicationEvents(t)
	tr, err := hostopen.Open(tc, zap.NewNop())
	require.NoError(t, err)
	h := newHarnessOn(t, testConfig(), tr)
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	assert.Equal(t, []string{""}, serviceNames(h.consumeLogs(resourceLogs(p.Pid))), "no context yet")
	p.Publish(otep.EncodeStrings(map[string]string{"service.name": "published-now"}))
	require.Eventually(t, func() bool {
		return serviceNames(h.consumeLogs(resourceLogs(p.Pid)))[0] == "published-now"
	}, 10*time.Second, time.Millisecond)
}
