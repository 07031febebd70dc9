package processctxreceiver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/trackerstatus"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

// Reasons of delete events.
const (
	reasonExited      = "process_exited"
	reasonUnpublished = "context_unpublished"
	reasonInvalid     = "context_invalid"
)

// processContextReceiver turns its tracker's changes into entity events.
type processContextReceiver struct {
	cfg       *Config
	settings  receiver.Settings
	next      consumer.Logs
	telemetry *metadata.TelemetryBuilder
	// outcomes are the attribute sets of the reads metric, parallel to
	// tracker.Outcomes.
	outcomes    []metric.AddOption
	dropReasons [numDropReasons]metric.AddOption
	obsrecv     *receiverhelper.ObsReport
	now         func() time.Time

	tracker *tracker.Tracker
	release func(context.Context) error
	// stopStatus ends the reports of the tracker's health as the
	// receiver's status.
	stopStatus func()
	sub        *tracker.Subscription
	events     *eventWriter
	outbox     *outbox
	delivery   deliveryState
	filter     executableFilter
	// reported holds the live entities stated so far, with when.
	reported map[tracker.Key]*reportedEntity

	cancel context.CancelFunc
	done   chan struct{}
}

type reportedEntity struct {
	p  *tracker.Process
	at time.Time
}

func newReceiver(set receiver.Settings, cfg *Config, next consumer.Logs) (*processContextReceiver, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("create telemetry: %w", err)
	}
	obsrecv, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             set.ID,
		Transport:              "procfs",
		ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, fmt.Errorf("create obsreport: %w", err)
	}
	r := &processContextReceiver{
		cfg: cfg, settings: set, next: next, telemetry: tb, obsrecv: obsrecv, now: time.Now,
		events:   newEventWriter(cfg.EntityEventFormat, cfg.ReportInterval),
		outbox:   newOutbox(cfg.QueueSize, cfg.ReportInterval, cfg.RetryOnFailure.MaxElapsedTime),
		delivery: newDeliveryState(cfg.RetryOnFailure),
		filter:   newExecutableFilter(cfg.Include, cfg.Exclude),
		reported: map[tracker.Key]*reportedEntity{},
	}
	for _, f := range []struct {
		key string
		m   MatchConfig
	}{{"include", cfg.Include}, {"exclude", cfg.Exclude}} {
		if key, m := f.key, f.m; len(m.Executables) > 0 {
			set.Logger.Warn(key+".executables is deprecated and will fail validation under the feature gate "+
				metadata.ReceiverProcesscontextDisallowExecutablesGlobFeatureGate.ID(),
				zap.String("use", m.suggestion(key)))
		}
	}
	for _, o := range tracker.Outcomes {
		r.outcomes = append(r.outcomes, metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", o.String()))))
	}
	for d := range numDropReasons {
		r.dropReasons[d] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", d.String())))
	}
	return r, nil
}

// Start finds the tracker of the process_context extension, or opens the
// host's procfs and starts a tracker of its own, which scans every
// collection interval; the events come from its changes, and its health is
// the receiver's status.
func (r *processContextReceiver) Start(ctx context.Context, host component.Host) error {
	tr, release, err := r.openTracker(host)
	if err != nil {
		return err
	}
	sub, err := tr.Subscribe(ctx)
	if err != nil {
		_ = release(context.Background())
		return fmt.Errorf("subscribe to the process tracker: %w", err)
	}
	r.tracker, r.release, r.sub = tr, release, sub
	r.stopStatus = trackerstatus.Watch(host, tr)
	loopCtx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done = make(chan struct{})
	go r.run(loopCtx)
	return nil
}

// openTracker returns the shared tracker, or starts the receiver's own.
func (r *processContextReceiver) openTracker(host component.Host) (*tracker.Tracker, func(context.Context) error, error) {
	shared, err := sharedtracker.Find(host, r.cfg.Tracker, r.cfg.RootPath)
	if err != nil {
		return nil, nil, err
	}
	if shared != nil {
		r.settings.Logger.Info("Using the process tracker of the extension: its schedule applies",
			zap.String("extension", shared.ID.String()), zap.String("root_path", shared.RootPath))
		return shared.Tracker, func(context.Context) error { return nil }, nil
	}
	tr, err := tracker.Open(r.cfg.RootPath, r.cfg.limits(), r.cfg.trackerConfig(), r.settings.Logger)
	if err != nil {
		return nil, nil, err
	}
	tr.Start()
	return tr, tr.Stop, nil
}

func (r *processContextReceiver) run(ctx context.Context) {
	defer close(r.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.sub.C():
			changes, scans := r.sub.Take()
			now := r.now()
			for _, c := range changes {
				r.handle(now, c)
			}
			for _, s := range scans {
				r.record(ctx, s)
			}
			if len(scans) > 0 {
				r.reportDue(now)
			}
			if r.delivery.waiting() {
				r.recordOutbox(ctx)
				continue // the retry's timer decides when
			}
		case <-r.delivery.retry():
			r.delivery.fired()
		}
		r.deliver(ctx)
	}
}

// handle turns one change into an entity event.
func (r *processContextReceiver) handle(now time.Time, c tracker.Change) {
	p := c.Process
	if !c.Kind.Ends() {
		if !r.filter.selects(p.Identity.ExecutableName) {
			return
		}
		r.outbox.addState(p, now)
		r.reported[p.Key] = &reportedEntity{p: p, at: now}
		return
	}
	if _, ok := r.reported[p.Key]; !ok {
		return // never stated (filtered out)
	}
	delete(r.reported, p.Key)
	reason := reasonExited
	switch c.Kind {
	case tracker.Unpublished:
		reason = reasonUnpublished
	case tracker.Invalidated:
		reason = reasonInvalid
	}
	r.outbox.addDelete(p, now, reason)
}

// reportDue states again every live entity not stated for report_interval.
func (r *processContextReceiver) reportDue(now time.Time) {
	for _, e := range r.reported {
		if now.Sub(e.at) >= r.cfg.ReportInterval {
			r.outbox.addState(e.p, now)
			e.at = now
		}
	}
}

func (r *processContextReceiver) record(ctx context.Context, s tracker.ScanStats) {
	tb := r.telemetry
	tb.ReceiverProcessContextScannedProcesses.Add(ctx, int64(s.Processes))
	tb.ReceiverProcessContextContexts.Record(ctx, int64(s.Publishers))
	tb.ReceiverProcessContextScanDuration.Record(ctx, s.Duration.Seconds())
	tb.ReceiverProcessContextTrackedProcesses.Record(ctx, int64(s.Tracked))
	for i, o := range tracker.Outcomes {
		if n := s.Reads[o]; n > 0 {
			tb.ReceiverProcessContextReads.Add(ctx, n, r.outcomes[i])
		}
	}
}

// deliver hands the pending entity events to the next consumer, batch by
// batch, until it has them all or refuses.
func (r *processContextReceiver) deliver(ctx context.Context) {
	defer r.recordOutbox(ctx)
	r.outbox.expire(r.now())
	for r.outbox.len() > 0 && ctx.Err() == nil {
		states, deletes := r.outbox.batch()
		err := r.consume(ctx, states, deletes)
		switch {
		case err == nil:
			r.outbox.done(len(states), len(deletes))
			r.delivery.delivered(r.settings.Logger)
			continue
		case errors.Is(err, context.Canceled):
			return // shutting down: Shutdown makes the last attempt
		case consumererror.IsPermanent(err):
			r.outbox.drop(len(states), len(deletes), dropPermanent)
			r.delivery.permanent(r.settings.Logger, len(states)+len(deletes), err)
			continue
		case !r.cfg.RetryOnFailure.Enabled:
			r.outbox.drop(len(states), len(deletes), dropRefused)
			r.delivery.dropped(r.settings.Logger, len(states)+len(deletes), err)
			return
		}
		r.delivery.refused(r.settings.Logger, r.outbox.len(), err)
		return
	}
}

// consume builds one batch of events and hands it over.
func (r *processContextReceiver) consume(ctx context.Context, states, deletes []*pendingEvent) error {
	for _, e := range states {
		r.events.state(e.at, e.p)
	}
	for _, e := range deletes {
		r.events.delete(e.at, e.p, e.reason)
	}
	logs := r.events.take()
	obsCtx := r.obsrecv.StartLogsOp(ctx)
	err := r.next.ConsumeLogs(obsCtx, logs)
	r.obsrecv.EndLogsOp(obsCtx, metadata.Type.String(), len(states)+len(deletes), err)
	return err
}

func (r *processContextReceiver) recordOutbox(ctx context.Context) {
	tb := r.telemetry
	tb.ReceiverProcessContextEntityEventsPending.Record(ctx, int64(r.outbox.len()))
	for reason, n := range r.outbox.takeDropped() {
		if n > 0 {
			tb.ReceiverProcessContextEntityEventsDropped.Add(ctx, n, r.dropReasons[reason])
		}
	}
}

// Shutdown stops the events and the tracker. Reads stuck in a process that
// does not answer do not hold it up: the tracker leaves them behind.
func (r *processContextReceiver) Shutdown(ctx context.Context) error {
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	var errs []error
	select {
	case <-r.done:
		// One last attempt at what is pending: events refused a moment
		// ago, and the changes the loop did not take.
		changes, _ := r.sub.Take()
		now := r.now()
		for _, c := range changes {
			r.handle(now, c)
		}
		r.deliver(ctx)
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	r.delivery.stop()
	r.stopStatus()
	r.sub.Close()
	r.telemetry.Shutdown()
	if err := r.release(ctx); err != nil {
		errs = append(errs, fmt.Errorf("stop the process tracker: %w", err))
	}
	return errors.Join(errs...)
}
