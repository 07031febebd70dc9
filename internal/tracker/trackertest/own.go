// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package trackertest

import (
	"sync"

	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Own is a host (most often the real one) as far as a test's own
// processes go: the other tests' processes stay out of counts that must
// be exact, and out of reads that would wait for them (another package's
// test may stall a process's memory, which holds any reader of the whole
// host until its deadline).
type Own struct {
	tracker.Host
	mu   sync.Mutex
	pids map[int]bool
	out  []procfs.PidEntry
}

// NewOwn returns host as far as pids go.
func NewOwn(host tracker.Host, pids ...int) *Own {
	h := &Own{Host: host, pids: map[int]bool{}}
	h.Add(pids...)
	return h
}

// Add makes the host list pids too.
func (h *Own) Add(pids ...int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range pids {
		h.pids[p] = true
	}
}

// ListPids implements tracker.Host: the host's own, but only pids.
func (h *Own) ListPids() ([]procfs.PidEntry, error) {
	all, err := h.Host.ListPids()
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.out = h.out[:0]
	for _, e := range all {
		if h.pids[e.Pid] {
			h.out = append(h.out, e)
		}
	}
	return h.out, nil
}
