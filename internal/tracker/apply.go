// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"errors"
	"slices"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/readpool"
)

// applyJob applies what a job read: the results of its requests, the
// stall of the one that did not return, and the rest queued again (or,
// when no reader could run them, given up until the next scan).
func (l *loop) applyJob(j *job) {
	defer l.pool.Back(j)
	each := func(r *request, fn func(*request)) {
		switch {
		case r.taken: // another job reads it (expedite)
		case r.op == opDescribe: // a description goes to the reports
			l.applyDescription(r)
		default:
			fn(r)
		}
	}
	state, n := j.Outcome()
	for i := range n {
		each(&j.Reqs[i], l.apply)
	}
	switch state {
	case readpool.Stalled:
		each(&j.Reqs[n], l.quarantine)
		// Those after it did not begin: nothing of them was read.
		rest := slices.DeleteFunc(slices.Clone(j.Reqs[n+1:]), func(r request) bool { return r.taken })
		if len(rest) > 0 {
			l.sched.queue(&job{Scan: j.Scan, Urgent: j.Urgent, Reqs: rest})
		}
	case readpool.NotRun:
		for i := range j.Reqs {
			each(&j.Reqs[i], l.closeNotRun)
		}
	}
	if l.scans.back(j) {
		l.finishScan() // its last job
	}
}

// closeRead notes that the read r is no longer out, and returns the
// process it was for and what lookups answered while it was out; nil when
// the read is of the past (its process exited or is another incarnation
// now): the probes waiting for it are done, unless a read of the pid's
// process of now is out.
func (l *loop) closeRead(r *request) (*proc, Answer) {
	p, was := l.sched.finish(r)
	if p == nil && !l.sched.reading(r.pid) {
		l.probes.resolve(r.pid)
	}
	return p, was
}

// settle notes pid for the next snapshot when what lookups answer of p
// is no longer was (most reads change nothing, and cost no snapshot), and
// ends the probes waiting for p unless a read of it is out again.
func (l *loop) settle(pid int, p *proc, was Answer) {
	if l.sched.answer(p, l.clock()) != was {
		l.out.touch(pid)
	}
	if p.sched.idle() {
		l.probes.resolve(pid)
	}
}

// applyDescription hands a description to the reports and marks the processes
// they said to be denied for good: the reports leave them out from then
// on, as long as the pid names that process.
func (l *loop) applyDescription(r *request) {
	for _, pid := range l.reports.addDescription(r) {
		if p := l.reg.get(pid); p != nil {
			p.deniedForGood = true
		}
	}
}

// apply updates the process a request read, then plans what follows.
func (l *loop) apply(r *request) {
	l.out.prompt = r.cause.urgent()
	defer func() { l.out.prompt = false }()
	o := r.outcome()
	l.scans.count(o)
	p, was := l.closeRead(r)
	if p == nil {
		return
	}
	defer l.settle(r.pid, p, was)
	if o == OutcomeGone {
		l.applyGone(r, p)
		return
	}
	if r.op == opDiscover && r.res.start != 0 && p.start != r.res.start {
		if p.start != 0 {
			l.newIncarnation(r.pid, p, Exited, r.res.start) // the pid was reused
		}
		p.start = r.res.start
		l.out.dropEnded(r.pid, p.start) // an ended publication of the pid's previous process
	}
	p.kernel = r.res.kernel
	if !r.noMaps && (!r.res.newborn || l.events.live()&ProcessEvents != 0) {
		p.vsize = r.res.vsize // a newborn's may be its parent's, which no exec event renews
	}
	switch {
	case r.env && !r.res.envRead && p.env == envUnread:
		p.env = envTried
	case r.res.envRead:
		p.env = envRead
		if r.res.envErr != nil {
			// What the SDK would report; the error names the variable,
			// never its text.
			l.log.Debug("Part of a process's SDK environment was discarded", zap.Int("pid", r.pid), zap.Error(r.res.envErr))
		}
	}
	if o == OutcomeOK || o == OutcomeUnchanged || o == OutcomeNoContext {
		l.sched.release(p)
	}
	if p.hasContext() && (r.op == opRefresh || r.op == opDiscover) {
		l.applyToPublisher(r, p, o)
	} else {
		l.applyToSilent(r, p, o)
	}
	l.sched.act(r.pid, p, trigger{kind: onRead, read: r.cause, found: o, discovered: r.op == opDiscover,
		newborn: r.res.newborn, envEmpty: r.env && !r.res.envRead && o == OutcomeNoContext})
	if r.noMaps && p.sched.idle() && l.probes.waitsFor(r.pid) {
		// A probe waits for what this read did not look at.
		l.sched.act(r.pid, p, trigger{kind: onProbe})
	}
}

// applyGone: the read found the process gone, or the pid naming another one.
func (l *loop) applyGone(r *request, p *proc) {
	if err := l.host.CheckProcfs(); err != nil {
		// Not gone: the procfs is (an unmounted /hostfs/proc).
		l.reports.noteListing(err)
		return
	}
	if !errors.Is(r.res.err, errPidReused) {
		l.forget(r.pid, p)
		return
	}
	// The pid was reused before the old process's exit was known (on a
	// host with pid_max 32768 and churn, its exit event comes late): the
	// new process is read now, since its events may all have been spent on
	// the old one.
	l.newIncarnation(r.pid, p, Exited, 0)
	l.sched.act(r.pid, p, trigger{kind: onReused})
}

// applyToPublisher applies a read of a publisher.
func (l *loop) applyToPublisher(r *request, p *proc, o Outcome) {
	moved := r.res.relocated || r.op == opDiscover
	switch {
	case o == OutcomeOK:
		l.publish(r.pid, p, &r.res)
	case o == OutcomeNoContext && moved:
		l.endPublication(r.pid, p, Unpublished)
		p.found = o
		l.sched.noteLook(r.pid, p, true) // it may publish again soon
	case (o == OutcomeInvalid || o == OutcomeTooLarge) && moved:
		l.endPublication(r.pid, p, Invalidated)
		p.found = o
		l.sched.noteLook(r.pid, p, true)
	default:
		// Unchanged; or torn, denied, an error: the context is kept, and
		// read again at the next check.
	}
}

// applyToSilent applies a read of a process without a publication.
func (l *loop) applyToSilent(r *request, p *proc, o Outcome) {
	if !r.noMaps || !l.cfg.uses(SourceContext) {
		// A look at what it may publish (a read of its environment alone
		// is not one while contexts are a source).
		l.sched.noteLook(r.pid, p, false)
	}
	switch o {
	case OutcomeOK:
		l.publish(r.pid, p, &r.res)
	case OutcomeTorn:
		// Mid-update: look again at the next scan.
		p.found = o
		l.sched.lookSoon(p)
	default:
		p.found = o
	}
}

// publish records an identity read (a context, or the environment of a
// process without one) and emits its change: Updated when it replaces
// the other source's.
func (l *loop) publish(pid int, p *proc, res *result) {
	kind := Updated
	switch {
	case p.identity == nil:
		kind = Published
	case p.identity.Source == res.source && p.identity.Addr == res.addr && p.identity.Context.PublishedAt == res.ctx.PublishedAt:
		return // the same context or environment, read again (a new inode, say)
	}
	pub := l.out.withViews(&Publication{
		Key:      Key{PID: pid, StartTicks: p.start},
		Identity: *res.identity,
		Source:   res.source,
		Context:  res.ctx,
		Addr:     res.addr,
	})
	l.watchUnmap(pid, p, res.source == SourceContext, res.addr)
	if res.source == SourceContext {
		p.env = envUnread // read again once the context ends
	}
	l.reg.identify(pid, p, pub)
	p.found = OutcomeOK
	p.imageAt = max(p.imageAt, res.readAt)
	l.out.record(kind, pub, 0)
}

// watchUnmap tells the event source which context mapping of pid to
// watch, as p.identity is replaced by a context at addr (is) or by an
// identity that is not one, or ends (!is).
func (l *loop) watchUnmap(pid int, p *proc, is bool, addr uint64) {
	was := p.hasContext()
	switch {
	case is && (!was || p.identity.Addr != addr):
		if err := l.events.track(pid, addr); err != nil {
			l.log.Debug("The event source cannot watch this publication's unmapping", zap.Int("pid", pid), zap.Error(err))
		}
	case was && !is:
		l.events.untrack(pid)
	}
}

// endPublication ends p's live publication (or identity from its
// environment), if any, keeping it for the grace period.
func (l *loop) endPublication(pid int, p *proc, kind ChangeKind) {
	if p.identity == nil {
		return
	}
	l.watchUnmap(pid, p, false, 0)
	ended := *l.reg.unidentify(pid, p)
	ended.EndedAt = l.now()
	p.found = OutcomeNoContext
	until := int64(0)
	if l.cfg.GracePeriod > 0 {
		until = l.clock() + int64(l.cfg.GracePeriod)
	}
	l.out.record(kind, &ended, until)
}

// quarantine: the read r did not return in time; its process is not read
// again until its backoff has passed.
func (l *loop) quarantine(r *request) {
	l.scans.count(OutcomeStalled)
	defer l.probes.resolve(r.pid)
	l.closeRead(r)
	p := l.reg.get(r.pid)
	if p == nil {
		return
	}
	// The pid stalls reads, whichever incarnation they were for.
	backoff := l.sched.quarantine(r.pid, p, r.via)
	if p.identity == nil {
		p.found = OutcomeStalled
	}
	l.out.touch(r.pid)
	l.log.Debug("Read abandoned at its deadline", zap.Int("pid", r.pid),
		zap.Duration("read_timeout", l.cfg.ReadTimeout), zap.Duration("retry_in", backoff))
}

// closeNotRun: a request no reader could run; it is tried again when next due.
func (l *loop) closeNotRun(r *request) {
	if p, was := l.closeRead(r); p != nil {
		l.settle(r.pid, p, was)
	}
}

// newProc records a pid not known before.
func (l *loop) newProc(pid int) *proc {
	p := l.reg.add(pid, l.scans.inProgress())
	l.out.touch(pid)
	return p
}

// newIncarnation makes p a new incarnation of its pid, after an exec (the
// same process with a new image: ended Unpublished) or when the pid names
// another process (ended Exited). Its publication ends, and reads out or
// planned for the old incarnation are of the past (a new serial). start
// is the new incarnation's, 0 when not known yet.
func (l *loop) newIncarnation(pid int, p *proc, ended ChangeKind, start uint64) {
	l.endPublication(pid, p, ended)
	l.reg.renew(p, start, ended == Unpublished)
	l.out.touch(pid)
}

// forget drops a process that exited. Lookups of its pid say so (without a
// read) until a listing or an event names the pid again.
func (l *loop) forget(pid int, p *proc) {
	l.endPublication(pid, p, Exited)
	l.reg.drop(pid)
	l.out.touch(pid)
}
