// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package hostopen

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/reader"
	"github.com/processctx/otelcol-processctx/internal/sdkenv"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// procHost is the tracker.Host of a procfs.
type procHost struct {
	fs       *procfs.FS
	maxValue int // of a kept environment variable
	reader   *reader.Reader
	ids      *procfs.IdentityReader
	lister   procfs.PidLister
}

// NewHost returns the Host that reads the processes of fs, bound by limits.
func NewHost(fs *procfs.FS, limits otep.Limits) (tracker.Host, error) {
	r, err := reader.New(fs, limits)
	if err != nil {
		return nil, err
	}
	return &procHost{fs: fs, reader: r, ids: procfs.NewIdentityReader(fs), maxValue: int(limits.MaxPayloadSize)}, nil
}

func (h *procHost) ListPids() ([]procfs.PidEntry, error) { return h.lister.List(h.fs) }

func (h *procHost) Stat(pid int) (procfs.Stat, error) { return h.fs.Stat(pid) }

func (h *procHost) FindMapping(pid int) (otep.Mapping, error) { return h.reader.FindMapping(pid) }

func (h *procHost) ReadContext(pid int, addr, last uint64, via reader.Via) (otep.Context, bool, error) {
	return h.reader.ReadContext(pid, addr, last, via)
}

func (h *procHost) Environment(pid int) (sdkenv.Vars, error) {
	f, err := h.fs.OpenEnviron(pid)
	if err != nil {
		return sdkenv.Vars{}, err
	}
	defer func() { _ = f.Close() }()
	vars, err := sdkenv.Scan(f, h.maxValue)
	if err != nil {
		err = fmt.Errorf("environ of pid %d: %w", pid, err)
	}
	return vars, err
}

func (h *procHost) Identity(pid int) (procfs.Identity, error) { return h.ids.Identity(pid) }

func (h *procHost) Executable(pid int) string { return h.fs.Executable(pid) }

func (h *procHost) ExplainDenied(pid int) string { return h.fs.ExplainDenied(pid) }

func (h *procHost) Access() error { return h.fs.CheckAccess() }

func (h *procHost) CheckProcfs() error { return h.fs.Check() }

func (h *procHost) KernelTime() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// ReaderOf returns the procfs reader of a Host made by NewHost, for
// callers that report its counters; nil for other hosts.
func ReaderOf(h tracker.Host) *reader.Reader {
	if ph, ok := h.(*procHost); ok {
		return ph.reader
	}
	return nil
}
