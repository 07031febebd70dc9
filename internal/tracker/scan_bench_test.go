// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/naive"
	"github.com/processctx/otelcol-processctx/internal/reader"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

// newNaiveScanner returns the baseline (internal/naive) reading the fleet.
func newNaiveScanner(b *testing.B, f *fleet) *naive.Scanner {
	b.Helper()
	n, err := naive.New(f.pids)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func naiveScan(b *testing.B, n *naive.Scanner, publishers int) {
	b.Helper()
	got, err := n.Scan()
	if err != nil {
		b.Fatal(err)
	}
	if got.Contexts != publishers {
		b.Fatalf("naive scan read %d contexts (%d met mid-update), want %d", got.Contexts, got.Torn, publishers)
	}
}

// benchTracker is a tracker of this host on a clock the benchmark moves.
type benchTracker struct {
	tr     *tracker.Tracker
	reader *reader.Reader
	clock  *trackertest.Clock
	cfg    hostopen.Config
	sub    *trackertest.Recorder
}

// newBenchTracker starts a tracker of this host and waits for its first
// scan. tune changes the defaults.
func newBenchTracker(b *testing.B, tune func(*hostopen.Config)) *benchTracker {
	b.Helper()
	bt := startBenchTracker(b, tune)
	<-bt.tr.Ready()
	bt.sub.Take()
	return bt
}

func startBenchTracker(b *testing.B, tune func(*hostopen.Config)) *benchTracker {
	b.Helper()
	cfg := hostopen.DefaultConfig()
	cfg.CollectionInterval = 1000 * time.Hour // the benchmark drives the scans
	cfg.Discovery = hostopen.DiscoveryPoll
	if tune != nil {
		tune(&cfg)
	}
	clock := trackertest.NewClock()
	// Opened as the components open theirs: with the event sources that
	// cfg.Discovery asks for.
	tr, err := hostopen.Open(cfg, zap.NewNop(), tracker.WithClock(clock.Now))
	if err != nil {
		b.Fatal(err)
	}
	host := tr.Host()
	tr.Start()
	b.Cleanup(func() { _ = tr.Stop(context.Background()) })
	sub := trackertest.Subscribe(b, tr)
	return &benchTracker{tr: tr, reader: hostopen.ReaderOf(host), clock: clock, cfg: cfg, sub: sub}
}

// scan moves the clock by a scan interval and waits for a scan.
func (bt *benchTracker) scan(b *testing.B) {
	bt.clock.Advance(10 * time.Second)
	if err := bt.tr.Rescan(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// contexts counts the published contexts (the processes named by their
// environment have none to refresh).
func (bt *benchTracker) contexts() int {
	n := 0
	bt.tr.Snapshot().All(func(p *tracker.Publication) bool {
		if p.Live() && p.Source == tracker.SourceContext {
			n++
		}
		return true
	})
	return n
}

// readsBesides counts the reads of the scans in stats with another outcome
// than o.
func readsBesides(stats []tracker.ScanStats, o tracker.Outcome) int64 {
	var n int64
	for _, s := range stats {
		for i, c := range s.Reads {
			if tracker.Outcome(i) != o {
				n += c
			}
		}
	}
	return n
}

// publishers counts the fleet's live publications.
func (bt *benchTracker) publishers(f *fleet) int {
	n := 0
	for _, p := range f.publishers {
		if got, _ := bt.tr.Snapshot().Lookup(p.Pid); got != nil && got.Live() {
			n++
		}
	}
	return n
}

// noRescan: no late-publisher rescan falls due during a benchmark, so that
// a scan costs exactly what nothing changed costs.
func noRescan(cfg *hostopen.Config) {
	cfg.RescanInterval = 1000 * time.Hour
	cfg.RescanMaxInterval = 1000 * time.Hour
	// Nor a quarantine's retry: the largest maps files, read at discovery
	// on a loaded machine, must not stall.
	cfg.ReadTimeout = time.Minute
}

// scenario is one kind of scan: prepare (untimed) sets the host up and
// returns the reader whose counters the scan moves, scan is what is
// measured, finish (untimed) checks it.
type scenario struct {
	prepare func() statser
	scan    func()
	finish  func()
}

// run measures sc with b.Loop. Unless it is the baseline itself, naive
// scans are interleaved (untimed) whenever the baseline has had less CPU
// time than the scenario, so that the ratio compares the two under the same
// conditions on a shared machine; it is reported as baseline/scan (the
// baseline's CPU time per scan over the scenario's: 20 means 20x cheaper).
func (sc scenario) run(b *testing.B, f *fleet, baseline bool) *meter {
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
			bm.measure(naive, func() { naiveScan(b, naive, len(f.publishers)) })
		}
		b.StartTimer()
	}
	b.StopTimer()
	m.report(b)
	if !baseline {
		b.ReportMetric(bm.cpuPerScan()/m.cpuPerScan(), "baseline/scan")
	}
	return m
}

// BenchmarkScan measures the tracker's scan of this host with a fleet of
// real processes on it (by default 1,000: 100 Go publishers, 5 idle
// processes with 50,000 mappings, the rest idle C processes): per scan,
// CPU time of the process (user+sys, every thread), bytes read from procfs
// and maps files, reads of remote memory, against the naive baseline
// measured in the same run; and, for "memory", the live heap per tracked
// process. The tracker tracks every process of the host (the fleet and the
// others); the baseline reads only the fleet.
func BenchmarkScan(b *testing.B) {
	f := startFleet(b)
	pubs := len(f.publishers)

	b.Run("baseline", func(b *testing.B) {
		n := newNaiveScanner(b, f)
		scenario{
			prepare: func() statser { return n },
			scan:    func() { naiveScan(b, n, pubs) },
			finish:  func() {},
		}.run(b, f, true)
	})

	// First scan of the host by a new tracker: the start time and maps of
	// every process, the context and identity of every publisher.
	b.Run("discovery", func(b *testing.B) {
		var bt *benchTracker
		scenario{
			prepare: func() statser {
				bt = startBenchTracker(b, nil)
				return bt.reader
			},
			scan: func() { <-bt.tr.Ready() },
			finish: func() {
				if got := bt.publishers(f); got != pubs {
					b.Fatalf("%d publishers found, want %d", got, pubs)
				}
				_ = bt.tr.Stop(context.Background())
			},
		}.run(b, f, false)
	})

	// Discovery with the environment a source (the default) against
	// discovery of contexts only, alternated in one run: what reading
	// every process's environment once costs (target: at most 1.15x).
	b.Run("discovery-environment", func(b *testing.B) {
		with, without := newMeter(b), newMeter(b)
		for b.Loop() {
			for _, env := range []bool{false, true} {
				b.StopTimer()
				bt := startBenchTracker(b, func(cfg *hostopen.Config) {
					if !env {
						cfg.Sources = []tracker.Source{tracker.SourceContext}
					}
				})
				m := without
				if env {
					m = with
				}
				b.StartTimer()
				m.measure(bt.reader, func() { <-bt.tr.Ready() })
				b.StopTimer()
				if got := bt.publishers(f); got != pubs {
					b.Fatalf("%d publishers found, want %d", got, pubs)
				}
				if env {
					for _, c := range f.envServices {
						if p, _ := bt.tr.Snapshot().Lookup(c.Process.Pid); p == nil || p.Source != tracker.SourceEnvironment {
							b.Fatalf("pid %d: not named by its environment", c.Process.Pid)
						}
					}
				}
				_ = bt.tr.Stop(context.Background())
				b.StartTimer()
			}
		}
		b.ReportMetric(float64(without.cpu.Microseconds())/float64(without.scans)/1000, "ms-cpu/context-only")
		b.ReportMetric(float64(with.cpu.Microseconds())/float64(with.scans)/1000, "ms-cpu/with-environment")
		b.ReportMetric(with.cpuPerScan()/without.cpuPerScan(), "environment/context-only")
	})

	// Nothing changed and no rescan is due: the listing and one 8-byte read
	// per publisher; no stat, maps file or payload.
	b.Run("steady", func(b *testing.B) {
		bt := newBenchTracker(b, noRescan)
		publications := bt.contexts()
		var others int64
		m := scenario{
			prepare: func() statser { return bt.reader },
			scan:    func() { bt.scan(b) },
			finish: func() {
				changes, stats := bt.sub.Take()
				if n := f.changesOfItsOwn(changes); n != 0 {
					b.Fatalf("%d changes of the fleet in steady state", n)
				}
				others += readsBesides(stats, tracker.OutcomeUnchanged)
			},
		}.run(b, f, false)
		// The host's other processes come and go (a compiler, a test): the
		// processes new to a scan are read, nothing else.
		if m.reader.MapsFiles > uint64(others) || others == 0 && m.reader.MemoryBytes != uint64(8*publications*m.scans) {
			b.Fatalf("steady state read %d maps files and %d bytes of memory in %d scans of %d published contexts (%d reads of processes new on the host)",
				m.reader.MapsFiles, m.reader.MemoryBytes, m.scans, publications, others)
		}
	})

	// Nothing changed, default settings and cadence (a scan every 10s,
	// rescan 30s, budget 256): processes without a context are looked at
	// again for late publishers. With 900 of them, more fall due per scan
	// than the budget allows at first.
	b.Run("steady-defaults", func(b *testing.B) {
		bt := newBenchTracker(b, nil)
		for range 4 { // past the first rescan interval
			bt.scan(b)
		}
		bt.sub.Take()
		scenario{
			prepare: func() statser { return bt.reader },
			scan:    func() { bt.scan(b) },
			finish:  func() { bt.sub.Take() },
		}.run(b, f, false)
	})

	// The same with events (default discovery, auto: the proc connector and
	// the eBPF program, which need root here): scans list the host and
	// find what events missed; the publishers' timestamps and the maps of
	// the others are read once per reconcile interval (1 h).
	b.Run("steady-defaults-events", func(b *testing.B) {
		bt := newBenchTracker(b, func(cfg *hostopen.Config) { cfg.Discovery = hostopen.DiscoveryAuto })
		if live := bt.tr.LiveSources(); live != tracker.ProcessEvents|tracker.PublicationEvents {
			b.Skipf("events unavailable here (live: %s): run as root", live)
		}
		for range 4 {
			bt.scan(b)
		}
		bt.sub.Take()
		scenario{
			prepare: func() statser { return bt.reader },
			scan:    func() { bt.scan(b) },
			finish:  func() { bt.sub.Take() },
		}.run(b, f, false)
	})

	// 10% of the publishers updated their context since the last scan:
	// each costs a header, payload and decode and an identity read; the
	// others one 8-byte read.
	b.Run("update-10pct", func(b *testing.B) {
		if pubs == 0 {
			b.Skip("no publishers in the fleet")
		}
		bt := newBenchTracker(b, noRescan)
		updated := max(pubs/10, 1)
		var others int64
		next := 0
		m := scenario{
			prepare: func() statser {
				for range updated {
					f.update(next)
					next = (next + 1) % pubs
				}
				return bt.reader
			},
			scan: func() { bt.scan(b) },
			finish: func() {
				changes, stats := bt.sub.Take()
				if n := f.changesOfItsOwn(changes); n != updated {
					b.Fatalf("%d changes of the fleet, want %d", n, updated)
				}
				others += readsBesides(stats, tracker.OutcomeUnchanged) - int64(updated)
			},
		}.run(b, f, false)
		// Besides the reads of processes new on the host, none.
		if m.reader.MapsFiles > uint64(max(others, 0)) {
			b.Fatalf("updates read %d maps files (%d reads of processes new on the host)", m.reader.MapsFiles, others)
		}
	})

	// Live heap per tracked process after a discovery (runtime.GC, then
	// HeapAlloc before the tracker is created and after its first scan):
	// the host's processes without a context, and the publishers.
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

// measureMemory returns the live heap per process without a context and
// per publisher: the heap a tracker of this host holds after its discovery
// (its changes handed off, as a receiver does), then again once the
// fleet's publishers have unpublished (and their retention, 0 here, has
// passed). The difference is the publishers'; the rest, over the host's
// processes, the cost of one without a context.
func measureMemory(b *testing.B, f *fleet) (perIdle, perPub float64) {
	b.Helper()
	before := heapInUse()
	bt := startBenchTracker(b, func(cfg *hostopen.Config) { noRescan(cfg); cfg.GracePeriod = 0 })
	<-bt.tr.Ready()
	_, stats := bt.sub.Take()
	if len(stats) == 0 {
		b.Fatal("no scan summary")
	}
	processes := stats[len(stats)-1].Processes
	withPublishers := heapInUse()
	for _, p := range f.publishers {
		p.Unpublish()
	}
	for range 3 {
		bt.scan(b)
	}
	bt.sub.Take()
	if got := bt.publishers(f); got != 0 {
		for _, p := range f.publishers {
			if got, o := bt.tr.Snapshot().Lookup(p.Pid); got != nil {
				b.Logf("pid %d: %s live=%v", p.Pid, o, got.Live())
			}
		}
		b.Fatalf("%d publishers left after unpublishing", got)
	}
	without := heapInUse()
	_ = bt.tr.Stop(context.Background())
	for i := range f.publishers {
		f.republish(i)
	}
	perPub = (float64(withPublishers) - float64(without)) / float64(len(f.publishers))
	perIdle = (float64(without) - float64(before)) / float64(processes)
	return perIdle, perPub
}
