// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package readpool runs reads that may block as long as another process
// lets them (process_vm_readv on userfaultfd-registered pages waits until
// the fault is served) on reader goroutines, each read under a deadline:
// the owner abandons a read that overruns (AbandonOverdue), a new reader
// takes the stuck one's place, up to a bound, and the results come back
// on a channel. It is the process tracker's pool of readers; what a
// request reads is the tracker's (the run function New takes).
package readpool

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Request is what the pool needs of a request R (P is *R).
type Request[R any] interface {
	*R
	// Begin is called, under its job's lock, as the request starts;
	// memFileOnly: MaxStalled readers are blocked (New).
	Begin(memFileOnly bool)
	Taken() bool // taken out of its job before it began (Job.Take)
	Take()
	PID() int // the process it reads, sent on Released when an abandoned read returns
}

// Job is a batch of requests for one reader goroutine, so that a scan of
// a thousand processes does not cost a thousand hand-offs. The deadline
// applies to each request: a request that stalls holds the rest of its
// job until its deadline, then they are queued again.
type Job[R any, P Request[R]] struct {
	Reqs   []R
	Urgent bool   // read before any other work
	Scan   uint32 // the owner's: the generation of the scan the job belongs to; 0 for none

	mu        sync.Mutex
	state     State
	cur       int       // the request being read
	since     time.Time // when it started
	stalledAt int       // Stalled: the request that did not return
}

// State is where a job is.
type State uint8

// The states of a job.
const (
	Queued State = iota
	Running
	Done
	Stalled // Reqs[stalledAt] did not return in time; Reqs[:stalledAt] are done
	NotRun  // no reader was left to run it
)

// begin marks request i started, unless it was taken (skip) or the job
// abandoned (stop).
func (j *Job[R, P]) begin(i int, now time.Time, memFileOnly bool) (skip, stop bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.state != Queued && j.state != Running:
		return false, true
	case P(&j.Reqs[i]).Taken():
		return true, false
	}
	j.state, j.cur, j.since = Running, i, now
	P(&j.Reqs[i]).Begin(memFileOnly)
	return false, false
}

// Take takes request i out of the job when it has not begun (the job is
// queued, or reads an earlier request, which may hold it until its
// deadline): the caller runs it elsewhere. Only the pool's owner calls it.
func (j *Job[R, P]) Take(i int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if P(&j.Reqs[i]).Taken() || j.state != Queued && (j.state != Running || i <= j.cur) {
		return false
	}
	P(&j.Reqs[i]).Take()
	return true
}

// finish marks the job done; false when it was abandoned meanwhile.
func (j *Job[R, P]) finish() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state != Running && j.state != Queued {
		return false
	}
	j.state = Done
	return true
}

// abandonIfOverdue abandons the job when its current request started before
// deadline.
func (j *Job[R, P]) abandonIfOverdue(deadline time.Time) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state != Running || !j.since.Before(deadline) {
		return false
	}
	j.state, j.stalledAt = Stalled, j.cur
	return true
}

// Outcome returns the job's state and how many requests have a result
// (Stalled: the index of the one that did not return).
func (j *Job[R, P]) Outcome() (State, int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch j.state {
	case Done:
		return j.state, len(j.Reqs)
	case Stalled:
		return j.state, j.stalledAt
	}
	return j.state, 0
}

// worker is one reader goroutine.
type worker[R any, P Request[R]] struct {
	current  atomic.Pointer[Job[R, P]]
	replaced bool // a new worker took over when this one was abandoned: it exits when its read returns
}

// Pool is the readers and their jobs: worker goroutines run the jobs its
// owner (one goroutine: the tracker's loop) queues (Enqueue: urgent ones
// first); the owner abandons a request that does not return within the
// timeout (AbandonOverdue) and takes the results back (Results, Back).
// The owner alone touches free and out; the workers share the rest,
// under mu.
type Pool[R any, P Request[R]] struct {
	run        func(P)
	timeout    time.Duration
	maxStalled int
	now        func() time.Time

	free []*Job[R, P] // the owner's: done jobs kept for reuse
	out  int          // the owner's: jobs queued or read and not back yet

	results  chan *Job[R, P] // jobs the workers finished, for the owner
	released chan Release    // abandoned reads that returned
	stop     chan struct{}
	stopOnce sync.Once

	mu             sync.Mutex
	queued         sync.Cond    // a job was queued, or the pool closed
	urgent, normal []*Job[R, P] // the jobs waiting for a worker
	live           map[*worker[R, P]]struct{}
	stalled        int // abandoned workers still blocked
	running        int // worker goroutines, stuck ones too
	exited         chan struct{}
	memFileOnly    atomic.Bool // MaxStalled workers are blocked: all memory is read through the mem file
}

const (
	JobSize     = 128 // the most requests one job of a scan carries
	maxFreeJobs = 2   // done jobs kept for reuse: enough for a steady scan, not a discovery's worth
)

// New returns a pool whose readers call run for each request, each under
// timeout; once maxStalled readers are blocked, none is replaced and
// requests begin with memFileOnly.
func New[R any, P Request[R]](run func(P), timeout time.Duration, maxStalled int, now func() time.Time) *Pool[R, P] {
	p := &Pool[R, P]{
		run:        run,
		timeout:    timeout,
		maxStalled: maxStalled,
		now:        now,
		results:    make(chan *Job[R, P], 16),
		released:   make(chan Release, 16),
		stop:       make(chan struct{}),
		exited:     make(chan struct{}, 1),
		live:       map[*worker[R, P]]struct{}{},
	}
	p.queued.L = &p.mu
	return p
}

// NewJob returns an empty job, reusing one whose reads are done.
func (p *Pool[R, P]) NewJob() *Job[R, P] {
	if n := len(p.free); n > 0 {
		j := p.free[n-1]
		p.free = p.free[:n-1]
		return j
	}
	return &Job[R, P]{Reqs: make([]R, 0, JobSize)}
}

// Enqueue queues j for the workers: urgent ones before any other work.
func (p *Pool[R, P]) Enqueue(j *Job[R, P]) {
	p.out++
	p.mu.Lock()
	if j.Urgent {
		p.urgent = append(p.urgent, j)
	} else {
		p.normal = append(p.normal, j)
	}
	p.mu.Unlock()
	p.queued.Signal()
}

// Back notes that j came back from the workers, and keeps it for reuse
// when its reads are all done (a stalled job is not: its reader may still
// write into it).
func (p *Pool[R, P]) Back(j *Job[R, P]) {
	p.out--
	if j.state != Done || cap(j.Reqs) != JobSize || len(p.free) >= maxFreeJobs {
		return
	}
	clear(j.Reqs)
	*j = Job[R, P]{Reqs: j.Reqs[:0]}
	p.free = append(p.free, j)
}

// Busy reports whether a job is queued or read and not back.
func (p *Pool[R, P]) Busy() bool { return p.out > 0 }

// Results returns the jobs the workers finished. The owner hands each,
// and each job AbandonOverdue returns, to Back once it has read them.
func (p *Pool[R, P]) Results() <-chan *Job[R, P] { return p.results }

// Release says that the abandoned read of PID returned, at Returned (the
// pool's clock, read before Stuck stops counting it), Took after it began.
type Release struct {
	PID      int
	Returned time.Time
	Took     time.Duration
}

// Released returns the abandoned reads that returned.
func (p *Pool[R, P]) Released() <-chan Release { return p.released }

// Waiting returns the jobs queued and not yet taken by a reader, in the
// order readers take them: the urgent ones first.
func (p *Pool[R, P]) Waiting() (urgent, normal []*Job[R, P]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.urgent), slices.Clone(p.normal)
}

// Start starts workers readers.
func (p *Pool[R, P]) Start(workers int) {
	p.mu.Lock()
	for range workers {
		p.spawnLocked()
	}
	p.mu.Unlock()
}

func (p *Pool[R, P]) spawnLocked() {
	w := &worker[R, P]{}
	p.live[w] = struct{}{}
	p.running++
	go p.work(w)
}

// Close stops the workers after their current request; a worker blocked
// in a read exits when the read returns.
func (p *Pool[R, P]) Close() {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		close(p.stop)
		p.mu.Unlock()
		p.queued.Broadcast()
	})
}

// Quiesce waits, once the pool is closed, until the only workers left are
// in a read (each exits when its read returns), or ctx ends. It starts no
// goroutine: what it leaves are the reads Stuck counts, or reads about to
// return.
func (p *Pool[R, P]) Quiesce(ctx context.Context) {
	for {
		p.mu.Lock()
		idle := p.running - p.stalled
		for w := range p.live {
			if w.current.Load() != nil {
				idle--
			}
		}
		p.mu.Unlock()
		if idle <= 0 {
			return
		}
		select {
		case <-p.exited:
		case <-ctx.Done():
			return
		}
	}
}

// exit notes that a worker goroutine ends.
func (p *Pool[R, P]) exit() {
	p.mu.Lock()
	p.running--
	p.mu.Unlock()
	select {
	case p.exited <- struct{}{}:
	default:
	}
}

// Stuck returns how many reads were abandoned at their deadline and have
// not returned yet (each holds a goroutine).
func (p *Pool[R, P]) Stuck() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled
}

// next returns the next job, urgent ones first; nil once the pool stops.
func (p *Pool[R, P]) next() *Job[R, P] {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		select {
		case <-p.stop:
			return nil
		default:
		}
		for _, q := range []*[]*Job[R, P]{&p.urgent, &p.normal} {
			if len(*q) > 0 {
				j := (*q)[0]
				(*q)[0], *q = nil, (*q)[1:]
				return j
			}
		}
		p.queued.Wait()
	}
}

func (p *Pool[R, P]) work(w *worker[R, P]) {
	defer p.exit()
	for {
		j := p.next()
		if j == nil {
			return
		}
		w.current.Store(j)
		p.runJob(j)
		w.current.Store(nil)
		if j.finish() {
			send(p.results, j, p.stop)
			continue
		}
		// Abandoned: the owner took the job back when the read overran.
		// Its result is discarded; say that the process is free again.
		r := Release{PID: P(&j.Reqs[j.stalledAt]).PID(), Returned: p.now()}
		j.mu.Lock()
		r.Took = r.Returned.Sub(j.since)
		j.mu.Unlock()
		p.mu.Lock()
		p.stalled--
		if p.stalled < p.maxStalled {
			p.memFileOnly.Store(false)
		}
		resume := !w.replaced
		if resume {
			p.live[w] = struct{}{}
		}
		p.mu.Unlock()
		send(p.released, r, p.stop)
		if !resume {
			return
		}
	}
}

func (p *Pool[R, P]) runJob(j *Job[R, P]) {
	for i := range j.Reqs {
		if skip, stop := j.begin(i, p.now(), p.memFileOnly.Load()); stop {
			return
		} else if skip {
			continue
		}
		select {
		case <-p.stop:
			return
		default:
		}
		p.run(&j.Reqs[i])
	}
}

// send sends v on c, unless stop is closed first.
func send[T any](c chan<- T, v T, stop <-chan struct{}) {
	select {
	case c <- v:
	case <-stop:
	}
}

// AbandonOverdue abandons the requests that overran their deadline,
// replacing their workers, and returns their jobs; when no worker is
// left, it also returns the queued jobs, not run. The owner calls it
// every SuperviseTick while jobs are out.
func (p *Pool[R, P]) AbandonOverdue() []*Job[R, P] {
	deadline := p.now().Add(-p.timeout)
	p.mu.Lock()
	defer p.mu.Unlock()
	var expired []*Job[R, P]
	for w := range p.live {
		j := w.current.Load()
		if j == nil || !j.abandonIfOverdue(deadline) {
			continue
		}
		expired = append(expired, j)
		delete(p.live, w)
		p.stalled++
		if p.stalled < p.maxStalled {
			w.replaced = true
			p.spawnLocked()
		} else {
			p.memFileOnly.Store(true)
		}
	}
	if len(p.live) == 0 {
		// No worker is left to run the queued jobs.
		for _, j := range append(p.urgent, p.normal...) {
			j.mu.Lock()
			j.state = NotRun
			j.mu.Unlock()
			expired = append(expired, j)
		}
		p.urgent, p.normal = nil, nil
	}
	return expired
}

// SuperviseTick is how often the owner looks for overdue reads.
func (p *Pool[R, P]) SuperviseTick() time.Duration { return max(p.timeout/4, time.Millisecond) }
