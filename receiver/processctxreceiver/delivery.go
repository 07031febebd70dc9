// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/collector/config/configretry"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/ratelimit"
)

// refusalReportInterval bounds the log lines of a refusal that lasts.
const refusalReportInterval = time.Minute

// deliveryPace is the least time between two deliveries of the changes
// the tracker found by polling (a young process's publication, a scan's
// find): on a quiet host they go out at once, on a busy one (processes
// starting every second) they wait and go out together, one export a
// second, not one each (an OTLP export costs more than the reads of a
// short-lived process). What the kernel told of (an exit, a publication
// event) goes out at once, with whatever waits (tracker.Change.Prompt).
const deliveryPace = time.Second

// deliveryState decides when the owed entity events go out: at once, or
// when the pace since the last delivery allows (deliveryPace), or at the
// retry of refused ones. It keeps the refusals' reports few: one line when refusals start, at most one a minute
// while they go on, one when delivery resumes; a permanent error is logged
// the first time only (the dropped events metric counts every one).
type deliveryState struct {
	backoff *backoff.ExponentialBackOff
	timer   *time.Timer
	// c is the timer's channel while a delivery (paced or a retry) is
	// scheduled, else nil.
	c   <-chan time.Time
	now func() time.Time
	// pace is the least time between two deliveries; next is the
	// earliest time of the next one.
	pace time.Duration
	next time.Time

	failingSince time.Time // zero while delivery works
	refusals     int       // since failingSince
	// reports paces the lines of refusals that go on, at most one per
	// refusalReportInterval.
	reports       ratelimit.Limiter
	permanentSeen bool
}

func newDeliveryState(cfg configretry.BackOffConfig) deliveryState {
	return deliveryState{
		backoff: &backoff.ExponentialBackOff{
			InitialInterval:     cfg.InitialInterval,
			RandomizationFactor: cfg.RandomizationFactor,
			Multiplier:          cfg.Multiplier,
			MaxInterval:         cfg.MaxInterval,
		},
		now:  time.Now,
		pace: deliveryPace,
	}
}

// due says whether owed events may go out now, prompt ones among them
// or not; if not, a delivery is scheduled (scheduled's channel tells
// when) and they wait for it. Only a retry holds prompt events back.
func (d *deliveryState) due(prompt bool) bool {
	switch {
	case d.retrying():
		return false
	case prompt:
		if d.c != nil { // the paced delivery: this one takes its events
			d.timer.Stop()
			d.c = nil
		}
		return true
	case d.c != nil:
		return false
	}
	wait := d.next.Sub(d.now())
	if wait <= 0 {
		return true
	}
	d.schedule(wait)
	return false
}

// retrying says whether the scheduled delivery is the retry of refused
// events.
func (d *deliveryState) retrying() bool { return d.c != nil && !d.failingSince.IsZero() }

// scheduled is the channel of the scheduled delivery (nil, which blocks,
// when none is).
func (d *deliveryState) scheduled() <-chan time.Time { return d.c }

// fired notes that the scheduled delivery is due.
func (d *deliveryState) fired() { d.c = nil }

// sending notes that a delivery begins: the next waits for the pace.
func (d *deliveryState) sending() { d.next = d.now().Add(d.pace) }

func (d *deliveryState) schedule(wait time.Duration) {
	if d.timer == nil {
		d.timer = time.NewTimer(wait)
	} else {
		d.timer.Reset(wait)
	}
	d.c = d.timer.C
}

// refused schedules a retry of the pending events after a retryable
// refusal.
func (d *deliveryState) refused(logger *zap.Logger, pending int, err error) {
	now := d.now()
	wait := d.backoff.NextBackOff()
	if d.failingSince.IsZero() {
		d.failingSince = now
		d.reports.Note(now.UnixNano())
		logger.Warn("Entity events refused by the next consumer; kept and retried",
			zap.Int("pending", pending), zap.Duration("retry_in", wait), zap.Error(err))
	} else if d.reports.Allow(now.UnixNano(), refusalReportInterval) {
		logger.Warn("Entity events still refused by the next consumer",
			zap.Int("pending", pending), zap.Int("refusals", d.refusals+1),
			zap.Duration("since", now.Sub(d.failingSince)), zap.Duration("retry_in", wait), zap.Error(err))
	}
	d.refusals++
	d.schedule(wait)
}

// delivered notes an accepted batch.
func (d *deliveryState) delivered(logger *zap.Logger) {
	d.endRefusals(logger, "Entity events accepted again by the next consumer")
}

// endRefusals ends a run of retryable refusals, if one is going on: the
// consumer answered.
func (d *deliveryState) endRefusals(logger *zap.Logger, msg string) {
	if d.failingSince.IsZero() {
		return
	}
	logger.Info(msg, zap.Int("refusals", d.refusals), zap.Duration("after", d.now().Sub(d.failingSince)))
	d.failingSince, d.refusals = time.Time{}, 0
	d.backoff.Reset()
}

// permanent reports events given up after a permanent error.
func (d *deliveryState) permanent(logger *zap.Logger, events int, err error) {
	d.endRefusals(logger, "Entity events no longer refused for a retry: the next consumer answered with a permanent error")
	if d.permanentSeen {
		logger.Debug("Entity events dropped: permanent error", zap.Int("events", events), zap.Error(err))
		return
	}
	d.permanentSeen = true
	logger.Error("Entity events dropped: the next consumer refused them with a permanent error "+
		"(logged once; otelcol_receiver_process_context_entity_events_dropped counts every one)",
		zap.Int("events", events), zap.Error(err))
}

// dropped reports events refused while retries are disabled.
func (d *deliveryState) dropped(logger *zap.Logger, events int, err error) {
	if !d.reports.Allow(d.now().UnixNano(), refusalReportInterval) {
		return
	}
	logger.Warn("Entity events refused by the next consumer and dropped (retry_on_failure is disabled)",
		zap.Int("events", events), zap.Error(err))
}

func (d *deliveryState) stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
	d.c = nil
}
