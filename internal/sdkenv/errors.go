// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package sdkenv

import "errors"

// Error kinds callers branch on; see the package documentation for which
// function returns which. The wrapping message names the variable and what is
// wrong, never the text.
var (
	// ErrTooLarge: a value exceeds the caller's maxValue, or the environment
	// exceeds MaxEnvironment.
	ErrTooLarge = errors.New("sdkenv: too large")

	// ErrInvalid: OTEL_RESOURCE_ATTRIBUTES is not a valid list of
	// key=value pairs (an entry without '=', an empty key, a '%' not
	// followed by two hexadecimal digits).
	ErrInvalid = errors.New("sdkenv: invalid")

	// ErrEmpty: the environment has no bytes at all. /proc/<pid>/environ
	// reads so from the moment exec passes its point of no return until
	// the new image's environment is set up (a process started with an
	// empty environment reads so too): read it again later.
	ErrEmpty = errors.New("sdkenv: empty environment")
)
