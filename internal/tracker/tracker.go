package tracker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/reader"
)

// Tracker tracks the processes of one host. See the package documentation.
type Tracker struct {
	// Set by New.
	cfg    Config
	host   Host
	log    *zap.Logger
	now    func() time.Time
	hostID procfs.HostIdentity // the identity of the host the tracker reads
	onScan []func(ScanStats)   // the WithScanStats functions
	pool   *pool

	// Owned by the loop.
	epoch   time.Time // the clock's zero: Start
	procs   map[int]*proc
	serials uint32 // names incarnations (proc.serial)
	scans   struct {
		gen     uint32             // counts the scans
		scanned bool               // the first scan has finished
		cur     *scan              // the scan in progress
		after   []chan struct{}    // Rescan calls waiting for a scan to start after cur
		pending *ScanStats         // the last scan's summary, not handed out yet
		reads   [NumOutcomes]int64 // since the last scan finished
	}
	discovery discoveryState
	jobs      struct {
		backlog []*job // scan work
		urgent  []*job // probes, events
		free    []*job // done jobs for reuse
		out     int    // jobs handed to the pool, not back yet
	}
	plan    planState
	probes  probes
	reports reports
	events  eventState
	// out is what the snapshots and the subscribers are told.
	out struct {
		// identified is the set of pids whose process has an identity
		// (proc.identity): the snapshot is built from it and ended, without
		// going through every process (5x the cost with 5,000 processes,
		// BenchmarkSnapshotRebuild).
		identified   map[int]struct{}
		ended        retention
		views        []view
		liveContexts int // live publications
		// changed: publications changed since the last snapshot; touched
		// lists the pids whose lookup outcome may have; changes are the
		// subscribers'.
		changed bool
		touched []int
		changes []Change
	}

	// Shared with other goroutines.
	snap   atomic.Pointer[Snapshot]
	subsMu sync.Mutex
	subs   []*subscriber
	health health // set by the loop, read by components
	// sourcesOnce closes the event sources once: Stop releases them,
	// started or not.
	sourcesOnce sync.Once
	ready       chan struct{} // closed when the first scan finished
	probeC      chan *probeWait
	scanC       chan chan struct{} // ScanSoon
	control     chan func()
	stop        chan struct{}
	done        chan struct{}
	started     atomic.Bool
	stopOnce    sync.Once
}

// planState is the reads planned: the times of the processes' plans in
// order, and of their rechecks.
type planState struct {
	queue    planQueue
	rechecks recheckQueue
}

// retention holds the publications that ended, for the grace period.
// The live ones are the processes' (proc.identity).
type retention struct {
	// byPID is the last one of each pid, unless the pid names another
	// process or published again since.
	byPID map[int]endedPub
	// queue is every one in the order its grace period ends.
	queue []endedPub
}

// endedPub is a publication that ended, kept until the clock until.
type endedPub struct {
	pid   int
	p     *Process // in byPID only
	until int64
}

// Option changes how New makes a tracker.
type Option func(*Tracker)

// WithClock makes the tracker read time from now (tests move it).
func WithClock(now func() time.Time) Option {
	return func(t *Tracker) { t.now = now }
}

// WithScanStats makes the tracker call fn with the summary of every scan,
// the first included, on its loop: fn must be quick and must not block.
// Unlike a subscriber (Subscribe, which a started tracker takes), it misses
// no scan.
func WithScanStats(fn func(ScanStats)) Option {
	return func(t *Tracker) { t.onScan = append(t.onScan, fn) }
}

// WithHostIdentity says which host the tracker reads (Open reads it from
// the root path).
func WithHostIdentity(h procfs.HostIdentity) Option {
	return func(t *Tracker) { t.hostID = h }
}

// HostIdentity returns the identity of the host the tracker reads (fields
// "" where it could not be read).
func (t *Tracker) HostIdentity() procfs.HostIdentity { return t.hostID }

// New returns a tracker that reads host. Start starts it; Stop releases
// its event sources, started or not.
func New(host Host, cfg Config, logger *zap.Logger, opts ...Option) (*Tracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tracker: %w", err)
	}
	return build(host, cfg, logger, opts...), nil
}

// build is New with cfg validated (Open validates it before it opens
// anything).
func build(host Host, cfg Config, logger *zap.Logger, opts ...Option) *Tracker {
	t := &Tracker{
		cfg:     cfg,
		host:    host,
		log:     logger,
		reports: reports{log: logger},
		now:     time.Now,
		procs:   map[int]*proc{},
		probes:  probes{waiting: map[int][]*probeWait{}},
		probeC:  make(chan *probeWait, 64),
		scanC:   make(chan chan struct{}, 1),
		control: make(chan func()),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		ready:   make(chan struct{}),
	}
	t.out.identified, t.out.ended.byPID = map[int]struct{}{}, map[int]endedPub{}
	t.events.lostWake, t.health.changed = make(chan struct{}, 1), make(chan struct{})
	for _, o := range opts {
		o(t)
	}
	t.pool = newPool(host, cfg, t.now)
	t.events.stopped = make(chan sourceStopped, len(t.events.sources))
	if len(t.events.sources) > 0 {
		t.events.queue = make(chan Event, eventQueueSize) // nil without sources: never ready
	}
	t.snap.Store(&Snapshot{byContainer: map[ContainerPid]*Process{}})
	return t
}

// StuckReads returns how many reads were abandoned at their deadline and
// have not returned yet (each holds a reader goroutine).
func (t *Tracker) StuckReads() int { return t.pool.stuck() }

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

// Start starts the readers, the event sources and the loop; the first
// scan begins after Config.InitialDelay (at once by default).
func (t *Tracker) Start() {
	if !t.started.CompareAndSwap(false, true) {
		return
	}
	t.epoch = t.now()
	t.pool.start(t.cfg.Readers)
	t.runSources()
	go t.run()
}

// Stop stops the tracker and closes its event sources. It returns once the
// loop has stopped, or with ctx's error; readers blocked in a read are left
// behind and exit when the read returns. A tracker never started is
// stopped too: Stop closes the event sources it was given (Open's netlink
// socket and eBPF programs), and Start does nothing after it. Stop is the
// one way to release them: whoever gets a tracker from Open or New calls
// Stop, whether Start was called or not.
func (t *Tracker) Stop(ctx context.Context) error {
	t.stopOnce.Do(func() { close(t.stop) })
	if t.started.CompareAndSwap(false, true) {
		// Never started: no loop, reader or source runs.
		close(t.done)
		t.releaseSources()
		return nil
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-returned(t.releaseSources):
	case <-ctx.Done():
		return fmt.Errorf("stop event sources: %w", ctx.Err())
	}
	// Readers not blocked in a read exit right away.
	select {
	case <-returned(t.pool.wg.Wait):
	case <-time.After(100 * time.Millisecond):
	case <-ctx.Done():
	}
	return nil
}

// returned runs fn on a goroutine of its own and returns a channel closed
// when fn returns.
func returned(fn func()) <-chan struct{} {
	c := make(chan struct{})
	go func() { fn(); close(c) }()
	return c
}

// Ready is closed once the first scan of the host has finished.
func (t *Tracker) Ready() <-chan struct{} { return t.ready }

// Snapshot returns the current view of the publications. It takes no lock.
func (t *Tracker) Snapshot() *Snapshot { return t.snap.Load() }

// Rescan starts a scan now (or after the one in progress) and waits until
// it has finished.
func (t *Tracker) Rescan(ctx context.Context) error {
	done := make(chan struct{})
	start := func() {
		if t.scans.cur != nil {
			t.scans.after = append(t.scans.after, done)
			return
		}
		t.startScan()
		t.waitForScan(done)
	}
	if err := t.onLoop(ctx, start); err != nil {
		return err
	}
	return await(ctx, t, done)
}

// Idle waits until the tracker has nothing to read: no scan in progress,
// no request queued or running, no warning waiting for its descriptions.
func (t *Tracker) Idle(ctx context.Context) error {
	for {
		idle := false
		if err := t.onLoop(ctx, func() {
			idle = t.scans.cur == nil && len(t.jobs.backlog) == 0 && len(t.jobs.urgent) == 0 && t.jobs.out == 0 && t.reports.pending == nil
		}); err != nil || idle {
			return err
		}
		if err := await(ctx, t, time.After(5*time.Millisecond)); err != nil {
			return err
		}
	}
}

// view is one View's computation, shared by the AddView calls with its
// key.
type view struct {
	key   any
	fn    func(*Process) any // nil once removed
	users int
}

// AddView adds a view computed once per publication by fn (on the
// tracker's goroutine: fn must be quick and must not keep p), or returns
// the view added under the same key, which fn would compute alike (the
// pipelines of one processor share one). Every snapshot taken after
// AddView returns has it.
func (t *Tracker) AddView(ctx context.Context, key any, fn func(*Process) any) (View, error) {
	var v View
	err := t.onLoop(ctx, func() {
		for i := range t.out.views {
			if w := &t.out.views[i]; w.fn != nil && w.key == key {
				w.users++
				v = View{id: i}
				return
			}
		}
		v = View{id: len(t.out.views)}
		t.out.views = append(t.out.views, view{key: key, fn: fn, users: 1})
		t.recomputeViews()
		t.flush() // before AddView returns
	})
	return v, err
}

// RemoveView stops computing v once every AddView of it is removed.
func (t *Tracker) RemoveView(ctx context.Context, v View) error {
	return t.onLoop(ctx, func() {
		w := &t.out.views[v.id]
		if w.users--; w.users == 0 {
			w.fn = nil
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
		return errStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	return await(ctx, t, ran)
}

// errStopped is what a call of a stopped tracker returns.
var errStopped = errors.New("tracker stopped")

// await waits for c: it returns errStopped when t stops first, ctx's error
// when ctx ends first.
func await[T any](ctx context.Context, t *Tracker, c <-chan T) error {
	select {
	case <-c:
		return nil
	case <-t.done:
		return errStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// clock is the loop's time: nanoseconds since Start (never 0 after it).
func (t *Tracker) clock() int64 { return int64(t.now().Sub(t.epoch)) + 1 }

// touch notes that pid's lookup outcome may have changed: the next
// snapshot says it again.
func (t *Tracker) touch(pid int) { t.out.touched = append(t.out.touched, pid) }

// flush publishes a new snapshot when something changed, wakes the probes
// it ends, and hands the last scan's summary to the WithScanStats
// functions and it and the changes to the subscribers.
func (t *Tracker) flush() {
	t.markRechecks()
	if t.out.changed || len(t.out.touched) > 0 {
		t.publishSnapshot()
	}
	t.probes.wake()
	if s := t.scans.pending; s != nil {
		for _, fn := range t.onScan {
			fn(*s)
		}
	}
	t.tell()
}

// publishSnapshot publishes what the tracker knows now.
func (t *Tracker) publishSnapshot() {
	cur := t.snap.Load()
	s := &Snapshot{byPID: cur.byPID, byContainer: cur.byContainer, Scanned: t.scans.scanned}
	if t.out.changed {
		t.out.changed = false
		s.byPID = newPidTable(len(t.out.identified)+len(t.out.ended.byPID), t.publications)
		s.byContainer = map[ContainerPid]*Process{}
		for _, p := range s.byPID.all {
			if cid := p.Identity.ContainerID; cid != "" {
				k := ContainerPid{cid, p.Identity.VPID()}
				// A live publication wins over an ended one of the same pair.
				if cur := s.byContainer[k]; cur == nil || !cur.Live() {
					s.byContainer[k] = p
				}
			}
		}
	}
	w := outcomeWriter{next: cur.outcomes}
	now := t.clock()
	for _, pid := range t.out.touched {
		o := OutcomeGone
		if p := t.procs[pid]; p != nil {
			o = t.planner().lookupOutcome(p, now)
		}
		w.set(pid, o)
	}
	t.out.touched = t.out.touched[:0]
	s.outcomes = w.next
	t.snap.Store(s)
}

// publications calls yield for every publication a snapshot holds: the
// live ones and the ended ones retained (never two of one pid).
func (t *Tracker) publications(yield func(int, *Process) bool) {
	for pid := range t.out.identified {
		if !yield(pid, t.procs[pid].identity) {
			return
		}
	}
	for pid, e := range t.out.ended.byPID {
		if !yield(pid, e.p) {
			return
		}
	}
}

// recomputeViews gives every publication the views' values.
func (t *Tracker) recomputeViews() {
	for pid := range t.out.identified {
		p := t.procs[pid]
		p.identity = p.identity.withViews(t.out.views)
	}
	for pid, e := range t.out.ended.byPID {
		e.p = e.p.withViews(t.out.views)
		t.out.ended.byPID[pid] = e
	}
	t.out.changed = true
}
