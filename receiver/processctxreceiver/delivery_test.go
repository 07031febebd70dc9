// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/config/configretry"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
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
