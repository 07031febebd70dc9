// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

// realTracker runs a tracker of this host (as far as host goes: see
// trackertest.Own) on the real clock.
func realTracker(t *testing.T, cfg tracker.Config, host tracker.Host) (*tracker.Tracker, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	tr, err := tracker.New(host, cfg, zap.New(core))
	require.NoError(t, err)
	tr.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, tr.Stop(ctx))
	})
	return tr, logs
}

// waitPublished waits until pid publishes service in the tracker's view.
func waitPublished(t *testing.T, tr *tracker.Tracker, pid int, service string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		p, o := tr.Snapshot().Lookup(pid)
		if p != nil && p.Live() {
			v, _ := p.Context.Resource.Get("service.name")
			if v.Str() == service {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d not published as %q within %s (outcome %s)", pid, service, within, o)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitOutcome(t *testing.T, tr *tracker.Tracker, pid int, want tracker.Outcome) {
	t.Helper()
	var o tracker.Answer
	require.Eventually(t, func() bool {
		_, o = tr.Snapshot().Lookup(pid)
		return o == tracker.Answer(want)
	}, 30*time.Second, 5*time.Millisecond, "pid %d: want %s", pid, want)
}

// Every stall class this machine can produce, at once: a context mapping
// whose header page never answers, a payload that never answers, a
// stopped process. The scans go on on schedule, a good publisher started
// after them is found at the next scan, the stuck reads are quarantined,
// counted and reported, and retried through /proc/<pid>/mem, which fails
// at once where process_vm_readv waits.
func TestHostileProcessesDoNotStallTheTracker(t *testing.T) {
	good := otep.EncodeStrings(map[string]string{"service.name": "good"})
	stalls := pubtest.StartStalls(t, good)
	header, payload, stopped := stalls.Header, stalls.Payload, stalls.Stopped

	cfg := tracker.DefaultConfig()
	cfg.CollectionInterval = 100 * time.Millisecond
	cfg.RescanInterval = 100 * time.Millisecond
	cfg.ReadTimeout = 200 * time.Millisecond
	// Long enough that the test, however slowed, sees the header's
	// quarantine before its retry through the mem file ends it.
	cfg.QuarantineBackoff = 3 * time.Second
	cfg.WarningInterval = time.Hour
	own := newOwnHost(t, nil, header.Pid, payload.Pid, stopped.Pid)
	tr, logs := realTracker(t, cfg, own)
	sub := trackertest.Subscribe(t, tr)

	waitOutcome(t, tr, header.Pid, tracker.OutcomeStalled)
	waitPublished(t, tr, stopped.Pid, "good", 30*time.Second)
	_, o := tr.Snapshot().Lookup(payload.Pid)
	assert.Contains(t, []tracker.Answer{tracker.Answer(tracker.OutcomeStalled), tracker.Answer(tracker.OutcomeInvalid)}, o)
	assert.Positive(t, tr.StuckReads())

	// A publisher that appears after them is found within a few scans.
	late := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	late.Publish(good)
	own.Add(late.Pid)
	began := time.Now()
	waitPublished(t, tr, late.Pid, "good", 30*time.Second)
	t.Logf("late publisher found after %s", time.Since(began))

	// The scans go on while reads are stuck.
	_, _ = sub.Take()
	require.Eventually(t, func() bool {
		_, stats := sub.Take()
		return len(stats) > 0
	}, 30*time.Second, 5*time.Millisecond, "scans while reads are stuck")

	// Reported once, naming them.
	require.Eventually(t, func() bool { return logs.FilterMessageSnippet("quarantined").Len() == 1 }, 30*time.Second, 5*time.Millisecond)
	pids := logs.FilterMessageSnippet("quarantined").All()[0].ContextMap()["pids"]
	assert.Contains(t, pids, "c-publisher")

	// After the backoff they are read through the mem file: the header
	// that never answers is no context, the payload an invalid one.
	waitOutcome(t, tr, header.Pid, tracker.OutcomeNoContext)
	waitOutcome(t, tr, payload.Pid, tracker.OutcomeInvalid)

	// The mappings go away while the reads wait: the reads return.
	header.Unstall()
	payload.Unstall()
	require.Eventually(t, func() bool { return tr.StuckReads() == 0 }, 30*time.Second, 5*time.Millisecond)
}

// Stop returns at once whatever a read is doing.
func TestStopWhileAReadIsStuck(t *testing.T) {
	pubtest.RequireRoot(t)
	header := pubtest.Start(t, pubtest.C, pubtest.Options{})
	header.Stall("header")
	cfg := tracker.DefaultConfig()
	cfg.ReadTimeout = 200 * time.Millisecond
	fs, err := procfs.NewFS("/")
	require.NoError(t, err)
	host, err := hostopen.NewHost(fs, otep.DefaultLimits())
	require.NoError(t, err)
	tr, err := tracker.New(host, cfg, zap.NewNop())
	require.NoError(t, err)
	tr.Start()
	// The first scan's read of it is stuck (and abandoned).
	require.Eventually(t, func() bool { return tr.StuckReads() > 0 }, 30*time.Second, 5*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	require.NoError(t, tr.Stop(ctx))
	assert.Less(t, time.Since(began), 5*time.Second)
	header.Unstall() // the stuck reader exits (goleak)
}
