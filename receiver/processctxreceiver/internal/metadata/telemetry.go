package metadata

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Outcomes are the values of the "outcome" attribute of the reads metric.
var Outcomes = []string{"ok", "unchanged", "no_context", "permission_denied", "invalid", "too_large", "torn", "gone", "stalled", "error"}

// scanDurationBuckets show scans from a millisecond (a steady host) to tens
// of seconds (discovery of a large host under load).
var scanDurationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// TelemetryBuilder holds the receiver's instruments.
type TelemetryBuilder struct {
	ScannedProcesses metric.Int64Counter
	Reads            metric.Int64Counter
	Contexts         metric.Int64Gauge
	ScanDuration     metric.Float64Histogram

	outcomes map[string]metric.MeasurementOption
}

// NewTelemetryBuilder creates the instruments on the component's meter.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	meter := settings.MeterProvider.Meter(ScopeName)
	tb := &TelemetryBuilder{outcomes: map[string]metric.MeasurementOption{}}
	var errs, err error
	tb.ScannedProcesses, err = meter.Int64Counter("otelcol_process_context_receiver_scanned_processes",
		metric.WithDescription("Processes looked at by scans."), metric.WithUnit("{process}"))
	errs = errors.Join(errs, err)
	tb.Reads, err = meter.Int64Counter("otelcol_process_context_receiver_reads",
		metric.WithDescription("Context reads by outcome."), metric.WithUnit("{read}"))
	errs = errors.Join(errs, err)
	tb.Contexts, err = meter.Int64Gauge("otelcol_process_context_receiver_contexts",
		metric.WithDescription("Processes currently publishing a context."), metric.WithUnit("{process}"))
	errs = errors.Join(errs, err)
	tb.ScanDuration, err = meter.Float64Histogram("otelcol_process_context_receiver_scan_duration",
		metric.WithDescription("Duration of one scan of the host's processes."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(scanDurationBuckets...))
	errs = errors.Join(errs, err)
	for _, o := range Outcomes {
		tb.outcomes[o] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", o)))
	}
	return tb, errs
}

// RecordReads adds n reads with outcome.
func (tb *TelemetryBuilder) RecordReads(ctx context.Context, outcome string, n int64) {
	if n > 0 {
		tb.Reads.Add(ctx, n, tb.outcomes[outcome])
	}
}

// RecordScan records one finished scan.
func (tb *TelemetryBuilder) RecordScan(ctx context.Context, scanned, contexts int, took time.Duration) {
	tb.ScannedProcesses.Add(ctx, int64(scanned))
	tb.Contexts.Record(ctx, int64(contexts))
	tb.ScanDuration.Record(ctx, took.Seconds())
}
