// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package ratelimit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

const s = int64(time.Second)

func TestAllow(t *testing.T) {
	var l Limiter
	assert.True(t, l.Due(1, time.Minute), "never done")
	assert.True(t, l.Allow(1, time.Minute))
	assert.False(t, l.Due(1, time.Minute))
	assert.False(t, l.Allow(30*s, time.Minute), "within the interval")
	assert.False(t, l.Allow(60*s, time.Minute), "an interval after 1 ns: not yet")
	assert.True(t, l.Allow(60*s+1, time.Minute), "an interval after")
	assert.False(t, l.Allow(90*s, time.Minute), "the interval starts again at the last allowed")
	assert.True(t, l.Allow(90*s, 10*time.Second), "the interval is the caller's, at each call")
}

func TestNoteAndReset(t *testing.T) {
	var l Limiter
	l.Note(10 * s)
	assert.False(t, l.Allow(20*s, time.Minute), "a noted report starts the interval")
	assert.True(t, l.Allow(70*s, time.Minute))
	l.Reset()
	assert.True(t, l.Due(71*s, time.Minute))
	assert.True(t, l.Allow(71*s, time.Minute), "reset: at once")
}

// Of callers at once, one is allowed.
func TestConcurrent(t *testing.T) {
	var (
		l       Limiter
		allowed atomic.Int64
		wg      sync.WaitGroup
	)
	for range 64 {
		wg.Go(func() {
			if l.Allow(5*s, time.Minute) {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(1), allowed.Load())
}
