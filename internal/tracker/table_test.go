// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// What the tracker keeps of a process that publishes nothing is one proc:
// reading environments (envDone) added nothing to it; where its read is
// (proc.job, for expedite) added 8 bytes. A host runs thousands of them.
func TestProcStaysSmall(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(proc{}), uintptr(96))
}
