// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep

import "errors"

// Error kinds callers branch on; see the package documentation for which
// function returns which.
var (
	// ErrNoContext: the process publishes no context (no OTEL_CTX mapping,
	// or the mapping disappeared because the process unpublished or exec'd).
	ErrNoContext = errors.New("no process context")

	// ErrTorn: every try met an update in progress (timestamp 0, or the
	// timestamp changed while the payload was read). Transient: retry later.
	ErrTorn = errors.New("update in progress")

	// ErrInvalid: the mapping holds something that is not a valid context
	// (signature, version, size 0, payload pointer not readable, malformed
	// protobuf). The wrapping message says which.
	ErrInvalid = errors.New("invalid process context")

	// ErrTooLarge: the context exceeds a configured limit (payload size,
	// attribute count, nesting depth, key or value length).
	ErrTooLarge = errors.New("process context exceeds limit")

	// ErrBadAddress is wrapped by a Memory's error when the address range is
	// not mapped or not readable in the target (EFAULT, EIO, a short read).
	ErrBadAddress = errors.New("address not readable")
)
