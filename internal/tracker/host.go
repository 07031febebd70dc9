// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/reader"
	"github.com/processctx/otelcol-processctx/internal/sdkenv"
)

// Host reads the processes of one host. Any method but ListPids may block
// as long as the process lets it: the tracker calls them on reader
// goroutines under a deadline. Errors wrap the kinds of internal/otep and
// internal/procfs (see OutcomeOf).
type Host interface {
	// ListPids returns every pid with the inode number of its procfs
	// directory, valid until the next call. Only the tracker's loop calls
	// it.
	ListPids() ([]procfs.PidEntry, error)
	// Stat returns the start time of pid in clock ticks and whether it is
	// a kernel thread.
	Stat(pid int) (procfs.Stat, error)
	// FindMapping returns the context mapping of pid.
	FindMapping(pid int) (otep.Mapping, error)
	// ReadContext reads the context whose header is at addr; see
	// reader.Reader.ReadContext.
	ReadContext(pid int, addr, lastPublishedAt uint64, via reader.Via) (otep.Context, bool, error)
	// Environment reads what pid's environment says of its identity: only
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are kept (sdkenv.Scan:
	// streamed, bounded). Vars are valid beside an error wrapping
	// sdkenv.ErrTooLarge.
	Environment(pid int) (sdkenv.Vars, error)
	// Identity reads what the host knows of pid.
	Identity(pid int) (procfs.Identity, error)
	// Executable names pid's executable for reports, best effort.
	Executable(pid int) string
	// ExplainDenied says why pid cannot be read and what would fix it.
	ExplainDenied(pid int) string
	// CheckProcfs reports, wrapping procfs.ErrNoProcfs, when the procfs
	// is no longer there (an unmounted /hostfs/proc). It never blocks on
	// a process.
	CheckProcfs() error
	// Access reports, wrapping procfs.ErrPermissionDenied, when the
	// collector's own privileges keep it from reading other users'
	// processes. It reads only the collector's own files.
	Access() error
	// KernelTime is the kernel's monotonic clock in nanoseconds, the clock
	// of Event.Time (the proc connector's and the BPF programs'); 0 when
	// the host has none.
	KernelTime() uint64
}
