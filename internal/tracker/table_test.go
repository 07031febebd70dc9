// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

func TestAnswerTable(t *testing.T) {
	var tab answerTable
	set := func(pid int, o Outcome) {
		w := answerWriter{next: tab}
		w.set(pid, o)
		tab = w.next
	}
	for _, pid := range []int{1, 15, 16, 4095, 4096, MaxPID - 1} {
		assert.Equal(t, OutcomeUnknown, tab.get(pid))
		set(pid, OutcomePermissionDenied)
		assert.Equal(t, OutcomePermissionDenied, tab.get(pid))
	}
	assert.Equal(t, OutcomeUnknown, tab.get(2), "neighbours untouched")
	assert.Equal(t, OutcomeUnknown, tab.get(17))
	set(15, OutcomeNoContext)
	assert.Equal(t, OutcomeNoContext, tab.get(15))
	assert.Equal(t, OutcomePermissionDenied, tab.get(16))
	set(15, OutcomeUnknown)
	assert.Equal(t, OutcomeUnknown, tab.get(15))
	for _, pid := range []int{0, -1, MaxPID, 1 << 40} {
		set(pid, OutcomeOK)
		assert.Equal(t, OutcomeUnknown, tab.get(pid))
	}
}

// A table, once a snapshot has it, never changes: the next one copies what
// it changes.
func TestAnswerTableIsNeverChangedInPlace(t *testing.T) {
	w := answerWriter{}
	w.set(10, OutcomeNoContext)
	w.set(5000, OutcomeStalled)
	first := w.next

	w = answerWriter{next: first}
	w.set(10, OutcomeUnknown)
	w.set(11, OutcomeGone)
	w.set(1<<20, OutcomeInvalid)
	second := w.next

	assert.Equal(t, OutcomeNoContext, first.get(10))
	assert.Equal(t, OutcomeUnknown, first.get(11))
	assert.Equal(t, OutcomeUnknown, first.get(1<<20))
	assert.Equal(t, OutcomeUnknown, second.get(10))
	assert.Equal(t, OutcomeGone, second.get(11))
	assert.Equal(t, OutcomeInvalid, second.get(1<<20))
	assert.Same(t, first.chunks[1], second.chunks[1], "a chunk without changes is shared")
}

// What the tracker keeps of a process that publishes nothing is one proc:
// reading environments (envDone) added nothing to it; where its read is
// (proc.job, for expedite) added 8 bytes. A host runs thousands of them.
func TestProcStaysSmall(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(proc{}), uintptr(96))
}
