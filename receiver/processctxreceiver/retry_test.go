// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/memorylimiterprocessor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

// gate forwards logs to next while open; closed, it refuses them with a
// retryable error, as a full exporter queue does. Logs marked as probes
// are answered but not forwarded.
type gate struct {
	next consumer.Logs

	mu      sync.Mutex
	closed  bool
	refused int
}

const probeKey = "test.probe"

func (g *gate) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (g *gate) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	g.mu.Lock()
	closed := g.closed
	if closed {
		g.refused++
	}
	g.mu.Unlock()
	if closed {
		return errors.New("sending queue is full")
	}
	if _, ok := ld.ResourceLogs().At(0).Resource().Attributes().Get(probeKey); ok {
		return nil
	}
	return g.next.ConsumeLogs(ctx, ld)
}

func (g *gate) set(closed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = closed
}

// intPoints returns the points of a counter or gauge, none when not
// recorded yet.
func (r *running) intPoints(t *testing.T, name string) []metricdata.DataPoint[int64] {
	t.Helper()
	m, err := r.tel.GetMetric(name)
	if err != nil {
		return nil
	}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		return d.DataPoints
	case metricdata.Gauge[int64]:
		return d.DataPoints
	}
	t.Fatalf("%s: unexpected data %T", name, m.Data)
	return nil
}

// intMetric returns the value of a counter or gauge with the given
// attribute (key "" for none), 0 when not recorded.
func (r *running) intMetric(t *testing.T, name, key, value string) int64 {
	t.Helper()
	var n int64
	for _, dp := range r.intPoints(t, name) {
		if v, ok := dp.Attributes.Value(attribute.Key(key)); key == "" || ok && v.AsString() == value {
			n += dp.Value
		}
	}
	return n
}

// waitMetric waits until the metric reaches at least want.
func (r *running) waitMetric(t *testing.T, name, key, value string, want int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for r.intMetric(t, name, key, value) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s{%s=%s} is %d after 20s, want at least %d", name, key, value, r.intMetric(t, name, key, value), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func retryConfig() *Config {
	cfg := testConfig()
	cfg.RetryOnFailure.InitialInterval = 20 * time.Millisecond
	cfg.RetryOnFailure.MaxInterval = 100 * time.Millisecond
	cfg.RetryOnFailure.RandomizationFactor = 0
	return cfg
}

// TestDeleteEventsSurviveRefusal: real publishers exit while the next
// consumer refuses the receiver's events — the memory_limiter in front of
// it over its limit, or the consumer behind it full — and once it
// recovers, every delete arrives, once, after its state.
func TestDeleteEventsSurviveRefusal(t *testing.T) {
	tests := []struct {
		name string
		// refuse makes the pipeline refuse; it returns what recovers.
		refuse func(t *testing.T, ml consumer.Logs, g *gate) (recover func())
	}{
		{
			name: "memory_limiter over its limit",
			refuse: func(t *testing.T, ml consumer.Logs, _ *gate) func() {
				// Live heap beyond the limiter's hard limit (128 MiB).
				ballast := make([]byte, 256<<20)
				probe := plog.NewLogs()
				probe.ResourceLogs().AppendEmpty().Resource().Attributes().PutBool(probeKey, true)
				var err error
				require.Eventually(t, func() bool {
					err = ml.ConsumeLogs(context.Background(), probe)
					return err != nil
				}, 20*time.Second, 10*time.Millisecond, "memory_limiter never refused")
				require.False(t, consumererror.IsPermanent(err), "the memory_limiter's refusal is retryable: %v", err)
				return func() {
					runtime.KeepAlive(ballast)
					ballast = nil
					runtime.GC()
				}
			},
		},
		{
			name: "the consumer behind the memory_limiter refuses",
			refuse: func(_ *testing.T, _ consumer.Logs, g *gate) func() {
				g.set(true)
				return func() { g.set(false) }
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := new(consumertest.LogsSink)
			g := &gate{next: sink}
			ml := startMemoryLimiter(t, g)
			r := startReceiverTo(t, retryConfig(), receivertest.NewNopSettings(metadata.Type), ml)
			r.sink = sink

			var pubs []*pubtest.Proc
			for _, kind := range []pubtest.Kind{pubtest.Go, pubtest.C, pubtest.Go, pubtest.C} {
				p := pubtest.Start(t, kind, pubtest.Options{})
				res, attrs := context1()
				p.Publish(encode(t, res, attrs))
				pubs = append(pubs, p)
			}
			for _, p := range pubs {
				r.waitEvents(t, p.Pid, 1)
			}

			recover := tt.refuse(t, ml, g)
			for _, p := range pubs {
				p.Exit()
			}
			// Every delete waits, and has been refused more than once.
			r.waitMetric(t, "otelcol_receiver_process_context_entity_events_pending", "", "", int64(len(pubs)))
			r.waitMetric(t, "otelcol_receiver_refused_log_records", "", "", int64(3*len(pubs)))
			for _, p := range pubs {
				assert.Len(t, eventsOf(decodeEvents(t, sink.AllLogs()), p.Pid), 1, "pid %d: nothing delivered while refused", p.Pid)
			}

			recover()
			for _, p := range pubs {
				events := r.waitEvents(t, p.Pid, 2)
				require.Len(t, events, 2, "pid %d: one state, one delete", p.Pid)
				assert.Equal(t, "state", events[0].kind)
				assert.Equal(t, "delete", events[1].kind)
				assert.Equal(t, reasonExited, events[1].reason)
			}
			require.Eventually(t, func() bool {
				return r.intMetric(t, "otelcol_receiver_process_context_entity_events_pending", "", "") == 0
			}, 10*time.Second, 10*time.Millisecond)
			for reason := range numDropReasons {
				assert.Zero(t, r.intMetric(t, "otelcol_receiver_process_context_entity_events_dropped", "reason", reason.String()), reason.String())
			}
		})
	}
}

// startMemoryLimiter runs the collector's memory_limiter, limited to 128 MiB of
// heap, in front of next.
func startMemoryLimiter(t *testing.T, next consumer.Logs) consumer.Logs {
	t.Helper()
	f := memorylimiterprocessor.NewFactory()
	cfg := f.CreateDefaultConfig().(*memorylimiterprocessor.Config)
	cfg.CheckInterval = 10 * time.Millisecond
	cfg.MemoryLimitMiB = 128
	cfg.MemorySpikeLimitMiB = 16
	ml, err := f.CreateLogs(context.Background(), processortest.NewNopSettings(f.Type()), cfg, next)
	require.NoError(t, err)
	require.NoError(t, ml.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ml.Shutdown(context.Background())) })
	return ml
}

// TestRefusalsThatDrop: a permanent error, or any refusal while retries are
// disabled, drops the events, counted by reason, and is logged once.
func TestRefusalsThatDrop(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		retry  bool
		reason dropReason
		level  zapcore.Level
	}{
		{"permanent error", consumererror.NewPermanent(errors.New("malformed entity")), true, dropPermanent, zapcore.ErrorLevel},
		{"retry_on_failure disabled", errors.New("sending queue is full"), false, dropRefused, zapcore.WarnLevel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := retryConfig()
			cfg.RetryOnFailure.Enabled = tt.retry
			core, logs := observer.New(zapcore.DebugLevel)
			set := receivertest.NewNopSettings(metadata.Type)
			set.Logger = zap.New(core)
			// The subject is how drops are counted: a tracker that sees only
			// the test's publisher, polling. A tracker of the whole host saw
			// no delete within 20 s of the exit in CI, beside other packages'
			// stalled processes (RELIABILITY.md).
			own := newOwnHost(t)
			r := startReceiverOn(t, startOwnTracker(t, own), cfg, set, consumertest.NewErr(tt.err))
			const dropped = "otelcol_receiver_process_context_entity_events_dropped"

			p := pubtest.Start(t, pubtest.C, pubtest.Options{})
			own.Add(p.Pid)
			res, attrs := context1()
			p.Publish(encode(t, res, attrs))
			r.waitMetric(t, dropped, "reason", tt.reason.String(), 1)
			res.PutStr("service.version", "2")
			p.Update(encode(t, res, attrs))
			r.waitMetric(t, dropped, "reason", tt.reason.String(), 2)
			p.Exit()
			r.waitMetric(t, dropped, "reason", tt.reason.String(), 3)

			// Nothing kept: the tracker watches the whole host, and another
			// package's publisher may have an event on its way at any instant,
			// so the queue is seen empty, not at one chosen instant.
			require.Eventually(t, func() bool {
				return r.intMetric(t, "otelcol_receiver_process_context_entity_events_pending", "", "") == 0
			}, 20*time.Second, 10*time.Millisecond, "nothing kept")
			var lines int
			for _, e := range logs.All() {
				if e.Level == tt.level && e.Message != "" && e.ContextMap()["error"] != nil {
					lines++
				}
			}
			assert.Equal(t, 1, lines, "one report: %v", logs.All())
		})
	}
}

// newOwnHost returns this host as far as the test's own pids go
// (trackertest.Own): a tracker of it reads no other package's processes
// (stalled ones among them).
func newOwnHost(t *testing.T) *trackertest.Own {
	t.Helper()
	fs, err := procfs.NewFS("/")
	require.NoError(t, err)
	host, err := hostopen.NewHost(fs, otep.DefaultLimits())
	require.NoError(t, err)
	return trackertest.NewOwn(host)
}

// startOwnTracker starts a polling tracker of host until the test ends.
func startOwnTracker(t *testing.T, host tracker.Host) *tracker.Tracker {
	t.Helper()
	tr, err := tracker.New(host, testTrackerConfig().Config, zap.NewNop())
	require.NoError(t, err)
	tr.Start()
	t.Cleanup(func() { require.NoError(t, tr.Stop(context.Background())) })
	return tr
}
