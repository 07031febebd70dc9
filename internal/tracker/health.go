package tracker

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Errors of Tracker.Health, for components' status.
var (
	// ErrCannotList is a procfs that cannot be listed: no scan happens.
	ErrCannotList = errors.New("cannot list the host's processes")
	// ErrCannotRead is processes that the collector's privileges keep it
	// from reading (it wraps procfs.ErrPermissionDenied too).
	ErrCannotRead = errors.New("cannot read some processes")
)

// health is what keeps the tracker from doing its job, if anything: the
// loop sets it under mu (and reads it without: it is the one writer),
// components read it for their status.
type health struct {
	mu      sync.Mutex
	listErr error         // the last listing's
	readErr error         // the last finished scan's
	changed chan struct{} // closed when a field changes, then replaced

	// access is what Host.Access said at accessAt; the loop's only.
	access   error
	accessAt time.Time
}

// Health returns the tracker's problem, nil when it can do its job, and a
// channel closed when that changes. The problem wraps ErrCannotList when
// the procfs cannot be listed, ErrCannotRead when the last scan met
// processes that the collector's privileges keep it from reading.
func (t *Tracker) Health() (<-chan struct{}, error) {
	h := &t.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.listErr != nil {
		return h.changed, h.listErr
	}
	return h.changed, h.readErr
}

// setListed records the outcome of a listing of the procfs, logging only
// the transitions (a broken mount fails every scan).
func (t *Tracker) setListed(err error) {
	if t.health.set(&t.health.listErr, ErrCannotList, err) {
		if err != nil {
			t.log.Error("Cannot list the host's processes: no scan until it can", zap.Error(err))
		} else {
			t.log.Info("The host's processes can be listed again")
		}
	}
}

// setScanned records, after a scan that listed the host, whether it met
// processes denied for lack of the collector's own privileges, and makes
// its count of denied processes the current one (DeniedProcesses).
func (t *Tracker) setScanned(denied int) {
	t.reports.deniedNow.Store(int64(t.reports.denied.n))
	var err error
	if denied > 0 {
		// The collector's privileges do not change while it runs (Yama
		// may): looked at again once per report interval.
		if now := t.now(); t.health.accessAt.IsZero() || now.Sub(t.health.accessAt) >= t.cfg.WarningInterval {
			t.health.access, t.health.accessAt = t.host.Access(), now
		}
		err = t.health.access
	}
	t.health.set(&t.health.readErr, ErrCannotRead, err)
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
