package processctxprocessor

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

// telemetry counts the items of one processor instance (one signal) by
// outcome. The counters are asynchronous: a batch adds to atomic counts,
// which the meter reads when it collects, so that the hot path costs a few
// atomic adds instead of a measurement per counter and batch.
type telemetry struct {
	builder *metadata.TelemetryBuilder
	counts  [numOutcomes]atomic.Int64
	signal  metric.ObserveOption
	kinds   [numOutcomes]metric.ObserveOption // for the errors counter
}

func newTelemetry(set component.TelemetrySettings, signal string) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, fmt.Errorf("process_context processor telemetry: %w", err)
	}
	signalAttr := attribute.String("signal", signal)
	t := &telemetry{builder: tb, signal: metric.WithAttributeSet(attribute.NewSet(signalAttr))}
	for o := outcomePermissionDenied; o < numOutcomes; o++ {
		t.kinds[o] = metric.WithAttributeSet(attribute.NewSet(signalAttr, attribute.String("kind", o.kind())))
	}
	err = errors.Join(
		tb.RegisterProcessorProcessContextEnrichedCallback(t.observe(outcomeEnriched)),
		tb.RegisterProcessorProcessContextNoContextCallback(t.observe(outcomeNoContext)),
		tb.RegisterProcessorProcessContextErrorsCallback(func(_ context.Context, obs metric.Int64Observer) error {
			for o := outcomePermissionDenied; o < numOutcomes; o++ {
				if n := t.counts[o].Load(); n > 0 {
					obs.Observe(n, t.kinds[o])
				}
			}
			return nil
		}),
	)
	if err != nil {
		tb.Shutdown()
		return nil, fmt.Errorf("process_context processor telemetry: %w", err)
	}
	return t, nil
}

func (t *telemetry) observe(o outcome) metric.Int64Callback {
	return func(_ context.Context, obs metric.Int64Observer) error {
		if n := t.counts[o].Load(); n > 0 {
			obs.Observe(n, t.signal)
		}
		return nil
	}
}

// add counts a batch's items.
func (t *telemetry) add(counts *[numOutcomes]int64) {
	for o, n := range counts {
		if n > 0 {
			t.counts[o].Add(n)
		}
	}
}

func (t *telemetry) shutdown() { t.builder.Shutdown() }
