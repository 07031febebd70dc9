// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package trackerstatus reports a process tracker's health as the status of
// the component using it (componentstatus, which the health check extension
// shows): a recoverable error while the procfs cannot be listed or the
// collector's privileges keep it from reading processes, OK once that is
// over.
package trackerstatus

import (
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
)

// Tracker is what Watch needs of a tracker (a *tracker.Tracker).
type Tracker interface {
	// Health returns the problem, nil for none, and a channel closed when
	// it changes.
	Health() (<-chan struct{}, error)
}

// Watch reports tr's health through host, the host the component was
// started with, until the returned stop is called; stop waits for the
// watch to end, and may be called more than once. Only changes are reported: the collector itself reports OK
// once Start returns, unless a recoverable error came first.
func Watch(host component.Host, tr Tracker) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var reported string // the problem reported last; "" for OK
		for {
			changed, err := tr.Health()
			switch {
			case err != nil && err.Error() != reported:
				componentstatus.ReportStatus(host, componentstatus.NewRecoverableErrorEvent(err))
				reported = err.Error()
			case err == nil && reported != "":
				componentstatus.ReportStatus(host, componentstatus.NewEvent(componentstatus.StatusOK))
				reported = ""
			}
			select {
			case <-changed:
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-exited
	}
}
