// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pidtable

import "slices"

// Nibbles maps pids to 4-bit values (0 for a pid never set), in chunks of
// chunkPids allocated on first use: the tracker's answers for the pids
// without a publication, which every snapshot carries. Tables built one
// from another (NibbleWriter) share the chunks that did not change: a new
// one copies only the chunks of the pids whose value changed, so that a
// table, once read, never changes. The zero value is an empty table.
type Nibbles struct {
	chunks []*nibbleChunk // by pid / chunkPids; nil: every value 0
}

const (
	maxPID      = 1 << 22 // PID_MAX_LIMIT on 64-bit Linux
	chunkPids   = 4096
	pidsPerWord = 16 // 4 bits each
)

type nibbleChunk [chunkPids / pidsPerWord]uint64

// Get returns the value of pid.
func (t *Nibbles) Get(pid int) uint8 {
	ci := pid / chunkPids
	if pid <= 0 || ci >= len(t.chunks) || t.chunks[ci] == nil {
		return 0
	}
	i := pid % chunkPids
	return uint8(t.chunks[ci][i/pidsPerWord] >> (4 * (i % pidsPerWord)) & 0xf)
}

// NibbleWriter builds a table from another, which it does not change.
type NibbleWriter struct {
	next   Nibbles
	own    bool  // next.chunks is not shared
	copied []int // the chunks of next that are not shared
}

// NewNibbleWriter returns a writer of a table that starts as from.
func NewNibbleWriter(from Nibbles) NibbleWriter { return NibbleWriter{next: from} }

// Table returns the table written.
func (w *NibbleWriter) Table() Nibbles { return w.next }

// Set sets pid's value to the low 4 bits of v; what is no pid (up to 0,
// from PID_MAX_LIMIT on) is ignored.
func (w *NibbleWriter) Set(pid int, v uint8) {
	v &= 0xf
	ci := pid / chunkPids
	if pid <= 0 || pid >= maxPID || ci >= len(w.next.chunks) && v == 0 {
		return // no pid, or 0 already
	}
	if !w.own {
		w.next.chunks = append(make([]*nibbleChunk, 0, max(ci+1, len(w.next.chunks))), w.next.chunks...)
		w.own = true
	}
	if ci >= len(w.next.chunks) {
		w.next.chunks = append(w.next.chunks, make([]*nibbleChunk, ci+1-len(w.next.chunks))...)
	}
	c := w.next.chunks[ci]
	switch {
	case c == nil && v == 0:
		return
	case c == nil:
		c = new(nibbleChunk)
		w.copied = append(w.copied, ci)
	case !slices.Contains(w.copied, ci):
		cp := *c
		c = &cp
		w.copied = append(w.copied, ci)
	}
	w.next.chunks[ci] = c
	i := pid % chunkPids
	shift := 4 * (i % pidsPerWord)
	c[i/pidsPerWord] = c[i/pidsPerWord]&^(0xf<<shift) | uint64(v)<<shift
}
