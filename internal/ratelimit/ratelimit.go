// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package ratelimit paces what is done at most once per interval: the
// warnings and the scans asked for of the tracker, the receiver's lines
// about refused entity events, the processor's line about telemetry
// without a pid. One Limiter per thing paced; safe for concurrent use (the
// processor's batches run at once). Times are nanoseconds on the caller's
// clock (the tracker's loop clock, or time.Time.UnixNano), 0 being never;
// the interval is the caller's at each call (a setting, or a constant).
package ratelimit

import (
	"sync/atomic"
	"time"
)

// Limiter says whether what it paces may be done now. The zero value has
// never been done.
type Limiter struct {
	last atomic.Int64 // when it was last done; 0: never
}

// Allow reports whether it may be done at now, at most once per every,
// and notes it done then when it may. Of callers at once, one is allowed.
func (l *Limiter) Allow(now int64, every time.Duration) bool {
	for {
		last := l.last.Load()
		if last != 0 && now-last < int64(every) {
			return false
		}
		if l.last.CompareAndSwap(last, now) {
			return true
		}
	}
}

// Due reports whether it may be done at now, noting nothing: a caller
// that gathers what to say only when it will be said asks first.
func (l *Limiter) Due(now int64, every time.Duration) bool {
	last := l.last.Load()
	return last == 0 || now-last >= int64(every)
}

// Note notes it done at now, allowed or not (a first report, which is
// always made, starts the interval).
func (l *Limiter) Note(now int64) { l.last.Store(now) }

// Reset forgets when it was last done: the next Allow allows (what was
// done said nothing, say).
func (l *Limiter) Reset() { l.last.Store(0) }
