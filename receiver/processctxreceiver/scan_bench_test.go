package processctxreceiver

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/procmem"
	"github.com/processctx/otelcol-processctx/internal/registry"
)

// naiveScanner is the baseline: what a reader without caching does. Every
// scan lists the procfs and, for every process, reads its maps file and,
// when it publishes, its whole context (header, payload, decode). It is
// given the fleet's pids for free (no filter cost): the comparison favours
// the baseline.
type naiveScanner struct {
	reader   *procmem.Reader
	fleet    map[int]bool
	contexts map[int]procmem.Context // what it would report
}

func newNaiveScanner(b *testing.B, f *fleet) *naiveScanner {
	b.Helper()
	fs, err := procmem.NewFS("/")
	if err != nil {
		b.Fatal(err)
	}
	r, err := procmem.NewReader(fs, procmem.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	return &naiveScanner{reader: r, fleet: f.pids, contexts: map[int]procmem.Context{}}
}

func (n *naiveScanner) scan() (publishers int, err error) {
	dir, err := os.Open(n.reader.FS().ProcDir())
	if err != nil {
		return 0, err
	}
	names, err := dir.Readdirnames(-1)
	_ = dir.Close()
	if err != nil {
		return 0, err
	}
	clear(n.contexts)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || !n.fleet[pid] {
			continue
		}
		ctx, _, err := n.reader.Read(pid)
		switch {
		case err == nil:
			n.contexts[pid] = ctx
			publishers++
		case errors.Is(err, procmem.ErrNoContext):
		default:
			return publishers, err
		}
	}
	return publishers, nil
}

// benchScanner returns a scanner restricted to the fleet's executables.
func benchScanner(b *testing.B, f *fleet, include []string, tune func(*Config)) *scanner {
	b.Helper()
	cfg := createDefaultConfig()
	cfg.Include.Executables = include
	if tune != nil {
		tune(cfg)
	}
	fs, err := procmem.NewFS(cfg.RootPath)
	if err != nil {
		b.Fatal(err)
	}
	s, err := newScanner(cfg, fs, registry.New(), zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// noRescan: no late-publisher rescan nor periodic report falls due during
// a benchmark, so that a scan costs exactly what nothing changed costs.
func noRescan(cfg *Config) {
	cfg.RescanInterval = 1000 * time.Hour
	cfg.RescanMaxInterval = 1000 * time.Hour
	cfg.ReportInterval = 1000 * time.Hour
}

func mustScan(b *testing.B, s *scanner, now time.Time, publishers int) scanResult {
	b.Helper()
	res, err := s.scan(context.Background(), now)
	if err != nil {
		b.Fatal(err)
	}
	if res.publishers != publishers {
		b.Fatalf("scan found %d publishers, want %d", res.publishers, publishers)
	}
	return res
}

// scenario is one kind of scan: prepare (untimed) sets the host up and
// returns the reader whose counters the scan moves, scan is what is
// measured, finish (untimed) checks and drains its events.
type scenario struct {
	prepare func() *procmem.Reader
	scan    func()
	finish  func()
}

// run measures sc with b.Loop. Unless it is the baseline itself, naive
// scans are interleaved (untimed) whenever the baseline has had less CPU
// time than the scenario, so that the ratio compares the two under the same
// conditions on a shared machine; it is reported as baseline/scan (the
// baseline's CPU time per scan over the scenario's: 20 means 20x cheaper).
// Syscalls are counted afterwards, in a few extra rounds.
func (sc scenario) run(b *testing.B, f *fleet, baseline bool) *meter {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	naive := newNaiveScanner(b, f)
	naiveScan(b, naive, len(f.publishers)) // warm caches and buffers
	m, bm := newMeter(b), newMeter(b)
	for b.Loop() {
		b.StopTimer()
		r := sc.prepare()
		b.StartTimer()
		m.measure(r, sc.scan)
		b.StopTimer()
		sc.finish()
		if !baseline && bm.cpu <= m.cpu {
			bm.measure(naive.reader, func() { naiveScan(b, naive, len(f.publishers)) })
		}
		b.StartTimer()
	}
	b.StopTimer()
	m.report(b)
	if !baseline {
		b.ReportMetric(bm.cpuPerScan()/m.cpuPerScan(), "baseline/scan")
	}
	if n := countSyscalls(b, 3, sc.prepare, sc.scan, sc.finish); n >= 0 {
		b.ReportMetric(n, "syscalls/scan")
	}
	return m
}

// BenchmarkScan measures the receiver's scan over a fleet of real processes
// (by default 1,000: 100 Go publishers, 5 idle processes with 50,000
// mappings, the rest idle C processes): per scan, CPU time of the process
// (user+sys), syscalls of the scanning thread, bytes read from procfs and
// maps files, reads of remote memory, against the naive baseline measured
// in the same run; and, for "memory", the live heap per tracked process.
//
// The scanner is restricted to the fleet with include.executables: other
// processes on the host are listed each scan (as on a real host) but are
// not read further.
func BenchmarkScan(b *testing.B) {
	f := startFleet(b)
	pubs := len(f.publishers)

	b.Run("baseline", func(b *testing.B) {
		n := newNaiveScanner(b, f)
		scenario{
			prepare: func() *procmem.Reader { return n.reader },
			scan:    func() { naiveScan(b, n, pubs) },
			finish:  func() {},
		}.run(b, f, true)
	})

	// First discovery of the whole host by a new scanner: start time and
	// identity of every process (the include filter), a maps scan of every
	// selected process, a full read of every context.
	b.Run("discovery", func(b *testing.B) {
		var s *scanner
		scenario{
			prepare: func() *procmem.Reader {
				s = benchScanner(b, f, f.include, nil)
				return s.reader
			},
			scan: func() { mustScan(b, s, time.Now(), pubs) },
			finish: func() {
				if got := s.events.take().LogRecordCount(); got != pubs {
					b.Fatalf("%d state events, want %d", got, pubs)
				}
			},
		}.run(b, f, false)
		b.ReportMetric(float64(len(s.tracked)), "tracked")
	})

	// Nothing changed and no rescan is due: the listing and one 8-byte read
	// per publisher; no stat, maps file or payload.
	b.Run("steady", func(b *testing.B) {
		s := benchScanner(b, f, f.include, noRescan)
		now := time.Now()
		mustScan(b, s, now, pubs)
		s.events.take()
		m := scenario{
			prepare: func() *procmem.Reader {
				now = now.Add(s.cfg.CollectionInterval)
				return s.reader
			},
			scan: func() { mustScan(b, s, now, pubs) },
			finish: func() {
				if n := s.events.len(); n != 0 {
					b.Fatalf("%d events in steady state", n)
				}
			},
		}.run(b, f, false)
		if m.reader.MapsFiles != 0 || m.reader.MemoryBytes != uint64(8*pubs*m.scans) {
			b.Fatalf("steady state read %d maps files and %d bytes of memory in %d scans",
				m.reader.MapsFiles, m.reader.MemoryBytes, m.scans)
		}
	})

	// Nothing changed, default settings and cadence (collection 10s,
	// rescan 30s, budget 256, report 5m): processes without a context are
	// looked at again for late publishers. With 900 of them, more fall due
	// per scan than the budget allows, so every scan reads rescan_budget
	// maps files; every 30th scan re-reports every publisher.
	b.Run("steady-defaults", func(b *testing.B) {
		s := benchScanner(b, f, f.include, nil)
		now := time.Now()
		for range 4 { // past the first rescan interval
			mustScan(b, s, now, pubs)
			s.events.take()
			now = now.Add(s.cfg.CollectionInterval)
		}
		scenario{
			prepare: func() *procmem.Reader {
				now = now.Add(s.cfg.CollectionInterval)
				return s.reader
			},
			scan:   func() { mustScan(b, s, now, pubs) },
			finish: func() { s.events.take() },
		}.run(b, f, false)
	})

	// 10% of the publishers updated their context since the last scan:
	// each costs a header, payload and decode, an identity read and an
	// event; the others one 8-byte read.
	b.Run("update-10pct", func(b *testing.B) {
		if pubs == 0 {
			b.Skip("no publishers in the fleet")
		}
		s := benchScanner(b, f, f.include, noRescan)
		now := time.Now()
		mustScan(b, s, now, pubs)
		s.events.take()
		updated := max(pubs/10, 1)
		next := 0
		m := scenario{
			prepare: func() *procmem.Reader {
				for range updated {
					f.update(next)
					next = (next + 1) % pubs
				}
				now = now.Add(s.cfg.CollectionInterval)
				return s.reader
			},
			scan: func() { mustScan(b, s, now, pubs) },
			finish: func() {
				if got := s.events.take().LogRecordCount(); got != updated {
					b.Fatalf("%d state events, want %d", got, updated)
				}
			},
		}.run(b, f, false)
		if m.reader.MapsFiles != 0 {
			b.Fatalf("updates read %d maps files", m.reader.MapsFiles)
		}
	})

	// Live heap per tracked process after a discovery (runtime.GC, then
	// HeapAlloc before the scanner is created and after its first scan,
	// events handed off): once with only the idle processes selected, once
	// with only the publishers. Every other pid of the host is tracked too
	// (as ignored, the same record as a process without a context).
	b.Run("memory", func(b *testing.B) {
		var idleBytes, pubBytes float64
		iterations := 0
		for b.Loop() { // timed throughout: b.Loop sizes its runs by the timer
			perIdle, perPub := measureMemory(b, f)
			idleBytes += perIdle
			pubBytes += perPub
			iterations++
		}
		n := float64(iterations)
		b.ReportMetric(idleBytes/n, "heap-B/idle")
		b.ReportMetric(pubBytes/n, "heap-B/publisher")
		b.ReportMetric(float64(f.payloadBytes), "payload-B")
		b.ReportMetric(pubBytes/n-float64(f.payloadBytes), "heap-B/publisher-payload")
	})
}

func naiveScan(b *testing.B, n *naiveScanner, publishers int) {
	b.Helper()
	got, err := n.scan()
	if err != nil {
		b.Fatal(err)
	}
	if got != publishers {
		b.Fatalf("naive scan read %d contexts, want %d", got, publishers)
	}
}

// measureMemory returns the live heap per process without a context and per
// publisher, from two fresh scanners.
func measureMemory(b *testing.B, f *fleet) (perIdle, perPub float64) {
	b.Helper()
	discover := func(include string, publishers int) (delta float64, tracked int) {
		before := heapInUse()
		s := benchScanner(b, f, []string{include}, nil)
		mustScan(b, s, time.Now(), publishers)
		s.events.take()
		after := heapInUse()
		tracked = len(s.tracked)
		runtime.KeepAlive(s)
		return float64(after) - float64(before), tracked
	}
	idleDelta, idleTracked := discover(f.idleName, 0)
	perIdle = idleDelta / float64(idleTracked)
	if len(f.publishers) == 0 {
		return perIdle, 0
	}
	pubDelta, pubTracked := discover(f.pubName, len(f.publishers))
	others := pubTracked - len(f.publishers)
	perPub = (pubDelta - perIdle*float64(others)) / float64(len(f.publishers))
	return perIdle, perPub
}
