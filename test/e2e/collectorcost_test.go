// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	promfs "github.com/prometheus/procfs"

	"github.com/processctx/otelcol-processctx/internal/naive"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// BenchmarkCollector is what the built collector costs a host, measured
// the way the host pays for it: the CPU time of the collector process
// (its threads' schedstat, to the nanosecond: usage) over fixed windows,
// beside the naive reader (internal/naive, run as a process of its own:
// every second, every process's maps file and any context's header and
// payload) in the same run over the same processes.
//
// The collector under test runs at the extension's defaults, as the
// distribution ships it: what a host pays. Beside it, in the same windows,
// the same build runs with collection_interval 1s (figures "-1s"): the
// naive reader's cadence, at which the issue measured (an update of a
// context seen within a second by both; at the defaults within 10 s, while
// exits and execs come as events within milliseconds either way). Each
// exports its entity events over OTLP, configured as the deployments do
// (exportingAsDeployed), to a server on loopback in this process, which
// checks that every publisher was reported: an exporter as cheap as the
// debug exporter, and a check that the collector did its job.
//
// For each host size (COLLECTORBENCH_SIZES, default 400 and 4,000
// processes in the shape of the tracker's scan benchmark's fleet: a tenth
// publishing, half C and half Go, a quarter of those updating every 10 s;
// five in a thousand idle with COLLECTORBENCH_BIG_MAPPINGS (50,000)
// mappings; a twentieth named by their environment; the rest idle C
// processes), on one set of collectors:
//
//   - young: the fleet starts (the collectors run already): their CPU from
//     the first start to COLLECTORBENCH_YOUNG (60 s) after the last, the
//     young reads (1, 3, 8, 18 and 38 s after each exec) included;
//   - steady: the next COLLECTORBENCH_STEADY (60 s), the young reads over:
//     each collector's CPU per second, the naive reader's per scan (one
//     scan a second, driven from here);
//   - churn: COLLECTORBENCH_CHURN_RATE (50) short-lived processes a second
//     (0.2–2 s each, a fifth publishing) for COLLECTORBENCH_CHURN (30 s)
//     beside the fleet, until the last has exited;
//   - brief: as many a second, each living 0.2 s (it exits before its first
//     young read), for COLLECTORBENCH_BRIEF (30 s).
//
// A collector reads every process of the host, other people's too: a build
// beside it costs it more than the fleet does. Each window counts the
// host's forks (threads included, /proc/stat); a steady window with more
// than quietForks a second of them is measured again, up to
// COLLECTORBENCH_STEADY_TRIES (3) times, and the quietest kept.
//
// Figures (b.ReportMetric): naive/collector-x (the steady ratio: the naive
// reader's CPU per second over the collector's), cpu-us/young-proc (the
// young window's CPU over the steady rate, per process of the fleet),
// cpu-us/short-lived-proc (the churn window's over the steady rate, per
// process started), cpu-us/brief-proc (the brief window's, alike),
// cpu-ms/s-steady; the collector's context switches (its threads' sleeps
// and wake-ups) alike: wakeups/s-steady, wakeups/young-proc,
// wakeups/short-lived-proc, wakeups/brief-proc; naive-cpu-ms/s and
// host-forks/s (in the steady window); on the second size, how each total
// grew from the first (steady-growth-x, young-growth-x, churn-growth-x,
// brief-growth-x).
//
// COLLECTORBENCH_BESIDE names other collector builds (comma-separated) run
// beside, at the defaults, in the same windows: before and after a change
// in one run, the neighbours' load the same for both. Their figures carry
// "-beside" ("-beside2", ...).
//
// COLLECTORBENCH_PROFILES names a directory where each window's CPU
// profile is kept (collector-N-WINDOW.pb.gz, N the host size) with its picture
// (.svg, go tool pprof -svg: graphviz's dot): those of one more collector
// at the defaults, the same build as the one under test, with the pprof
// extension (figures "-profiled"), whose profile is taken in chunks back
// to back (profiler); the one under test is not profiled, so that its
// figures are what a host pays.
//
// Checks, of the collector under test, with windows at least as long as
// the defaults and a quiet host (checkGoals): the steady ratio at least
// 70x at 400 processes (20x at other sizes), that of the -1s collector at
// least 30x at 400; per young process at most 150 µs, per short-lived one
// 100 µs, per brief one 50 µs; and no total grows faster than the
// processes (checkGrowth). Every run checks what it did: every publisher
// reported by every collector, every context read by the naive reader,
// every short-lived process exited 0. Shorter windows (make bench-check)
// give figures that mean nothing.
func BenchmarkCollector(b *testing.B) {
	pubtest.RequireRoot(b)
	p := collectorBenchParameters(b)
	bin := p.binary
	if bin == "" {
		bin = collectorBinary(b)
	}
	cols := []collectorSpec{{"", bin, ""}, {"-1s", bin, "    collection_interval: 1s"}}
	for i, other := range p.beside {
		suffix := "-beside"
		if i > 0 {
			suffix += strconv.Itoa(i + 1)
		}
		cols = append(cols, collectorSpec{suffix, other, ""})
	}
	if p.profiles != "" {
		cols = append(cols, collectorSpec{"-profiled", bin, ""})
	}
	tools := buildFleetTools(b)
	var first *hostCost
	for _, size := range p.sizes {
		b.Run(fmt.Sprintf("procs=%d", size), func(b *testing.B) {
			var c hostCost
			for range b.N {
				c = measureHost(b, p, cols, tools, size)
			}
			for i := range cols {
				c.report(b, i)
			}
			c.checkGoals(b, p)
			if first != nil {
				for i := range cols {
					checkGrowth(b, p, *first, &c, i)
				}
			} else {
				first = &c
			}
			c.printSummary()
		})
	}
}

// collectorSpec is a collector the benchmark runs: its figures' suffix,
// binary and extension settings (YAML lines at their indentation).
type collectorSpec struct {
	suffix, bin, settings string
}

// collectorBenchParams are one run's host sizes and windows.
type collectorBenchParams struct {
	binary               string   // COLLECTORBENCH_BINARY (default bin/otelcol-processctx)
	beside               []string // COLLECTORBENCH_BESIDE
	sizes                []int
	young, steady, churn time.Duration
	brief                time.Duration
	churnRate            int
	profiles             string // COLLECTORBENCH_PROFILES
	steadyTries          int
	bigMappings          int
}

// full reports whether the windows are long enough for the figures'
// checks: the defaults' or longer.
func (p collectorBenchParams) full() bool {
	return p.young >= time.Minute && p.steady >= time.Minute && p.churn >= 30*time.Second && p.brief >= 30*time.Second
}

func collectorBenchParameters(b *testing.B) collectorBenchParams {
	b.Helper()
	p := collectorBenchParams{
		binary:      os.Getenv("COLLECTORBENCH_BINARY"),
		sizes:       []int{400, 4000},
		young:       pubtest.EnvDuration(b, "COLLECTORBENCH_YOUNG", time.Minute),
		steady:      pubtest.EnvDuration(b, "COLLECTORBENCH_STEADY", time.Minute),
		churn:       pubtest.EnvDuration(b, "COLLECTORBENCH_CHURN", 30*time.Second),
		brief:       pubtest.EnvDuration(b, "COLLECTORBENCH_BRIEF", 30*time.Second),
		profiles:    os.Getenv("COLLECTORBENCH_PROFILES"),
		churnRate:   pubtest.EnvInt(b, "COLLECTORBENCH_CHURN_RATE", 50),
		steadyTries: pubtest.EnvInt(b, "COLLECTORBENCH_STEADY_TRIES", 3),
		bigMappings: pubtest.EnvInt(b, "COLLECTORBENCH_BIG_MAPPINGS", 50_000),
	}
	if v := os.Getenv("COLLECTORBENCH_BESIDE"); v != "" {
		p.beside = strings.Split(v, ",")
	}
	if v := os.Getenv("COLLECTORBENCH_SIZES"); v != "" {
		p.sizes = nil
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 20 {
				b.Fatalf("COLLECTORBENCH_SIZES=%q: want sizes of at least 20 processes, separated by commas", v)
			}
			p.sizes = append(p.sizes, n)
		}
	}
	return p
}

// window is one measured stretch of time: the CPU time and the context
// switches of each collector (the one under test first) and the forks on
// the host meanwhile.
type window struct {
	from, to time.Time
	d        time.Duration
	cpu      []time.Duration
	switches []uint64
	forks    uint64
}

// sub returns w with the measures of the processes from i on only.
func (w window) sub(i int) window {
	w.cpu, w.switches = w.cpu[i:], w.switches[i:]
	return w
}

// forkRate is the host's forks a second in w, less ours.
func (w window) forkRate(ours uint64) float64 {
	return float64(w.forks-min(ours, w.forks)) / w.d.Seconds()
}

// hostCost is what one host size measured.
type hostCost struct {
	size                        int
	notes                       []string // for the summary
	suffixes                    []string // of the collectors' figures, the one under test first
	young, steady, churn, brief window
	fleetForks                  uint64        // forks of the fleet's start: its processes and their threads
	naive                       time.Duration // CPU of the naive reader in the steady window
	scans                       int           // its scans there, one a second
	started, briefStarted       int           // processes started in the churn and brief windows
}

// tick is a clock tick of /proc/<pid>/stat.
const tick = time.Second / procfs.ClockTicks

// quietForks is the host's forks a second (threads included, ours not)
// below which a window is quiet: other people's processes cost the
// collector too little to move its figures. Each of their processes costs
// it its events and reads (some hundreds of µs), each thread an event.
const quietForks = 2.0

func (c hostCost) quiet() bool {
	return c.steady.forkRate(0) <= quietForks && c.young.forkRate(c.fleetForks) <= quietForks &&
		c.churn.forkRate(uint64(c.started)) <= quietForks && c.brief.forkRate(uint64(c.briefStarted)) <= quietForks
}

// steadyRate is collector i's steady CPU per second of wall time.
func (c hostCost) steadyRate(i int) time.Duration {
	return time.Duration(float64(c.steady.cpu[i]) / c.steady.d.Seconds())
}

// steadyWakeups is collector i's context switches a second in the steady
// window.
func (c hostCost) steadyWakeups(i int) float64 {
	return float64(c.steady.switches[i]) / c.steady.d.Seconds()
}

// naiveRate is the naive reader's CPU per second (per scan: it scans once
// a second).
func (c hostCost) naiveRate() time.Duration {
	return c.naive / time.Duration(max(c.scans, 1))
}

// ratio is collector i's steady ratio, naive/collector (0 when it spent
// nothing: too short a window to tell).
func (c hostCost) ratio(i int) float64 {
	if c.steady.cpu[i] <= 0 {
		return 0
	}
	return float64(c.naiveRate()) / float64(c.steadyRate(i))
}

// over returns collector i's CPU in w beyond its steady rate.
func (c hostCost) over(w window, i int) time.Duration {
	return w.cpu[i] - time.Duration(float64(c.steadyRate(i))*w.d.Seconds())
}

// wakeupsOver returns collector i's context switches in w beyond its
// steady rate.
func (c hostCost) wakeupsOver(w window, i int) float64 {
	return float64(w.switches[i]) - c.steadyWakeups(i)*w.d.Seconds()
}

func (c hostCost) perYoung(i int) time.Duration { return c.over(c.young, i) / time.Duration(c.size) }
func (c hostCost) perShortLived(i int) time.Duration {
	return c.over(c.churn, i) / time.Duration(max(c.started, 1))
}
func (c hostCost) perBrief(i int) time.Duration {
	return c.over(c.brief, i) / time.Duration(max(c.briefStarted, 1))
}

// note adds a line to the summary printed at the end of the host size.
func (c *hostCost) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// report reports collector i's figures and notes them for the summary.
func (c *hostCost) report(b *testing.B, i int) {
	suffix := c.suffixes[i]
	if i == 0 {
		c.note("host forks a second (threads included, ours not): young window %.1f, steady %.1f, churn %.1f, brief %.1f",
			c.young.forkRate(c.fleetForks), c.steady.forkRate(0), c.churn.forkRate(uint64(c.started)), c.brief.forkRate(uint64(c.briefStarted)))
		c.note("naive reader: %s in %d scans: %.2f ms/s", c.naive.Round(time.Millisecond), c.scans, ms(c.naiveRate()))
		b.ReportMetric(c.steady.forkRate(0), "host-forks/s")
		b.ReportMetric(ms(c.naiveRate()), "naive-cpu-ms/s")
	}
	c.note("collector%s: young %s, %s, %d wake-ups: %.0f µs, %.1f wake-ups per young process | "+
		"steady %s, %s, %d wake-ups: %.2f ms/s, %.1f wake-ups/s, naive/collector %.1fx",
		suffix, c.young.d.Round(time.Millisecond), c.young.cpu[i].Round(time.Millisecond), c.young.switches[i], us(c.perYoung(i)), c.wakeupsOver(c.young, i)/float64(c.size),
		c.steady.d.Round(time.Millisecond), c.steady.cpu[i].Round(time.Millisecond), c.steady.switches[i], ms(c.steadyRate(i)), c.steadyWakeups(i), c.ratio(i))
	c.note("collector%s: churn %s, %d started, %s, %d wake-ups: %.0f µs, %.1f wake-ups per short-lived process | "+
		"brief %s, %d started, %s, %d wake-ups: %.0f µs, %.1f wake-ups per brief process",
		suffix, c.churn.d.Round(time.Millisecond), c.started, c.churn.cpu[i].Round(time.Millisecond), c.churn.switches[i], us(c.perShortLived(i)), c.wakeupsOver(c.churn, i)/float64(max(c.started, 1)),
		c.brief.d.Round(time.Millisecond), c.briefStarted, c.brief.cpu[i].Round(time.Millisecond), c.brief.switches[i], us(c.perBrief(i)), c.wakeupsOver(c.brief, i)/float64(max(c.briefStarted, 1)))
	b.ReportMetric(c.ratio(i), "naive/collector-x"+suffix)
	b.ReportMetric(us(c.perYoung(i)), "cpu-us/young-proc"+suffix)
	b.ReportMetric(us(c.perShortLived(i)), "cpu-us/short-lived-proc"+suffix)
	b.ReportMetric(us(c.perBrief(i)), "cpu-us/brief-proc"+suffix)
	b.ReportMetric(ms(c.steadyRate(i)), "cpu-ms/s-steady"+suffix)
	b.ReportMetric(c.steadyWakeups(i), "wakeups/s-steady"+suffix)
	b.ReportMetric(c.wakeupsOver(c.young, i)/float64(c.size), "wakeups/young-proc"+suffix)
	b.ReportMetric(c.wakeupsOver(c.churn, i)/float64(max(c.started, 1)), "wakeups/short-lived-proc"+suffix)
	b.ReportMetric(c.wakeupsOver(c.brief, i)/float64(max(c.briefStarted, 1)), "wakeups/brief-proc"+suffix)
}

// checkGoals checks the figures of the collector under test (and the
// steady ratio of the -1s one) against the issues' goals, with full
// windows on a quiet host; on a busy one it logs what it did not check.
func (c *hostCost) checkGoals(b *testing.B, p collectorBenchParams) {
	if !p.full() {
		return
	}
	minRatio, minRatio1s := float64(minSteadyRatio), 0.0
	if c.size == 400 {
		minRatio, minRatio1s = minSteadyRatio400, minSteadyRatio1s400
	}
	type goal struct {
		what       string
		got, bound float64
		atLeast    bool
		quiet      bool // whether its windows were quiet
	}
	goals := []goal{
		{"the steady ratio (naive/collector, x)", c.ratio(0), minRatio, true, c.steady.forkRate(0) <= quietForks},
		{"the CPU per young process (µs)", us(c.perYoung(0)), us(maxPerYoung), false,
			c.young.forkRate(c.fleetForks) <= quietForks && c.steady.forkRate(0) <= quietForks},
		{"the CPU per short-lived process (µs)", us(c.perShortLived(0)), us(maxPerShortLived), false,
			c.churn.forkRate(uint64(c.started)) <= quietForks && c.steady.forkRate(0) <= quietForks},
		{"the CPU per brief process (µs)", us(c.perBrief(0)), us(maxPerBrief), false,
			c.brief.forkRate(uint64(c.briefStarted)) <= quietForks && c.steady.forkRate(0) <= quietForks},
	}
	if minRatio1s > 0 && len(c.suffixes) > 1 && c.suffixes[1] == "-1s" {
		goals = append(goals, goal{"the steady ratio of the -1s collector (naive/collector, x)", c.ratio(1), minRatio1s, true, c.steady.forkRate(0) <= quietForks})
	}
	for _, g := range goals {
		met := g.got >= g.bound
		if !g.atLeast {
			met = g.got <= g.bound
		}
		switch {
		case met:
		case !g.quiet:
			b.Logf("procs=%d: %s %.1f, beyond %.0f, not checked: the host was not quiet (more than %.0f forks a second by other processes)",
				c.size, g.what, g.got, g.bound, quietForks)
		case g.atLeast:
			b.Errorf("procs=%d: %s is %.1f: want at least %.0f", c.size, g.what, g.got, g.bound)
		default:
			b.Errorf("procs=%d: %s is %.1f: want at most %.0f", c.size, g.what, g.got, g.bound)
		}
	}
}

// printSummary prints the notes in one block: a benchmark's log keeps its
// first lines only.
func (c *hostCost) printSummary() {
	var sb strings.Builder
	fmt.Fprintf(&sb, "===== BenchmarkCollector procs=%d =====\n", c.size)
	for _, n := range c.notes {
		fmt.Fprintf(&sb, "  %s\n", n)
	}
	sb.WriteString("===== end =====\n")
	fmt.Print(sb.String())
}

// The goals the figures are checked against (issue 47; the steady ratio's
// 20x is issue 10's): the steady ratio at the defaults, at 400 processes
// and others, and at collection_interval 1s at 400; the CPU per process
// of the young, churn and brief windows.
const (
	minSteadyRatio      = 20
	minSteadyRatio400   = 70
	minSteadyRatio1s400 = 30
	maxPerYoung         = 150 * time.Microsecond
	maxPerShortLived    = 100 * time.Microsecond
	maxPerBrief         = 50 * time.Microsecond
)

// growthTolerance is how much faster than the process count a total may
// grow between two host sizes before the check fails: 1.5x (a total at
// 4,000 processes up to 15x that at 400). What a process costs the
// collector does not depend on how many others there are, but for what
// no longer fits in the caches; the margin is for two measurements
// minutes apart on a shared 2-core machine, quiet as it was (a few forks
// a second by other processes, each costing the collector hundreds of
// µs: some 10 % of the smaller host's steady rate), and for the ticks'
// resolution (when a thread exited in a window, its CPU is the ticks': a
// tick is 10 ms).
const growthTolerance = 1.5

// checkGrowth checks that no total of collector i grows faster than the
// processes from the first size to the second, within growthTolerance,
// and reports each growth (the totals' ratio; the process count's ratio
// is what linear growth gives).
func checkGrowth(b *testing.B, p collectorBenchParams, first hostCost, second *hostCost, i int) {
	scale := float64(second.size) / float64(first.size)
	growth := []struct {
		name string
		g    float64
	}{
		// The steady rate is a total for its host; the others are per
		// process: their totals grow by the host's size (young) or not at
		// all (the same churn beside either host), held to the size too.
		{"steady-growth-x", float64(second.steadyRate(i)) / float64(first.steadyRate(i))},
		{"young-growth-x", float64(second.perYoung(i)) / float64(first.perYoung(i)) * scale},
		{"churn-growth-x", float64(second.perShortLived(i)) / float64(first.perShortLived(i)) * scale},
		{"brief-growth-x", float64(second.perBrief(i)) / float64(first.perBrief(i)) * scale},
	}
	quiet := first.quiet() && second.quiet()
	for _, g := range growth {
		b.ReportMetric(g.g, g.name+second.suffixes[i])
		second.note("collector%s: %s %.2f from %d to %d processes (linear: %.0f)", second.suffixes[i], g.name, g.g, first.size, second.size, scale)
		switch {
		case i > 0 || !p.full() || g.g >= 0 && g.g <= scale*growthTolerance:
		case !quiet:
			b.Logf("%s %.2f not checked: the host was not quiet (more than %.0f forks a second by other processes in a window)", g.name, g.g, quietForks)
		default:
			b.Errorf("%s: the total grew %.2fx from %d to %d processes: faster than the processes (%.0fx, tolerance %.1fx)",
				g.name, g.g, first.size, second.size, scale, growthTolerance)
		}
	}
}

// meters reads the usage of processes and the host's forks.
type meters []int

func (m meters) measure(b *testing.B, fn func()) window {
	t0, f0, u0 := time.Now(), hostForks(), m.read(b)
	fn()
	u1, f1, t1 := m.read(b), hostForks(), time.Now()
	w := window{from: t0, to: t1, d: t1.Sub(t0), forks: f1 - f0, cpu: make([]time.Duration, len(m)), switches: make([]uint64, len(m))}
	for i := range m {
		var precise bool
		w.cpu[i], w.switches[i], precise = u1[i].since(u0[i])
		if !precise {
			b.Logf("pid %d: a thread exited in the window: its CPU is counted in ticks of %s", m[i], tick)
		}
	}
	return w
}

func (m meters) read(b *testing.B) []usage {
	out := make([]usage, len(m))
	for i, pid := range m {
		u, err := readUsage(pid)
		if err != nil {
			b.Fatal(err)
		}
		out[i] = u
	}
	return out
}

// measureHost runs the three scenarios on the collectors specs over a
// fleet of size processes and returns what they cost.
func measureHost(b *testing.B, p collectorBenchParams, specs []collectorSpec, tools fleetTools, size int) hostCost {
	c := hostCost{size: size}
	var cols []*collector
	var colMeters meters
	var ledgers []*entityLedger // what each collector exported
	var prof *profiler
	for _, spec := range specs {
		events := newEntityLedger()
		server := startObservingServer(b, events.observe, nil)
		config := minimalConfig(spec.settings, exportingAsDeployed(server))
		pprofAddr := ""
		if spec.suffix == "-profiled" {
			pprofAddr = fmt.Sprintf("127.0.0.1:%d", pubtest.FreePort(b))
			config = withPprof(config, pprofAddr)
		}
		col := startCollectorBinary(b, spec.bin, config)
		if pprofAddr != "" {
			prof = startProfiler(b, pprofAddr, p.profileChunk(), filepath.Join(b.TempDir(), "chunks"))
		}
		cols = append(cols, col)
		colMeters = append(colMeters, col.Cmd.Process.Pid)
		ledgers = append(ledgers, events)
		c.suffixes = append(c.suffixes, spec.suffix)
	}
	sampler := sampleTicks(b, colMeters[0], 5*time.Second)
	reader := startNaiveReader(b) // before the fleet: its own young reads are over when it is measured
	time.Sleep(hostCostSettle)    // the collectors' first scan of the host is over

	// Young: the fleet starts, then its first minute.
	sampler.restart()
	var fleet *hostFleet
	c.young = colMeters.measure(b, func() {
		fleet = startHostFleet(b, tools, size, p.bigMappings)
		time.Sleep(time.Until(fleet.lastStart.Add(p.young)))
	})
	c.fleetForks = fleet.forks()
	prof.mark("young", c.young)
	c.note("fleet of %d started in %s (%d publishers, %d updating, %d with %d mappings, %d named by their environment; %d forks with their threads)",
		len(fleet.pids), fleet.lastStart.Sub(fleet.firstStart).Round(time.Millisecond), len(fleet.publishers), fleet.updating,
		fleet.big, p.bigMappings, fleet.envNamed, c.fleetForks)

	// Steady: the collectors and the naive reader, one scan a second; the
	// quietest of up to steadyTries windows when the figures are checked.
	reader.setPids(b, fleet.pids)
	reader.warmUp(b, len(fleet.publishers)) // unmeasured
	all := append(meters{reader.cmd.Process.Pid}, colMeters...)
	tries := 1
	if p.full() {
		tries = p.steadyTries
	}
	for try := 1; try <= tries; try++ {
		scans := 0
		w := all.measure(b, func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for t0 := time.Now(); time.Since(t0) < p.steady; <-tick.C {
				reader.scanAll(b, len(fleet.publishers))
				scans++
			}
		})
		if try == 1 || w.forkRate(0) < c.steady.forkRate(0) {
			c.naive, c.scans = w.cpu[0], scans
			c.steady = w.sub(1)
		}
		if c.steady.forkRate(0) <= quietForks {
			break
		}
		c.note("steady window %d of %d not quiet: %.1f forks a second by other processes", try, tries, w.forkRate(0))
	}

	prof.mark("steady", c.steady)

	// Churn beside the fleet, until the last short-lived process exited;
	// then processes that exit before their first young read.
	c.churn = colMeters.measure(b, func() { c.started = fleet.churn(b, p.churnRate, p.churn, 200*time.Millisecond, 2*time.Second) })
	prof.mark("churn", c.churn)
	c.brief = colMeters.measure(b, func() { c.briefStarted = fleet.churn(b, p.churnRate, p.brief, briefLife, briefLife) })
	prof.mark("brief", c.brief)

	c.note("collector ticks/host forks per 5 s from the fleet's start: %s", sampler.halt())
	if prof != nil {
		prof.keep(b, p.profiles, fmt.Sprintf("collector-%d", size))
	}
	for i, col := range cols {
		checkReported(b, "collector"+c.suffixes[i], ledgers[i], fleet)
		stopCollectorCleanly(b, col, fmt.Sprintf("procs=%d, collector%s", size, c.suffixes[i]))
	}
	return c
}

// exportingAsDeployed is the exporter of the entity events as the
// deployments configure it (deploy/kubernetes, deploy/helm: otlp_grpc,
// one queue consumer, the exporter's batching defaults) to server, over
// plain gRPC on loopback. Not pubtest.ExportingTo's: the tests'
// flush_timeout of 50 ms (an event seen within a test's patience) wakes
// the collector 20 times a second with nothing to send, some 4 ms/s of
// its CPU on this machine, more than the tracker's steady work at 400
// processes: a cost of the tests' configuration, not one a host pays.
func exportingAsDeployed(server string) string {
	return fmt.Sprintf(`
exporters:
  otlp_grpc:
    endpoint: %s
    tls:
      insecure: true
    sending_queue:
      num_consumers: 1
service:
  telemetry:
    metrics:
      level: none
`, server)
}

// checkReported checks that a collector reported every publisher of the
// fleet (an entity state naming its service) to the server events saw.
func checkReported(b *testing.B, name string, events *entityLedger, fleet *hostFleet) {
	var missing []int
	stated := func() bool {
		byPid := map[int64]string{}
		for k, c := range events.snapshot() {
			if c.state > 0 {
				byPid[k.pid] = c.service
			}
		}
		missing = missing[:0]
		for pid, svc := range fleet.publishers {
			if byPid[int64(pid)] != svc {
				missing = append(missing, pid)
			}
		}
		return len(missing) == 0
	}
	if !waitFor(b.Context(), 30*time.Second, 200*time.Millisecond, stated) {
		b.Errorf("%s: %d of %d publishers not reported (an entity state with their service.name), e.g. pid %d",
			name, len(missing), len(fleet.publishers), missing[0])
	}
}

// startCollectorBinary runs the collector bin with config and waits until
// it is ready.
func startCollectorBinary(b *testing.B, bin, config string) *collector {
	b.Helper()
	if _, err := os.Stat(bin); err != nil {
		b.Fatalf("collector %s: %v", bin, err)
	}
	cfgPath := filepath.Join(b.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		b.Fatal(err)
	}
	return pubtest.StartCollector(b, []string{bin, "--config", cfgPath})
}

// cpuTicks returns the CPU time of pid (utime+stime, every thread, the
// exited ones included) in clock ticks.
func cpuTicks(pid int) (uint64, error) {
	proc, err := promfs.NewProc(pid)
	if err != nil {
		return 0, fmt.Errorf("CPU time of pid %d: %w", pid, err)
	}
	st, err := proc.Stat()
	if err != nil {
		return 0, fmt.Errorf("CPU time of pid %d: %w", pid, err)
	}
	return uint64(st.UTime) + uint64(st.STime), nil
}

// hostForks returns the forks (processes and threads) since boot: the
// processes line of /proc/stat.
func hostForks() uint64 {
	st, err := promfs.NewDefaultFS()
	if err != nil {
		return 0
	}
	s, err := st.Stat()
	if err != nil {
		return 0
	}
	return s.ProcessCreated
}

// naiveReaderEnv makes this test binary the naive reader
// (TestNaiveReaderProcess).
const naiveReaderEnv = "E2E_NAIVE_READER"

// TestNaiveReaderProcess is the naive reader BenchmarkCollector runs as a
// process of its own (internal/naive's Serve on stdin and stdout), so that
// its CPU is measured as the collector's: the benchmark runs this test
// binary again with naiveReaderEnv set (os/exec's helper process idiom).
func TestNaiveReaderProcess(t *testing.T) {
	if os.Getenv(naiveReaderEnv) != "1" {
		t.Skip("the naive reader process of BenchmarkCollector")
	}
	if err := naive.Serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "naive reader:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// naiveReader is a running naive reader process.
type naiveReader struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startNaiveReader(b *testing.B) *naiveReader {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestNaiveReaderProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), naiveReaderEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start the naive reader: %v", err)
	}
	b.Cleanup(func() { _ = in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return &naiveReader{cmd: cmd, in: in, out: bufio.NewReader(out)}
}

// do sends one command and returns the numbers its "ok" answer carries.
func (r *naiveReader) do(b *testing.B, command string, numbers int) []int {
	b.Helper()
	if _, err := io.WriteString(r.in, command+"\n"); err != nil {
		b.Fatalf("naive reader: %v", err)
	}
	line, err := r.out.ReadString('\n')
	if err != nil {
		b.Fatalf("naive reader: no answer to %.20q: %v", command, err)
	}
	fields := strings.Fields(line)
	if len(fields) != numbers+1 || fields[0] != "ok" {
		b.Fatalf("naive reader: %.20q: %s", command, line)
	}
	out := make([]int, numbers)
	for i, f := range fields[1:] {
		if out[i], err = strconv.Atoi(f); err != nil {
			b.Fatalf("naive reader: %.20q: %s", command, line)
		}
	}
	return out
}

func (r *naiveReader) setPids(b *testing.B, pids []int) {
	var sb strings.Builder
	sb.WriteString("pids")
	for _, pid := range pids {
		sb.WriteString(" " + strconv.Itoa(pid))
	}
	if got := r.do(b, sb.String(), 1)[0]; got != len(pids) {
		b.Fatalf("naive reader took %d pids, want %d", got, len(pids))
	}
}

// scanAll has the naive reader scan once, and fails b unless it read
// every one of the publishers' contexts, or met it mid-update.
func (r *naiveReader) scanAll(b *testing.B, publishers int) {
	if got := r.do(b, "scan", 2); got[0]+got[1] != publishers {
		b.Fatalf("naive reader read %d contexts (%d more met mid-update), want %d", got[0], got[1], publishers)
	}
}

// warmUp scans until the naive reader reads every publisher's context
// (each published at its start: a publisher slow to start on a loaded
// machine may not have yet), for up to 30 s.
func (r *naiveReader) warmUp(b *testing.B, publishers int) {
	var got []int
	if !waitFor(b.Context(), 30*time.Second, 100*time.Millisecond, func() bool {
		got = r.do(b, "scan", 2)
		return got[0] == publishers
	}) {
		b.Fatalf("naive reader read %d contexts (%d more met mid-update) 30 s after the fleet's start, want %d", got[0], got[1], publishers)
	}
}

// fleetTools are the executables of a synthetic host.
type fleetTools struct {
	idle, cpub, gopub, sleep string
}

func buildFleetTools(b *testing.B) fleetTools {
	b.Helper()
	idle := filepath.Join(b.TempDir(), "idle")
	cc := exec.Command("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-std=gnu11",
		"-o", idle, filepath.Join(pubtest.RepoRoot(), "testdata", "manymaps", "manymaps.c"))
	if out, err := cc.CombinedOutput(); err != nil {
		b.Fatalf("build manymaps (gcc is required): %v\n%s", err, out)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		b.Fatal(err)
	}
	return fleetTools{idle: idle, cpub: pubtest.Binary(b, pubtest.C), gopub: pubtest.Binary(b, pubtest.Go), sleep: sleep}
}

// hostFleet is a synthetic host's processes, in one process group that is
// killed at cleanup. The idle ones read a pipe shared by all until EOF,
// which comes when this process ends however it ends; the others get
// SIGKILL when it does (the parent-death signal).
type hostFleet struct {
	tools                 fleetTools
	pgid                  int
	idleStdin             *os.File // the idle processes' stdin; the write end is kept here
	pids                  []int
	publishers            map[int]string // pid → service.name
	updating, envNamed    int
	big                   int // idle with many mappings
	firstStart, lastStart time.Time
	mu                    sync.Mutex
	cmds                  []*exec.Cmd // the fleet's processes, reaped by stop
}

// startHostFleet starts size processes in the shape of the tracker's scan
// benchmark's fleet (internal/tracker/fleet_bench_test.go): a tenth
// publishing (half C, half Go; a quarter of them updating every 10 s),
// five in a thousand idle with bigMappings mappings each (the heavy tail
// of a real host's maps files: a JVM, a browser), a twentieth idle and
// named by their environment (OTEL_SERVICE_NAME), the rest idle C
// processes (some 25 lines of maps).
func startHostFleet(b *testing.B, tools fleetTools, size, bigMappings int) *hostFleet {
	b.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	f := &hostFleet{tools: tools, idleStdin: w, publishers: map[int]string{}, firstStart: time.Now()}
	b.Cleanup(func() { f.stop(); _ = r.Close() })
	big, envNamed, publishers := size*5/1000, size/20, size/10
	for i := range size {
		cmd, svc := exec.Command(tools.idle, "0"), ""
		cmd.Stdin = r
		switch {
		case i == 0: // leads the process group
		case i <= big:
			cmd.Args[1] = strconv.Itoa(bigMappings)
			f.big++
		case i <= big+envNamed:
			cmd.Env = append(os.Environ(), fmt.Sprintf("OTEL_SERVICE_NAME=cost-env-%d", i))
			f.envNamed++
		case i <= big+envNamed+publishers:
			svc = fmt.Sprintf("cost-pub-%d", i)
			updating := i%4 == 0
			if i%2 == 0 {
				cmd = exec.Command(tools.cpub, "-life", "0", "-service", svc)
				if updating {
					cmd.Args = append(cmd.Args, "-update-every", "10000")
				}
			} else {
				cmd = exec.Command(tools.gopub, "-service-name", svc)
				if updating {
					cmd.Args = append(cmd.Args, "-update-every", "10s")
				}
			}
			if updating {
				f.updating++
			}
		}
		cmd.Stderr = os.Stderr
		f.start(b, cmd, true)
		if svc != "" {
			f.publishers[cmd.Process.Pid] = svc
		}
	}
	f.lastStart = time.Now()
	return f
}

// start starts cmd in the fleet's process group; stop reaps it when
// reap is set (else the caller does).
func (f *hostFleet) start(b *testing.B, cmd *exec.Cmd, reap bool) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: f.pgid, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s (%d processes running): %v", cmd.Path, len(f.pids), err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pgid == 0 {
		f.pgid = cmd.Process.Pid
	}
	if reap {
		f.cmds = append(f.cmds, cmd)
		f.pids = append(f.pids, cmd.Process.Pid)
	}
}

// forks returns the forks the fleet's start made: its processes and
// their threads (most never end).
func (f *hostFleet) forks() uint64 {
	var n uint64
	for _, pid := range f.pids {
		proc, err := promfs.NewProc(pid)
		if err != nil {
			n++
			continue
		}
		st, err := proc.Stat()
		if err != nil || st.NumThreads <= 0 {
			n++
			continue
		}
		n += uint64(st.NumThreads)
	}
	return n
}

// stop kills every process of the fleet and reaps them.
func (f *hostFleet) stop() {
	_ = f.idleStdin.Close()
	if f.pgid != 0 {
		_ = syscall.Kill(-f.pgid, syscall.SIGKILL)
	}
	f.mu.Lock()
	cmds := f.cmds
	f.mu.Unlock()
	for _, c := range cmds {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
}

// briefLife is how long the processes of the brief window live: less than
// the first young read's wait (youngDelays[0] of internal/tracker, 1 s).
const briefLife = 200 * time.Millisecond

// churn starts rate short-lived processes a second for d, each living
// from shortest to longest (uniformly), every fifth a C publisher, the
// others sleep; it returns once all have exited, how many it started, and
// fails b unless each exited 0.
func (f *hostFleet) churn(b *testing.B, rate int, d, shortest, longest time.Duration) int {
	rng := rand.New(rand.NewPCG(31, uint64(time.Now().UnixNano())))
	interval := time.Second / time.Duration(rate)
	var exits sync.WaitGroup
	var failed errorsSeen
	started := 0
	t0 := time.Now()
	for next := t0; time.Since(t0) < d; {
		life := shortest
		if longest > shortest {
			life += time.Duration(rng.Int64N(int64(longest - shortest)))
		}
		var cmd *exec.Cmd
		if started%5 == 0 {
			cmd = exec.Command(f.tools.cpub, "-life", strconv.FormatInt(life.Milliseconds(), 10), "-service", fmt.Sprintf("cost-churn-%d", started))
		} else {
			cmd = exec.Command(f.tools.sleep, strconv.FormatFloat(life.Seconds(), 'f', 3, 64))
		}
		cmd.Stderr = os.Stderr
		f.start(b, cmd, false)
		started++
		exits.Go(func() {
			if err := cmd.Wait(); err != nil {
				failed.add(fmt.Errorf("%s: %w", filepath.Base(cmd.Path), err))
			}
		})
		// A fixed rate, not caught up in bursts when late.
		next = next.Add(interval)
		if late := time.Since(next); late > time.Second {
			next = time.Now()
		}
		time.Sleep(time.Until(next))
	}
	exits.Wait()
	if failed.n > 0 {
		b.Errorf("short-lived processes that did not exit 0: %s", failed.String())
	}
	return started
}

// tickSampler records a process's CPU ticks and the host's forks per
// period, for the log: where in the windows the collector spent.
type tickSampler struct {
	mu          sync.Mutex
	marks       []string
	last, forks uint64
	stop        chan struct{}
	stopOnce    sync.Once
	done        chan struct{}
}

// sampleTicks samples pid's CPU ticks every period until halt (at the
// latest when b ends) or until they cannot be read.
func sampleTicks(b *testing.B, pid int, every time.Duration) *tickSampler {
	last, err := cpuTicks(pid)
	if err != nil {
		b.Fatal(err)
	}
	s := &tickSampler{last: last, forks: hostForks(), stop: make(chan struct{}), done: make(chan struct{})}
	b.Cleanup(func() { s.halt() })
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				v, err := cpuTicks(pid)
				if err != nil {
					return
				}
				forks := hostForks()
				s.mu.Lock()
				s.marks = append(s.marks, fmt.Sprintf("%d/%d", v-s.last, forks-s.forks))
				s.last, s.forks = v, forks
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// restart forgets the marks so far.
func (s *tickSampler) restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marks = s.marks[:0]
}

// halt stops the sampler and returns its marks.
func (s *tickSampler) halt() string {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.marks, " ")
}
