// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package readpool

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// req is a request of the tests: it blocks until release is closed when
// block is set, and records what Begin said.
type req struct {
	pid         int
	block       chan struct{}
	ran         bool
	memFileOnly bool
	taken       bool
}

func (r *req) Begin(memFileOnly bool) { r.memFileOnly = memFileOnly }
func (r *req) Taken() bool            { return r.taken }
func (r *req) Take()                  { r.taken = true }
func (r *req) PID() int               { return r.pid }

// clock is a time the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func run(r *req) {
	if r.block != nil {
		<-r.block
	}
	r.ran = true
}

// A job's requests run in order and the job comes back Done, reused once
// back.
func TestJobRuns(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	p := New(run, time.Second, 2, c.now)
	p.Start(1)
	defer p.Close()
	j := p.NewJob()
	j.Reqs = append(j.Reqs, req{pid: 1}, req{pid: 2})
	p.Enqueue(j)
	assert.True(t, p.Busy())
	got := <-p.Results()
	state, n := got.Outcome()
	assert.Equal(t, Done, state)
	assert.Equal(t, 2, n)
	assert.True(t, got.Reqs[0].ran && got.Reqs[1].ran)
	p.Back(got)
	assert.False(t, p.Busy())
	assert.Same(t, got, p.NewJob(), "a done job is reused")
}

// A read that overruns its deadline is abandoned: its job comes back
// Stalled at it, a new reader takes the stuck one's place, and the pid is
// released when the read returns. Once maxStalled readers are stuck,
// requests begin with memFileOnly.
func TestOverdueReadIsAbandoned(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	p := New(run, time.Second, 1, c.now)
	p.Start(2)
	defer p.Close()
	release := make(chan struct{})
	j := &Job[req, *req]{Reqs: []req{{pid: 7, block: release}, {pid: 8}}}
	p.Enqueue(j)
	var stalled []*Job[req, *req]
	require.Eventually(t, func() bool {
		c.advance(2 * time.Second)
		stalled = p.AbandonOverdue()
		return len(stalled) == 1
	}, 10*time.Second, time.Millisecond)
	state, n := stalled[0].Outcome()
	assert.Equal(t, Stalled, state)
	assert.Equal(t, 0, n, "the request that did not return")
	assert.Equal(t, 1, p.Stuck())

	// One reader is stuck, the most allowed: the next request reads
	// through the mem file.
	next := &Job[req, *req]{Urgent: true, Reqs: []req{{pid: 9}}}
	p.Enqueue(next)
	assert.True(t, (<-p.Results()).Reqs[0].memFileOnly)

	close(release)
	assert.Equal(t, 7, (<-p.Released()).PID)
	require.Eventually(t, func() bool { return p.Stuck() == 0 }, 10*time.Second, time.Millisecond)
	p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.Quiesce(ctx)
	assert.NoError(t, ctx.Err())
}

// A request taken out of a queued job is neither run nor begun there.
func TestTakenRequestIsSkipped(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	p := New(run, time.Second, 2, c.now)
	j := &Job[req, *req]{Reqs: []req{{pid: 1}, {pid: 2}}}
	require.True(t, j.Take(1))
	assert.False(t, j.Take(1), "taken once")
	p.Enqueue(j)
	p.Start(1)
	defer p.Close()
	got := <-p.Results()
	assert.True(t, got.Reqs[0].ran)
	assert.False(t, got.Reqs[1].ran)
}

// Urgent jobs are read before the others, each kind in the order queued.
func TestUrgentJobsFirst(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	p := New(run, time.Second, 2, c.now)
	a := &Job[req, *req]{Reqs: []req{{pid: 1}}}
	b := &Job[req, *req]{Reqs: []req{{pid: 2}}, Urgent: true}
	d := &Job[req, *req]{Reqs: []req{{pid: 3}}}
	for _, j := range []*Job[req, *req]{a, b, d} {
		p.Enqueue(j)
	}
	urgent, normal := p.Waiting()
	assert.Equal(t, []*Job[req, *req]{b}, urgent)
	assert.Equal(t, []*Job[req, *req]{a, d}, normal)
	p.Start(1)
	defer p.Close()
	var order []int
	for range 3 {
		order = append(order, (<-p.Results()).Reqs[0].pid)
	}
	assert.Equal(t, []int{2, 1, 3}, order)
	urgent, normal = p.Waiting()
	assert.Empty(t, urgent)
	assert.Empty(t, normal)
}
