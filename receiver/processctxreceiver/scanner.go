package processctxreceiver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/procmem"
	"github.com/processctx/otelcol-processctx/internal/registry"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

const (
	// exitedRetention keeps exited publishers in the shared registry so that
	// a processor can still enrich telemetry that arrives late.
	exitedRetention = 10 * time.Minute
	// missingCapability is what a reader lacking permission needs.
	missingCapability = "root, or CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH"
)

// process is what a scan remembers of one pid. Kept small: most processes
// on a host publish nothing.
type process struct {
	start uint64 // start time in clock ticks: (pid, start) is the key
	// ino is the inode number of the /proc/<pid> directory: it changes when
	// the pid names another process, so while it stays, the start time need
	// not be read again.
	ino       uint64
	gen       uint32 // scan generation that last listed the pid
	publisher bool
	ignored   bool  // excluded by the executable filters
	denied    bool  // last read refused for lack of permission
	rechecks  uint8 // maps reads without a context since the last change
	// checkedAt is the last maps read of a process without a context.
	checkedAt time.Time
	*publication
}

// publication is the state of a process that publishes a context.
type publication struct {
	addr        uint64
	publishedAt uint64
	reportedAt  time.Time
	identity    procmem.Identity
	ctx         procmem.Context
}

type exitedKey struct {
	key registry.Key
	at  time.Time
}

// scanner turns successive scans of the host's processes into entity
// events. It is not safe for concurrent use: one goroutine scans.
type scanner struct {
	cfg      *Config
	reader   *procmem.Reader
	ids      *procmem.IdentityReader
	registry *registry.Registry
	logger   *zap.Logger
	events   *eventWriter

	tracked    map[int]*process
	gen        uint32
	outcomes   map[string]int64
	exited     []exitedKey // registry entries to forget, oldest first
	lastWarn   time.Time
	candidates []int
	pids       procmem.PidLister
}

func newScanner(cfg *Config, fs *procmem.FS, reg *registry.Registry, logger *zap.Logger) (*scanner, error) {
	reader, err := procmem.NewReader(fs, cfg.limits())
	if err != nil {
		return nil, err
	}
	return &scanner{
		cfg:      cfg,
		reader:   reader,
		ids:      procmem.NewIdentityReader(fs),
		registry: reg,
		logger:   logger,
		events:   newEventWriter(cfg.EntityEventFormat, cfg.ReportInterval),
		tracked:  map[int]*process{},
		outcomes: map[string]int64{},
	}, nil
}

// scanResult summarizes one scan.
type scanResult struct {
	scanned    int
	publishers int
	denied     int
}

// scan looks at every process once. It stops early, with ctx's error, when
// ctx is done; the events so far stay in s.events.
func (s *scanner) scan(ctx context.Context, now time.Time) (scanResult, error) {
	var res scanResult
	clear(s.outcomes)
	entries, err := s.pids.List(s.reader.FS())
	if err != nil {
		return res, err
	}
	s.gen++
	s.candidates = s.candidates[:0]
	for _, ent := range entries {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		res.scanned++
		pid := ent.Pid
		p := s.tracked[pid]
		if p == nil || p.ino != ent.Ino || ent.Ino == 0 {
			// A new /proc entry: a new process, or only a new inode for the
			// same one (procfs may drop and re-create it). The start time
			// tells.
			start, err := s.reader.FS().StartTime(pid)
			if err != nil {
				// Exited since the listing (or hidden): the sweep below
				// handles a pid we knew.
				continue
			}
			if p != nil && p.start != start {
				s.forget(pid, p, reasonExited, now) // the pid was reused
				p = nil
			}
			if p == nil {
				p = &process{start: start, ino: ent.Ino, gen: s.gen}
				s.tracked[pid] = p
				s.discover(pid, p, now)
				continue
			}
			p.ino = ent.Ino
		}
		p.gen = s.gen
		if p.publisher {
			s.refresh(pid, p, now)
		} else if !p.ignored && now.Sub(p.checkedAt) >= s.rescanDelay(p) {
			s.candidates = append(s.candidates, pid)
		}
	}

	// Late publishers: the longest-waiting first, within the budget.
	slices.SortFunc(s.candidates, func(a, b int) int {
		return s.tracked[a].checkedAt.Compare(s.tracked[b].checkedAt)
	})
	for _, pid := range s.candidates[:min(len(s.candidates), s.cfg.RescanBudget)] {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		s.locate(pid, s.tracked[pid], now)
	}

	for pid, p := range s.tracked {
		if p.gen != s.gen {
			s.forget(pid, p, reasonExited, now)
			continue
		}
		if p.publisher {
			res.publishers++
			if now.Sub(p.reportedAt) >= s.cfg.ReportInterval {
				s.events.state(now, p.identity, p.ctx)
				p.reportedAt = now
			}
		}
		if p.denied {
			res.denied++
		}
	}
	s.forgetExited(now)
	s.warnDenied(now, res.denied)
	return res, nil
}

// rescanFastChecks is how many re-reads happen at rescan_interval before
// the wait starts doubling.
const rescanFastChecks = 4

// rescanDelay is how long a process without a context waits before its maps
// are read again: rescan_interval for the first rescanFastChecks re-reads,
// then doubled after each one that found nothing, up to
// rescan_max_interval. SDKs publish soon after start; a process that did
// not for an hour is unlikely to in the next minute.
func (s *scanner) rescanDelay(p *process) time.Duration {
	d := s.cfg.RescanInterval
	for i := rescanFastChecks; i < int(p.rechecks); i++ {
		if d >= s.cfg.RescanMaxInterval/2 {
			return s.cfg.RescanMaxInterval
		}
		d *= 2
	}
	return min(d, s.cfg.RescanMaxInterval)
}

// discover looks at a pid seen for the first time: one maps scan.
func (s *scanner) discover(pid int, p *process, now time.Time) {
	if s.cfg.filters() {
		id, err := s.ids.Identity(pid)
		if err != nil {
			s.count(err)
			p.checkedAt = now
			return
		}
		if !s.cfg.selects(id.ExecutableName) {
			p.ignored = true
			return
		}
	}
	s.locate(pid, p, now)
}

// locate reads the maps of a process without a known context.
func (s *scanner) locate(pid int, p *process, now time.Time) {
	if !p.checkedAt.IsZero() && p.rechecks < 255 {
		p.rechecks++
	}
	p.checkedAt = now
	m, err := s.reader.FindMapping(pid)
	if err != nil {
		p.denied = errors.Is(err, procmem.ErrPermissionDenied)
		s.count(err)
		return
	}
	p.denied = false
	ctx, err := s.reader.ReadContext(pid, m.Start)
	if err != nil {
		s.count(err)
		if errors.Is(err, procmem.ErrTorn) {
			p.checkedAt = time.Time{} // mid-update: look again next scan
		} else {
			s.debugf("pid %d: %v", pid, err)
		}
		return
	}
	s.publish(pid, p, m.Start, ctx, now)
}

// refresh checks a known publisher: one timestamp read while unchanged.
func (s *scanner) refresh(pid int, p *process, now time.Time) {
	ctx, changed, err := s.reader.ReadIfChanged(pid, p.addr, p.publishedAt)
	switch {
	case err == nil && !changed:
		s.outcomes[metadata.OutcomeUnchanged]++
	case err == nil:
		s.publish(pid, p, p.addr, ctx, now)
	case errors.Is(err, procmem.ErrNoContext), errors.Is(err, procmem.ErrInvalid), errors.Is(err, procmem.ErrTooLarge):
		// Unpublished, replaced (e.g. after exec) or now unreadable: the
		// maps say which.
		s.relocate(pid, p, now)
	case errors.Is(err, procmem.ErrProcessGone):
		s.count(err)
		s.forget(pid, p, reasonExited, now)
	default: // torn, permission: try again next scan
		s.count(err)
	}
}

func (s *scanner) relocate(pid int, p *process, now time.Time) {
	m, err := s.reader.FindMapping(pid)
	switch {
	case errors.Is(err, procmem.ErrNoContext):
		s.count(err)
		s.unpublish(pid, p, reasonUnpublished, now)
		return
	case errors.Is(err, procmem.ErrProcessGone):
		s.count(err)
		s.forget(pid, p, reasonExited, now)
		return
	case err != nil:
		s.count(err)
		return
	}
	ctx, err := s.reader.ReadContext(pid, m.Start)
	switch {
	case err == nil:
		s.publish(pid, p, m.Start, ctx, now)
	case errors.Is(err, procmem.ErrTorn), errors.Is(err, procmem.ErrPermissionDenied):
		s.count(err)
	default:
		s.count(err)
		s.debugf("pid %d: %v", pid, err)
		s.unpublish(pid, p, reasonInvalid, now)
	}
}

// publish records a context read and emits its state event.
func (s *scanner) publish(pid int, p *process, addr uint64, ctx procmem.Context, now time.Time) {
	// Read the identity with every new context: an exec replaces both.
	id, err := s.ids.Identity(pid)
	if err != nil || id.StartTicks != p.start {
		s.outcomes[metadata.OutcomeGone]++
		return
	}
	s.outcomes[metadata.OutcomeOK]++
	p.publisher = true
	p.denied = false
	p.publication = &publication{addr: addr, publishedAt: ctx.PublishedAt, reportedAt: now, identity: id, ctx: ctx}
	s.events.state(now, id, ctx)
	s.registry.Store(&registry.Process{Key: registry.Key{PID: pid, StartTicks: p.start}, Identity: id, Context: ctx})
}

// unpublish turns a publisher back into a process without a context.
func (s *scanner) unpublish(pid int, p *process, reason string, now time.Time) {
	if !p.publisher {
		return
	}
	s.events.delete(now, p.identity, reason)
	key := registry.Key{PID: pid, StartTicks: p.start}
	s.registry.Exited(key, now)
	s.exited = append(s.exited, exitedKey{key, now})
	p.publisher = false
	p.publication = nil
	p.checkedAt = now
	p.rechecks = 0 // it may publish again soon
}

// forget drops a process that exited (or whose pid was reused).
func (s *scanner) forget(pid int, p *process, reason string, now time.Time) {
	s.unpublish(pid, p, reason, now)
	delete(s.tracked, pid)
}

func (s *scanner) forgetExited(now time.Time) {
	n := 0
	for n < len(s.exited) && now.Sub(s.exited[n].at) >= exitedRetention {
		s.registry.Forget(s.exited[n].key)
		n++
	}
	s.exited = s.exited[n:]
}

// warnDenied logs at most one warning per report interval about the
// processes that could not be read for lack of permission.
func (s *scanner) warnDenied(now time.Time, denied int) {
	if denied == 0 || (!s.lastWarn.IsZero() && now.Sub(s.lastWarn) < s.cfg.ReportInterval) {
		return
	}
	s.lastWarn = now
	s.logger.Warn("Cannot read the process context of some processes: permission denied",
		zap.Int("processes", denied),
		zap.String("needs", missingCapability),
		zap.Duration("next_warning_in", s.cfg.ReportInterval))
}

// count records the outcome of a failed read.
func (s *scanner) count(err error) {
	s.outcomes[outcomeOf(err)]++
}

func outcomeOf(err error) string {
	switch {
	case err == nil:
		return metadata.OutcomeOK
	case errors.Is(err, procmem.ErrNoContext):
		return metadata.OutcomeNoContext
	case errors.Is(err, procmem.ErrPermissionDenied):
		return metadata.OutcomePermissionDenied
	case errors.Is(err, procmem.ErrProcessGone):
		return metadata.OutcomeGone
	case errors.Is(err, procmem.ErrTorn):
		return metadata.OutcomeTorn
	case errors.Is(err, procmem.ErrInvalid):
		return metadata.OutcomeInvalid
	case errors.Is(err, procmem.ErrTooLarge):
		return metadata.OutcomeTooLarge
	}
	return metadata.OutcomeError
}

func (s *scanner) debugf(format string, args ...any) {
	if ce := s.logger.Check(zap.DebugLevel, "Unreadable process context"); ce != nil {
		ce.Write(zap.String("reason", fmt.Sprintf(format, args...)))
	}
}
