// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

// The reports of a run of deliveries: what each answer of the consumer
// logs, at which level.
func TestDeliveryReports(t *testing.T) {
	refused := func(d *deliveryState, l *zap.Logger) { d.refused(l, 3, errors.New("memory limit")) }
	delivered := func(d *deliveryState, l *zap.Logger) { d.delivered(l) }
	permanent := func(d *deliveryState, l *zap.Logger) { d.permanent(l, 3, errors.New("malformed")) }
	later := func(d time.Duration) func(*deliveryState, *zap.Logger) {
		return func(s *deliveryState, _ *zap.Logger) {
			now := s.now()
			s.now = func() time.Time { return now.Add(d) }
		}
	}
	tests := []struct {
		name  string
		steps []func(*deliveryState, *zap.Logger)
		want  []string
	}{
		{"accepted", []func(*deliveryState, *zap.Logger){delivered, delivered}, nil},
		{"refused, then accepted", []func(*deliveryState, *zap.Logger){refused, refused, delivered},
			[]string{"warn Entity events refused by the next consumer; kept and retried",
				"info Entity events accepted again by the next consumer"}},
		{"refused for minutes", []func(*deliveryState, *zap.Logger){refused, later(30 * time.Second), refused, later(time.Minute), refused, delivered},
			[]string{"warn Entity events refused by the next consumer; kept and retried",
				"warn Entity events still refused by the next consumer",
				"info Entity events accepted again by the next consumer"}},
		{"refused, then a permanent error", []func(*deliveryState, *zap.Logger){refused, permanent, permanent},
			[]string{"warn Entity events refused by the next consumer; kept and retried",
				"info Entity events no longer refused for a retry: the next consumer answered with a permanent error",
				"error Entity events dropped: the next consumer refused them with a permanent error (logged once; otelcol_receiver_process_context_entity_events_dropped counts every one)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			logger := zap.New(core)
			d := newDeliveryState(configretry.NewDefaultBackOffConfig())
			defer d.stop()
			start := time.Unix(1_700_000_000, 0)
			d.now = func() time.Time { return start }
			for _, step := range tt.steps {
				step(&d, logger)
			}
			var got []string
			for _, e := range logs.All() {
				got = append(got, e.Level.String()+" "+e.Message)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// A delivery goes out at once after a quiet time; the next waits for the
// pace, on the timer scheduled for it, unless a prompt change is owed;
// a retry holds back even those.
func TestDeliveryPace(t *testing.T) {
	d := newDeliveryState(configretry.NewDefaultBackOffConfig())
	defer d.stop()
	now := time.Unix(1_700_000_000, 0)
	d.now = func() time.Time { return now }

	assert.True(t, d.due(false), "nothing delivered yet")
	d.sending()
	now = now.Add(d.pace / 4)
	assert.False(t, d.due(false), "within the pace of the last delivery")
	assert.NotNil(t, d.scheduled(), "a delivery scheduled at the pace's end")
	assert.False(t, d.retrying())
	assert.False(t, d.due(false), "already scheduled")
	d.fired()
	now = now.Add(d.pace)
	assert.True(t, d.due(false), "the pace is over")
	assert.Nil(t, d.scheduled())

	d.sending()
	assert.False(t, d.due(false))
	assert.True(t, d.due(true), "a prompt change goes out within the pace")
	assert.Nil(t, d.scheduled(), "the paced delivery is taken by the prompt one")

	d.refused(zap.NewNop(), 1, errors.New("memory limit"))
	assert.True(t, d.retrying())
	assert.False(t, d.due(true), "the retry decides")
}

// timedLogs records when each batch of entity events was handed over.
type timedLogs struct {
	consumertest.LogsSink
	mu    sync.Mutex
	calls []time.Time
}

func (c *timedLogs) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	c.mu.Lock()
	c.calls = append(c.calls, time.Now())
	c.mu.Unlock()
	return c.LogsSink.ConsumeLogs(ctx, ld)
}

// Real publishers appearing and exiting one after another, found by the
// scans alone (discovery: poll, so that no change is prompt): every event
// is delivered, and two deliveries are a pace apart (the changes between
// them went out together).
func TestDeliveriesPaced(t *testing.T) {
	next := &timedLogs{}
	tc := testTrackerConfig()
	tc.Discovery = hostopen.DiscoveryPoll
	r := startReceiverOn(t, startTracker(t, tc), testConfig(), receivertest.NewNopSettings(metadata.Type), next)
	r.sink = &next.LogsSink
	res, attrs := context1()
	var pids []int
	for range 4 {
		p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
		p.Publish(encode(t, res, attrs))
		r.waitEvents(t, p.Pid, 1)
		p.Exit()
		pids = append(pids, p.Pid)
	}
	for _, pid := range pids {
		events := r.waitEvents(t, pid, 2)
		assert.Equal(t, "delete", events[1].kind)
	}
	next.mu.Lock()
	defer next.mu.Unlock()
	require.GreaterOrEqual(t, len(next.calls), 2)
	// At least the pace from the previous delivery's start: half a second
	// of it from its call, as long as no batch takes half a second to write.
	const minGap = 500 * time.Millisecond
	require.GreaterOrEqual(t, deliveryPace, 2*minGap)
	for i := 1; i < len(next.calls); i++ {
		assert.GreaterOrEqual(t, next.calls[i].Sub(next.calls[i-1]), minGap, "delivery %d", i)
	}
}
