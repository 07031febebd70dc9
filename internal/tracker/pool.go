package tracker

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/reader"
)

// op is what a request reads of one process.
type op uint8

const (
	// opDiscover: a pid seen for the first time, or whose procfs directory
	// changed: its start time, then as opLocate.
	opDiscover op = iota
	// opLocate: a process without a known context: its maps, and its
	// context and identity when it has one.
	opLocate
	// opRefresh: a publisher: the header's timestamp, and the context and
	// identity when it changed; the maps again when the header is gone.
	opRefresh
	// opDescribe: the executable (and why it cannot be read) of a process
	// a warning names.
	opDescribe
)

// request is the reads of one process, run on a reader goroutine.
type request struct {
	pid   int
	op    op
	start uint64 // the known start time; 0 for opDiscover
	addr  uint64 // opRefresh: the header's address
	last  uint64 // opRefresh: the timestamp of the context held
	via   reader.Via
	why   bool // opDescribe: explain a permission denial too
	// serial is the incarnation of the pid the request is for (proc.serial).
	serial uint32
	event  bool // caused by an event (retried when it finds nothing yet)
	young  bool // a young process's scheduled read

	res result
}

// result is what a request found.
type result struct {
	err       error
	start     uint64
	addr      uint64
	ctx       otep.Context
	changed   bool             // opRefresh: a new context was read
	relocated bool             // opRefresh: the header was gone and the maps were read again
	kernel    bool             // opDiscover: a kernel thread
	identity  *procfs.Identity // with a new context
	exe, why  string           // opDescribe
}

// outcome classifies the result.
func (r *request) outcome() Outcome {
	if r.res.err == nil && r.op == opRefresh && !r.res.changed {
		return OutcomeUnchanged
	}
	return OutcomeOf(r.res.err)
}

// job is a batch of requests for one reader goroutine, so that a scan of
// a thousand processes does not cost a thousand hand-offs. The deadline
// applies to each request.
type job struct {
	reqs   []request
	urgent bool   // a probe: read before any scan work
	scan   uint32 // the scan generation the job belongs to; 0 for none

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
	jobStalled  // reqs[stalledAt] did not return in time; reqs[:stalledAt] are done
	jobNotRun   // no reader was left to run it
	jobCanceled // the tracker stopped
)

// begin marks request i started; false when the job was abandoned.
func (j *job) begin(i int, now time.Time) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state != jobQueued && j.state != jobRunning {
		return false
	}
	j.state, j.cur, j.since = jobRunning, i, now
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

// expire abandons the job when its current request started before
// deadline.
func (j *job) expire(deadline time.Time) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state != jobRunning || !j.since.Before(deadline) {
		return false
	}
	j.state, j.stalledAt = jobStalled, j.cur
	return true
}

// completed returns how many requests have a result to apply.
func (j *job) completed() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch j.state {
	case jobDone:
		return len(j.reqs)
	case jobStalled:
		return j.stalledAt
	}
	return 0
}

// readerG is one reader goroutine.
type readerG struct {
	current atomic.Pointer[job]
	// replaced: a new reader took over when this one was abandoned; it
	// exits when its stuck read returns, else it resumes.
	replaced bool
}

// pool runs jobs on reader goroutines; the tracker's loop abandons a
// request that does not return within the timeout (expire). Results go to
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

	mu      sync.Mutex
	live    map[*readerG]struct{}
	stalled int // abandoned readers still blocked
	// memFileOnly: MaxStalled readers are blocked: read all memory
	// through the mem file, which fails at once where process_vm_readv
	// waits.
	memFileOnly atomic.Bool
	wg          sync.WaitGroup // every reader goroutine, stuck ones too
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
		live:       map[*readerG]struct{}{},
	}
}

func (p *pool) start(readers int) {
	p.mu.Lock()
	for range readers {
		p.spawnLocked()
	}
	p.mu.Unlock()
}

func (p *pool) spawnLocked() {
	g := &readerG{}
	p.live[g] = struct{}{}
	p.wg.Add(1)
	go p.read(g)
}

// close stops the readers after their current request; a reader blocked
// in a read exits when the read returns.
func (p *pool) close() {
	close(p.stop)
}

// wait waits for every reader goroutine to exit, until done is closed.
func (p *pool) wait(done <-chan struct{}) bool {
	exited := make(chan struct{})
	go func() { p.wg.Wait(); close(exited) }()
	select {
	case <-exited:
		return true
	case <-done:
		return false
	}
}

// next returns the next job, probes first; nil once the pool stops.
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

func (p *pool) read(g *readerG) {
	defer p.wg.Done()
	for {
		j := p.next()
		if j == nil {
			return
		}
		g.current.Store(j)
		p.run(j)
		g.current.Store(nil)
		if j.finish() {
			p.deliver(j)
			continue
		}
		// Abandoned: the supervisor delivered the job when the read
		// overran. Its result is discarded; say that the process is free
		// again.
		pid := j.reqs[j.stalledAt].pid
		p.mu.Lock()
		p.stalled--
		if p.stalled < p.maxStalled {
			p.memFileOnly.Store(false)
		}
		resume := !g.replaced
		if resume {
			p.live[g] = struct{}{}
		}
		p.mu.Unlock()
		select {
		case p.released <- pid:
		case <-p.stop:
		}
		if !resume {
			return
		}
	}
}

func (p *pool) run(j *job) {
	for i := range j.reqs {
		if !j.begin(i, p.now()) {
			return
		}
		select {
		case <-p.stop:
			return
		default:
		}
		p.exec(&j.reqs[i])
	}
}

func (p *pool) deliver(j *job) {
	select {
	case p.results <- j:
	case <-p.stop:
	}
}

// expire abandons the requests that overran their deadline, replacing
// their readers, and returns their jobs; when no reader is left, it also
// returns the queued jobs, not run. The tracker's loop calls it every
// superviseTick while jobs are out.
func (p *pool) expire() []*job {
	deadline := p.now().Add(-p.timeout)
	p.mu.Lock()
	var expired []*job
	for g := range p.live {
		j := g.current.Load()
		if j == nil || !j.expire(deadline) {
			continue
		}
		expired = append(expired, j)
		delete(p.live, g)
		p.stalled++
		if p.stalled < p.maxStalled {
			g.replaced = true
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

// drain takes back the queued jobs when no reader is left to run them.
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

// exec runs one request's reads.
func (p *pool) exec(r *request) {
	via := r.via
	if p.memFileOnly.Load() {
		via = reader.ViaMemFile
	}
	h := p.host
	switch r.op {
	case opDescribe:
		r.res.exe = h.Executable(r.pid)
		if r.why {
			r.res.why = h.ExplainDenied(r.pid)
		}
		return
	case opDiscover:
		st, err := h.Stat(r.pid)
		if err != nil {
			r.res.err = fmt.Errorf("start time: %w", err)
			return
		}
		r.res.start = st.StartTicks
		if st.KernelThread {
			// No user memory: nothing to find.
			r.res.kernel = true
			r.res.err = fmt.Errorf("pid %d: kernel thread: %w", r.pid, otep.ErrNoContext)
			return
		}
	case opLocate:
		r.res.start = r.start
	case opRefresh:
		r.res.start = r.start
		ctx, changed, err := h.ReadContext(r.pid, r.addr, r.last, via)
		switch {
		case err == nil && !changed:
			return
		case err == nil:
			r.res.addr, r.res.ctx, r.res.changed = r.addr, ctx, true
			p.identify(r)
			return
		case !errors.Is(err, otep.ErrNoContext) && !errors.Is(err, otep.ErrInvalid) &&
			!errors.Is(err, otep.ErrTooLarge) && !errors.Is(err, otep.ErrTorn):
			r.res.err = err
			return
		}
		// Unpublished, replaced (e.g. after exec), now unreadable, or
		// "being updated" on every try, as the zeros of another mapping
		// at the old address read: the maps say which.
		r.res.relocated = true
	}
	m, err := h.FindMapping(r.pid)
	if err != nil {
		r.res.err = err
		if r.res.relocated && errors.Is(err, otep.ErrNoContext) {
			r.res.err = p.exitingOr(r, err)
		}
		return
	}
	r.res.addr = m.Start
	ctx, _, err := h.ReadContext(r.pid, m.Start, 0, via)
	if err != nil {
		r.res.err = err
		return
	}
	r.res.ctx, r.res.changed = ctx, true
	p.identify(r)
}

// errPidReused: a read found the pid naming another process than the one
// the request is about. The process asked about is gone, hence the
// wrapped ErrProcessGone; the pid names a process to read.
var errPidReused = fmt.Errorf("reused while it was read: %w", procfs.ErrProcessGone)

// exitingOr tells a publisher whose context mapping vanished because it is
// exiting (its address space is gone before the kernel reports the exit:
// a zombie's maps are empty) from one that unpublished: the first ended
// with its process, an exit, not an unpublish. Otherwise it returns err.
func (p *pool) exitingOr(r *request, err error) error {
	st, serr := p.host.Stat(r.pid)
	switch {
	case serr != nil && errors.Is(serr, procfs.ErrProcessGone):
		return fmt.Errorf("context of pid %d gone with its process: %w", r.pid, serr)
	case serr == nil && st.StartTicks != r.start:
		return fmt.Errorf("pid %d: %w", r.pid, errPidReused)
	}
	return err
}

// identify reads the identity that goes with a new context, and checks that
// the pid still names the process whose start time the request knows.
func (p *pool) identify(r *request) {
	id, err := p.host.Identity(r.pid)
	switch {
	case err != nil:
		r.res.err = fmt.Errorf("identity: %w", err)
	case id.StartTicks != r.res.start:
		r.res.err = fmt.Errorf("pid %d: %w", r.pid, errPidReused)
	default:
		r.res.identity = &id
	}
}
