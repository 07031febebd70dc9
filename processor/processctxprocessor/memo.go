// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import "github.com/processctx/otelcol-processctx/internal/pidtable"

// pidMemo is the pids of one resource's records or samples resolved so
// far, in the order they were first seen. The last pid found is
// remembered: consecutive items mostly share a pid.
type pidMemo struct {
	index    pidtable.Table[int32] // pid -> position in resolved
	resolved []resolved
	lastPid  int
	last     int32
}

// find returns what pid resolved to, nil when it was not resolved yet.
func (m *pidMemo) find(pid int) *resolved {
	if pid != m.lastPid || pid == 0 {
		i, ok := m.index.Get(pid)
		if !ok {
			return nil
		}
		m.lastPid, m.last = pid, i
	}
	return &m.resolved[m.last]
}

// add notes what pid resolved to.
func (m *pidMemo) add(pid int, r resolved) *resolved {
	m.lastPid, m.last = pid, int32(len(m.resolved))
	m.index.Add(pid, m.last)
	m.resolved = append(m.resolved, r)
	return &m.resolved[m.last]
}

// reset forgets every pid: the next resource's container.id may differ.
func (m *pidMemo) reset() {
	m.index.Reset()
	clear(m.resolved)
	m.resolved, m.lastPid, m.last = m.resolved[:0], 0, 0
}
