package processctxprocessor

import (
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Values of the telemetry's signal attribute (metadata.yaml lists them).
const (
	signalLogs     = "logs"
	signalMetrics  = "metrics"
	signalTraces   = "traces"
	signalProfiles = "profiles"
)

// outcome is the result of looking up one pid for telemetry.
type outcome uint8

const (
	outcomeEnriched  outcome = iota // a context was found
	outcomeNoContext                // no context published, or no such process
	outcomePermissionDenied
	outcomeInvalid
	outcomeTooLarge
	outcomeTorn
	// outcomeMismatch: the pid names a host process whose published
	// service identity contradicts the telemetry's: most likely the pid is
	// another pid namespace's (an SDK in a container), so it is not used.
	outcomeMismatch
	// outcomeStalled: the process did not answer a read in time and is
	// quarantined.
	outcomeStalled
	// outcomeTimeout: the pid was not read within lookup_timeout.
	outcomeTimeout
	outcomeOther
	numOutcomes

	// outcomePending: not known yet, being read (never counted).
	outcomePending outcome = 255
)

// outcomeOfLookup classifies what the tracker knows of a pid without a
// publication.
func outcomeOfLookup(o tracker.Outcome) outcome {
	switch o {
	case tracker.OutcomeOK:
		return outcomeEnriched
	case tracker.OutcomeNoContext, tracker.OutcomeGone:
		return outcomeNoContext
	case tracker.OutcomePermissionDenied:
		return outcomePermissionDenied
	case tracker.OutcomeInvalid:
		return outcomeInvalid
	case tracker.OutcomeTooLarge:
		return outcomeTooLarge
	case tracker.OutcomeTorn:
		return outcomeTorn
	case tracker.OutcomeStalled:
		return outcomeStalled
	case tracker.OutcomeUnknown:
		return outcomePending
	}
	return outcomeOther
}

// kinds are the values of the errors metric's kind attribute, by outcome
// (metadata.yaml lists them).
var kinds = [numOutcomes]string{
	outcomePermissionDenied: "permission_denied",
	outcomeInvalid:          "invalid",
	outcomeTooLarge:         "too_large",
	outcomeTorn:             "torn",
	outcomeMismatch:         "identity_mismatch",
	outcomeStalled:          "stalled",
	outcomeTimeout:          "timeout",
	outcomeOther:            "other",
}

// kind is the value of the errors metric's kind attribute.
func (o outcome) kind() string { return kinds[o] }
