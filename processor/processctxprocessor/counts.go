package processctxprocessor

import (
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Items are counted by what became of them: the tracker.Outcome of their
// pid's lookup, or one of the processor's own two results, which follow
// the outcomes.
const (
	// identityMismatch: the pid names a host process whose published
	// service identity contradicts the telemetry's: most likely the pid is
	// another pid namespace's (an SDK in a container), so it is not used.
	identityMismatch = int(tracker.NumOutcomes) + iota
	// timedOut: the pid was not read within lookup_timeout.
	timedOut
	numCounts
)

// itemCounts counts items by what became of them.
type itemCounts [numCounts]int64

// countName is the name of count i: the errors metric's kind.
func countName(i int) string {
	switch i {
	case identityMismatch:
		return "identity_mismatch"
	case timedOut:
		return "timeout"
	}
	return tracker.Outcome(i).String()
}

// isErrorCount reports whether the errors metric reports count i: every
// failure, but not a process that publishes nothing or has gone (the
// no_context metric's).
func isErrorCount(i int) bool {
	switch tracker.Outcome(i) {
	case tracker.OutcomeUnknown, tracker.OutcomeOK, tracker.OutcomeUnchanged, tracker.OutcomeNoContext, tracker.OutcomeGone:
		return false
	}
	return i < numCounts
}
