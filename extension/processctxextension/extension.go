package processctxextension

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/otel/metric"

	"github.com/processctx/otelcol-processctx/extension/processctxextension/internal/metadata"
	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/trackerstatus"
)

// processContextExtension runs the tracker.
type processContextExtension struct {
	cfg       *Config
	settings  extension.Settings
	tracker   *tracker.Tracker
	telemetry *metadata.TelemetryBuilder
	// stopStatus ends the reports of the tracker's health as the
	// extension's status.
	stopStatus func()
}

var _ sharedtracker.Provider = (*processContextExtension)(nil)

// Start opens the host's procfs and starts the tracker (the first scan
// begins after initial_delay); the tracker's health becomes the
// extension's status.
func (e *processContextExtension) Start(_ context.Context, host component.Host) error {
	tr, err := tracker.Open(*e.cfg, e.settings.Logger)
	if err != nil {
		return err
	}
	tb, err := metadata.NewTelemetryBuilder(e.settings.TelemetrySettings)
	if err != nil {
		return fmt.Errorf("process_context extension telemetry: %w", err)
	}
	err = errors.Join(
		tb.RegisterExtensionProcessContextEventsReceivedCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(tr.Events().Received))
			return nil
		}),
		tb.RegisterExtensionProcessContextEventDropsCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(tr.Events().Lost))
			return nil
		}),
	)
	if err != nil {
		tb.Shutdown()
		return fmt.Errorf("process_context extension telemetry: %w", err)
	}
	tr.Start()
	e.tracker, e.telemetry = tr, tb
	e.stopStatus = trackerstatus.Watch(host, tr)
	return nil
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
func (e *processContextExtension) ProcessTracker() *tracker.Tracker { return e.tracker }
