package tracker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/reader"
)

const (
	// rescanFastChecks is how many re-reads happen at RescanInterval
	// before the wait starts doubling.
	rescanFastChecks = 4
	// jobSize is the most requests one job of a scan carries: a job is one
	// hand-off to a reader; a read that stalls holds the rest of its job
	// until its deadline, then they are queued again.
	jobSize = 128
	// maxFreeJobs is how many done jobs are kept for reuse: enough for a
	// steady scan, not a discovery's worth of memory.
	maxFreeJobs = 2
	// quarantineGrowth bounds the quarantine backoff, which doubles from
	// Config.QuarantineBackoff.
	quarantineGrowth = 20
	// maxReported is how many processes a warning names.
	maxReported = 5
)

// proc is what the tracker knows of one pid. Kept small: most processes on
// a host publish nothing.
type proc struct {
	start uint64 // start time in clock ticks: (pid, start) is the key
	// ino is the inode number of the /proc/<pid> directory: it changes
	// when the pid names another process, so while it stays, the start
	// time need not be read again.
	ino      uint64
	checked  int64  // clock of the last maps read without a context; 0: never
	gen      uint32 // scan generation that last listed the pid
	status   Outcome
	rechecks uint8 // maps reads without a context since the last change
	inflight bool  // a request for the pid is queued or running
	// stuck: a read of the pid was abandoned and has not returned; through
	// the mem file when stuckMemFile. A process stuck through
	// process_vm_readv is still read through the mem file (which fails at
	// once on userfaultfd pages); one stuck through the mem file is not
	// read again until that read returns.
	stuck, stuckMemFile bool
	memFile             bool // read memory through the mem file (it stalled once)
	// forked: known from a fork event, not read: it has no context
	// (MADV_DONTFORK) until it execs.
	forked bool
	// kernel: a kernel thread, never read again.
	kernel bool
	// again: an event came while a read was in progress: read again.
	again bool
	// awaited: a publication event of a process without a publication
	// asked for a read that has not been applied yet. Lookups say
	// OutcomeUnknown meanwhile, so that telemetry sent right after a
	// publish waits for its read (Probe) instead of passing through.
	awaited bool
	young   uint8  // young reads done (youngDelays)
	retries uint8  // reads after a publication event that found nothing yet
	serial  uint32 // the tracker's name for this incarnation of the pid
	// lastEvent is the clock of the last read an event caused.
	lastEvent int64
	// pubEventAt is the time (Event.Time) of its last publication event.
	pubEventAt uint64
	q          *quarantine
	pub        *Process // the live publication, nil when none
}

// newProc returns the record of a pid not known before.
func (t *Tracker) newProc() *proc {
	t.serials++
	return &proc{gen: t.gen, serial: t.serials}
}

// renew makes p a new incarnation of its process (it exec'd): reads in
// progress for the old one are ignored when they return.
func (p *proc) renew(t *Tracker) {
	t.serials++
	*p = proc{start: p.start, ino: p.ino, gen: p.gen, stuck: p.stuck, stuckMemFile: p.stuckMemFile,
		memFile: p.memFile, q: p.q, lastEvent: p.lastEvent, pubEventAt: p.pubEventAt, serial: t.serials}
}

type quarantine struct {
	until   int64 // clock before which the pid is not read
	strikes uint8
}

type retainedPub struct {
	p     *Process
	until int64
}

// Tracker tracks the processes of one host. See the package documentation.
type Tracker struct {
	cfg   Config
	host  Host
	log   *zap.Logger
	now   func() time.Time
	epoch time.Time
	pool  *pool

	// Owned by the loop.
	procs    map[int]*proc
	gen      uint32
	pubs     map[int]*Process // live and retained publications
	retained []retainedPub    // ended publications, oldest first
	views    []func(*Process) any
	scan     *scanState
	// rescanNext are Rescan calls waiting for a scan to start after the
	// one in progress.
	rescanNext   []chan struct{}
	pendingStats *ScanStats // the last scan's summary, not handed out yet
	backlog      []*job
	urgent       []*job
	freeJobs     []*job // done jobs for reuse
	// outstanding counts the jobs handed to the readers, not back yet.
	outstanding int
	waiters     map[int][]*probeWait
	wake        []chan struct{} // probes to wake at the next flush
	changes     []Change
	dirty       bool
	reports     reports
	scanned     bool
	overruns    int
	livePubs    int // live publications
	// reads counts the reads since the last scan finished, by outcome.
	reads [numOutcomes]int64

	outcomes outcomeTable
	snap     atomic.Pointer[Snapshot]
	snapGen  uint64

	subsMu sync.Mutex
	subs   []*Subscription
	health health // set by the loop, read by components

	// Events (events.go). Owned by the loop unless atomic.
	sources        []EventSource
	filter         PublicationFilter // the source that reports unmaps, if any
	live           Sources           // the classes of events sources deliver
	liveNow        atomic.Uint32     // live, for other goroutines
	events         chan Event
	lostWake       chan struct{}
	lostBits       atomic.Uint32 // Sources whose events were dropped
	eventsIn       atomic.Uint64
	eventsLost     atomic.Uint64
	stoppedSources chan sourceStopped
	sourcesWG      sync.WaitGroup
	dues           dueHeap
	droppedDues    int
	serials        uint32
	// fullScan: the next scan reads every publisher's timestamp even when
	// events would say what changed (events were dropped).
	fullScan bool
	// lastFull is the clock of the last scan that read every publisher.
	lastFull int64
	// pubLostAt is the clock when publication events were last dropped:
	// processes checked before then are due for a read.
	pubLostAt int64
	// lastListed is the clock of the last listing of the host; forceList
	// makes the next scan list it (ScanSoon).
	lastListed int64
	forceList  bool
	// lastMissed is the clock of the last scan started for dropped events.
	lastMissed int64

	ready  chan struct{} // closed when the first scan finished
	probes chan *probeWait
	hints  chan int
	soon   chan chan struct{}
	// lastSoon is the clock of the last scan started by ScanSoon.
	lastSoon int64
	control  chan func()
	stop     chan struct{}
	done     chan struct{}
	started  atomic.Bool
	stopped  sync.Once
}

// scanState is the scan in progress.
type scanState struct {
	light      bool // no listing (lightScan)
	gen        uint32
	began      time.Time
	pending    int // jobs not back yet
	candidates []int
	stats      ScanStats
	waiters    []chan struct{} // Rescan calls waiting for this scan
}

// probeWait is one Probe call waiting for its pids.
type probeWait struct {
	pids []int
	left int
	done chan struct{}
}

// Option changes how New makes a tracker.
type Option func(*Tracker)

// WithClock makes the tracker read time from now (tests move it).
func WithClock(now func() time.Time) Option {
	return func(t *Tracker) { t.now = now }
}

// New returns a tracker that reads host. Start starts it.
func New(host Host, cfg Config, logger *zap.Logger, opts ...Option) (*Tracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tracker: %w", err)
	}
	t := &Tracker{
		cfg:     cfg,
		host:    host,
		log:     logger,
		reports: reports{log: logger},
		now:     time.Now,
		procs:   map[int]*proc{},
		pubs:    map[int]*Process{},
		waiters: map[int][]*probeWait{},
		probes:  make(chan *probeWait, 64),
		hints:   make(chan int, 256),
		soon:    make(chan chan struct{}, 1),
		// lostWake wakes the loop when events were dropped.
		lostWake: make(chan struct{}, 1),
		control:  make(chan func()),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		ready:    make(chan struct{}),
	}
	for _, o := range opts {
		o(t)
	}
	t.stoppedSources = make(chan sourceStopped, len(t.sources))
	if len(t.sources) > 0 {
		t.events = make(chan Event, eventQueueSize) // nil without sources: never ready
	}
	t.publishSnapshot()
	return t, nil
}

// StuckReads returns how many reads were abandoned at their deadline and
// have not returned yet (each holds a reader goroutine).
func (t *Tracker) StuckReads() int {
	if !t.started.Load() {
		return 0
	}
	t.pool.mu.Lock()
	defer t.pool.mu.Unlock()
	return t.pool.stalled
}

// Config returns the tracker's configuration.
func (t *Tracker) Config() Config { return t.cfg }

// Start starts the readers and the loop; the first scan begins after
// Config.InitialDelay (at once by default).
func (t *Tracker) Start() {
	if !t.started.CompareAndSwap(false, true) {
		return
	}
	t.epoch = t.now()
	t.pool = newPool(t.host, t.cfg, t.now)
	t.pool.start(t.cfg.Readers)
	t.runSources()
	go t.run()
}

// Stop stops the tracker. It returns once the loop has stopped, or with
// ctx's error; readers blocked in a read are left behind and exit when the
// read returns.
func (t *Tracker) Stop(ctx context.Context) error {
	if !t.started.Load() {
		return nil
	}
	t.stopped.Do(func() { close(t.stop) })
	select {
	case <-t.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	closed := make(chan struct{})
	go func() { t.closeSources(); close(closed) }()
	select {
	case <-closed:
	case <-ctx.Done():
		return fmt.Errorf("stop event sources: %w", ctx.Err())
	}
	// Readers not blocked in a read exit right away.
	quick, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	t.pool.wait(quick.Done())
	return nil
}

// Ready is closed once the first scan of the host has finished.
func (t *Tracker) Ready() <-chan struct{} { return t.ready }

// Snapshot returns the current view of the publications. It takes no lock.
func (t *Tracker) Snapshot() *Snapshot { return t.snap.Load() }

// Probe asks for the pids that the snapshot does not know to be read now,
// before any scan work. The returned channel is closed once each of them has
// been read (or its read abandoned); nil means the tracker cannot take the
// request now. Callers that cannot wait long select on it with a timer:
// the reads go on, and a later snapshot has their results.
func (t *Tracker) Probe(pids []int) <-chan struct{} {
	if len(pids) == 0 || !t.started.Load() {
		return nil
	}
	w := &probeWait{pids: slices.Clone(pids), done: make(chan struct{})}
	select {
	case t.probes <- w:
		return w.done
	default:
		return nil
	}
}

// Hint says that telemetry names pid, which the snapshot says publishes
// nothing: the tracker reads its maps again if it did not in the last
// Config.HintInterval, so that a late publisher is found sooner than its
// rescan. It never blocks.
func (t *Tracker) Hint(pid int) {
	if !t.started.Load() {
		return
	}
	select {
	case t.hints <- pid:
	default:
	}
}

// ScanSoon asks for a scan now, for a process the snapshot should know but
// does not (a container's process known only by its namespace pid: only a
// listing finds it). Scans it starts are at most one per
// Config.HintInterval. The channel is closed when the scan in progress, or
// the one started, finishes; nil when none is (it never blocks).
func (t *Tracker) ScanSoon() <-chan struct{} {
	if !t.started.Load() {
		return nil
	}
	done := make(chan struct{})
	select {
	case t.soon <- done:
		return done
	default:
		return nil
	}
}

// scanSoon handles a ScanSoon call.
func (t *Tracker) scanSoon(done chan struct{}) {
	if t.scan == nil {
		if now := t.clock(); t.lastSoon == 0 || now-t.lastSoon >= int64(t.cfg.HintInterval) {
			t.lastSoon = now
			t.forceList = true
			t.startScan()
		}
	}
	if t.scan == nil {
		close(done)
		return
	}
	t.scan.waiters = append(t.scan.waiters, done)
}

// Rescan starts a scan now (or after the one in progress) and waits until
// it has finished.
func (t *Tracker) Rescan(ctx context.Context) error {
	if !t.started.Load() {
		return errors.New("tracker not started")
	}
	done := make(chan struct{})
	start := func() {
		if t.scan != nil {
			t.rescanNext = append(t.rescanNext, done)
			return
		}
		t.startScan()
		if t.scan == nil {
			close(done) // the scan failed, or finished at once
			return
		}
		t.scan.waiters = append(t.scan.waiters, done)
	}
	select {
	case t.control <- start:
	case <-t.done:
		return errors.New("tracker stopped")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-t.done:
		return errors.New("tracker stopped")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Idle waits until the tracker has nothing to read: no scan in progress,
// no request queued or running, no warning waiting for its descriptions.
func (t *Tracker) Idle(ctx context.Context) error {
	for {
		idle := false
		if err := t.onLoop(ctx, func() {
			idle = t.scan == nil && len(t.backlog) == 0 && len(t.urgent) == 0 && t.outstanding == 0 && t.reports.pending == nil
		}); err != nil {
			return err
		}
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Subscribe returns a subscription to the tracker's changes; it starts with
// a Published change for every live publication.
func (t *Tracker) Subscribe(ctx context.Context) (*Subscription, error) {
	s := newSubscription(t)
	err := t.onLoop(ctx, func() {
		var initial []Change
		for _, p := range t.pubs {
			if p.Live() {
				initial = append(initial, Change{Kind: Published, Process: p})
			}
		}
		t.subsMu.Lock()
		t.subs = append(t.subs, s)
		t.subsMu.Unlock()
		if len(initial) > 0 {
			s.push(initial, nil)
		}
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (t *Tracker) unsubscribe(s *Subscription) {
	t.subsMu.Lock()
	defer t.subsMu.Unlock()
	if i := slices.Index(t.subs, s); i >= 0 {
		t.subs = slices.Delete(t.subs, i, i+1)
	}
}

// AddView adds a view computed once per publication by fn (on the
// tracker's goroutine: fn must be quick and must not keep p). Every
// snapshot taken after AddView returns has it.
func (t *Tracker) AddView(ctx context.Context, fn func(*Process) any) (View, error) {
	var v View
	err := t.onLoop(ctx, func() {
		v = View{id: len(t.views)}
		t.views = append(t.views, fn)
		t.recomputeViews()
		t.publishSnapshot() // before AddView returns
	})
	return v, err
}

// RemoveView stops computing v.
func (t *Tracker) RemoveView(ctx context.Context, v View) error {
	return t.onLoop(ctx, func() {
		if v.id < len(t.views) {
			t.views[v.id] = nil
		}
	})
}

// onLoop runs fn on the loop and waits for it.
func (t *Tracker) onLoop(ctx context.Context, fn func()) error {
	if !t.started.Load() {
		return errors.New("tracker not started")
	}
	ran := make(chan struct{})
	select {
	case t.control <- func() { fn(); close(ran) }:
	case <-t.done:
		return errors.New("tracker stopped")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ran:
		return nil
	case <-t.done:
		return errors.New("tracker stopped")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// clock is the loop's time: nanoseconds since Start (never 0 after it).
func (t *Tracker) clock() int64 { return int64(t.now().Sub(t.epoch)) + 1 }

func (t *Tracker) run() {
	defer close(t.done)
	defer t.pool.close()
	if t.cfg.InitialDelay > 0 {
		select {
		case <-time.After(t.cfg.InitialDelay):
		case <-t.stop:
			return
		}
	}
	t.startScan()
	ticker := time.NewTicker(t.cfg.ScanInterval)
	defer ticker.Stop()
	// scanDeadline ends a scan that overran ScanTimeout.
	scanDeadline := time.NewTimer(time.Hour)
	scanDeadline.Stop()
	defer scanDeadline.Stop()
	var scanDeadlineC <-chan time.Time
	var deadlineFor uint32 // the scan scanDeadline is armed for
	// supervise runs while jobs are out: a read overdue is abandoned.
	supervise := time.NewTimer(time.Hour)
	supervise.Stop()
	defer supervise.Stop()
	var superviseC <-chan time.Time
	// dueTimer fires when the earliest scheduled read falls due.
	dueTimer := time.NewTimer(time.Hour)
	dueTimer.Stop()
	defer dueTimer.Stop()
	var dueC <-chan time.Time
	var dueArmedAt int64 // the clock dueTimer is armed for
	for {
		if t.cfg.ScanTimeout > 0 && t.scan != nil && t.scan.gen != deadlineFor {
			deadlineFor = t.scan.gen
			scanDeadline.Reset(t.cfg.ScanTimeout)
			scanDeadlineC = scanDeadline.C
		}
		var normal, urgent chan<- *job
		var nextNormal, nextUrgent *job
		if len(t.backlog) > 0 {
			normal, nextNormal = t.pool.normal, t.backlog[0]
		}
		if len(t.urgent) > 0 {
			urgent, nextUrgent = t.pool.urgent, t.urgent[0]
		}
		select {
		case <-t.stop:
			t.cancelWaiters()
			return
		case <-ticker.C:
			if t.scan == nil {
				t.startScan()
			} else {
				t.overruns++
			}
		case j := <-t.pool.results:
			t.applyJob(j)
		case pid := <-t.pool.released:
			t.released(pid)
		case w := <-t.probes:
			t.probe(w)
		case pid := <-t.hints:
			t.hint(pid)
		case done := <-t.soon:
			t.scanSoon(done)
		case fn := <-t.control:
			fn()
		case normal <- nextNormal:
			t.backlog = pop(t.backlog)
			t.outstanding++
		case urgent <- nextUrgent:
			t.urgent = pop(t.urgent)
			t.outstanding++
		case <-superviseC:
			superviseC = nil
			for _, j := range t.pool.expire() {
				t.applyJob(j)
			}
		case ev := <-t.events:
			t.handle(ev)
			// Take what else is queued at once: a burst costs one
			// snapshot, not one per event.
		burst:
			for range eventQueueSize {
				select {
				case ev = <-t.events:
					t.handle(ev)
				default:
					break burst
				}
			}
		case <-t.lostWake:
			t.onLost()
		case st := <-t.stoppedSources:
			t.onSourceStopped(st)
		case <-dueC:
			dueC = nil
			t.runDue()
		case <-scanDeadlineC:
			scanDeadlineC = nil
			if t.scan != nil && t.scan.gen == deadlineFor {
				t.log.Debug("Scan timed out: the reads still out are applied when they come back",
					zap.Duration("timeout", t.cfg.ScanTimeout), zap.Int("jobs_out", t.scan.pending))
				t.finishScan()
			}
		}
		if at, ok := t.nextDue(); ok && (dueC == nil || at < dueArmedAt) {
			// With a fake clock (tests) the timer fires after the fake
			// delay and finds nothing due until the clock moves.
			dueTimer.Stop()
			dueTimer.Reset(max(time.Duration(at-t.clock()), time.Millisecond))
			dueC, dueArmedAt = dueTimer.C, at
		}
		switch {
		case t.outstanding > 0 && superviseC == nil:
			supervise.Reset(t.pool.superviseTick())
			superviseC = supervise.C
		case t.outstanding == 0 && superviseC != nil:
			supervise.Stop()
			superviseC = nil
		}
		t.flush()
	}
}

func pop(q []*job) []*job {
	q[0] = nil
	if len(q) == 1 {
		return q[:0]
	}
	return q[1:]
}

// startScan lists the host's pids and queues the reads of the scan.
//
// While process and publication events both come, a scan only finds what
// they could not tell (processes that started or ended unannounced) and
// reads the publishers' timestamps once per Config.ReconcileInterval, or
// at once after events were dropped.
func (t *Tracker) startScan() {
	t.runDue()
	now := t.clock()
	if t.live == ProcessEvents|PublicationEvents && !t.fullScan && !t.forceList && t.lastListed != 0 &&
		now-t.lastListed < int64(eventsListInterval) {
		t.lightScan()
		return
	}
	t.forceList = false
	entries, err := t.host.ListPids()
	t.setListed(err)
	if err != nil {
		return
	}
	t.gen++
	s := &scanState{gen: t.gen, began: t.now()}
	s.stats.Began = s.began
	s.stats.Listed = true
	s.stats.Processes = len(entries)
	t.scan = s
	t.lastListed = now
	full := t.fullScan || t.live != ProcessEvents|PublicationEvents || t.lastFull == 0 ||
		now-t.lastFull >= int64(t.cfg.ReconcileInterval)
	if full {
		t.fullScan, t.lastFull = false, now
	}
	var b batcher
	for _, ent := range entries {
		pid := ent.Pid
		p := t.procs[pid]
		if p == nil {
			p = t.newProc()
			p.ino = ent.Ino
			t.procs[pid] = p
			b.add(t, p, request{pid: pid, op: opDiscover})
			continue
		}
		p.gen = s.gen
		switch {
		case p.inflight, p.stuck && p.stuckMemFile:
		case p.q != nil && now < p.q.until:
		case p.forked && p.ino == 0:
			// Known from its fork event: nothing to read.
			p.ino = ent.Ino
		case p.ino != ent.Ino || ent.Ino == 0 || (p.start == 0 && !p.forked):
			// A new /proc entry: a new process, or only a new inode for
			// the same one (procfs may drop and re-create it). The start
			// time tells. (No start time yet: its first read was
			// abandoned.)
			p.ino = ent.Ino
			b.add(t, p, request{pid: pid, op: opDiscover, via: p.via()})
		case p.pub != nil:
			if full {
				b.add(t, p, request{pid: pid, op: opRefresh, start: p.start, addr: p.pub.Addr, last: p.pub.Context.PublishedAt, via: p.via()})
			}
		case p.kernel:
		case p.status != OutcomeGone && now-p.checked >= int64(t.rescanDelay(p)):
			s.candidates = append(s.candidates, pid)
		}
	}
	// Late publishers: the longest-waiting first, within the budget.
	slices.SortFunc(s.candidates, func(a, b int) int {
		return compareInt64(t.procs[a].checked, t.procs[b].checked)
	})
	for _, pid := range s.candidates[:min(len(s.candidates), t.cfg.RescanBudget)] {
		p := t.procs[pid]
		op := opLocate
		if p.start == 0 {
			op = opDiscover // known from its fork event only
		}
		b.add(t, p, request{pid: pid, op: op, start: p.start, via: p.via()})
	}
	s.candidates = nil
	b.flush(t)
	if s.pending == 0 {
		t.finishScan()
	}
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// batcher groups the requests of a scan into jobs.
type batcher struct{ cur *job }

func (b *batcher) add(t *Tracker, p *proc, r request) {
	p.inflight = true
	r.serial = p.serial
	if b.cur == nil {
		b.cur = t.newJob()
		b.cur.scan = t.scan.gen
	}
	b.cur.reqs = append(b.cur.reqs, r)
	if len(b.cur.reqs) == jobSize {
		b.flush(t)
	}
}

func (b *batcher) flush(t *Tracker) {
	if b.cur == nil {
		return
	}
	t.scan.pending++
	t.backlog = append(t.backlog, b.cur)
	b.cur = nil
}

func (p *proc) via() reader.Via {
	if p.memFile {
		return reader.ViaMemFile
	}
	return reader.ViaAuto
}

// rescanDelay is how long a process without a context waits before its
// maps are read again: RescanInterval for the first rescanFastChecks
// re-reads, then doubled after each one that found nothing, up to
// RescanMaxInterval. SDKs publish soon after start; a process that did not
// for an hour is unlikely to in the next minute.
func (t *Tracker) rescanDelay(p *proc) time.Duration {
	if t.live&PublicationEvents != 0 {
		if p.checked <= t.pubLostAt {
			return 0 // publication events were dropped since it was read
		}
		return t.cfg.ReconcileInterval
	}
	d := t.cfg.RescanInterval
	for i := rescanFastChecks; i <= int(p.rechecks); i++ {
		if d >= t.cfg.RescanMaxInterval/2 {
			return t.cfg.RescanMaxInterval
		}
		d *= 2
	}
	return min(d, t.cfg.RescanMaxInterval)
}

// newJob returns an empty job, reusing one whose reads are done.
func (t *Tracker) newJob() *job {
	if n := len(t.freeJobs); n > 0 {
		j := t.freeJobs[n-1]
		t.freeJobs = t.freeJobs[:n-1]
		return j
	}
	return &job{reqs: make([]request, 0, jobSize)}
}

// recycle keeps a job whose reads are all done for reuse. A stalled job is
// not: its reader may still write into it.
func (t *Tracker) recycle(j *job) {
	if j.state != jobDone || cap(j.reqs) != jobSize || len(t.freeJobs) >= maxFreeJobs {
		return
	}
	clear(j.reqs)
	*j = job{reqs: j.reqs[:0]}
	t.freeJobs = append(t.freeJobs, j)
}

// applyJob applies what a job read.
func (t *Tracker) applyJob(j *job) {
	t.outstanding--
	defer t.recycle(j)
	n := j.completed()
	for i := range n {
		t.apply(&j.reqs[i], j.scan)
	}
	j.mu.Lock()
	state, stalledAt := j.state, j.stalledAt
	j.mu.Unlock()
	var rest []request
	switch state {
	case jobStalled:
		t.stalled(&j.reqs[stalledAt], j.scan)
		rest = j.reqs[stalledAt+1:]
	case jobNotRun:
		rest = j.reqs
	}
	if len(rest) > 0 && state == jobStalled {
		// The reads the abandoned reader did not get to.
		again := &job{scan: j.scan, urgent: j.urgent, reqs: make([]request, len(rest))}
		for i, r := range rest {
			r.res = result{}
			again.reqs[i] = r
		}
		t.enqueue(again)
	} else {
		for i := range rest {
			t.skipped(&rest[i])
		}
	}
	if j.scan != 0 && t.scan != nil && j.scan == t.scan.gen {
		t.scan.pending--
		if t.scan.pending == 0 {
			t.finishScan()
		}
	}
}

func (t *Tracker) enqueue(j *job) {
	if j.scan != 0 && t.scan != nil && j.scan == t.scan.gen {
		t.scan.pending++
	}
	if j.urgent {
		t.urgent = append(t.urgent, j)
	} else {
		t.backlog = append(t.backlog, j)
	}
}

// apply updates the state of one process from a request's result.
func (t *Tracker) apply(r *request, scanGen uint32) {
	if r.op == opDescribe {
		t.reports.described(r)
		return
	}
	defer t.resolved(r.pid)
	o := r.outcome()
	t.reads[o]++
	p := t.procs[r.pid]
	if p == nil || p.serial != r.serial {
		return // it exited or exec'd meanwhile: the read is of the past
	}
	p.inflight = false
	t.unawait(r.pid, p)
	if o == OutcomeGone {
		if err := t.host.CheckProcfs(); err != nil {
			// Not gone: the procfs is (an unmounted /hostfs/proc).
			t.setListed(err)
			return
		}
		if errors.Is(r.res.err, errPidReused) {
			t.reused(r.pid, p)
			return
		}
		t.forget(r.pid, p)
		return
	}
	defer t.afterRead(r.pid, p, r, o)
	if r.op == opDiscover && p.start != r.res.start {
		if p.start != 0 {
			// The pid was reused.
			t.endPublication(r.pid, p, Exited)
			*p = proc{ino: p.ino, gen: p.gen, inflight: p.inflight, serial: p.serial}
		}
		p.start = r.res.start
		if old := t.pubs[r.pid]; old != nil && old.StartTicks != p.start {
			// An ended publication of the pid's previous process: the pid
			// now names this one.
			delete(t.pubs, r.pid)
			t.dirty = true
		}
	}
	if o == OutcomeOK || o == OutcomeUnchanged || o == OutcomeNoContext {
		p.q = nil
	}
	p.kernel = r.res.kernel
	switch r.op {
	case opRefresh:
		t.applyRefresh(r, p, o)
	default:
		if p.pub != nil && o != OutcomeOK && r.op == opDiscover {
			// A new inode for a publisher that now has no readable context.
			t.applyRefresh(r, p, o)
			return
		}
		t.applyLocate(r, p, o)
	}
}

func (t *Tracker) applyLocate(r *request, p *proc, o Outcome) {
	now := t.clock()
	if p.checked != 0 && p.rechecks < 255 {
		p.rechecks++
	}
	p.checked = now
	switch o {
	case OutcomeOK:
		t.publish(r.pid, p, r.res)
	case OutcomeTorn:
		// Mid-update: look again at the next scan.
		p.checked = 0
		t.setStatus(r.pid, p, OutcomeNoContext)
	default:
		t.setStatus(r.pid, p, o)
	}
}

func (t *Tracker) applyRefresh(r *request, p *proc, o Outcome) {
	switch {
	case o == OutcomeUnchanged:
	case o == OutcomeOK:
		t.publish(r.pid, p, r.res)
	case o == OutcomeNoContext && (r.res.relocated || r.op == opDiscover):
		t.endPublication(r.pid, p, Unpublished)
		p.checked, p.rechecks = t.clock(), 0 // it may publish again soon
		t.setStatus(r.pid, p, OutcomeNoContext)
	case (o == OutcomeInvalid || o == OutcomeTooLarge) && (r.res.relocated || r.op == opDiscover):
		t.endPublication(r.pid, p, Invalidated)
		p.checked, p.rechecks = t.clock(), 0
		t.setStatus(r.pid, p, o)
	default:
		// Torn, permission, an error: keep the context, try again at the
		// next scan.
	}
}

// publish records a context read and emits its change.
func (t *Tracker) publish(pid int, p *proc, res result) {
	kind := Updated
	switch {
	case p.pub == nil:
		kind = Published
		t.livePubs++
	case p.pub.Addr == res.addr && p.pub.Context.PublishedAt == res.ctx.PublishedAt:
		return // the same context, read again (a new inode, say)
	}
	pub := (&Process{
		Key:      Key{PID: pid, StartTicks: p.start},
		Identity: *res.identity,
		Context:  res.ctx,
		Addr:     res.addr,
	}).withViews(t.views)
	if t.filter != nil && (p.pub == nil || p.pub.Addr != res.addr) {
		if err := t.filter.Track(pid, res.addr, otep.HeaderSize); err != nil {
			t.log.Debug("The event source cannot watch this publication's unmapping", zap.Int("pid", pid), zap.Error(err))
		}
	}
	p.pub = pub
	p.status = OutcomeOK
	t.pubs[pid] = pub
	// Outcomes are shared by every snapshot: until the next one has the
	// publication, lookups of the current one say "not known yet", and
	// the processor waits for that snapshot rather than passing the pid
	// through as publishing nothing.
	t.outcomes.set(pid, OutcomeUnknown)
	t.changes = append(t.changes, Change{Kind: kind, Process: pub})
	t.dirty = true
}

// endPublication ends p's live publication, if any, keeping it for the
// retention period.
func (t *Tracker) endPublication(pid int, p *proc, kind ChangeKind) {
	if p.pub == nil {
		return
	}
	ended := *p.pub
	ended.EndedAt = t.now()
	p.pub = nil
	t.livePubs--
	if t.filter != nil {
		_ = t.filter.Untrack(pid) // gone already when the process exited
	}
	t.changes = append(t.changes, Change{Kind: kind, Process: &ended})
	t.dirty = true
	if t.cfg.Retention <= 0 {
		delete(t.pubs, pid)
		return
	}
	t.pubs[pid] = &ended
	t.retained = append(t.retained, retainedPub{p: &ended, until: t.clock() + int64(t.cfg.Retention)})
}

func (t *Tracker) setStatus(pid int, p *proc, o Outcome) {
	p.status = o
	t.outcomes.set(pid, o)
}

// forget drops a process that exited. Lookups of its pid say so (without a
// read) until a scan lists the pid again.
func (t *Tracker) forget(pid int, p *proc) {
	t.endPublication(pid, p, Exited)
	delete(t.procs, pid)
	t.outcomes.set(pid, OutcomeGone)
}

// reused: a read found pid naming another process than p's. That happens
// when a pid is reused before the old process's exit is known (on a host
// with pid_max 32768 and churn, the exit event late behind the new
// process's events): p ended, and the new process is read now, since its
// events may all have been spent on p. The time of its latest publication
// event stays with the pid, so that the old exit, reported late, is not
// taken for the new process's.
func (t *Tracker) reused(pid int, p *proc) {
	at := p.pubEventAt
	t.forget(pid, p)
	np := t.newProc()
	np.pubEventAt = at
	t.procs[pid] = np
	t.readNow(pid, np)
}

// stalled quarantines the process whose read did not return in time.
func (t *Tracker) stalled(r *request, scanGen uint32) {
	if r.op == opDescribe {
		t.reports.described(r)
		return
	}
	defer t.resolved(r.pid)
	t.reads[OutcomeStalled]++
	p := t.procs[r.pid]
	if p == nil {
		return
	}
	if p.serial == r.serial {
		p.inflight = false
	}
	// The pid stalls reads, whichever image it runs now.
	p.stuckMemFile = p.stuckMemFile || r.via == reader.ViaMemFile || t.pool.memFileOnly.Load()
	p.stuck = true
	p.memFile = true
	if p.q == nil {
		p.q = &quarantine{}
	}
	if p.q.strikes < 16 {
		p.q.strikes++
	}
	backoff := t.cfg.QuarantineBackoff << (p.q.strikes - 1)
	if limit := quarantineGrowth * t.cfg.QuarantineBackoff; backoff > limit || backoff <= 0 {
		backoff = limit
	}
	p.q.until = t.clock() + int64(backoff)
	if p.pub == nil {
		t.setStatus(r.pid, p, OutcomeStalled)
	}
	t.reports.stalledNow(r.pid)
	t.log.Debug("Read abandoned at its deadline", zap.Int("pid", r.pid),
		zap.Duration("read_timeout", t.cfg.ReadTimeout), zap.Duration("retry_in", backoff))
}

// released: the abandoned read of pid returned.
func (t *Tracker) released(pid int) {
	if p := t.procs[pid]; p != nil {
		p.stuck, p.stuckMemFile = false, false
	}
}

// skipped: a request no reader could run; try again at the next scan.
func (t *Tracker) skipped(r *request) {
	if r.op == opDescribe {
		t.reports.described(r)
		return
	}
	if p := t.procs[r.pid]; p != nil && p.serial == r.serial {
		p.inflight = false
	}
	t.resolved(r.pid)
}

// probe handles a Probe call.
func (t *Tracker) probe(w *probeWait) {
	var reqs []request
	for _, pid := range w.pids {
		if pid <= 0 || pid >= maxPID {
			continue
		}
		p := t.procs[pid]
		switch {
		case p == nil:
			p = t.newProc()
			t.procs[pid] = p
			p.inflight = true
			reqs = append(reqs, request{pid: pid, op: opDiscover, serial: p.serial})
		case !p.inflight && !p.awaited:
			continue // known meanwhile
		}
		t.waiters[pid] = append(t.waiters[pid], w)
		w.left++
	}
	// One job per pid: a process that stalls its read holds up no other
	// probe (a job's requests run one after the other).
	for i := range reqs {
		t.enqueue(&job{urgent: true, reqs: reqs[i : i+1 : i+1]})
	}
	if w.left == 0 {
		t.wake = append(t.wake, w.done)
	}
}

// resolved counts pid as read for the probes waiting for it; those done
// are woken once the snapshot with what was read is published (flush).
func (t *Tracker) resolved(pid int) {
	ws := t.waiters[pid]
	if ws == nil {
		return
	}
	delete(t.waiters, pid)
	for _, w := range ws {
		if w.left--; w.left == 0 {
			t.wake = append(t.wake, w.done)
		}
	}
	t.dirty = true
}

func (t *Tracker) cancelWaiters() {
	for pid := range t.waiters {
		t.resolved(pid)
	}
	t.flush()
}

// hint handles a Hint call.
func (t *Tracker) hint(pid int) {
	if pid <= 0 || pid >= maxPID {
		return
	}
	p := t.procs[pid]
	now := t.clock()
	switch {
	case p == nil:
		p = t.newProc()
		p.inflight = true
		t.procs[pid] = p
		t.enqueue(&job{reqs: []request{{pid: pid, op: opDiscover, serial: p.serial}}})
	case p.inflight, p.pub != nil, p.kernel, p.stuck && p.stuckMemFile, p.status == OutcomeGone:
	case p.q != nil && now < p.q.until:
	case p.start == 0:
		p.inflight = true
		t.enqueue(&job{reqs: []request{{pid: pid, op: opDiscover, via: p.via(), serial: p.serial}}})
	case now-p.checked >= int64(t.cfg.HintInterval):
		p.inflight = true
		t.enqueue(&job{reqs: []request{{pid: pid, op: opLocate, start: p.start, via: p.via(), serial: p.serial}}})
	}
}

// lightScan is a scan without a listing, while events tell of every fork
// and exit: it expires retained publications and reports.
func (t *Tracker) lightScan() {
	if err := t.host.CheckProcfs(); err != nil {
		t.setListed(err)
		t.forceList = true // list once it is back: reads failed meanwhile
		return
	}
	if t.health.listFailed() {
		t.forceList = true
		t.startScan() // it is back: the listing clears the problem
		return
	}
	t.gen++
	s := &scanState{gen: t.gen, began: t.now(), light: true}
	s.stats.Began = s.began
	t.scan = s
	t.finishScan()
}

// sweep forgets the processes a listed scan did not list and counts those
// that cannot be read, for the scan's stats and reports.
func (t *Tracker) sweep(s *scanState) {
	for pid, p := range t.procs {
		if p.gen != s.gen && !p.inflight {
			t.forget(pid, p)
			continue
		}
		switch {
		case p.q != nil:
			s.stats.Quarantined++
			t.reports.quarantinedPid(pid)
		case p.pub == nil && p.status == OutcomePermissionDenied:
			s.stats.Denied++
			t.reports.deniedPid(pid)
		}
	}
}

// finishScan sweeps the processes the scan did not list, expires retained
// publications and reports.
func (t *Tracker) finishScan() {
	s := t.scan
	if !s.light { // nothing listed: nothing to sweep or count
		t.sweep(s)
		t.setScanned(s.stats.Denied)
	}
	t.expire()
	s.stats.Publishers = t.livePubs
	s.stats.Retained = len(t.retained)
	s.stats.Tracked = len(t.procs) + s.stats.Retained
	// Every read since the last scan: the scan's, and those of events and
	// probes between scans.
	s.stats.Reads, t.reads = t.reads, [numOutcomes]int64{}
	s.stats.Duration = t.now().Sub(s.began)
	first := !t.scanned
	if first {
		t.scanned = true
		t.dirty = true // snapshots say Scanned from now on
	}
	t.scan = nil
	t.pendingStats = &s.stats
	if j := t.reports.due(t.now(), t.cfg); j != nil {
		t.enqueue(j)
	}
	t.flush()
	if first {
		close(t.ready) // after the flush: whoever it wakes finds the first scan in the snapshot
	}
	for _, done := range s.waiters {
		close(done)
	}
	if next := t.rescanNext; len(next) > 0 {
		t.rescanNext = nil
		t.startScan()
		if t.scan == nil {
			for _, done := range next {
				close(done)
			}
			return
		}
		t.scan.waiters = append(t.scan.waiters, next...)
	}
}

// expire drops retained publications whose retention has passed.
func (t *Tracker) expire() {
	now := t.clock()
	n := 0
	for n < len(t.retained) && now >= t.retained[n].until {
		r := t.retained[n].p
		if t.pubs[r.PID] == r {
			delete(t.pubs, r.PID)
			t.dirty = true
		}
		t.retained[n] = retainedPub{}
		n++
	}
	t.retained = t.retained[n:]
}

// flush publishes a new snapshot, then hands the changes and the last
// scan's summary to the subscribers.
func (t *Tracker) flush() {
	if t.dirty {
		t.dirty = false
		t.publishSnapshot()
	}
	for _, done := range t.wake {
		close(done)
	}
	t.wake = t.wake[:0]
	if len(t.changes) == 0 && t.pendingStats == nil {
		return
	}
	changes, stats := t.changes, t.pendingStats
	t.changes, t.pendingStats = nil, nil
	t.subsMu.Lock()
	subs := slices.Clone(t.subs)
	t.subsMu.Unlock()
	for _, s := range subs {
		s.push(changes, stats)
	}
}

func (t *Tracker) publishSnapshot() {
	t.snapGen++
	s := &Snapshot{
		byPID:       newPidTable(t.pubs),
		byContainer: map[ContainerPid]*Process{},
		outcomes:    &t.outcomes,
		Generation:  t.snapGen,
		Scanned:     t.scanned,
	}
	for _, p := range t.pubs {
		if cid := p.Identity.ContainerID; cid != "" {
			k := ContainerPid{cid, p.Identity.VPID()}
			// A live publication wins over an ended one of the same pair.
			if cur := s.byContainer[k]; cur == nil || !cur.Live() {
				s.byContainer[k] = p
			}
		}
	}
	t.snap.Store(s)
}

// recomputeViews gives every publication the views' values.
func (t *Tracker) recomputeViews() {
	for pid, p := range t.pubs {
		np := p.withViews(t.views)
		t.pubs[pid] = np
		if pr := t.procs[pid]; pr != nil && pr.pub == p {
			pr.pub = np
		}
		for i := range t.retained {
			if t.retained[i].p == p {
				t.retained[i].p = np
			}
		}
	}
	t.dirty = true
}

// Host returns the host the tracker reads.
func (t *Tracker) Host() Host { return t.host }

// ReaderOf returns the procfs reader of a Host made by NewHost, for
// callers that report its counters; nil for other hosts.
func ReaderOf(h Host) *reader.Reader {
	if ph, ok := h.(*procHost); ok {
		return ph.reader
	}
	return nil
}
