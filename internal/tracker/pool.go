package tracker

import (
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

// begin marks request i started; false when the job was abandoned. It is
// the one place that decides how memory is read: through the mem file,
// which fails at once where process_vm_readv waits, once a read of the
// process stalled, or for every process when memFileOnly.
func (j *job) begin(i int, now time.Time, memFileOnly bool) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state != jobQueued && j.state != jobRunning {
		return false
	}
	j.state, j.cur, j.since = jobRunning, i, now
	if memFileOnly || j.reqs[i].stalled {
		j.reqs[i].via = reader.ViaMemFile
	}
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
	current atomic.Pointer[job]
	// replaced: a new worker took over when this one was abandoned; it
	// exits when its stuck read returns, else it resumes.
	replaced bool
}

// pool runs jobs on worker goroutines; the tracker's loop abandons a
// request that does not return within the timeout (abandonOverdue). Results go to
// the loop.
type pool struct {
	host       Host
	timeout    time.Duration
	maxStalled int
	now        func() time.Time

	urgent, normal chan *job
	results        chan *job // done, stalled and not-run jobs, for the loop
	released       chan int  // pids whose abandoned read returned
	stop           chan struct{}
	stopOnce       sync.Once

	mu      sync.Mutex
	live    map[*worker]struct{}
	stalled int // abandoned workers still blocked
	// memFileOnly: MaxStalled workers are blocked: read all memory
	// through the mem file, which fails at once where process_vm_readv
	// waits.
	memFileOnly atomic.Bool
	wg          sync.WaitGroup // every worker goroutine, stuck ones too
}

func newPool(host Host, cfg Config, now func() time.Time) *pool {
	return &pool{
		host:       host,
		timeout:    cfg.ReadTimeout,
		maxStalled: cfg.MaxStalled,
		now:        now,
		urgent:     make(chan *job, 16),
		normal:     make(chan *job, 4*cfg.Readers),
		results:    make(chan *job, 16),
		released:   make(chan int, 16),
		stop:       make(chan struct{}),
		live:       map[*worker]struct{}{},
	}
}

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
	p.wg.Add(1)
	go p.work(w)
}

// close stops the workers after their current request; a worker blocked
// in a read exits when the read returns.
func (p *pool) close() { p.stopOnce.Do(func() { close(p.stop) }) }

// stuck returns how many reads were abandoned at their deadline and have
// not returned yet (each holds a goroutine).
func (p *pool) stuck() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled
}

// next returns the next job, urgent ones first; nil once the pool stops.
func (p *pool) next() *job {
	select {
	case j := <-p.urgent:
		return j
	default:
	}
	select {
	case j := <-p.urgent:
		return j
	case j := <-p.normal:
		return j
	case <-p.stop:
		return nil
	}
}

func (p *pool) work(w *worker) {
	defer p.wg.Done()
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
		if !j.begin(i, p.now(), p.memFileOnly.Load()) {
			return
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

// abandonOverdue abandons the requests that overran their deadline, replacing
// their workers, and returns their jobs; when no worker is left, it also
// returns the queued jobs, not run. The tracker's loop calls it every
// superviseTick while jobs are out.
func (p *pool) abandonOverdue() []*job {
	deadline := p.now().Add(-p.timeout)
	p.mu.Lock()
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
	none := len(p.live) == 0
	p.mu.Unlock()
	if none {
		expired = append(expired, p.drain()...)
	}
	return expired
}

// superviseTick is how often the loop looks for overdue reads.
func (p *pool) superviseTick() time.Duration { return max(p.timeout/4, time.Millisecond) }

// drain takes back the queued jobs when no worker is left to run them.
func (p *pool) drain() []*job {
	var out []*job
	for {
		var j *job
		select {
		case j = <-p.urgent:
		case j = <-p.normal:
		default:
			return out
		}
		j.mu.Lock()
		j.state = jobNotRun
		j.mu.Unlock()
		out = append(out, j)
	}
}
