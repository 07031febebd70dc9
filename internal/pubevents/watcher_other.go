// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !(linux && (amd64 || arm64))

package pubevents

import (
	"fmt"
	"runtime"
	"time"
)

// Watcher is not available on this system: Load returns ErrUnsupported.
type Watcher struct{}

// Load returns an error wrapping ErrUnsupported: the programs are built for
// Linux on x86_64 only.
func Load(opts Options) (*Watcher, error) {
	if _, err := opts.withDefaults(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: %s/%s", ErrUnsupported, runtime.GOOS, runtime.GOARCH)
}

// Read returns ErrClosed.
func (w *Watcher) Read(*Event) error { return ErrClosed }

// SetDeadline does nothing.
func (w *Watcher) SetDeadline(time.Time) {}

// Lost returns 0.
func (w *Watcher) Lost() uint64 { return 0 }

// Track returns ErrUnsupported.
func (w *Watcher) Track(pid int, addr, length uint64) error {
	if err := checkTrack(pid, addr, length); err != nil {
		return err
	}
	return ErrUnsupported
}

// Untrack returns ErrUnsupported.
func (w *Watcher) Untrack(int) error { return ErrUnsupported }

// Mechanism returns Fexit.
func (w *Watcher) Mechanism() Mechanism { return Fexit }

// Close does nothing.
func (w *Watcher) Close() error { return nil }
