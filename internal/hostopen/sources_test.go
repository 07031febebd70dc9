// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package hostopen

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/processctx/otelcol-processctx/internal/procevents"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// The events of processes that publish nothing wait for processHoldMax (or
// the socket's quiet, which Run checks); an exec or exit of a publisher is
// delivered with the read that found it, after the events held before it.
func TestHeldEvents(t *testing.T) {
	const publisher = 42
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name       string
		read       []procevents.Event
		after      time.Duration // from the first read to the check of due
		wantUrgent bool
		wantDue    bool
	}{
		{name: "a non-publisher's fork, exec and exit wait",
			read: []procevents.Event{{Kind: procevents.Fork, PID: 7, Parent: 1}, {Kind: procevents.Exec, PID: 7}, {Kind: procevents.Exit, PID: 7}}},
		{name: "until processHoldMax",
			read:  []procevents.Event{{Kind: procevents.Exec, PID: 7}},
			after: processHoldMax, wantDue: true},
		{name: "a publisher's exit goes at once",
			read:       []procevents.Event{{Kind: procevents.Exec, PID: 7}, {Kind: procevents.Exit, PID: publisher}},
			wantUrgent: true},
		{name: "a publisher's exec too",
			read:       []procevents.Event{{Kind: procevents.Exec, PID: publisher}},
			wantUrgent: true},
		{name: "a publisher's fork does not: its child publishes nothing",
			read: []procevents.Event{{Kind: procevents.Fork, PID: 8, Parent: publisher}}},
		{name: "kinds the tracker does not act on are not held",
			read: []procevents.Event{{Kind: procevents.Kind(200), PID: publisher}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := heldEvents{publishes: func(pid int) bool { return pid == publisher }}
			assert.Equal(t, tt.wantUrgent, h.add(tt.read, t0))
			assert.Equal(t, tt.wantDue, h.due(t0.Add(tt.after)))
			var got []tracker.Event
			h.deliver(func(ev tracker.Event) { got = append(got, ev) })
			var want []tracker.Event
			for _, e := range tt.read {
				if k := kindOf(processKinds[:], e.Kind); k != 0 {
					want = append(want, tracker.Event{Kind: k, PID: e.PID, Parent: e.Parent})
				}
			}
			assert.Equal(t, want, got, "in the order read")
			assert.False(t, h.due(t0.Add(time.Hour)), "nothing held after a delivery")
		})
	}
}

// Too many events held are delivered whatever their age.
func TestHeldEventsBounded(t *testing.T) {
	h := heldEvents{publishes: func(int) bool { return false }}
	now := time.Unix(1000, 0)
	read := make([]procevents.Event, processHeldMax)
	for i := range read {
		read[i] = procevents.Event{Kind: procevents.Exec, PID: i + 100}
	}
	assert.False(t, h.add(read[:processHeldMax-1], now))
	assert.False(t, h.due(now))
	h.add(read[processHeldMax-1:], now)
	assert.True(t, h.due(now))
}

// Without a tracker to ask (publishes nil), every exec and exit goes at once.
func TestHeldEventsWithoutTracker(t *testing.T) {
	var h heldEvents
	assert.True(t, h.add([]procevents.Event{{Kind: procevents.Exit, PID: 7}}, time.Now()))
}
