// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Items are counted by what became of them: the tracker.Answer of their
// pid's lookup, or one of the processor's own results, which follow the
// outcomes.
const (
	// identityMismatch: the pid names a host process whose published
	// service identity contradicts the telemetry's: most likely the pid is
	// another pid namespace's (an SDK in a container), so it is not used.
	identityMismatch = int(tracker.NumOutcomes) + iota
	// timedOut: the pid was not read within lookup_timeout.
	timedOut
	// invalidPIDCount: a pid_attributes key holds something that is no pid
	// (invalidPID).
	invalidPIDCount
	numCounts
)

// outcomeInvalidPID is what the lookup of invalidPID answers, without
// looking: batch.count counts it under invalidPIDCount.
const outcomeInvalidPID = tracker.Answer(invalidPIDCount)

// numSources is the number of tracker.Source values: the enriched items
// are counted by the source of their process's identity.
const numSources = int(tracker.SourceEnvironment) + 1

// itemCounts counts items by what became of them.
type itemCounts struct {
	// outcomes counts the items not enriched, by count index (the
	// OutcomeOK slot stays 0: enriched items are counted by source).
	outcomes [numCounts]int64
	// enriched counts the enriched items by the tracker.Source of their
	// process's identity.
	enriched [numSources]int64
	// noPID counts the items that carry none of the pid_attributes keys.
	noPID int64
}

// sourceIndex is the index of s among the enriched counts. A source the
// processor does not know yet (a tracker.Source added without a value of
// metadata.yaml's source attribute) is counted as context rather than
// failing the batch; TestSourceNames keeps the two in step.
func sourceIndex(s tracker.Source) int {
	if int(s) >= numSources {
		return int(tracker.SourceContext)
	}
	return int(s)
}

// countName is the name of count i: the errors metric's kind.
func countName(i int) string {
	switch i {
	case identityMismatch:
		return "identity_mismatch"
	case timedOut:
		return "timeout"
	case invalidPIDCount:
		return "invalid_pid"
	}
	return tracker.Answer(i).String()
}

// isErrorCount reports whether the errors metric reports count i: every
// failure, but not a process that publishes nothing or has gone (the
// no_context metric's).
func isErrorCount(i int) bool {
	switch tracker.Answer(i) {
	case tracker.AnswerUnknown, tracker.AnswerOK, tracker.Answer(tracker.OutcomeUnchanged), tracker.AnswerNoContext, tracker.AnswerGone:
		return false
	}
	return i < numCounts
}
