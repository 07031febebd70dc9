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

// deliveryState schedules the retries of refused entity events and keeps
// their reports few: one line when refusals start, at most one a minute
// while they go on, one when delivery resumes; a permanent error is logged
// the first time only (the dropped events metric counts every one).
type deliveryState struct {
	backoff *backoff.ExponentialBackOff
	timer   *time.Timer
	// c is the timer's channel while a retry is scheduled, else nil.
	c   <-chan time.Time
	now func() time.Time

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
		now: time.Now,
	}
}

// waiting says whether a retry is scheduled: new events wait for it.
func (d *deliveryState) waiting() bool { return d.c != nil }

// retry is the channel of the scheduled retry (nil, which blocks, when
// none is).
func (d *deliveryState) retry() <-chan time.Time { return d.c }

// fired notes that the scheduled retry is due.
func (d *deliveryState) fired() { d.c = nil }

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
	if d.timer == nil {
		d.timer = time.NewTimer(wait)
	} else {
		d.timer.Reset(wait)
	}
	d.c = d.timer.C
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
