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
	set := func(pid int, o Answer) {
		w := answerWriter{next: tab}
		w.set(pid, o)
		tab = w.next
	}
	for _, pid := range []int{1, 15, 16, 4095, 4096, MaxPID - 1} {
		assert.Equal(t, AnswerUnknown, tab.get(pid))
		set(pid, Answer(OutcomePermissionDenied))
		assert.Equal(t, Answer(OutcomePermissionDenied), tab.get(pid))
	}
	assert.Equal(t, AnswerUnknown, tab.get(2), "neighbours untouched")
	assert.Equal(t, AnswerUnknown, tab.get(17))
	set(15, Answer(OutcomeNoContext))
	assert.Equal(t, Answer(OutcomeNoContext), tab.get(15))
	assert.Equal(t, Answer(OutcomePermissionDenied), tab.get(16))
	set(15, AnswerUnknown)
	assert.Equal(t, AnswerUnknown, tab.get(15))
	for _, pid := range []int{0, -1, MaxPID, 1 << 40} {
		set(pid, Answer(OutcomeOK))
		assert.Equal(t, AnswerUnknown, tab.get(pid))
	}
}

// A table, once a snapshot has it, never changes: the next one copies what
// it changes.
func TestAnswerTableIsNeverChangedInPlace(t *testing.T) {
	w := answerWriter{}
	w.set(10, Answer(OutcomeNoContext))
	w.set(5000, Answer(OutcomeStalled))
	first := w.next

	w = answerWriter{next: first}
	w.set(10, AnswerUnknown)
	w.set(11, Answer(OutcomeGone))
	w.set(1<<20, Answer(OutcomeInvalid))
	second := w.next

	assert.Equal(t, Answer(OutcomeNoContext), first.get(10))
	assert.Equal(t, AnswerUnknown, first.get(11))
	assert.Equal(t, AnswerUnknown, first.get(1<<20))
	assert.Equal(t, AnswerUnknown, second.get(10))
	assert.Equal(t, Answer(OutcomeGone), second.get(11))
	assert.Equal(t, Answer(OutcomeInvalid), second.get(1<<20))
	assert.Same(t, first.chunks[1], second.chunks[1], "a chunk without changes is shared")
}

// What the tracker keeps of a process that publishes nothing is one proc:
// reading environments (envDone) added nothing to it; where its read is
// (proc.job, for expedite) added 8 bytes. A host runs thousands of them.
func TestProcStaysSmall(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(proc{}), uintptr(96))
}
