package metadata

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Values of the "signal" attribute.
const (
	SignalLogs     = "logs"
	SignalMetrics  = "metrics"
	SignalTraces   = "traces"
	SignalProfiles = "profiles"
)

// Values of the "kind" attribute of the errors metric.
const (
	KindPermissionDenied = "permission_denied"
	KindInvalid          = "invalid"
	KindTooLarge         = "too_large"
	KindTorn             = "torn"
	KindMismatch         = "identity_mismatch"
	KindStalled          = "stalled"
	KindTimeout          = "timeout"
	KindOther            = "other"
)

// ErrorKinds lists every value of the "kind" attribute.
var ErrorKinds = []string{KindPermissionDenied, KindInvalid, KindTooLarge, KindTorn, KindMismatch, KindStalled, KindTimeout, KindOther}

// TelemetryBuilder holds the instruments of one processor instance (one
// signal): the collector gives each pipeline's instance its own meter.
type TelemetryBuilder struct {
	// Enriched counts items (log records, spans, data points, profile
	// samples) whose resource received a published context.
	Enriched metric.Int64Counter
	// NoContext counts items whose pid publishes no context (or no longer
	// exists, past the grace period).
	NoContext metric.Int64Counter
	// Errors counts items whose process could not be read (or not in
	// time), by kind.
	Errors metric.Int64Counter

	signal metric.MeasurementOption
	kinds  map[string]metric.MeasurementOption
}

// NewTelemetryBuilder creates the instruments on the component's meter for
// the items of one signal.
func NewTelemetryBuilder(settings component.TelemetrySettings, signal string) (*TelemetryBuilder, error) {
	meter := settings.MeterProvider.Meter(ScopeName)
	signalAttr := attribute.String("signal", signal)
	tb := &TelemetryBuilder{
		signal: metric.WithAttributeSet(attribute.NewSet(signalAttr)),
		kinds:  make(map[string]metric.MeasurementOption, len(ErrorKinds)),
	}
	var errs, err error
	tb.Enriched, err = meter.Int64Counter("otelcol_processor_process_context_enriched",
		metric.WithDescription("Items (log records, spans, data points, profile samples) enriched with their process's published resource attributes."),
		metric.WithUnit("{item}"))
	errs = errors.Join(errs, err)
	tb.NoContext, err = meter.Int64Counter("otelcol_processor_process_context_no_context",
		metric.WithDescription("Items passed through unchanged because their pid publishes no process context."),
		metric.WithUnit("{item}"))
	errs = errors.Join(errs, err)
	tb.Errors, err = meter.Int64Counter("otelcol_processor_process_context_errors",
		metric.WithDescription("Items passed through unchanged because their process could not be read, by kind."),
		metric.WithUnit("{item}"))
	errs = errors.Join(errs, err)
	for _, k := range ErrorKinds {
		tb.kinds[k] = metric.WithAttributeSet(attribute.NewSet(signalAttr, attribute.String("kind", k)))
	}
	return tb, errs
}

// RecordEnriched adds n enriched items.
func (tb *TelemetryBuilder) RecordEnriched(ctx context.Context, n int64) {
	if n > 0 {
		tb.Enriched.Add(ctx, n, tb.signal)
	}
}

// RecordNoContext adds n items without a context.
func (tb *TelemetryBuilder) RecordNoContext(ctx context.Context, n int64) {
	if n > 0 {
		tb.NoContext.Add(ctx, n, tb.signal)
	}
}

// RecordErrors adds n items whose lookup failed with kind.
func (tb *TelemetryBuilder) RecordErrors(ctx context.Context, kind string, n int64) {
	if n > 0 {
		tb.Errors.Add(ctx, n, tb.kinds[kind])
	}
}
