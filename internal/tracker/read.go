// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"cmp"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/reader"
	"github.com/processctx/otelcol-processctx/internal/readpool"
	"github.com/processctx/otelcol-processctx/internal/sdkenv"
)

// op is what a request reads of one process.
type op uint8

// opDiscover (a pid seen for the first time, or whose procfs directory
// changed) reads its start time, then as opLocate; opRefresh reads the
// maps again when the header is gone.
const (
	opDiscover op = iota
	opLocate      // a process without a known context: its maps, its context and identity if any
	opRefresh     // a publisher: the header's timestamp, the context and identity when it changed
	opDescribe    // the executable (and why it cannot be read) of a process a warning names
)

// request is the reads of one process, run on a reader goroutine.
type request struct {
	pid    int
	op     op
	cause  cause
	serial uint32     // the incarnation it is for (proc.serial)
	start  uint64     // the known start time; 0 for opDiscover
	addr   uint64     // opRefresh: the header's address
	last   uint64     // opRefresh: the timestamp of the context held
	vsize  uint32     // gate: proc.vsize
	via    reader.Via // set by Begin
	// stalled: a read of the process stalled before (proc.stall).
	stalled bool
	why     bool // opDescribe: explain a permission denial too
	// env: read the environment when no context is found (once per
	// incarnation: proc.env); noMaps: look for no context (an exec's
	// environment read, or contexts not a source); gate: read the stat
	// before the maps, and these only when the address space changed.
	env, noMaps, gate bool
	// taken: moved to a job of its own before it began (Tracker.expedite);
	// this job neither reads nor applies it.
	taken bool

	res result
}

// job and pool are the readers' (internal/readpool), of requests.
type (
	job  = readpool.Job[request, *request]
	pool = readpool.Pool[request, *request]
)

// Begin is the one place that decides how memory is read: through the mem
// file, which fails at once where process_vm_readv waits, once a read of
// the process stalled, or for every process when memFileOnly.
func (r *request) Begin(memFileOnly bool) {
	if memFileOnly || r.stalled {
		r.via = reader.ViaMemFile
	}
}

func (r *request) Taken() bool { return r.taken }
func (r *request) Take()       { r.taken = true }
func (r *request) PID() int    { return r.pid }

// result is what a request found.
type result struct {
	err       error
	start     uint64 // opDiscover: the start time read
	addr      uint64
	ctx       otep.Context
	changed   bool             // opRefresh: a new context was read
	relocated bool             // opRefresh: the header was gone and the maps were read again
	kernel    bool             // opDiscover: a kernel thread
	newborn   bool             // opDiscover: it started less than youngDelays[0] ago
	identity  *procfs.Identity // with a new context
	source    Source           // of ctx
	// envRead: the environment was read; envErr is what was wrong with it (a variable too long or not
	// decoding, discarded as an SDK would), never its text.
	envRead  bool
	envErr   error
	exe, why string // opDescribe
	// readAt is Host.KernelTime when the read began: an exec or exit the
	// kernel reported before it came before what the read found.
	readAt uint64
	vsize  uint32 // the address space's size (pages), when a stat before the maps said it
}

// startTime is the start time of the process the request reads: the one
// its discover read found, else the one known.
func (r *request) startTime() uint64 {
	if r.op == opDiscover {
		return r.res.start
	}
	return r.start
}

// outcome classifies the result.
func (r *request) outcome() Outcome {
	if r.res.err == nil && r.op == opRefresh && !r.res.changed {
		return OutcomeUnchanged
	}
	return OutcomeOf(r.res.err)
}

// errPidReused: a read found the pid naming another process than the one
// the request is about. The process asked about is gone, hence the
// wrapped ErrProcessGone; the pid names a process to read.
var errPidReused = fmt.Errorf("reused while it was read: %w", procfs.ErrProcessGone)

// read runs the reads of r on h. Any of them may block as long as the
// process lets it: the pool runs it under a deadline.
func read(h Host, r *request) {
	r.res.readAt = h.KernelTime()
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
		r.res.start, r.res.newborn, r.res.vsize = st.StartTicks, st.Age < youngDelays[0], st.Pages()
		if st.KernelThread {
			// No user memory: nothing to find.
			r.res.kernel = true
			r.res.err = fmt.Errorf("pid %d: kernel thread: %w", r.pid, otep.ErrNoContext)
			return
		}
	case opRefresh:
		if !refresh(h, r) {
			return
		}
	case opLocate:
		if !r.gate || r.noMaps {
			break
		}
		// The stat first: an address space of the r.vsize pages it was at
		// the last maps read (bar a mapping made and one of its size
		// unmade meanwhile) has nothing new in its maps or environment,
		// five times the cost of the stat.
		st, err := h.Stat(r.pid)
		if err == nil && st.StartTicks != r.start {
			err = errPidReused
		}
		if err != nil || r.vsize != 0 && st.Pages() == r.vsize {
			r.res.err, r.res.vsize, r.env = cmp.Or(err, errUnchanged), r.vsize, false
			return
		}
		r.res.vsize = st.Pages()
	}
	locate(h, r)
}

// errUnchanged: an address space the size it was at the last maps read.
var errUnchanged = fmt.Errorf("address space unchanged since its maps were read: %w", otep.ErrNoContext)

// refresh reads a publisher's header at the address known; false when
// that told what there is to know, true when the maps must say where the
// context is now (unpublished, replaced, e.g. after exec, or unreadable;
// or "being updated" on every try, as the zeros of another mapping at the
// old address read).
func refresh(h Host, r *request) bool {
	ctx, changed, err := h.ReadContext(r.pid, r.addr, r.last, r.via)
	switch {
	case err == nil && !changed:
		return false
	case err == nil:
		r.res.addr, r.res.ctx, r.res.changed = r.addr, ctx, true
		identify(h, r)
		return false
	case !errors.Is(err, otep.ErrNoContext) && !errors.Is(err, otep.ErrInvalid) &&
		!errors.Is(err, otep.ErrTooLarge) && !errors.Is(err, otep.ErrTorn):
		r.res.err = err
		return false
	}
	r.res.relocated = true
	return true
}

// locate finds the context mapping in the maps and reads the context
// there; without one, the identity the environment gives, when asked.
func locate(h Host, r *request) {
	if r.noMaps {
		r.res.err = fmt.Errorf("pid %d: maps not read: %w", r.pid, otep.ErrNoContext)
		environment(h, r)
		return
	}
	m, err := h.FindMapping(r.pid)
	if err != nil {
		r.res.err = err
		if r.res.relocated && errors.Is(err, otep.ErrNoContext) {
			r.res.err = exitingOr(h, r, err)
		}
		if errors.Is(r.res.err, otep.ErrNoContext) {
			environment(h, r)
		}
		return
	}
	r.res.addr = m.Start
	ctx, _, err := h.ReadContext(r.pid, m.Start, 0, r.via)
	if err != nil {
		r.res.err = err
		return
	}
	r.res.ctx, r.res.changed = ctx, true
	identify(h, r)
}

// environment reads the identity a process without a context has from
// its SDK environment variables, when the request asks for it. Nothing
// else of the environment leaves Host.Environment.
func environment(h Host, r *request) {
	if !r.env {
		return
	}
	vars, err := h.Environment(r.pid)
	if errors.Is(err, sdkenv.ErrEmpty) {
		return // mid-exec, or none at all: read again at the next read
	}
	if err != nil && !errors.Is(err, sdkenv.ErrTooLarge) {
		r.res.err = fmt.Errorf("environment: %w", err)
		return
	}
	r.res.envRead, r.res.envErr = true, err
	if vars.Empty() {
		return
	}
	attrs := pcommon.NewMap()
	if err := vars.Resource(attrs); err != nil {
		r.res.envErr = errors.Join(r.res.envErr, err)
	}
	if attrs.Len() == 0 {
		return
	}
	r.res.err = nil
	r.res.ctx = otep.Context{Resource: attrs, Attributes: pcommon.NewMap()}
	r.res.source, r.res.changed = SourceEnvironment, true
	identify(h, r)
}

// exitingOr tells a publisher whose context mapping vanished because it is
// exiting (its address space is gone before the kernel reports the exit:
// a zombie's maps are empty) from one that unpublished: the first ended
// with its process, an exit, not an unpublish. Otherwise it returns err.
func exitingOr(h Host, r *request, err error) error {
	st, serr := h.Stat(r.pid)
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
func identify(h Host, r *request) {
	id, err := h.Identity(r.pid)
	switch {
	case err != nil:
		r.res.err = fmt.Errorf("identity: %w", err)
	case id.StartTicks != r.startTime():
		r.res.err = fmt.Errorf("pid %d: %w", r.pid, errPidReused)
	default:
		r.res.identity = &id
	}
}
