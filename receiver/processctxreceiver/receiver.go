// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

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

	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
	"github.com/processctx/otelcol-processctx/internal/trackerstatus"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

// processContextReceiver turns the changes of the extension's tracker into
// entity events.
type processContextReceiver struct {
	cfg       *Config
	settings  receiver.Settings
	next      consumer.Logs
	telemetry *metadata.TelemetryBuilder
	// The tracker's scans are the extension's telemetry: the receiver's
	// is its entity events.
	dropReasons [numDropReasons]metric.AddOption
	obsrecv     *receiverhelper.ObsReport
	now         func() time.Time

	book     *book
	events   *eventWriter
	delivery deliveryState

	unsubscribe func()
	// stopStatus ends the reports of the tracker's health as the
	// receiver's status.
	stopStatus func()
	cancel     context.CancelFunc
	done       chan struct{}
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
		book:     newBook(cfg),
		events:   newEventWriter(cfg),
		delivery: newDeliveryState(cfg.RetryOnFailure),
	}
	for d := range numDropReasons {
		r.dropReasons[d] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", d.String())))
	}
	return r, nil
}

// Start subscribes to the tracker of the process_context extension (and
// fails without one); the events come from its changes, and its health is
// the receiver's status.
func (r *processContextReceiver) Start(ctx context.Context, host component.Host) error {
	tr, _, err := sharedtracker.FindFeed(host, r.cfg.Tracker)
	if err != nil {
		return fmt.Errorf("process_context receiver: %w", err)
	}
	unsubscribe, err := tr.Subscribe(ctx, r.book.record)
	if err != nil {
		return fmt.Errorf("process_context receiver: subscribe to the process tracker: %w", err)
	}
	r.unsubscribe = unsubscribe
	r.events.setHost(tr.HostIdentity())
	r.stopStatus = trackerstatus.Watch(host, tr)
	loopCtx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done = make(chan struct{})
	go r.run(loopCtx)
	return nil
}

func (r *processContextReceiver) run(ctx context.Context) {
	defer close(r.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.book.wake:
			if !r.delivery.due(r.book.takePrompt()) {
				if r.delivery.retrying() {
					r.recordOwed(ctx)
				}
				continue // the scheduled delivery takes them
			}
		case <-r.delivery.scheduled():
			r.delivery.fired()
		}
		r.deliver(ctx)
	}
}

// deliver hands the owed entity events to the next consumer, batch by
// batch, until it has them all or refuses.
func (r *processContextReceiver) deliver(ctx context.Context) {
	defer r.recordOwed(ctx)
	r.book.expire(r.now())
	for ctx.Err() == nil {
		batch := r.book.batch()
		if len(batch) == 0 {
			return
		}
		r.delivery.sending()
		err := r.consume(ctx, batch)
		switch {
		case err == nil:
			r.book.settle(batch, accepted)
			r.delivery.delivered(r.settings.Logger)
			continue
		case errors.Is(err, context.Canceled):
			return // shutting down: Shutdown makes the last attempt
		case consumererror.IsPermanent(err):
			r.book.settle(batch, dropPermanent)
			r.delivery.permanent(r.settings.Logger, len(batch), err)
			continue
		case !r.cfg.RetryOnFailure.Enabled:
			r.book.settle(batch, dropRefused)
			r.delivery.dropped(r.settings.Logger, len(batch), err)
			return
		}
		r.delivery.refused(r.settings.Logger, r.book.owedEvents(), err)
		return
	}
}

// consume builds one batch of events and hands it over.
func (r *processContextReceiver) consume(ctx context.Context, batch []*owed) error {
	for _, o := range batch {
		if o.reason == "" {
			r.events.state(o.at, o.p, o.peers)
		} else {
			r.events.delete(o.at, o.p, o.reason, o.endsInstance)
		}
	}
	if r.events.len() == 0 {
		return nil // entity_types selects none of these processes' entities
	}
	logs := r.events.take()
	obsCtx := r.obsrecv.StartLogsOp(ctx)
	err := r.next.ConsumeLogs(obsCtx, logs)
	r.obsrecv.EndLogsOp(obsCtx, metadata.Type.String(), logs.LogRecordCount(), err)
	return err
}

func (r *processContextReceiver) recordOwed(ctx context.Context) {
	tb := r.telemetry
	tb.ReceiverProcessContextEntityEventsPending.Record(ctx, int64(r.book.owedEvents()))
	for reason, n := range r.book.takeDropped() {
		if n > 0 {
			tb.ReceiverProcessContextEntityEventsDropped.Add(ctx, n, r.dropReasons[reason])
		}
	}
}

// Shutdown stops the events, after one last attempt at what is owed.
func (r *processContextReceiver) Shutdown(ctx context.Context) error {
	if r.cancel == nil {
		return nil
	}
	r.unsubscribe()
	r.cancel()
	var err error
	select {
	case <-r.done:
		r.deliver(ctx)
	case <-ctx.Done():
		err = ctx.Err()
	}
	r.delivery.stop()
	r.stopStatus()
	r.telemetry.Shutdown()
	return err
}
