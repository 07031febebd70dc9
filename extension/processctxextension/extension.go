package processctxextension

import (
	"context"
	"path/filepath"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/trackerstatus"
)

// processContextExtension runs the shared tracker.
type processContextExtension struct {
	cfg      *Config
	settings extension.Settings
	tracker  *tracker.Tracker
	// stopStatus ends the reports of the tracker's health as the
	// extension's status.
	stopStatus func()
}

var _ sharedtracker.Provider = (*processContextExtension)(nil)

// Start opens the host's procfs and starts the tracker (the first scan
// begins after initial_delay); the tracker's health becomes the
// extension's status.
func (e *processContextExtension) Start(_ context.Context, host component.Host) error {
	tr, err := tracker.Open(e.cfg.RootPath, e.cfg.limits(), e.cfg.trackerConfig(), e.settings.Logger)
	if err != nil {
		return err
	}
	tr.Start()
	e.tracker = tr
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
	return e.tracker.Stop(ctx)
}

// ProcessTracker implements sharedtracker.Provider.
func (e *processContextExtension) ProcessTracker() *tracker.Tracker { return e.tracker }

// RootPath implements sharedtracker.Provider.
func (e *processContextExtension) RootPath() string { return filepath.Clean(e.cfg.RootPath) }
