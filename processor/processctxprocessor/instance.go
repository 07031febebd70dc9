// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/attrpolicy"
	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/ratelimit"
	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/trackerstatus"
)

// instance is the processor of one pipeline (one signal), over the tracker
// of the process_context extension.
type instance struct {
	pids pidRanking
	// policy decides what a publication adds (attributes), once per
	// publication.
	policy *attrpolicy.Policy
	// entityRefs: enriched resources reference the entities of what was
	// added (entity_refs).
	entityRefs bool
	// trustHostPids: unqualified_pids is "host".
	trustHostPids bool
	// pidIsHostPidKey: the first pid key is process.pid, so a resource pid
	// found under it needs no stamp when it is the host's.
	pidIsHostPidKey bool
	lookupTimeout   time.Duration
	trackerID       *component.ID
	// viewKey is the configuration: the pipelines of one processor ID get
	// the same one from the collector, and share the tracker's view.
	viewKey *Config

	logger *zap.Logger
	// signal names the instance's signal in its log lines.
	signal string
	tel    *telemetry
	// misses paces the log line about telemetry without a pid.
	misses ratelimit.Limiter
	// started is nil before start and after shutdown: data then passes
	// through.
	started atomic.Pointer[trackerView]
	// stopStatus ends the reports of the tracker's health as the
	// instance's status.
	stopStatus func()
	batches    sync.Pool // *batch
}

// trackerView is the tracker a started instance reads and the view of
// enrichments it added to it.
type trackerView struct {
	tracker sharedtracker.Lookup
	view    tracker.View
}

func newInstance(set processor.Settings, cfg *Config, signal string) (*instance, error) {
	tel, err := newTelemetry(set.TelemetrySettings, signal)
	if err != nil {
		return nil, err
	}
	if len(cfg.deprecated) > 0 {
		set.Logger.Warn("The process_context processor's configuration uses keys of an older form; they work as the attributes block's",
			zap.Strings("keys", cfg.deprecated))
	}
	return &instance{
		pids: slices.Clone(pidRanking(cfg.PIDAttributes)),
		// The pid keys name the process as the telemetry's source sees
		// it; a containerized SDK publishes its namespace pid, which
		// must not replace it.
		policy:          attrpolicy.New(cfg.Attributes, cfg.PIDAttributes...),
		entityRefs:      cfg.EntityRefs,
		trustHostPids:   cfg.UnqualifiedPids == UnqualifiedHost,
		pidIsHostPidKey: cfg.PIDAttributes[0] == entitymodel.ProcessPIDKey,
		lookupTimeout:   cfg.LookupTimeout,
		trackerID:       cfg.Tracker,
		viewKey:         cfg,
		logger:          set.Logger,
		signal:          signal,
		tel:             tel,
	}, nil
}

// start finds the process_context extension's tracker (the collector
// starts extensions first) and adds its view to it (shared by the
// pipelines of one processor ID); the tracker's health becomes the
// instance's status.
func (p *instance) start(ctx context.Context, host component.Host) error {
	tr, id, err := sharedtracker.FindLookup(host, p.trackerID)
	if err != nil {
		return fmt.Errorf("process_context processor: %w", err)
	}
	view, err := tr.AddView(ctx, p.viewKey, p.enrichmentOf)
	if err != nil {
		return fmt.Errorf("process_context processor: tracker of %s: %w", id, err)
	}
	p.started.Store(&trackerView{tracker: tr, view: view})
	p.stopStatus = trackerstatus.Watch(host, tr)
	return nil
}

// shutdown removes the instance's use of the view; batches still running
// pass through.
func (p *instance) shutdown(ctx context.Context) error {
	if p.stopStatus != nil {
		p.stopStatus()
	}
	p.tel.shutdown()
	st := p.started.Swap(nil)
	if st == nil {
		return nil
	}
	// A tracker stopped already (its extension shut down first) keeps no
	// views: nothing to remove then.
	_ = st.tracker.RemoveView(ctx, st.view)
	return nil
}
