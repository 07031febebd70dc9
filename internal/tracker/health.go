// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"
)

// Errors of Tracker.Health, for components' status: the procfs cannot be
// listed (no scan happens), or the collector's privileges keep it from
// reading some processes (wrapping procfs.ErrPermissionDenied too).
var (
	ErrCannotList = errors.New("cannot list the host's processes")
	ErrCannotRead = errors.New("cannot read some processes")
)

// health is what keeps the tracker from doing its job, if anything, a
// part of the reports: they set it under mu (and read it without: the
// loop is the one writer), components read it for their status (Health).
type health struct {
	mu      sync.Mutex
	listErr error         // the last listing's
	readErr error         // the last finished scan's
	changed chan struct{} // closed when a field changes, then replaced
	access  error         // what Host.Access said last; the loop's only
}

// Health returns the tracker's problem, nil when it can do its job, and a
// channel closed when that changes. The problem wraps ErrCannotList when
// the procfs cannot be listed, ErrCannotRead when the last scan met
// processes that the collector's privileges keep it from reading.
func (t *Tracker) Health() (<-chan struct{}, error) { return t.loop.reports.health.get() }

func (h *health) get() (<-chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.listErr != nil {
		return h.changed, h.listErr
	}
	return h.changed, h.readErr
}

// noteListing records the outcome of a listing of the procfs, logging
// only the transitions (a broken mount fails every scan).
func (r *reports) noteListing(err error) {
	if r.health.set(&r.health.listErr, ErrCannotList, err) {
		if err != nil {
			r.log.Error("Cannot list the host's processes: no scan until it can", zap.Error(err))
		} else {
			r.log.Info("The host's processes can be listed again")
		}
	}
}

// cannotList reports whether the last listing failed.
func (r *reports) cannotList() bool { return r.health.listErr != nil }

// noteScan records, after a scan at now that listed the host, whether it
// met processes denied for lack of the collector's own privileges (read
// with access, at most once per Config.WarningInterval), and makes its
// count of denied processes the current one (DeniedProcesses).
func (r *reports) noteScan(now int64, denied int, access func() error) {
	r.deniedNow.Store(int64(r.denied.n))
	var err error
	if denied > 0 {
		if r.access.Allow(now, r.interval) {
			r.health.access = access()
		}
		err = r.health.access
	}
	r.health.set(&r.health.readErr, ErrCannotRead, err)
}

// set sets *field to err (wrapped in kind; nil: no problem) and reports
// whether its message changed; waiters of Health are woken then.
func (h *health) set(field *error, kind, err error) bool {
	if err != nil {
		err = fmt.Errorf("%w: %w", kind, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if errorText(*field) == errorText(err) {
		return false
	}
	*field = err
	close(h.changed)
	h.changed = make(chan struct{})
	return true
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
