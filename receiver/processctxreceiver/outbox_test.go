package processctxreceiver

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// outboxOp is one step of an outbox test: "state P", "delete P", "wait D"
// (the clock advances), "deliver" (the next batch is accepted).
type outboxOp struct {
	op  string
	pid int
	d   time.Duration
}

func TestOutbox(t *testing.T) {
	state := func(pid int) outboxOp { return outboxOp{op: "state", pid: pid} }
	del := func(pid int) outboxOp { return outboxOp{op: "delete", pid: pid} }
	wait := func(d time.Duration) outboxOp { return outboxOp{op: "wait", d: d} }
	deliver := outboxOp{op: "deliver"}

	tests := []struct {
		name      string
		limit     int
		maxAge    time.Duration
		ops       []outboxOp
		want      []string // the next batch, in order
		delivered []string // what the deliver steps handed over
		dropped   map[dropReason]int64
	}{
		{
			name: "states then deletes, in order",
			ops:  []outboxOp{state(1), state(2), del(1), state(3), del(2)},
			want: []string{"state 1", "state 2", "state 3", "delete 1", "delete 2"},
		},
		{
			name: "a newer state replaces one not delivered",
			ops:  []outboxOp{state(1), state(2), state(1)},
			want: []string{"state 2", "state 1@2"},
		},
		{
			name: "published again before its delete went: the delete no longer holds",
			ops:  []outboxOp{state(1), deliver, del(1), state(1)},
			want: []string{"state 1@2"}, delivered: []string{"state 1"},
		},
		{
			name:    "full: the oldest states go first, deletes stay",
			limit:   3,
			ops:     []outboxOp{state(1), del(1), state(2), state(3), state(4), del(4)},
			want:    []string{"state 4", "delete 1", "delete 4"},
			dropped: map[dropReason]int64{dropQueueFull: 3},
		},
		{
			name:    "full of deletes: the oldest delete goes",
			limit:   2,
			ops:     []outboxOp{del(1), del(2), del(3)},
			want:    []string{"delete 2", "delete 3"},
			dropped: map[dropReason]int64{dropQueueFull: 1},
		},
		{
			name:    "a delete waits for report_interval at most; states do not expire",
			ops:     []outboxOp{del(1), state(2), wait(30 * time.Second), del(3), wait(31 * time.Second)},
			want:    []string{"state 2", "delete 3"},
			dropped: map[dropReason]int64{dropExpired: 1},
		},
		{
			name:    "max_elapsed_time gives up on any older event",
			maxAge:  10 * time.Second,
			ops:     []outboxOp{state(1), del(2), wait(5 * time.Second), state(3), wait(6 * time.Second)},
			want:    []string{"state 3"},
			dropped: map[dropReason]int64{dropExpired: 2},
		},
		{
			name:      "delivered events leave",
			ops:       []outboxOp{state(1), del(2), deliver, state(3)},
			want:      []string{"state 3"},
			delivered: []string{"state 1", "delete 2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := tt.limit
			if limit == 0 {
				limit = 100
			}
			o := newOutbox(limit, time.Minute, tt.maxAge)
			now := time.Unix(1000, 0)
			version := map[int]int{}
			var delivered []string
			for _, op := range tt.ops {
				switch op.op {
				case "state":
					version[op.pid]++
					o.addState(versionOf(op.pid, version[op.pid]), now)
				case "delete":
					o.addDelete(versionOf(op.pid, version[op.pid]), now, reasonExited)
				case "wait":
					now = now.Add(op.d)
				case "deliver":
					states, deletes := o.batch()
					delivered = append(delivered, describe(states, deletes)...)
					o.done(len(states), len(deletes))
				}
			}
			o.expire(now)
			assert.Equal(t, tt.want, describe(o.batch()))
			assert.Equal(t, tt.delivered, delivered)
			assert.Equal(t, len(tt.want), o.len())
			var wantDropped [numDropReasons]int64
			for r, n := range tt.dropped {
				wantDropped[r] = n
			}
			assert.Equal(t, wantDropped, o.takeDropped())
			assert.Equal(t, [numDropReasons]int64{}, o.takeDropped(), "taken")
		})
	}
}

// TestOutboxBatchKeepsDeletesAfterStates: when the states do not fit in a
// batch, no delete goes with them (it could be the delete of a state left
// behind).
func TestOutboxBatchKeepsDeletesAfterStates(t *testing.T) {
	o := newOutbox(2*maxBatchEvents, time.Minute, 0)
	now := time.Unix(1000, 0)
	for pid := 1; pid <= maxBatchEvents+1; pid++ {
		o.addState(versionOf(pid, 1), now)
	}
	o.addDelete(versionOf(maxBatchEvents+1, 1), now, reasonExited)
	states, deletes := o.batch()
	assert.Len(t, states, maxBatchEvents)
	assert.Empty(t, deletes)
	o.done(len(states), 0)
	states, deletes = o.batch()
	assert.Equal(t, []string{fmt.Sprintf("state %d", maxBatchEvents+1), fmt.Sprintf("delete %d", maxBatchEvents+1)}, describe(states, deletes))
}

func TestOutboxDrop(t *testing.T) {
	o := newOutbox(10, time.Minute, 0)
	o.addState(versionOf(1, 1), time.Unix(1, 0))
	o.addDelete(versionOf(2, 1), time.Unix(1, 0), reasonExited)
	states, deletes := o.batch()
	o.drop(len(states), len(deletes), dropPermanent)
	assert.Zero(t, o.len())
	assert.Equal(t, int64(2), o.takeDropped()[dropPermanent])
}

// versionOf is version v of a publication of pid (its resource's
// service.version).
func versionOf(pid, v int) *tracker.Process {
	res := pcommon.NewMap()
	res.PutInt("service.version", int64(v))
	return &tracker.Process{
		Key:      tracker.Key{PID: pid, StartTicks: 100},
		Identity: procfs.Identity{PID: pid, StartTicks: 100},
		Context:  otep.Context{Resource: res},
	}
}

// describe names events as "state P" or "delete P", with "@V" for a
// version after the first.
func describe(states, deletes []*pendingEvent) []string {
	var out []string
	for _, e := range states {
		s := fmt.Sprintf("state %d", e.p.PID)
		if v, _ := e.p.Context.Resource.Get("service.version"); v.Int() > 1 {
			s += fmt.Sprintf("@%d", v.Int())
		}
		out = append(out, s)
	}
	for _, e := range deletes {
		out = append(out, fmt.Sprintf("delete %d", e.p.PID))
	}
	return out
}
