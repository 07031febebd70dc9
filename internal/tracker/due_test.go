// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

// Without publication events, a process that exec'd is not looked at until
// its first young read, a second later; its SDK publishes meanwhile. A
// lookup says a read is due, and the probe of telemetry naming it reads it
// then: the first batch gets the context.
func TestExecedProcessIsReadWhenTelemetryNamesIt(t *testing.T) {
	host := trackertest.NewHost()
	h, src := eventHarness(t, host, tracker.ProcessEvents)
	host.Add(30)
	src.Send(tracker.Event{Kind: tracker.EventExec, PID: 30})
	h.settle()
	_, o := h.lookup(30)
	require.Equal(t, tracker.AnswerUnknown, o, "not looked at since its exec")

	host.Publish(30, "starting-up")
	host.ResetCounts()
	probeDone(t, h.tr.Probe([]int{30}, time.Minute))
	svc, o := h.lookup(30)
	assert.Equal(t, tracker.AnswerOK, o)
	assert.Equal(t, "starting-up", svc)
	assert.Equal(t, 1, host.Count(trackertest.MethodMaps), "one read")
}

// The same for a process named by its environment: with publication
// events, an exec's environment is read 10 ms after it; telemetry that
// comes first waits for a read of the environment alone.
func TestExecedEnvironmentIsReadWhenTelemetryNamesIt(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(31)
	h, src := eventHarness(t, host, bothSources)
	host.SetEnv(31, "by-env", "")
	src.Send(tracker.Event{Kind: tracker.EventExec, PID: 31})
	h.settle()
	_, o := h.lookup(31)
	require.Equal(t, tracker.AnswerUnknown, o, "its environment is not read yet")

	host.ResetCounts()
	probeDone(t, h.tr.Probe([]int{31}, time.Minute))
	src2, svc := h.attr(31, "service.name")
	assert.Equal(t, tracker.SourceEnvironment, src2)
	assert.Equal(t, "by-env", svc)
	assert.Equal(t, 1, host.Count(trackertest.MethodEnviron))
	assert.Zero(t, host.Count(trackertest.MethodMaps), "publication events tell of its context")
}

// A pid that telemetry names again and again while it has no context is
// read at most once per RecheckInterval; between those reads, lookups
// answer at once and probes read nothing.
func TestNamedPidReadOncePerRecheckInterval(t *testing.T) {
	cfg := testConfig()
	cfg.RecheckInterval = 5 * time.Second
	host := trackertest.NewHost()
	host.Add(40)
	h := newHarness(t, cfg, host)
	host.ResetCounts()

	for step := range 20 {
		if _, o := h.lookup(40); o == tracker.AnswerUnknown {
			probeDone(t, h.tr.Probe([]int{40}, time.Minute))
		}
		_, o := h.lookup(40)
		require.Equal(t, tracker.AnswerNoContext, o, "step %d", step)
		h.clock.Advance(time.Second)
		h.settle()
	}
	// Named every second from 0 to 19 s, read at discovery (0 s): read
	// again at 5, 10 and 15 s.
	assert.Equal(t, 3, host.Count(trackertest.MethodMaps))
}

// With publication events, a process read without a context stays known:
// the events tell when it publishes, and lookups never wait for a re-read.
func TestNoRecheckWithPublicationEvents(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(41)
	h, _ := eventHarness(t, host, bothSources)
	h.clock.Advance(time.Hour)
	h.settle()
	_, o := h.lookup(41)
	assert.Equal(t, tracker.AnswerNoContext, o)
}

// A process named by its environment has no context to refresh: a scan
// does not read its maps; the rescan schedule does, as for any process
// without a context.
func TestEnvironmentNamedProcessOnTheRescanSchedule(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(50)
	host.SetEnv(50, "by-env", "")
	cfg := testConfig()
	h := newHarness(t, cfg, host)
	host.ResetCounts()
	for range 5 {
		h.clock.Advance(cfg.RescanInterval / 6)
		h.rescan()
	}
	assert.Zero(t, host.Count(trackertest.MethodStart)+host.Count(trackertest.MethodMaps), "scans within rescan_interval")
	h.clock.Advance(cfg.RescanInterval)
	h.rescan()
	assert.Equal(t, 1, host.Count(trackertest.MethodStart), "the rescan: its stat (its address space unchanged)")
	assert.Empty(t, h.take())
}

// A publication met mid-update is said to be torn, not to publish nothing:
// a lookup does not wait for it, and telemetry counts it as what it was.
func TestTornLookup(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(60)
	host.Publish(60, "busy")
	host.Set(60, func(p *trackertest.Proc) {
		p.Errs[trackertest.MethodRead] = fmt.Errorf("header: timestamp 0: %w", otep.ErrTorn)
	})
	h := newHarness(t, testConfig(), host)
	_, o := h.lookup(60)
	assert.Equal(t, tracker.Answer(tracker.OutcomeTorn), o)
}

// A probe waits for a read as long as its caller does; a later probe does
// not wait for a read every caller has given up on: a batch naming pids
// whose reads take long holds one batch for lookup_timeout, not every
// batch that comes while the reads go on.
func TestProbeDoesNotWaitForAReadGivenUpOn(t *testing.T) {
	cfg := testConfig()
	cfg.ReadTimeout = time.Hour // the read stays out
	host := trackertest.NewHost()
	h := newHarness(t, cfg, host)
	host.Add(80).Block = trackertest.MethodMaps

	first := h.tr.Probe([]int{80}, time.Second)
	require.Eventually(t, func() bool { return host.Count(trackertest.MethodMaps) == 1 }, 10*time.Second, time.Millisecond)
	second := h.tr.Probe([]int{80}, time.Second) // while the first waits: it waits too
	h.settle()
	select {
	case <-first:
		t.Fatal("the first probe ended before its read")
	case <-second:
		t.Fatal("the second probe ended before the read")
	default:
	}

	h.clock.Advance(2 * time.Second) // both gave up
	probeDone(t, h.tr.Probe([]int{80}, time.Second))
	assert.Equal(t, 1, host.Count(trackertest.MethodMaps), "the read out is not asked again")
	host.Unblock()
	probeDone(t, first)
	probeDone(t, second)
}
