// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/ratelimit"
)

// maxReported is how many processes a warning names.
const maxReported = 5

// reports is what the tracker reports of the processes it cannot read,
// and its health (health.go). The loop hands it each listing's outcome,
// each scan's unreadable processes and the descriptions read for its
// warnings (an opDescribe job, under the read deadline); it paces the
// warnings, at most one of each kind per Config.WarningInterval, and the
// reads of the collector's own privileges; components read
// DeniedProcesses and Health.
//
// A denial no privilege or setting lifts (procfs.Unchangeable: a VM's
// init that refuses even root) is no warning: it is said once, at info,
// and left out of the counts from then on (proc.deniedForGood). The
// warning and DeniedProcesses count the same processes: those the last
// listing found denied (without a context read before), less those. The
// reads metric's permission_denied is another count: a denied process is
// read again on the rescan schedule.
type reports struct {
	log                   *zap.Logger
	readTimeout, interval time.Duration // Config.ReadTimeout, WarningInterval

	// Collected by the scan that just finished.
	denied, stalled tally

	// deniedNow is the processes denied, as the warning counts them: set
	// by each listing (listed), less the unchangeable denials its
	// descriptions find. Read by other goroutines.
	deniedNow atomic.Int64

	// The warnings waiting for their descriptions.
	pending *pendingReport
	warned  [numWarnings]ratelimit.Limiter
	// access paces the reads of the collector's own privileges: they do
	// not change while it runs (Yama may).
	access ratelimit.Limiter

	health health
}

func newReports(log *zap.Logger, cfg Config) reports {
	return reports{log: log, readTimeout: cfg.ReadTimeout, interval: cfg.WarningInterval, health: health{changed: make(chan struct{})}}
}

type pendingReport struct {
	denied, stalled   describedList
	deniedN, stalledN int
	left              int
}

type warning uint8 // a kind of warning

const (
	deniedWarning warning = iota
	stalledWarning
	numWarnings
)

type described struct {
	pid      int
	exe, why string
}

type describedList []described // the processes a warning names

// tally is the processes of one warning's kind a scan met: how many and
// the maxReported lowest pids.
type tally struct {
	n    int
	pids []int
}

// add counts pid: denied for lack of permission, or quarantined after a
// stalled read.
func (k *tally) add(pid int) {
	k.n++
	i, _ := slices.BinarySearch(k.pids, pid)
	if i >= maxReported {
		return
	}
	k.pids = slices.Insert(k.pids, i, pid)
	if len(k.pids) > maxReported {
		k.pids = k.pids[:maxReported]
	}
}

// take returns, when the warning is given, the processes it names and
// adds their descriptions to j; it resets the tally.
func (k *tally) take(given bool, j *job, why bool) (list describedList, n int) {
	if given {
		n = k.n
		for _, pid := range k.pids {
			list = append(list, described{pid: pid})
			j.Reqs = append(j.Reqs, request{pid: pid, op: opDescribe, why: why})
		}
	}
	k.reset()
	return list, n
}

func (k *tally) reset() { k.n, k.pids = 0, k.pids[:0] }

// DeniedProcesses returns how many processes the tracker cannot read for
// lack of permission, as its permission warning counts them (reports).
func (t *Tracker) DeniedProcesses() int { return t.loop.reports.deniedCount() }

func (r *reports) deniedCount() int { return int(r.deniedNow.Load()) }

// countDenied and countStalled count, for the warnings, a process the scan
// that just finished found denied for lack of permission, or quarantined.
func (r *reports) countDenied(pid int)  { r.denied.add(pid) }
func (r *reports) countStalled(pid int) { r.stalled.add(pid) }

// describing reports whether warnings wait for their descriptions.
func (r *reports) describing() bool { return r.pending != nil }

// takeDue returns the describe job of the warnings given after a scan at
// now, or nil.
func (r *reports) takeDue(now int64) *job {
	if r.pending != nil {
		r.denied.reset()
		r.stalled.reset()
		return nil
	}
	warn := func(w warning, n int) bool { return n > 0 && r.warned[w].Allow(now, r.interval) }
	p, j := &pendingReport{}, &job{}
	p.denied, p.deniedN = r.denied.take(warn(deniedWarning, r.denied.n), j, true)
	p.stalled, p.stalledN = r.stalled.take(warn(stalledWarning, r.stalled.n), j, false)
	if len(j.Reqs) == 0 {
		return nil
	}
	p.left = len(j.Reqs)
	r.pending = p
	return j
}

// addDescription records the description of one process (empty when its read
// did not return) and logs the warnings once every one is in. It returns
// the pids it said, then, to be denied for good. A denied warning that
// said nothing (every denial it describes turned out unchangeable) is
// taken back: the next one that is not is warned of at once.
func (r *reports) addDescription(req *request) (forGood []int) {
	p := r.pending
	if p == nil {
		return nil
	}
	if !p.denied.describe(req) {
		p.stalled.describe(req)
	}
	if p.left--; p.left > 0 {
		return nil
	}
	r.pending = nil
	if p.deniedN > 0 {
		var unsaid bool
		if forGood, unsaid = r.reportDenied(p); unsaid {
			r.warned[deniedWarning].Reset()
		}
	}
	if p.stalledN > 0 {
		r.log.Warn("Some processes did not answer a read in time and are quarantined: they are retried with backoff, and the rest of the host is read on schedule",
			p.stalled.fields(p.stalledN, zap.Stringer("read_timeout", r.readTimeout), zap.Stringer("next_warning_in", r.interval))...)
	}
	return forGood
}

// reportDenied warns of the denials p describes that some privilege or
// setting would lift, says once those that none would, and returns their
// pids; unsaid when there was nothing to warn of.
func (r *reports) reportDenied(p *pendingReport) (forGood []int, unsaid bool) {
	var fixable, unchangeable describedList
	for _, d := range p.denied {
		if procfs.Unchangeable(d.why) {
			unchangeable = append(unchangeable, d)
			forGood = append(forGood, d.pid)
		} else {
			fixable = append(fixable, d)
		}
	}
	if len(unchangeable) > 0 {
		// Left out of the count from now on, like those the listing knew.
		if r.deniedNow.Add(-int64(len(unchangeable))) < 0 {
			r.deniedNow.Store(0) // some exited since: the next listing counts again
		}
		r.log.Info("Cannot read the process context of some processes: permission denied, and no setting changes it (said once per process)",
			unchangeable.fields(len(unchangeable), unchangeable.reasons()...)...)
	}
	if len(fixable) == 0 {
		return forGood, true
	}
	// Those not described are counted with the fixable ones: the reader's
	// privileges, not the process, decide most denials. The count is
	// DeniedProcesses's after this report.
	fields := fixable.fields(p.deniedN-len(unchangeable), zap.Stringer("next_warning_in", r.interval))
	r.log.Warn("Cannot read the process context of some processes: permission denied", append(fields, fixable.reasons()...)...)
	return forGood, false
}

// describe records req's description for its pid, if the list names it
// and has none yet.
func (list describedList) describe(req *request) bool {
	for i := range list {
		if list[i].pid == req.pid && list[i].exe == "" {
			list[i].exe, list[i].why = req.res.exe, req.res.why
			if list[i].exe == "" {
				list[i].exe = "?"
			}
			return true
		}
	}
	return false
}

// reasons says why the processes are denied: the first one's reason, and
// each other one's when it differs.
func (list describedList) reasons() []zap.Field {
	if len(list) == 0 {
		return nil
	}
	var fields []zap.Field
	if list[0].why != "" {
		fields = append(fields, zap.String("reason", list[0].why))
	}
	for _, d := range list[1:] {
		if d.why != "" && d.why != list[0].why {
			fields = append(fields, zap.String("reason_pid_"+strconv.Itoa(d.pid), d.why))
		}
	}
	return fields
}

// fields are the fields of a warning about n processes that names the
// processes of list ("pids": "12 (sshd), 40 (?)"), then more.
func (list describedList) fields(n int, more ...zap.Field) []zap.Field {
	pids := make([]string, len(list))
	for i, d := range list {
		pids[i] = fmt.Sprintf("%d (%s)", d.pid, d.exe)
	}
	return append([]zap.Field{zap.Int("processes", n), zap.String("pids", strings.Join(pids, ", "))}, more...)
}
