// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procevents

import (
	"testing"

	"github.com/processctx/otelcol-processctx/internal/fuzzseed"
)

// TestSeedCorpus keeps the committed seed corpus of FuzzParseEvent
// (testdata/fuzz/FuzzParseEvent) in step with the seeds below, on top of
// its f.Add seeds (see internal/fuzzseed): the datagrams the kernel sends
// for each event, and malformed ones.
func TestSeedCorpus(t *testing.T) {
	fork := kernelMessage(procEventFork, 101, 100, 200, 200)
	seeds := map[string][]any{
		"fork-process":     {fork},
		"fork-thread":      {kernelMessage(procEventFork, 100, 100, 201, 100)},
		"exec":             {kernelMessage(procEventExec, 300, 300)},
		"exit":             {kernelMessage(procEventExit, 400, 400, 0, 17, 1, 1)},
		"exit-thread":      {kernelMessage(procEventExit, 401, 400, 0, 0, 1, 1)},
		"exit-pid-1":       {kernelMessage(procEventExit, 1, 1, 0, 0, 0, 0)},
		"ack":              {kernelMessage(procEventNone, 0)},
		"unknown-event":    {kernelMessage(0x40000000, 500, 500)},
		"ack-flag-set":     {buildMessage(procEventFork, 1, kernelUnionLen, 101, 100, 200, 200)},
		"union-short":      {buildMessage(procEventExit, 0, 16, 400, 400, 256, 17)},
		"union-4":          {buildMessage(procEventFork, 0, 4, 1)},
		"truncated-header": {fork[:cnDataOffset+2]},
		"truncated-union":  {fork[:len(fork)-4]},
		"length-larger":    {append(fork, make([]byte, 64)...)},
		"two-messages":     {append(append([]byte{}, fork...), kernelMessage(procEventExec, 300, 300)...)},
		"pid-0":            {kernelMessage(procEventExec, 0, 0)},
		"pid-negative":     {kernelMessage(procEventFork, 1, 1, 0xffffffff, 0xffffffff)},
		"empty":            {[]byte{}},
	}
	fuzzseed.Check(t, "FuzzParseEvent", seeds)
}
