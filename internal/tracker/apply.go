package tracker

import (
	"errors"
	"slices"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/reader"
)

// applyJob applies what a job read: the results of its requests, the
// stall of the one that did not return, and the rest queued again (or,
// when no reader could run them, given up until the next scan).
func (t *Tracker) applyJob(j *job) {
	t.jobs.out--
	defer t.recycle(j)
	each := func(r *request, fn func(*request)) { // a description goes to the reports
		if r.op == opDescribe {
			fn = t.described
		}
		fn(r)
	}
	state, n := j.outcome()
	for i := range n {
		each(&j.reqs[i], t.apply)
	}
	switch state {
	case jobStalled:
		each(&j.reqs[j.stalledAt], t.stalled)
		if rest := j.reqs[j.stalledAt+1:]; len(rest) > 0 {
			// Not begun: nothing of them was read.
			t.enqueue(&job{scan: j.scan, urgent: j.urgent, reqs: slices.Clone(rest)})
		}
	case jobNotRun:
		for i := range j.reqs {
			each(&j.reqs[i], t.notRun)
		}
	}
	t.jobBack(j)
}

// settled notes pid for the next snapshot when what lookups say of p is
// no longer before (most reads change nothing, and cost no snapshot), and
// ends the probes waiting for p unless a read of it is out again.
func (t *Tracker) settled(pid int, p *proc, before Outcome) {
	if t.planner().lookupOutcome(p, t.clock()) != before {
		t.touch(pid)
	}
	if p.reading == causeNone {
		t.probes.resolve(pid)
	}
}

// described hands a description to the reports and marks the processes
// they said to be denied for good: the reports leave them out from then
// on, as long as the pid names that process.
func (t *Tracker) described(r *request) {
	for _, pid := range t.reports.described(r) {
		if p := t.procs[pid]; p != nil {
			p.deniedForGood = true
		}
	}
}

// apply updates the process a request read, then plans what follows.
func (t *Tracker) apply(r *request) {
	o := r.outcome()
	t.scans.reads[o]++
	p, before := t.endRead(r)
	if p == nil {
		return
	}
	defer t.settled(r.pid, p, before)
	if o == OutcomeGone {
		t.gone(r, p)
		return
	}
	if r.op == opDiscover && r.res.start != 0 && p.start != r.res.start {
		if p.start != 0 {
			t.newIncarnation(r.pid, p, Exited, r.res.start) // the pid was reused
		}
		p.start = r.res.start
		if e, ok := t.out.ended.byPID[r.pid]; ok && e.p.StartTicks != p.start {
			// An ended publication of the pid's previous process.
			delete(t.out.ended.byPID, r.pid)
			t.out.changed = true
		}
	}
	p.kernel = r.res.kernel
	switch {
	case r.env && !r.res.envRead && p.env == envUnread:
		p.env = envTried
	case r.res.envRead:
		p.env = envRead
		if r.res.envErr != nil {
			// What the SDK would report; the error names the variable,
			// never its text.
			t.log.Debug("Part of a process's SDK environment was discarded", zap.Int("pid", r.pid), zap.Error(r.res.envErr))
		}
	}
	if o == OutcomeOK || o == OutcomeUnchanged || o == OutcomeNoContext {
		p.answered()
	}
	if p.hasContext() && (r.op == opRefresh || r.op == opDiscover) {
		t.applyToPublisher(r, p, o)
	} else {
		t.applyToSilent(r, p, o)
	}
	t.act(r.pid, p, trigger{kind: onRead, read: r.cause, found: o, discovered: r.op == opDiscover,
		newborn: r.res.newborn, envEmpty: r.env && !r.res.envRead && o == OutcomeNoContext})
	if r.noMaps && p.reading == causeNone && t.probes.waitsFor(r.pid) {
		// A probe waits for what this read did not look at.
		t.act(r.pid, p, trigger{kind: onProbe})
	}
}

// gone: the read found the process gone, or the pid naming another one.
func (t *Tracker) gone(r *request, p *proc) {
	if err := t.host.CheckProcfs(); err != nil {
		// Not gone: the procfs is (an unmounted /hostfs/proc).
		t.setListed(err)
		return
	}
	if !errors.Is(r.res.err, errPidReused) {
		t.forget(r.pid, p)
		return
	}
	// The pid was reused before the old process's exit was known (on a
	// host with pid_max 32768 and churn, its exit event comes late): the
	// new process is read now, since its events may all have been spent on
	// the old one.
	t.newIncarnation(r.pid, p, Exited, 0)
	t.act(r.pid, p, trigger{kind: onReused})
}

// applyToPublisher applies a read of a publisher.
func (t *Tracker) applyToPublisher(r *request, p *proc, o Outcome) {
	moved := r.res.relocated || r.op == opDiscover
	switch {
	case o == OutcomeOK:
		t.publish(r.pid, p, &r.res)
	case o == OutcomeNoContext && moved:
		t.endPublication(r.pid, p, Unpublished)
		p.found, p.lookedAt, p.rechecks = o, t.clock(), 0 // it may publish again soon
		t.noteRecheck(r.pid, p)
	case (o == OutcomeInvalid || o == OutcomeTooLarge) && moved:
		t.endPublication(r.pid, p, Invalidated)
		p.found, p.lookedAt, p.rechecks = o, t.clock(), 0
	default:
		// Unchanged; or torn, denied, an error: the context is kept, and
		// read again at the next check.
	}
}

// applyToSilent applies a read of a process without a publication.
func (t *Tracker) applyToSilent(r *request, p *proc, o Outcome) {
	if !r.noMaps || !t.cfg.uses(SourceContext) {
		// A look at what it may publish (a read of its environment alone
		// is not one while contexts are a source).
		if p.lookedAt != 0 && p.rechecks < 255 {
			p.rechecks++
		}
		p.lookedAt = t.clock()
		t.noteRecheck(r.pid, p)
	}
	switch o {
	case OutcomeOK:
		t.publish(r.pid, p, &r.res)
	case OutcomeTorn:
		// Mid-update: look again at the next scan.
		p.found, p.lookedAt = o, 0
	default:
		p.found = o
	}
}

// publish records an identity read (a context, or the environment of a
// process without one) and emits its change: Updated when it replaces
// the other source's.
func (t *Tracker) publish(pid int, p *proc, res *result) {
	kind := Updated
	switch {
	case p.identity == nil:
		kind = Published
	case p.identity.Source == res.source && p.identity.Addr == res.addr && p.identity.Context.PublishedAt == res.ctx.PublishedAt:
		return // the same context or environment, read again (a new inode, say)
	}
	pub := (&Process{
		Key:      Key{PID: pid, StartTicks: p.start},
		Identity: *res.identity,
		Source:   res.source,
		Context:  res.ctx,
		Addr:     res.addr,
	}).withViews(t.out.views)
	t.watchUnmap(pid, p, res.source == SourceContext, res.addr)
	if res.source == SourceContext {
		p.env = envUnread // read again once the context ends
	}
	p.identity, p.found = pub, OutcomeOK
	t.out.identified[pid] = struct{}{}
	p.imageAt = max(p.imageAt, res.readAt)
	delete(t.out.ended.byPID, pid) // a live publication replaces it
	t.out.changes = append(t.out.changes, Change{Kind: kind, Process: pub})
	t.out.changed = true
}

// watchUnmap keeps the count of live publications and tells the event
// source which context mapping of pid to watch, as p.identity is replaced by a
// context at addr (is) or by an identity that is not one, or ends (!is).
func (t *Tracker) watchUnmap(pid int, p *proc, is bool, addr uint64) {
	was := p.hasContext()
	switch {
	case is && !was:
		t.out.liveContexts++
	case was && !is:
		t.out.liveContexts--
	}
	f := t.events.filter
	switch {
	case f == nil:
	case is && (!was || p.identity.Addr != addr):
		if err := f.Track(pid, addr, otep.HeaderSize); err != nil {
			t.log.Debug("The event source cannot watch this publication's unmapping", zap.Int("pid", pid), zap.Error(err))
		}
	case was && !is:
		_ = f.Untrack(pid) // gone already when the process exited
	}
}

// endPublication ends p's live publication (or identity from its
// environment), if any, keeping it for the grace period.
func (t *Tracker) endPublication(pid int, p *proc, kind ChangeKind) {
	if p.identity == nil {
		return
	}
	ended := *p.identity
	ended.EndedAt = t.now()
	t.watchUnmap(pid, p, false, 0)
	p.identity, p.found = nil, OutcomeNoContext
	delete(t.out.identified, pid)
	t.out.changes = append(t.out.changes, Change{Kind: kind, Process: &ended})
	t.out.changed = true
	if t.cfg.GracePeriod > 0 {
		e := endedPub{pid: pid, p: &ended, until: t.clock() + int64(t.cfg.GracePeriod)}
		t.out.ended.byPID[pid] = e
		t.out.ended.queue = append(t.out.ended.queue, endedPub{pid: pid, until: e.until})
	}
}

// stalled quarantines the process whose read did not return in time.
func (t *Tracker) stalled(r *request) {
	t.scans.reads[OutcomeStalled]++
	defer t.probes.resolve(r.pid)
	t.endRead(r)
	p := t.procs[r.pid]
	if p == nil {
		return
	}
	// The pid stalls reads, whichever incarnation they were for.
	if p.stall == nil {
		p.stall = &stall{}
	}
	s := p.stall
	s.stuck = max(s.stuck, stuckVMReadv)
	if r.via == reader.ViaMemFile {
		s.stuck = stuckMemFile
	}
	s.strikes = min(s.strikes+1, 16)
	backoff := t.cfg.QuarantineBackoff << (s.strikes - 1)
	if limit := quarantineGrowth * t.cfg.QuarantineBackoff; backoff > limit || backoff <= 0 {
		backoff = limit
	}
	s.until = t.clock() + int64(backoff)
	if p.identity == nil {
		p.found = OutcomeStalled
	}
	t.act(r.pid, p, trigger{kind: onStall})
	t.touch(r.pid)
	t.log.Debug("Read abandoned at its deadline", zap.Int("pid", r.pid),
		zap.Duration("read_timeout", t.cfg.ReadTimeout), zap.Duration("retry_in", backoff))
}

// released: the abandoned read of pid returned.
func (t *Tracker) released(pid int) {
	if p := t.procs[pid]; p != nil && p.stall != nil {
		p.stall.stuck = notStuck
	}
}

// notRun: a request no reader could run; it is tried again when next due.
func (t *Tracker) notRun(r *request) {
	if p, before := t.endRead(r); p != nil {
		t.settled(r.pid, p, before)
	}
}

// answered notes that p answered a read: it is no longer quarantined, but
// its memory is still read through the mem file.
func (p *proc) answered() {
	if p.stall != nil {
		p.stall.until, p.stall.strikes = 0, 0
	}
}
