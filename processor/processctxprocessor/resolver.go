package processctxprocessor

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/processctx/otelcol-processctx/internal/procmem"
	"github.com/processctx/otelcol-processctx/internal/registry"
)

// resolver turns pids into published contexts: from the registry the
// receiver fills when it has the pid, else from its own cache, reading
// the process through procfs only on a miss or once an entry's TTL passed.
// It is safe for concurrent use.
type resolver struct {
	ttl, negativeTTL, grace time.Duration

	fs      *procmem.FS
	reader  *procmem.Reader
	reg     *registry.Registry
	release func()
	cache   *cache
	// containers maps pids inside containers to host pids.
	containers containerIndex
	filter     keyFilter
	warn       *warner

	statReads atomic.Uint64 // /proc/<pid>/stat reads (procmem counts maps and memory)
}

func newResolver(cfg *Config, filter keyFilter, warn *warner) (*resolver, error) {
	fs, err := procmem.NewFS(cfg.RootPath)
	if err != nil {
		return nil, fmt.Errorf("root_path %q: %w", cfg.RootPath, err)
	}
	// Pids in telemetry are host pids: a container's own procfs under a
	// root_path (meant to be the host's) would resolve them to the wrong
	// processes. root_path "/" inside a container is the user's choice
	// (hostPID, or container-local pids).
	if err := fs.CheckHost(); err != nil && fs.Root() != "/" {
		return nil, fmt.Errorf("root_path %q: %w: mount the host's /proc at %s", cfg.RootPath, err, fs.ProcDir())
	}
	reader, err := procmem.NewReader(fs, cfg.limits())
	if err != nil {
		return nil, fmt.Errorf("process context reader: %w", err)
	}
	// The receiver keys the registry by fs.Root() as well.
	reg, release := registry.Acquire(fs.Root())
	return &resolver{
		ttl:         cfg.Cache.TTL,
		negativeTTL: cfg.Cache.NegativeTTL,
		grace:       cfg.Cache.GracePeriod,
		fs:          fs,
		reader:      reader,
		reg:         reg,
		release:     release,
		cache:       newCache(cfg.Cache.MaxEntries),
		filter:      filter,
		warn:        warn,
	}, nil
}

func (r *resolver) close() { r.release() }

type entryState uint8

const (
	stateExpired entryState = iota // unusable: look the pid up again
	stateFresh                     // usable as is
	stateStale                     // usable, but due for re-validation
)

// state says what e is worth at now. Callers hold cache.mu (read or write).
func (r *resolver) state(e *entry, now time.Time) entryState {
	if e.outcome != outcomeEnriched {
		if now.Sub(e.checkedAt) < r.negativeTTL {
			return stateFresh
		}
		return stateExpired
	}
	if !e.goneAt.IsZero() && now.Sub(e.goneAt) > r.grace {
		return stateExpired
	}
	if now.Sub(e.checkedAt) < r.ttl {
		return stateFresh
	}
	return stateStale
}

// lookup returns the context entry of pid (nil when there is none) and the
// outcome. A fresh cache entry costs a map lookup under a read lock and no
// I/O; otherwise at most one bounded read of the process.
func (r *resolver) lookup(pid int, now time.Time) (*entry, outcome) {
	if e, ok := r.fromRegistry(pid, now); ok {
		return e, outcomeEnriched
	}
	c := r.cache
	c.mu.RLock()
	if e := c.entries[pid]; e != nil && r.state(e, now) == stateFresh {
		e.touch(now)
		c.mu.RUnlock()
		return e.result()
	}
	c.mu.RUnlock()
	return r.lookupSlow(pid, now)
}

// fromRegistry returns the entry for the registry's record of pid, when
// the receiver has one that is live or exited within the grace period.
func (r *resolver) fromRegistry(pid int, now time.Time) (*entry, bool) {
	p, ok := r.reg.Lookup(pid)
	// PublishedAt is never 0 for a context that was read.
	if !ok || p.Context.PublishedAt == 0 || (!p.ExitedAt.IsZero() && now.Sub(p.ExitedAt) > r.grace) {
		return nil, false
	}
	c := r.cache
	c.mu.RLock()
	if e := c.entries[pid]; e != nil && e.regProc == p {
		e.touch(now)
		c.mu.RUnlock()
		return e, true
	}
	c.mu.RUnlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[pid]
	switch {
	case e != nil && e.regProc == p:
	case e != nil && e.outcome == outcomeEnriched && e.key == p.Key && e.publishedAt == p.Context.PublishedAt:
		// The same context (e.g. the receiver only marked it exited): no copy.
		e.regProc = p
		e.goneAt = p.ExitedAt
		e.checkedAt = now
	default:
		m := procmem.Membership{ContainerID: p.Identity.ContainerID, VPID: p.Identity.VPID()}
		e = r.newEntry(p.Key, p.Context, 0, m, now)
		e.regProc = p
		e.goneAt = p.ExitedAt
		c.putLocked(pid, e)
	}
	e.touch(now)
	return e, true
}

// lookupSlow handles a missing, expired or stale entry under the write lock,
// and does the I/O without it.
func (r *resolver) lookupSlow(pid int, now time.Time) (*entry, outcome) {
	c := r.cache
	c.mu.Lock()
	e := c.entries[pid]
	st := stateExpired
	if e != nil {
		st = r.state(e, now)
	}
	switch {
	case st == stateFresh, st == stateStale && e.refreshing:
		// Fresh since the read lock, or another lookup is re-validating it:
		// the stale context is still the best answer, without waiting.
		e.touch(now)
		c.mu.Unlock()
		return e.result()
	case st == stateStale:
		e.refreshing = true
		live := e.goneAt.IsZero() // read under the lock: fromRegistry may change it
		c.mu.Unlock()
		rf := r.revalidate(pid, e, live, now)
		c.mu.Lock()
		defer c.mu.Unlock()
		e.refreshing = false
		next := e
		if rf.next == nil {
			e.checkedAt = now
			if rf.gone && e.goneAt.IsZero() {
				e.goneAt = now
			}
		} else {
			next = rf.next
			if cur := c.entries[pid]; rf.store && (cur == e || cur == nil) {
				c.putLocked(pid, next)
			}
		}
		next.touch(now)
		return next.result()
	}
	if e != nil {
		delete(c.entries, pid)
	}
	c.mu.Unlock()

	next, store := r.read(pid, now)
	if store {
		c.mu.Lock()
		c.putLocked(pid, next)
		next.touch(now)
		c.mu.Unlock()
	}
	return next.result()
}

// refresh is the result of re-validating an entry.
type refresh struct {
	next  *entry // replacement; nil keeps the entry (re-validated now)
	store bool   // next may be cached
	gone  bool   // the context is no longer published (exit, unpublish)
}

// revalidate checks a stale entry: the pid still names the same process
// (start time) and its header still has the same change key: one stat read
// and one 8-byte memory read when nothing changed. It reads only the
// entry's immutable fields; live says whether it was not gone.
func (r *resolver) revalidate(pid int, e *entry, live bool, now time.Time) refresh {
	start, err := r.startTime(pid)
	if err != nil {
		if errors.Is(err, procmem.ErrProcessGone) {
			return refresh{gone: true}
		}
		r.warn.record(outcomeOf(err), err)
		return refresh{}
	}
	if start != e.key.StartTicks {
		// The pid now names another process: the old context must not stick
		// to the new process's telemetry.
		next, store := r.readProcess(pid, start, now)
		return refresh{next: next, store: store}
	}
	if e.addr != 0 && live {
		ctx, changed, err := r.reader.ReadIfChanged(pid, e.addr, e.publishedAt)
		switch {
		case err == nil && !changed:
			return refresh{}
		case err == nil:
			return refresh{next: r.newEntry(e.key, ctx, e.addr, e.membership(), now), store: true}
		case errors.Is(err, procmem.ErrProcessGone):
			return refresh{gone: true}
		}
		// Unmapped or overwritten (unpublish, exec): look for the mapping again.
	}
	ctx, m, err := r.reader.Read(pid)
	switch o := outcomeOf(err); o {
	case outcomeEnriched:
		return refresh{next: r.newEntry(e.key, ctx, m.Start, e.membership(), now), store: true}
	case outcomeNoContext:
		return refresh{gone: true}
	case outcomeTorn:
		return refresh{} // mid-update: try again after the next TTL
	default:
		// The process now publishes something unreadable: serve what it
		// published last for the grace period.
		r.warn.record(o, err)
		return refresh{gone: true}
	}
}

// read looks up a pid the cache does not know. It returns the entry (a
// negative one when there is no context) and whether it may be cached.
func (r *resolver) read(pid int, now time.Time) (*entry, bool) {
	start, err := r.startTime(pid)
	if err != nil {
		o := outcomeOf(err)
		if o.isError() {
			r.warn.record(o, err)
		}
		return r.negative(registry.Key{PID: pid}, o, now), true
	}
	return r.readProcess(pid, start, now)
}

// readProcess reads the context of the process (pid, start).
func (r *resolver) readProcess(pid int, start uint64, now time.Time) (*entry, bool) {
	key := registry.Key{PID: pid, StartTicks: start}
	ctx, m, err := r.reader.Read(pid)
	if err != nil {
		o := outcomeOf(err)
		if o.isError() {
			r.warn.record(o, err)
		}
		// A torn read is transient: do not remember it.
		return r.negative(key, o, now), o != outcomeTorn
	}
	// The pid may have been reused while it was read: keep the context only
	// if it belongs to the process whose start time we know.
	if again, err := r.startTime(pid); err != nil || again != start {
		return r.negative(key, outcomeNoContext, now), false
	}
	return r.newEntry(key, ctx, m.Start, r.membership(pid), now), true
}

func (r *resolver) newEntry(key registry.Key, ctx procmem.Context, addr uint64, m procmem.Membership, now time.Time) *entry {
	return &entry{
		key:         key,
		attrs:       r.filter.apply(ctx.Resource),
		outcome:     outcomeEnriched,
		addr:        addr,
		publishedAt: ctx.PublishedAt,
		containerID: m.ContainerID,
		vpid:        m.VPID,
		identity:    identityOf(ctx.Resource),
		checkedAt:   now,
	}
}

// membership reads where a process lives; best effort: a process that
// cannot be read counts as not containerized.
func (r *resolver) membership(pid int) procmem.Membership {
	m, err := r.fs.Membership(pid)
	if err != nil {
		return procmem.Membership{VPID: pid}
	}
	return m
}

func (r *resolver) negative(key registry.Key, o outcome, now time.Time) *entry {
	return &entry{key: key, outcome: o, checkedAt: now}
}

func (r *resolver) startTime(pid int) (uint64, error) {
	r.statReads.Add(1)
	start, err := r.fs.StartTime(pid)
	if err != nil {
		return 0, fmt.Errorf("start time: %w", err)
	}
	return start, nil
}
