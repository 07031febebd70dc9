// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

// Values of the telemetry's signal attribute (metadata.yaml lists them).
const (
	signalLogs     = "logs"
	signalMetrics  = "metrics"
	signalTraces   = "traces"
	signalProfiles = "profiles"
)

// telemetry counts the items of one processor instance (one signal). The
// counters are asynchronous: a batch adds to atomic counts, which the meter
// reads when it collects, so that the hot path costs a few atomic adds
// instead of a measurement per counter and batch.
type telemetry struct {
	builder  *metadata.TelemetryBuilder
	counts   [numCounts]atomic.Int64
	enriched [numSources]atomic.Int64
	noPID    atomic.Int64
	signal   metric.ObserveOption
	// kinds are the errors counter's attributes, by count.
	kinds [numCounts]metric.ObserveOption
	// sources are the enriched counter's attributes, by source.
	sources [numSources]metric.ObserveOption
}

func newTelemetry(set component.TelemetrySettings, signal string) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, fmt.Errorf("process_context processor telemetry: %w", err)
	}
	signalAttr := attribute.String("signal", signal)
	t := &telemetry{builder: tb, signal: metric.WithAttributeSet(attribute.NewSet(signalAttr))}
	for i := range numCounts {
		if isErrorCount(i) {
			t.kinds[i] = metric.WithAttributeSet(attribute.NewSet(signalAttr, attribute.String("kind", countName(i))))
		}
	}
	for i := range numSources {
		t.sources[i] = metric.WithAttributeSet(attribute.NewSet(signalAttr, attribute.String("source", tracker.Source(i).String())))
	}
	err = errors.Join(
		tb.RegisterProcessorProcessContextEnrichedCallback(t.observeEnriched),
		// A process that exited while it was read published nothing since.
		tb.RegisterProcessorProcessContextNoContextCallback(t.observe(int(tracker.OutcomeNoContext), int(tracker.OutcomeGone))),
		tb.RegisterProcessorProcessContextErrorsCallback(t.observeErrors),
		tb.RegisterProcessorProcessContextNoPidCallback(t.observeNoPID),
	)
	if err != nil {
		tb.Shutdown()
		return nil, fmt.Errorf("process_context processor telemetry: %w", err)
	}
	return t, nil
}

// observe returns the callback of a counter of the sum of counts.
func (t *telemetry) observe(counts ...int) metric.Int64Callback {
	return func(_ context.Context, obs metric.Int64Observer) error {
		var n int64
		for _, i := range counts {
			n += t.counts[i].Load()
		}
		if n > 0 {
			obs.Observe(n, t.signal)
		}
		return nil
	}
}

func (t *telemetry) observeEnriched(_ context.Context, obs metric.Int64Observer) error {
	for i := range numSources {
		if n := t.enriched[i].Load(); n > 0 {
			obs.Observe(n, t.sources[i])
		}
	}
	return nil
}

func (t *telemetry) observeNoPID(_ context.Context, obs metric.Int64Observer) error {
	if n := t.noPID.Load(); n > 0 {
		obs.Observe(n, t.signal)
	}
	return nil
}

func (t *telemetry) observeErrors(_ context.Context, obs metric.Int64Observer) error {
	for i := range numCounts {
		if n := t.counts[i].Load(); n > 0 && t.kinds[i] != nil {
			obs.Observe(n, t.kinds[i])
		}
	}
	return nil
}

// add counts a batch's items.
func (t *telemetry) add(counts *itemCounts) {
	for i, n := range counts.outcomes {
		if n > 0 {
			t.counts[i].Add(n)
		}
	}
	for i, n := range counts.enriched {
		if n > 0 {
			t.enriched[i].Add(n)
		}
	}
	if counts.noPID > 0 {
		t.noPID.Add(counts.noPID)
	}
}

func (t *telemetry) shutdown() { t.builder.Shutdown() }
