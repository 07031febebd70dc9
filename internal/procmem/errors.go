package procmem

import "errors"

// Error kinds callers branch on. Every error returned by this package wraps
// exactly one of them (test with errors.Is); the wrapping message carries the
// pid and the reason.
var (
	// ErrNoContext: the process publishes no context (no OTEL_CTX mapping, or
	// the mapping disappeared because the process unpublished or exec'd).
	ErrNoContext = errors.New("no process context")

	// ErrProcessGone: the process exited (or became a zombie) before or while
	// it was read.
	ErrProcessGone = errors.New("process gone")

	// ErrPermissionDenied: the reader lacks the ptrace access needed for
	// /proc/<pid>/maps or the process's memory (root, or CAP_SYS_PTRACE plus
	// CAP_DAC_READ_SEARCH).
	ErrPermissionDenied = errors.New("permission denied")

	// ErrTorn: every try met an update in progress (timestamp 0, or the
	// timestamp changed while the payload was read). Transient: retry on a
	// later scan.
	ErrTorn = errors.New("update in progress")

	// ErrInvalid: the mapping holds something that is not a valid context
	// (signature, version, size 0, payload pointer not readable, malformed
	// protobuf). The wrapping message says which.
	ErrInvalid = errors.New("invalid process context")

	// ErrTooLarge: the context exceeds a configured limit (payload size,
	// attribute count, nesting depth, key or value length).
	ErrTooLarge = errors.New("process context exceeds limit")
)
