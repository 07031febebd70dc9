// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxextension

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/extension/processctxextension/internal/metadata"
	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/trackerstatus"
)

// openFunc opens a tracker: hostopen.Open, or a test's.
type openFunc func(hostopen.Config, *zap.Logger, ...tracker.Option) (*tracker.Tracker, error)

// processContextExtension runs the tracker.
type processContextExtension struct {
	cfg       *Config
	settings  extension.Settings
	open      openFunc
	tracker   sharedtracker.Runner // nil before Start
	telemetry *metadata.TelemetryBuilder
	// stopStatus ends the reports of the tracker's health as the
	// extension's status.
	stopStatus func()
}

var _ sharedtracker.Provider = (*processContextExtension)(nil)

// Start opens the host's procfs and starts the tracker (the first scan
// begins after initial_delay); the tracker's health becomes the
// extension's status, its scans and events the extension's telemetry.
// When it fails, what it opened is closed.
func (e *processContextExtension) Start(ctx context.Context, host component.Host) error {
	tb, err := metadata.NewTelemetryBuilder(e.settings.TelemetrySettings)
	if err != nil {
		return fmt.Errorf("process_context extension telemetry: %w", err)
	}
	scans := newScanTelemetry(tb)
	tr, err := e.open(e.cfg.tracker(), e.settings.Logger, tracker.WithScanStats(scans.record))
	if err != nil {
		tb.Shutdown()
		return err
	}
	if err := registerTrackerCallbacks(tb, tr); err != nil {
		tb.Shutdown()
		if stopErr := tr.Stop(ctx); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("close the process tracker: %w", stopErr))
		}
		return fmt.Errorf("process_context extension telemetry: %w", err)
	}
	tr.Start()
	e.tracker, e.telemetry = tr, tb
	e.stopStatus = trackerstatus.Watch(host, tr)
	return nil
}

// registerTrackerCallbacks makes what the tracker counts between scans
// the extension's telemetry.
func registerTrackerCallbacks(tb *metadata.TelemetryBuilder, tr sharedtracker.Runner) error {
	return errors.Join(
		tb.RegisterExtensionProcessContextEventsReceivedCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(tr.Events().Received))
			return nil
		}),
		tb.RegisterExtensionProcessContextEventDropsCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(tr.Events().Lost))
			return nil
		}),
		tb.RegisterExtensionProcessContextDeniedProcessesCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(tr.DeniedProcesses()))
			return nil
		}),
	)
}

// scanTelemetry records each scan's summary: the tracker's metrics, once
// per collector however many receivers and processors use it.
type scanTelemetry struct {
	tb *metadata.TelemetryBuilder
	// outcomes are the attribute sets of the reads metric, by
	// tracker.Outcome.
	outcomes [tracker.NumOutcomes]metric.AddOption
}

func newScanTelemetry(tb *metadata.TelemetryBuilder) *scanTelemetry {
	s := &scanTelemetry{tb: tb}
	for _, o := range tracker.Outcomes {
		s.outcomes[o] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", o.String())))
	}
	return s
}

// record records one scan; the tracker calls it on its loop, where it
// must not block (the meter's synchronous instruments do not).
func (s *scanTelemetry) record(st tracker.ScanStats) {
	ctx := context.Background()
	tb := s.tb
	if st.Listed {
		tb.ExtensionProcessContextScannedProcesses.Add(ctx, int64(st.Processes))
	}
	tb.ExtensionProcessContextContexts.Record(ctx, int64(st.Publishers))
	tb.ExtensionProcessContextScanDuration.Record(ctx, st.Duration.Seconds())
	tb.ExtensionProcessContextTrackedProcesses.Record(ctx, int64(st.Tracked))
	for _, o := range tracker.Outcomes {
		if n := st.Reads[o]; n > 0 {
			tb.ExtensionProcessContextReads.Add(ctx, n, s.outcomes[o])
		}
	}
}

// Shutdown stops the tracker; reads stuck in a process that does not
// answer are left behind.
func (e *processContextExtension) Shutdown(ctx context.Context) error {
	if e.tracker == nil {
		return nil
	}
	e.stopStatus()
	e.telemetry.Shutdown()
	return e.tracker.Stop(ctx)
}

// ProcessTracker implements sharedtracker.Provider.
// It is nil before Start.
func (e *processContextExtension) ProcessTracker() sharedtracker.Tracker {
	if e.tracker == nil {
		return nil // not a nil Runner in a Tracker
	}
	return e.tracker
}
