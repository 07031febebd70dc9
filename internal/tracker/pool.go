// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/processctx/otelcol-processctx/internal/reader"
)

// job is a batch of requests for one reader goroutine, so that a scan of
// a thousand processes does not cost a thousand hand-offs. The deadline
// applies to each request: a request that stalls holds the rest of its
// job until its deadline, then they are queued again.
type job struct {
	reqs   []request
	urgent bool   // read before any scan work
	scan   uint32 // the generation of the scan the job belongs to; 0 for none

	mu        sync.Mutex
	state     jobState
	cur       int       // the request being read
	since     time.Time // when it started
	stalledAt int       // jobStalled: the request that did not return
}

type jobState uint8

const (
	jobQueued jobState = iota
	jobRunning
	jobDone
	jobStalled // reqs[stalledAt] did not return in time; reqs[:stalledAt] are done
	jobNotRun  // no reader was left to run it
)

// begin marks request i started, unless it was taken (skip) or the job
// abandoned (stop). It is the one place that decides how memory is read:
// through the mem file, which fails at once where process_vm_readv waits,
// once a read of the process stalled, or for every process when
// memFileOnly.
func (j *job) begin(i int, now time.Time, memFileOnly bool) (skip, stop bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.state != jobQueued && j.state != jobRunning:
		return false, true
	case j.reqs[i].taken:
		return true, false
	}
	j.state, j.cur, j.since = jobRunning, i, now
	if memFileOnly || j.reqs[i].stalled {
		j.reqs[i].via = reader.ViaMemFile
	}
	return false, false
}

// take takes request i out of the job when it has not begun (the job is
// queued, or reads an earlier request, which may hold it until its
// deadline): the caller runs it elsewhere. Only the tracker's loop calls it.
func (j *job) take(i int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.reqs[i].taken || j.state != jobQueued && (j.state != jobRunning || i <= j.cur) {
		return false
	}
	j.reqs[i].taken = true
	return true
}

// finish marks the job done; false when it was abandoned meanwhile.
func (j *job) finish() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state != jobRunning && j.state != jobQueued {
		return false
	}
	j.state = jobDone
	return true
}

// abandonIfOverdue abandons the job when its current request started before
// deadline.
func (j *job) abandonIfOverdue(deadline time.Time) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state != jobRunning || !j.since.Before(deadline) {
		return false
	}
	j.state, j.stalledAt = jobStalled, j.cur
	return true
}

// outcome returns the job's state and how many requests have a result.
func (j *job) outcome() (jobState, int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch j.state {
	case jobDone:
		return j.state, len(j.reqs)
	case jobStalled:
		return j.state, j.stalledAt
	}
	return j.state, 0
}

// worker is one reader goroutine.
type worker struct {
	current  atomic.Pointer[job]
	replaced bool // a new worker took over when this one was abandoned: it exits when its read returns
}

// pool is the readers and their jobs: worker goroutines run the jobs the
// loop queues (enqueue: urgent ones first), the loop abandons a request
// that does not return within the timeout (abandonOverdue) and takes the
// results back (back). The loop alone touches free and out; the workers
// share the rest, under mu.
type pool struct {
	host       Host
	timeout    time.Duration
	maxStalled int
	now        func() time.Time

	free []*job // the loop's: done jobs kept for reuse
	out  int    // the loop's: jobs queued or read and not back yet

	results  chan *job // done, stalled and not-run jobs, for the loop
	released chan int  // pids whose abandoned read returned
	stop     chan struct{}
	stopOnce sync.Once

	mu             sync.Mutex
	queued         sync.Cond // a job was queued, or the pool closed
	urgent, normal []*job    // the jobs waiting for a worker
	live           map[*worker]struct{}
	stalled        int // abandoned workers still blocked
	running        int // worker goroutines, stuck ones too
	exited         chan struct{}
	memFileOnly    atomic.Bool // MaxStalled workers are blocked: all memory is read through the mem file
}

const (
	jobSize     = 128 // the most requests one job of a scan carries
	maxFreeJobs = 2   // done jobs kept for reuse: enough for a steady scan, not a discovery's worth
)

func newPool(host Host, cfg Config, now func() time.Time) *pool {
	p := &pool{
		host:       host,
		timeout:    cfg.ReadTimeout,
		maxStalled: cfg.MaxStalled,
		now:        now,
		results:    make(chan *job, 16),
		released:   make(chan int, 16),
		stop:       make(chan struct{}),
		exited:     make(chan struct{}, 1),
		live:       map[*worker]struct{}{},
	}
	p.queued.L = &p.mu
	return p
}

// newJob returns an empty job, reusing one whose reads are done.
func (p *pool) newJob() *job {
	if n := len(p.free); n > 0 {
		j := p.free[n-1]
		p.free = p.free[:n-1]
		return j
	}
	return &job{reqs: make([]request, 0, jobSize)}
}

// enqueue queues j for the workers: urgent ones before any scan work.
func (p *pool) enqueue(j *job) {
	p.out++
	p.mu.Lock()
	if j.urgent {
		p.urgent = append(p.urgent, j)
	} else {
		p.normal = append(p.normal, j)
	}
	p.mu.Unlock()
	p.queued.Signal()
}

// back notes that j came back from the workers, and keeps it for reuse
// when its reads are all done (a stalled job is not: its reader may still
// write into it).
func (p *pool) back(j *job) {
	p.out--
	if j.state != jobDone || cap(j.reqs) != jobSize || len(p.free) >= maxFreeJobs {
		return
	}
	clear(j.reqs)
	*j = job{reqs: j.reqs[:0]}
	p.free = append(p.free, j)
}

// busy reports whether a job is queued or read and not back.
func (p *pool) busy() bool { return p.out > 0 }

func (p *pool) start(workers int) {
	p.mu.Lock()
	for range workers {
		p.spawnLocked()
	}
	p.mu.Unlock()
}

func (p *pool) spawnLocked() {
	w := &worker{}
	p.live[w] = struct{}{}
	p.running++
	go p.work(w)
}

// close stops the workers after their current request; a worker blocked
// in a read exits when the read returns.
func (p *pool) close() {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		close(p.stop)
		p.mu.Unlock()
		p.queued.Broadcast()
	})
}

// quiesce waits, once the pool is closed, until the only workers left are
// in a read (each exits when its read returns), or ctx ends. It starts no
// goroutine: what it leaves are the reads StuckReads counts, or reads
// about to return.
func (p *pool) quiesce(ctx context.Context) {
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
func (p *pool) exit() {
	p.mu.Lock()
	p.running--
	p.mu.Unlock()
	select {
	case p.exited <- struct{}{}:
	default:
	}
}

// stuck returns how many reads were abandoned at their deadline and have
// not returned yet (each holds a goroutine).
func (p *pool) stuck() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled
}

// next returns the next job, urgent ones first; nil once the pool stops.
func (p *pool) next() *job {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		select {
		case <-p.stop:
			return nil
		default:
		}
		for _, q := range []*[]*job{&p.urgent, &p.normal} {
			if len(*q) > 0 {
				j := (*q)[0]
				(*q)[0], *q = nil, (*q)[1:]
				return j
			}
		}
		p.queued.Wait()
	}
}

func (p *pool) work(w *worker) {
	defer p.exit()
	for {
		j := p.next()
		if j == nil {
			return
		}
		w.current.Store(j)
		p.run(j)
		w.current.Store(nil)
		if j.finish() {
			send(p.results, j, p.stop)
			continue
		}
		// Abandoned: the loop took the job back when the read overran. Its
		// result is discarded; say that the process is free again.
		pid := j.reqs[j.stalledAt].pid
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
		send(p.released, pid, p.stop)
		if !resume {
			return
		}
	}
}

func (p *pool) run(j *job) {
	for i := range j.reqs {
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
		read(p.host, &j.reqs[i])
	}
}

// send sends v on c, unless stop is closed first.
func send[T any](c chan<- T, v T, stop <-chan struct{}) {
	select {
	case c <- v:
	case <-stop:
	}
}

// abandonOverdue abandons the requests that overran their deadline,
// replacing their workers, and returns their jobs; when no worker is
// left, it also returns the queued jobs, not run. The loop calls it every
// superviseTick while jobs are out.
func (p *pool) abandonOverdue() []*job {
	deadline := p.now().Add(-p.timeout)
	p.mu.Lock()
	defer p.mu.Unlock()
	var expired []*job
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
			j.state = jobNotRun
			j.mu.Unlock()
			expired = append(expired, j)
		}
		p.urgent, p.normal = nil, nil
	}
	return expired
}

// superviseTick is how often the loop looks for overdue reads.
func (p *pool) superviseTick() time.Duration { return max(p.timeout/4, time.Millisecond) }
