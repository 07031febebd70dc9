// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// bookOp is one step of a book test: "state P" (a new version of P's
// publication), "exit P", "wait D" (the clock advances), "deliver" (the
// next batch is accepted), "restate".
type bookOp struct {
	op  string
	pid int
	d   time.Duration
}

func TestBook(t *testing.T) {
	state := func(pid int) bookOp { return bookOp{op: "state", pid: pid} }
	exit := func(pid int) bookOp { return bookOp{op: "exit", pid: pid} }
	wait := func(d time.Duration) bookOp { return bookOp{op: "wait", d: d} }
	deliver := bookOp{op: "deliver"}
	restate := bookOp{op: "restate"}

	tests := []struct {
		name      string
		limit     int
		maxAge    time.Duration
		ops       []bookOp
		want      []string // the next batch, in order
		delivered []string // what the deliver steps handed over
		dropped   map[dropReason]int64
	}{
		{
			name: "states then deletes, in order",
			ops:  []bookOp{state(1), state(2), exit(1), state(3), exit(2)},
			want: []string{"state 1", "state 2", "state 3", "delete 1", "delete 2"},
		},
		{
			name: "a newer state replaces one not delivered",
			ops:  []bookOp{state(1), state(2), state(1)},
			want: []string{"state 2", "state 1@2"},
		},
		{
			name: "published again before its delete went: the delete no longer holds",
			ops:  []bookOp{state(1), deliver, exit(1), state(1)},
			want: []string{"state 1@2"}, delivered: []string{"state 1"},
		},
		{
			name:    "full: the oldest states go first, deletes stay",
			limit:   3,
			ops:     []bookOp{state(1), exit(1), state(2), state(3), state(4), exit(4)},
			want:    []string{"state 4", "delete 1", "delete 4"},
			dropped: map[dropReason]int64{dropQueueFull: 3},
		},
		{
			name:      "full of deletes: the oldest delete goes",
			limit:     2,
			ops:       []bookOp{state(1), state(2), deliver, state(3), deliver, exit(1), exit(2), exit(3)},
			want:      []string{"delete 2", "delete 3"},
			delivered: []string{"state 1", "state 2", "state 3"},
			dropped:   map[dropReason]int64{dropQueueFull: 1},
		},
		{
			name:      "a delete waits for report_interval at most; states do not expire",
			ops:       []bookOp{state(1), deliver, exit(1), state(2), wait(30 * time.Second), state(3), deliver, exit(3), wait(31 * time.Second)},
			want:      []string{"delete 3"},
			delivered: []string{"state 1", "state 2", "state 3", "delete 1"},
		},
		{
			name:      "an expired delete is counted",
			ops:       []bookOp{state(1), deliver, exit(1), wait(time.Minute)},
			delivered: []string{"state 1"},
			dropped:   map[dropReason]int64{dropExpired: 1},
		},
		{
			name:    "max_elapsed_time gives up on any older event",
			maxAge:  10 * time.Second,
			ops:     []bookOp{state(1), state(2), exit(2), wait(5 * time.Second), state(3), wait(6 * time.Second)},
			want:    []string{"state 3"},
			dropped: map[dropReason]int64{dropExpired: 3},
		},
		{
			name:      "delivered events leave",
			ops:       []bookOp{state(1), state(2), exit(2), deliver, state(3)},
			want:      []string{"state 3"},
			delivered: []string{"state 1", "state 2", "delete 2"},
		},
		{
			name:      "live entities are stated again after report_interval, ended ones are not",
			ops:       []bookOp{state(1), state(2), deliver, exit(2), deliver, wait(30 * time.Second), restate, state(3), wait(30 * time.Second), restate},
			want:      []string{"state 3", "state 1"},
			delivered: []string{"state 1", "state 2", "delete 2"},
		},
		{
			name: "an entity whose state is owed is not stated twice",
			ops:  []bookOp{state(1), wait(time.Minute), restate},
			want: []string{"state 1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig()
			cfg.ReportInterval = time.Minute
			cfg.QueueSize = 100
			if tt.limit != 0 {
				cfg.QueueSize = tt.limit
			}
			cfg.RetryOnFailure.MaxElapsedTime = tt.maxAge
			b := newBook(cfg)
			now := time.Unix(1000, 0)
			b.now = func() time.Time { return now }
			version := map[int]int{}
			var delivered []string
			for _, op := range tt.ops {
				switch op.op {
				case "state":
					version[op.pid]++
					kind := tracker.Updated
					if version[op.pid] == 1 {
						kind = tracker.Published
					}
					b.record([]tracker.Change{{Kind: kind, Publication: versionOf(op.pid, version[op.pid])}}, nil)
				case "exit":
					b.record([]tracker.Change{{Kind: tracker.Exited, Publication: versionOf(op.pid, version[op.pid])}}, nil)
				case "wait":
					now = now.Add(op.d)
				case "restate":
					b.restate(now)
				case "deliver":
					batch := b.batch()
					delivered = append(delivered, describe(batch)...)
					b.settle(batch, accepted)
				}
			}
			b.expire(now)
			assert.Equal(t, tt.want, describe(b.batch()))
			assert.Equal(t, tt.delivered, delivered)
			assert.Equal(t, len(tt.want), b.owedEvents())
			var wantDropped [numDropReasons]int64
			for r, n := range tt.dropped {
				wantDropped[r] = n
			}
			assert.Equal(t, wantDropped, b.takeDropped())
			assert.Equal(t, [numDropReasons]int64{}, b.takeDropped(), "taken")
		})
	}
}

// When the states do not fit in a batch, no delete goes with them (it
// could be the delete of a state left behind).
func TestBookBatchKeepsDeletesAfterStates(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.QueueSize = 2 * maxBatchEvents
	b := newBook(cfg)
	for pid := 1; pid <= maxBatchEvents+1; pid++ {
		b.record([]tracker.Change{{Kind: tracker.Published, Publication: versionOf(pid, 1)}}, nil)
	}
	b.record([]tracker.Change{{Kind: tracker.Exited, Publication: versionOf(maxBatchEvents+1, 1)}}, nil)
	batch := b.batch()
	assert.Len(t, batch, maxBatchEvents)
	b.settle(batch, accepted)
	assert.Equal(t, []string{fmt.Sprintf("state %d", maxBatchEvents+1), fmt.Sprintf("delete %d", maxBatchEvents+1)}, describe(b.batch()))
}

// A state that changes while its batch is with the next consumer stays
// owed: the consumer accepted the older one.
func TestBookSettleKeepsWhatChangedMeanwhile(t *testing.T) {
	b := newBook(createDefaultConfig())
	b.record([]tracker.Change{{Kind: tracker.Published, Publication: versionOf(1, 1)}, {Kind: tracker.Published, Publication: versionOf(2, 1)}}, nil)
	batch := b.batch()
	b.record([]tracker.Change{{Kind: tracker.Updated, Publication: versionOf(1, 2)}}, nil)
	b.settle(batch, accepted)
	assert.Equal(t, []string{"state 1@2"}, describe(b.batch()))
}

func TestBookGivesUpForAReason(t *testing.T) {
	b := newBook(createDefaultConfig())
	b.record([]tracker.Change{{Kind: tracker.Published, Publication: versionOf(1, 1)}, {Kind: tracker.Published, Publication: versionOf(2, 1)},
		{Kind: tracker.Exited, Publication: versionOf(2, 1)}}, nil)
	b.settle(b.batch(), dropPermanent)
	assert.Zero(t, b.owedEvents())
	assert.Equal(t, int64(3), b.takeDropped()[dropPermanent])
}

func TestBookFilter(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Exclude = MatchConfig{MatchType: MatchTypeStrict, Names: []string{"proc-2"}}
	b := newBook(cfg)
	b.record([]tracker.Change{{Kind: tracker.Published, Publication: versionOf(1, 1)}, {Kind: tracker.Published, Publication: versionOf(2, 1)},
		{Kind: tracker.Exited, Publication: versionOf(2, 1)}}, nil)
	assert.Equal(t, []string{"state 1"}, describe(b.batch()), "nothing of an excluded process, its delete neither")
}

// A scan owes a state of each live entity stated report_interval ago, and
// wakes the receiver's loop only then: a scan that owes nothing costs it
// no wake-up.
func TestBookScans(t *testing.T) {
	cfg := createDefaultConfig()
	b := newBook(cfg)
	now := time.Unix(1000, 0)
	b.now = func() time.Time { return now }
	woken := func() bool {
		select {
		case <-b.wake:
			return true
		default:
			return false
		}
	}
	b.record(nil, &tracker.ScanStats{})
	assert.False(t, woken(), "nothing owed")
	b.record([]tracker.Change{{Kind: tracker.Published, Publication: versionOf(1, 1)}}, nil)
	assert.True(t, woken())
	b.settle(b.batch(), accepted)
	now = now.Add(cfg.ReportInterval / 2)
	b.record(nil, &tracker.ScanStats{})
	assert.False(t, woken(), "stated half a report interval ago")
	now = now.Add(cfg.ReportInterval / 2)
	b.record(nil, &tracker.ScanStats{})
	assert.True(t, woken(), "stated a report interval ago")
	assert.Equal(t, []string{"state 1"}, describe(b.batch()))
}

// versionOf is version v of a publication of pid (its resource's
// service.version), by the executable proc-<pid>.
func versionOf(pid, v int) *tracker.Publication {
	res := pcommon.NewMap()
	res.PutInt("service.version", int64(v))
	return &tracker.Publication{
		Key:      tracker.Key{PID: pid, StartTicks: 100},
		Identity: procfs.Identity{PID: pid, StartTicks: 100, ExecutableName: fmt.Sprintf("proc-%d", pid)},
		Context:  otep.Context{Resource: res},
	}
}

// describe names events as "state P" or "delete P", with "@V" for a
// version after the first.
func describe(events []*owed) []string {
	var out []string
	for _, e := range events {
		if e.reason != "" {
			out = append(out, fmt.Sprintf("delete %d", e.p.PID))
			continue
		}
		s := fmt.Sprintf("state %d", e.p.PID)
		if v, _ := e.p.Context.Resource.Get("service.version"); v.Int() > 1 {
			s += fmt.Sprintf("@%d", v.Int())
		}
		out = append(out, s)
	}
	return out
}

// A process identified by its environment that publishes a context, or
// unpublishes it while it lives, is the same entity with another
// description (process_context.source): the tracker's Updated change owes
// a state event, whichever state was delivered before.
func TestBookSourceChangeIsStated(t *testing.T) {
	withSource := func(s tracker.Source) *tracker.Publication {
		p := versionOf(1, 1)
		p.Source = s
		p.Context.Attributes = pcommon.NewMap() // as the tracker reads it: the writer reads it
		return p
	}
	tests := []struct {
		name     string
		from, to tracker.Source
	}{
		{"environment then context", tracker.SourceEnvironment, tracker.SourceContext},
		{"context then environment", tracker.SourceContext, tracker.SourceEnvironment},
	}
	for _, tt := range tests {
		for _, delivered := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/first_delivered=%v", tt.name, delivered), func(t *testing.T) {
				b := newBook(createDefaultConfig())
				b.record([]tracker.Change{{Kind: tracker.Published, Publication: withSource(tt.from)}}, nil)
				if delivered {
					b.settle(b.batch(), accepted)
				}
				b.record([]tracker.Change{{Kind: tracker.Updated, Publication: withSource(tt.to)}}, nil)
				batch := b.batch()
				require.Equal(t, []string{"state 1"}, describe(batch), "one state, the newer")
				assert.Equal(t, tt.to, batch[0].p.Source)

				w := testWriter(FormatSpec, time.Minute, CommandLineSanitized)
				w.state(batch[0].at, batch[0].p, nil)
				lr := w.take().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
				assert.Equal(t, tt.to.String(), descriptionOf(t, lr)[sourceKey])
			})
		}
	}
}

// A prompt change is noted until the receiver's loop takes the note, once.
func TestBookNotesPromptChanges(t *testing.T) {
	b := newBook(createDefaultConfig())
	b.record([]tracker.Change{{Kind: tracker.Published, Publication: versionOf(1, 1)}}, nil)
	assert.False(t, b.takePrompt(), "found by polling")
	b.record([]tracker.Change{{Kind: tracker.Exited, Publication: versionOf(1, 1), Prompt: true}}, nil)
	b.record([]tracker.Change{{Kind: tracker.Published, Publication: versionOf(2, 1)}}, nil)
	assert.True(t, b.takePrompt())
	assert.False(t, b.takePrompt(), "taken")
}
