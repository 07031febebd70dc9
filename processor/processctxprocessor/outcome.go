package processctxprocessor

import (
	"errors"

	"github.com/processctx/otelcol-processctx/internal/procmem"
	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

// outcome is the result of looking up one pid.
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
	outcomeOther
	numOutcomes
)

// outcomeOf classifies a procmem error.
func outcomeOf(err error) outcome {
	switch {
	case err == nil:
		return outcomeEnriched
	case errors.Is(err, procmem.ErrNoContext), errors.Is(err, procmem.ErrProcessGone):
		return outcomeNoContext
	case errors.Is(err, procmem.ErrPermissionDenied):
		return outcomePermissionDenied
	case errors.Is(err, procmem.ErrInvalid):
		return outcomeInvalid
	case errors.Is(err, procmem.ErrTooLarge):
		return outcomeTooLarge
	case errors.Is(err, procmem.ErrTorn):
		return outcomeTorn
	}
	return outcomeOther
}

// isError reports whether the outcome is a failure to read (as opposed to a
// process that simply publishes nothing).
func (o outcome) isError() bool { return o >= outcomePermissionDenied && o < numOutcomes }

// kind is the value of the errors metric's kind attribute.
func (o outcome) kind() string {
	switch o {
	case outcomePermissionDenied:
		return metadata.KindPermissionDenied
	case outcomeInvalid:
		return metadata.KindInvalid
	case outcomeTooLarge:
		return metadata.KindTooLarge
	case outcomeTorn:
		return metadata.KindTorn
	case outcomeMismatch:
		return metadata.KindMismatch
	}
	return metadata.KindOther
}
