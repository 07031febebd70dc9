package processctxprocessor

import (
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// warnInterval bounds the warnings about unreadable processes to one per
// interval, however many pids fail.
const warnInterval = time.Minute

// permissionHint says what a reader without access needs.
const permissionHint = "run the collector as root, or grant it CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH"

// warner accumulates read failures and summarizes them in one log line per
// warnInterval.
type warner struct {
	pending atomic.Bool // failures recorded since the last warning

	mu      sync.Mutex
	counts  [numOutcomes]uint64
	example string
	last    time.Time
}

// record notes a failed read of pid.
func (w *warner) record(o outcome, err error) {
	w.mu.Lock()
	w.counts[o]++
	w.example = err.Error()
	w.mu.Unlock()
	w.pending.Store(true)
}

// flush logs the summary when there is one and the last warning is older
// than warnInterval (or force is set).
func (w *warner) flush(logger *zap.Logger, now time.Time, force bool) {
	if !w.pending.Load() {
		return
	}
	w.mu.Lock()
	if !force && !w.last.IsZero() && now.Sub(w.last) < warnInterval {
		w.mu.Unlock()
		return
	}
	counts, example := w.counts, w.example
	w.counts = [numOutcomes]uint64{}
	w.example = ""
	w.last = now
	w.pending.Store(false)
	w.mu.Unlock()

	var total uint64
	fields := make([]zap.Field, 0, numOutcomes+2)
	for o := outcomePermissionDenied; o < numOutcomes; o++ {
		if counts[o] > 0 {
			total += counts[o]
			fields = append(fields, zap.Uint64(o.kind(), counts[o]))
		}
	}
	if total == 0 {
		return
	}
	fields = append(fields, zap.String("example", example))
	if counts[outcomePermissionDenied] > 0 {
		fields = append(fields, zap.String("hint", permissionHint))
	}
	logger.Warn("Could not read the process context of some pids; their telemetry passes through unenriched (summary, at most one per minute)", fields...)
}
