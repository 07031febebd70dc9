package metadata

import (
	"context"
	"errors"
	"sync/atomic"

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
// signal): the collector gives each pipeline's instance its own meter. The
// counters are asynchronous: a batch adds to atomic counts, which the
// meter reads when it collects, so that the hot path costs a few atomic
// adds instead of a synchronous measurement per counter and batch.
type TelemetryBuilder struct {
	// Enriched counts items (log records, spans, data points, profile
	// samples) whose resource received a published context.
	Enriched metric.Int64ObservableCounter
	// NoContext counts items whose pid publishes no context (or no longer
	// exists, past the grace period).
	NoContext metric.Int64ObservableCounter
	// Errors counts items whose process could not be read (or not in
	// time), by kind.
	Errors metric.Int64ObservableCounter

	enriched, noContext atomic.Int64
	errors              [numKinds]atomic.Int64
	signal              metric.ObserveOption
	kinds               [numKinds]metric.ObserveOption
	registration        metric.Registration
}

const numKinds = 8

// kindIndex orders ErrorKinds.
var kindIndex = map[string]int{
	KindPermissionDenied: 0, KindInvalid: 1, KindTooLarge: 2, KindTorn: 3,
	KindMismatch: 4, KindStalled: 5, KindTimeout: 6, KindOther: 7,
}

// NewTelemetryBuilder creates the instruments on the component's meter for
// the items of one signal. Shutdown unregisters them.
func NewTelemetryBuilder(settings component.TelemetrySettings, signal string) (*TelemetryBuilder, error) {
	meter := settings.MeterProvider.Meter(ScopeName)
	signalAttr := attribute.String("signal", signal)
	tb := &TelemetryBuilder{signal: metric.WithAttributeSet(attribute.NewSet(signalAttr))}
	for k, i := range kindIndex {
		tb.kinds[i] = metric.WithAttributeSet(attribute.NewSet(signalAttr, attribute.String("kind", k)))
	}
	var errs, err error
	tb.Enriched, err = meter.Int64ObservableCounter("otelcol_processor_process_context_enriched",
		metric.WithDescription("Items (log records, spans, data points, profile samples) enriched with their process's published resource attributes."),
		metric.WithUnit("{item}"))
	errs = errors.Join(errs, err)
	tb.NoContext, err = meter.Int64ObservableCounter("otelcol_processor_process_context_no_context",
		metric.WithDescription("Items passed through unchanged because their pid publishes no process context."),
		metric.WithUnit("{item}"))
	errs = errors.Join(errs, err)
	tb.Errors, err = meter.Int64ObservableCounter("otelcol_processor_process_context_errors",
		metric.WithDescription("Items passed through unchanged because their process could not be read (or not in time), by kind."),
		metric.WithUnit("{item}"))
	errs = errors.Join(errs, err)
	if errs != nil {
		return nil, errs
	}
	tb.registration, err = meter.RegisterCallback(tb.observe, tb.Enriched, tb.NoContext, tb.Errors)
	return tb, err
}

func (tb *TelemetryBuilder) observe(_ context.Context, o metric.Observer) error {
	if n := tb.enriched.Load(); n > 0 {
		o.ObserveInt64(tb.Enriched, n, tb.signal)
	}
	if n := tb.noContext.Load(); n > 0 {
		o.ObserveInt64(tb.NoContext, n, tb.signal)
	}
	for i := range tb.errors {
		if n := tb.errors[i].Load(); n > 0 {
			o.ObserveInt64(tb.Errors, n, tb.kinds[i])
		}
	}
	return nil
}

// Shutdown unregisters the instruments' callback.
func (tb *TelemetryBuilder) Shutdown() {
	if tb.registration != nil {
		_ = tb.registration.Unregister()
	}
}

// RecordEnriched adds n enriched items.
func (tb *TelemetryBuilder) RecordEnriched(n int64) {
	if n > 0 {
		tb.enriched.Add(n)
	}
}

// RecordNoContext adds n items without a context.
func (tb *TelemetryBuilder) RecordNoContext(n int64) {
	if n > 0 {
		tb.noContext.Add(n)
	}
}

// RecordErrors adds n items whose lookup failed with kind.
func (tb *TelemetryBuilder) RecordErrors(kind string, n int64) {
	if i, ok := kindIndex[kind]; ok && n > 0 {
		tb.errors[i].Add(n)
	}
}
