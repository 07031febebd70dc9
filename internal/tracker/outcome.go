// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"errors"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
)

// ErrStalled is the error of a read abandoned at its deadline.
var ErrStalled = errors.New("read did not return in time")

// Outcome classifies what a read of a process found.
type Outcome uint8

// OutcomeStalled: the read did not return before its deadline, or the
// process is quarantined after such a read. NumOutcomes is the length of
// arrays indexed by Outcome.
const (
	OutcomeOK               Outcome = iota + 1 // a context was read (0 is no outcome: AnswerUnknown)
	OutcomeUnchanged                           // the context had not changed (one timestamp read)
	OutcomeNoContext                           // the process publishes no context
	OutcomePermissionDenied                    // the reader lacks access to the process
	OutcomeInvalid                             // it publishes something that is not a valid context
	OutcomeTooLarge                            // the context exceeds a limit
	OutcomeTorn                                // the context was being updated on every try
	OutcomeGone                                // the process exited while it was read
	OutcomeStalled
	OutcomeError // any other failure (a procfs file that did not parse)
	NumOutcomes
)

// MaxPID is PID_MAX_LIMIT on 64-bit Linux: every pid is below it.
const MaxPID = 1 << 22

// ValidPID reports whether pid can name a process.
func ValidPID(pid int) bool { return pid > 0 && pid < MaxPID }

// Outcomes lists every outcome of a read, in order.
var Outcomes = []Outcome{OutcomeOK, OutcomeUnchanged, OutcomeNoContext, OutcomePermissionDenied,
	OutcomeInvalid, OutcomeTooLarge, OutcomeTorn, OutcomeGone, OutcomeStalled, OutcomeError}

// Answer is what a lookup of a pid answers (Snapshot.Lookup): AnswerOK
// with a publication, AnswerUnknown while the pid is not known yet or a
// read that may tell its identity is under way or due, else the Outcome of
// the read that found none (Answer(o)). Arrays indexed by Outcome are by
// Answer too.
type Answer uint8

// The answers named apart from the outcomes.
const (
	AnswerUnknown   Answer = 0
	AnswerOK               = Answer(OutcomeOK)
	AnswerNoContext        = Answer(OutcomeNoContext)
	AnswerGone             = Answer(OutcomeGone)
)

// String returns the answer's name: the outcome's, or "unknown".
func (a Answer) String() string { return Outcome(a).String() }

var outcomeNames = [NumOutcomes]string{
	0:                       "unknown",
	OutcomeOK:               "ok",
	OutcomeUnchanged:        "unchanged",
	OutcomeNoContext:        "no_context",
	OutcomePermissionDenied: "permission_denied",
	OutcomeInvalid:          "invalid",
	OutcomeTooLarge:         "too_large",
	OutcomeTorn:             "torn",
	OutcomeGone:             "gone",
	OutcomeStalled:          "stalled",
	OutcomeError:            "error",
}

// String returns the outcome's name, as telemetry attributes carry it.
func (o Outcome) String() string {
	if o < NumOutcomes {
		return outcomeNames[o]
	}
	return "error"
}

// OutcomeOf classifies an error of a read.
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, ErrStalled):
		return OutcomeStalled
	case errors.Is(err, procfs.ErrProcessGone):
		return OutcomeGone
	case errors.Is(err, procfs.ErrPermissionDenied):
		return OutcomePermissionDenied
	case errors.Is(err, otep.ErrNoContext):
		return OutcomeNoContext
	case errors.Is(err, otep.ErrTorn):
		return OutcomeTorn
	case errors.Is(err, otep.ErrInvalid):
		return OutcomeInvalid
	case errors.Is(err, otep.ErrTooLarge):
		return OutcomeTooLarge
	}
	return OutcomeError
}
