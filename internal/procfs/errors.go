// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Error kinds callers branch on (see the package documentation).
var (
	// ErrProcessGone: the process exited (or became a zombie) before or
	// while it was read, or its pid now names another process.
	ErrProcessGone = errors.New("process gone")

	// ErrPermissionDenied: the reader lacks the access the file needs
	// (ptrace read access for maps, exe and mem; hidepid hides whole pids).
	ErrPermissionDenied = errors.New("permission denied")

	// ErrMalformed: a procfs file did not have the expected format.
	ErrMalformed = errors.New("malformed procfs file")

	// ErrNoProcfs: the root path holds no procfs at <root>/proc.
	ErrNoProcfs = errors.New("no procfs")

	// ErrNotHostProcfs: the procfs belongs to a nested pid namespace (a
	// container's), so it shows that container's processes, not the host's.
	ErrNotHostProcfs = errors.New("not the host's procfs")
)

// Classify maps an errno from procfs or a memory read to an error kind, or
// nil when it has none.
func Classify(err error) error {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ESRCH):
		return ErrProcessGone
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return ErrPermissionDenied
	}
	return nil
}

// WrapOS wraps an OS error about pid with its kind (when it has one) and
// what was being done.
func WrapOS(op string, pid int, err error) error {
	if kind := Classify(err); kind != nil {
		return fmt.Errorf("%s of pid %d: %w: %w", op, pid, kind, err)
	}
	return fmt.Errorf("%s of pid %d: %w", op, pid, err)
}
