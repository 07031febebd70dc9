// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Command figures writes the table of current figures at the top of
// BENCHMARKS.md from the output of make bench (go test -bench lines, which
// make bench keeps in _build/bench/bench.txt): one row per figure, with its
// goal, today's value, the command that measures it and the commit it was
// measured at. The rows are this file's (figures below); a figure whose
// benchmark failed says so (a failed benchmark reports nothing), and one
// that the output does not have keeps the value and commit the table had.
//
//	go run ./tools/figures [-bench _build/bench/bench.txt] [-commit REV] [-file BENCHMARKS.md]
//
// The table sits between the lines beginBlock and endBlock of the file;
// everything else in the file is left as it is.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

const (
	beginBlock = "<!-- figures: begin (written by go run ./tools/figures from make bench's output; edit the rows in tools/figures/main.go) -->"
	endBlock   = "<!-- figures: end -->"
)

// figure is one row: the benchmark (its full name, GOMAXPROCS suffix
// dropped) and the unit of the metric it reports, how to print the value
// (the value times scale, when scale is set, with format), and what the
// row says around it.
type figure struct {
	name, goal  string
	bench, unit string
	format      string  // fmt verb for the value, e.g. "%.0fx"
	scale       float64 // the value is printed times scale; 0 is 1
	command     string
}

// Where each family is measured: make bench runs them all; the
// parenthesis names the benchmark and package, to run one alone (the
// commands in full: BENCHMARKS.md, "Commands").
const (
	cmdCollector = "`make bench` (`-bench BenchmarkCollector ./test/e2e`)"
	cmdScan      = "`make bench` (`-bench BenchmarkScan ./internal/tracker`)"
	cmdVsBase    = "`make bench` (`-bench BenchmarkLogsResourcePidVsBaseline ./processor/processctxprocessor`)"
	cmdProcessor = "`make bench` (`-bench %s ./processor/processctxprocessor`)"
	cmdHostCost  = "`make bench` (`-bench BenchmarkHostCost ./test/e2e`)"
	cmdAtRest    = "`make bench` (`-bench BenchmarkAtRest ./test/e2e`)"
	cmdLatency   = "`make bench` (`-bench BenchmarkEventLatency ./receiver/processctxreceiver`)"
	cmdStorm     = "`make bench` (`-bench BenchmarkStorm ./receiver/processctxreceiver`)"
	cmdReader    = "`make bench` (`-bench %s ./internal/%s`)"
)

// The goals are the targets an issue set (BENCHMARKS.md's history says
// which); a row without one reports a figure to compare a change with.
var figures = []figure{
	// The whole collector as a host pays for it.
	{name: "Collector at its defaults, steady state, 400 processes: the naive reader's CPU over the collector's", goal: "≥ 70x (issue 47; checked on a quiet host)",
		bench: "BenchmarkCollector/procs=400", unit: "naive/collector-x", format: "%.1fx", command: cmdCollector},
	{name: "… 4,000 processes: the naive reader's CPU over the collector's", goal: "≥ 20x (checked on a quiet host)",
		bench: "BenchmarkCollector/procs=4000", unit: "naive/collector-x", format: "%.1fx", command: cmdCollector},
	{name: "… at `collection_interval: 1s`, 400 processes", goal: "≥ 30x (issue 47; checked on a quiet host)",
		bench: "BenchmarkCollector/procs=400", unit: "naive/collector-x-1s", format: "%.1fx", command: cmdCollector},
	{name: "Collector CPU, steady state, 400 processes (10 ms/s is 1 % of a core)",
		bench: "BenchmarkCollector/procs=400", unit: "cpu-ms/s-steady", format: "%.2f ms/s", command: cmdCollector},
	{name: "… steady state, 4,000 processes",
		bench: "BenchmarkCollector/procs=4000", unit: "cpu-ms/s-steady", format: "%.2f ms/s", command: cmdCollector},
	{name: "Collector wake-ups (its threads' context switches) a second, steady state, 400 processes",
		bench: "BenchmarkCollector/procs=400", unit: "wakeups/s-steady", format: "%.1f", command: cmdCollector},
	{name: "Collector CPU per young process, its first minute (the young reads), 400 processes", goal: "≤ 150 µs (issue 47; checked on a quiet host)",
		bench: "BenchmarkCollector/procs=400", unit: "cpu-us/young-proc", format: "%.0f µs", command: cmdCollector},
	{name: "… per young process, 4,000 processes", goal: "≤ 150 µs (issue 47; checked on a quiet host)",
		bench: "BenchmarkCollector/procs=4000", unit: "cpu-us/young-proc", format: "%.0f µs", command: cmdCollector},
	{name: "Collector CPU per short-lived process (50 a second, 0.2–2 s each), beside 400 processes", goal: "≤ 100 µs (issue 47; checked on a quiet host)",
		bench: "BenchmarkCollector/procs=400", unit: "cpu-us/short-lived-proc", format: "%.0f µs", command: cmdCollector},
	{name: "… per short-lived process, beside 4,000 processes", goal: "≤ 100 µs (issue 47; checked on a quiet host)",
		bench: "BenchmarkCollector/procs=4000", unit: "cpu-us/short-lived-proc", format: "%.0f µs", command: cmdCollector},
	{name: "Collector CPU per brief process (50 a second, each living 0.2 s: it exits before its first young read), beside 400 processes", goal: "≤ 50 µs (issue 47; checked on a quiet host)",
		bench: "BenchmarkCollector/procs=400", unit: "cpu-us/brief-proc", format: "%.0f µs", command: cmdCollector},
	{name: "… per brief process, beside 4,000 processes", goal: "≤ 50 µs (issue 47; checked on a quiet host)",
		bench: "BenchmarkCollector/procs=4000", unit: "cpu-us/brief-proc", format: "%.0f µs", command: cmdCollector},
	{name: "Collector wake-ups per short-lived process, beside 400 processes",
		bench: "BenchmarkCollector/procs=400", unit: "wakeups/short-lived-proc", format: "%.1f", command: cmdCollector},
	{name: "Collector totals from 400 to 4,000 processes: steady CPU grew", goal: "≤ 10x, as the processes (checked ≤ 15x)",
		bench: "BenchmarkCollector/procs=4000", unit: "steady-growth-x", format: "%.2fx", command: cmdCollector},
	{name: "… young processes' CPU grew", goal: "≤ 10x (issue 47; checked ≤ 15x)",
		bench: "BenchmarkCollector/procs=4000", unit: "young-growth-x", format: "%.2fx", command: cmdCollector},
	{name: "… short-lived processes' CPU grew", goal: "≤ 10x (issue 47; checked ≤ 15x)",
		bench: "BenchmarkCollector/procs=4000", unit: "churn-growth-x", format: "%.2fx", command: cmdCollector},

	// The shipped config.yaml on a host where nothing starts or ends.
	{name: "The shipped `config.yaml` at rest: wake-ups (its threads' context switches) a second", goal: "≤ 10 (issue 47; checked on a quiet host)",
		bench: "BenchmarkAtRest", unit: "wakeups/s", format: "%.1f", command: cmdAtRest},
	{name: "… its CPU", bench: "BenchmarkAtRest", unit: "cpu-ms/s", format: "%.2f ms/s", command: cmdAtRest},
	{name: "… wake-ups a second of the tracker (extension `process_context`, with its receiver and processor)",
		bench: "BenchmarkAtRest", unit: "wakeups/s-for-process_context-extension", format: "%.1f", command: cmdAtRest},
	{name: "… of `memory_limiter`", bench: "BenchmarkAtRest", unit: "wakeups/s-for-memory_limiter-processor", format: "%.1f", command: cmdAtRest},
	{name: "… of the `otlp` receiver (with the pipelines it feeds)", bench: "BenchmarkAtRest", unit: "wakeups/s-for-otlp-receiver", format: "%.1f", command: cmdAtRest},
	{name: "… of `healthcheckv2`", bench: "BenchmarkAtRest", unit: "wakeups/s-for-healthcheckv2-extension", format: "%.1f", command: cmdAtRest},
	{name: "… of `pprof`", bench: "BenchmarkAtRest", unit: "wakeups/s-for-pprof-extension", format: "%.1f", command: cmdAtRest},
	{name: "… of `zpages`", bench: "BenchmarkAtRest", unit: "wakeups/s-for-zpages-extension", format: "%.1f", command: cmdAtRest},
	{name: "… of the collector's own metrics (Prometheus)", bench: "BenchmarkAtRest", unit: "wakeups/s-for-own-metrics", format: "%.1f", command: cmdAtRest},

	// The tracker's scans of a host of 1,000 processes, 100 publishing.
	{name: "Tracker, first scan of the host (discovery): the naive reader's CPU over the tracker's", goal: "≥ 1x, no costlier (issue 12)",
		bench: "BenchmarkScan/discovery", unit: "baseline/scan", format: "%.2fx", command: cmdScan},
	{name: "Tracker, discovery reading environments over discovery of contexts only", goal: "≤ 1.15x (issue 21)",
		bench: "BenchmarkScan/discovery-environment", unit: "environment/context-only", format: "%.2fx", command: cmdScan},
	{name: "Tracker, steady scan (nothing changed, no rescan due): naive over tracker", goal: "≥ 80x (issue 10)",
		bench: "BenchmarkScan/steady", unit: "baseline/scan", format: "%.0fx", command: cmdScan},
	{name: "Tracker, steady scans at the default settings, polling (rescans of processes without a context)",
		bench: "BenchmarkScan/steady-defaults", unit: "baseline/scan", format: "%.1fx", command: cmdScan},
	{name: "… with process and publication events (where the kernel allows fexit)", goal: "≥ 100x (issue 12)",
		bench: "BenchmarkScan/steady-defaults-events", unit: "baseline/scan", format: "%.0fx", command: cmdScan},
	{name: "Tracker, 10 % of the publishers updated between scans: naive over tracker",
		bench: "BenchmarkScan/update-10pct", unit: "baseline/scan", format: "%.1fx", command: cmdScan},
	{name: "Tracker memory per process without a context", goal: "≤ 2,048 B (issue 6)",
		bench: "BenchmarkScan/memory", unit: "heap-B/idle", format: "%.0f B", command: cmdScan},
	{name: "Tracker memory per publisher, beyond its payload", goal: "≤ 2,048 B (issue 6)",
		bench: "BenchmarkScan/memory", unit: "heap-B/publisher-payload", format: "%.0f B", command: cmdScan},

	// The processor.
	{name: "Processor, logs (10,000 records under 100 resources, a pid each), `entity_refs: false`: time over a plain upsert of the same keys", goal: "≤ 1.15x (issue 10)",
		bench: "BenchmarkLogsResourcePidVsBaseline/entity_refs=false", unit: "x-baseline", format: "%.2fx", command: cmdVsBase},
	{name: "… `entity_refs: true` (the default)", goal: "the floor below (issue 21)",
		bench: "BenchmarkLogsResourcePidVsBaseline/entity_refs=true", unit: "x-baseline", format: "%.2fx", command: cmdVsBase},
	{name: "… the floor: the plain upsert and the same references through pdata's public API, no processor",
		bench: "BenchmarkEntityRefsFloor", unit: "x-baseline", format: "%.2fx", command: fmt.Sprintf(cmdProcessor, "BenchmarkEntityRefsFloor")},
	{name: "Processor, regrouping logs by record pid (10,000 records, 101 pids, one resource)", goal: "≤ 200 ns a record (issue 19)",
		bench: "BenchmarkLogsRecordPids", unit: "ns/record", format: "%.0f ns", command: fmt.Sprintf(cmdProcessor, "BenchmarkLogsRecordPids")},
	{name: "Processor, regrouping profiles by sample pid (100,000 samples, 101 pids)", goal: "≤ 200 ns a sample (issue 19)",
		bench: "BenchmarkProfilesSamplePids", unit: "ns/sample", format: "%.0f ns", command: fmt.Sprintf(cmdProcessor, "BenchmarkProfilesSamplePids")},
	{name: "Processor, first sight of a pid (a batch of 100 new pids, the tracker's first scan running)",
		bench: "BenchmarkLogsResourcePidCold", unit: "ns/pid", format: "%.0f µs", scale: 1e-3, command: fmt.Sprintf(cmdProcessor, "BenchmarkLogsResourcePidCold")},
	{name: "Processor, a batch of 100 never-seen pids while every read is stuck: the longest held", goal: "≤ `lookup_timeout` (50 ms) + 5 ms",
		bench: "BenchmarkLogsUnknownPidsWhileStalled", unit: "worst-ms/batch", format: "%.0f ms", command: fmt.Sprintf(cmdProcessor, "BenchmarkLogsUnknownPidsWhileStalled")},

	// What the collector costs the host's other processes.
	{name: "A `getppid` loop beside the collector at its defaults, over the same loop without it", goal: "≤ 1.02x (issue 20)",
		bench: "BenchmarkHostCost", unit: "x-defaults", format: "%.2fx", command: cmdHostCost},
	{name: "… beside `publication_events: kprobe` (what `auto` takes where the kernel refuses fexit)", goal: "≤ 1.02x",
		bench: "BenchmarkHostCost", unit: "x-kprobe", format: "%.2fx", command: cmdHostCost},
	{name: "… beside `publication_events: syscall_tracepoints` (opt-in)",
		bench: "BenchmarkHostCost", unit: "x-syscall_tracepoints", format: "%.2fx", command: cmdHostCost},
	{name: "… beside `publication_events: raw_sys_exit` (opt-in)",
		bench: "BenchmarkHostCost", unit: "x-raw_sys_exit", format: "%.2fx", command: cmdHostCost},
	{name: "An mmap + munmap loop (munmap is hooked) beside the collector at its defaults, over the same loop without it",
		bench: "BenchmarkHostCost", unit: "x-munmap-defaults", format: "%.2fx", command: cmdHostCost},

	// Latency, 100 publishers.
	{name: "Publication → entity state, p99, with every event source the kernel allows", goal: "≤ 100 ms (issue 12)",
		bench: "BenchmarkEventLatency/events", unit: "publish-p99-ms", format: "%.1f ms", command: cmdLatency},
	{name: "… update → entity state", goal: "≤ 100 ms (issue 12)",
		bench: "BenchmarkEventLatency/events", unit: "update-p99-ms", format: "%.1f ms", command: cmdLatency},
	{name: "… exit → entity delete", goal: "≤ 100 ms (issue 12)",
		bench: "BenchmarkEventLatency/events", unit: "exit-p99-ms", format: "%.1f ms", command: cmdLatency},
	{name: "Publication → entity state, p99, at the defaults where the kernel refuses fexit (found by the young re-reads)",
		bench: "BenchmarkEventLatency/auto", unit: "publish-p99-ms", format: "%.1f s", scale: 1e-3, command: cmdLatency},
	{name: "Exit → entity delete, p99, at the defaults (the proc connector)", goal: "≤ 100 ms (issue 12)",
		bench: "BenchmarkEventLatency/auto", unit: "exit-p99-ms", format: "%.1f ms", command: cmdLatency},

	// A storm of short-lived processes.
	{name: "Storm (5,000 short-lived processes a second for 30 s beside 100 publishers coming and going): kernel events lost", goal: "0",
		bench: "BenchmarkStorm", unit: "events-lost", format: "%.0f", command: cmdStorm},
	{name: "… the receiver's RSS growth over the storm", goal: "≤ 20 MB (issue 12)",
		bench: "BenchmarkStorm", unit: "rss-growth-MiB", format: "%.1f MiB", command: cmdStorm},
	{name: "… the receiver's CPU per short-lived process",
		bench: "BenchmarkStorm", unit: "cpu-ns/process", format: "%.0f µs", scale: 1e-3, command: cmdStorm},

	// The reader core.
	{name: "Finding the context among 60,000 mappings, over copying the maps file", goal: "≤ 1.3x (issue 6)",
		bench: "BenchmarkFindMapping60k", unit: "find/copy", format: "%.2fx", command: fmt.Sprintf(cmdReader, "BenchmarkFindMapping60k", "reader")},
	{name: "A 100,000-line maps file: `procfs.ProcMaps` over our scan", goal: "≥ 5x (issue 6)",
		bench: "BenchmarkScanMaps100k", unit: "procfs/scan", format: "%.0fx", command: fmt.Sprintf(cmdReader, "BenchmarkScanMaps100k", "otep")},
	{name: "Reading an unchanged context (a steady scan's read of a publisher)",
		bench: "BenchmarkReadIfChangedUnchanged", unit: "ns/op", format: "%.0f ns", command: fmt.Sprintf(cmdReader, "BenchmarkReadIfChangedUnchanged", "reader")},
}

// output is what a bench output says: every benchmark's values, by
// benchmark and unit (every run's), and the benchmarks that failed.
type output struct {
	values map[string]map[string][]float64
	failed map[string]bool
}

var (
	benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)
	failLine  = regexp.MustCompile(`^\s*--- FAIL: (Benchmark\S+?)(-\d+)?(\s.*)?$`)
)

func parse(r io.Reader) (output, error) {
	out := output{values: map[string]map[string][]float64{}, failed: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if g := failLine.FindStringSubmatch(sc.Text()); g != nil {
			out.failed[g[1]] = true
			continue
		}
		g := benchLine.FindStringSubmatch(sc.Text())
		if g == nil {
			continue
		}
		fields := strings.Fields(g[3])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				break
			}
			if out.values[g[1]] == nil {
				out.values[g[1]] = map[string][]float64{}
			}
			out.values[g[1]][fields[i+1]] = append(out.values[g[1]][fields[i+1]], v)
		}
	}
	return out, sc.Err()
}

// value is the median of a figure's runs, and how many there were.
func (o output) value(f figure) (float64, int, bool) {
	vs := slices.Clone(o.values[f.bench][f.unit])
	if len(vs) == 0 {
		return 0, 0, false
	}
	slices.Sort(vs)
	return vs[len(vs)/2], len(vs), true
}

// today is a figure's value as the table prints it.
func (f figure) today(v float64, n int) string {
	if f.scale != 0 {
		v *= f.scale
	}
	s := fmt.Sprintf(f.format, v)
	if n > 1 {
		s += fmt.Sprintf(" (median of %d)", n)
	}
	return s
}

// failedToday is what a figure says when its benchmark failed in the run
// (a check of its own: a failed benchmark reports no figures).
const failedToday = "**failed** (its check: see make bench's output)"

// table writes the figures' table; old holds the previous table's rows by
// figure, for the figures this output lacks.
func table(o output, commit string, old map[string][]string) string {
	var b strings.Builder
	b.WriteString("| figure | goal | today | measured by | commit |\n|---|---|---|---|---|\n")
	for _, f := range figures {
		today, at := "—", "—"
		if v, n, ok := o.value(f); ok {
			today, at = f.today(v, n), "`"+commit+"`"
		} else if o.failed[f.bench] {
			today, at = failedToday, "`"+commit+"`"
		} else if row, ok := old[f.name]; ok && len(row) >= 5 {
			today, at = row[2], row[4]
		}
		goal := f.goal
		if goal == "" {
			goal = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", f.name, goal, today, f.command, at)
	}
	return b.String()
}

// rows reads the rows of a table: its cells, by the first.
func rows(block string) map[string][]string {
	out := map[string][]string{}
	for line := range strings.SplitSeq(block, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		out[cells[0]] = cells
	}
	return out
}

// rewrite replaces the block of doc with the table of o.
func rewrite(doc []byte, o output, commit string) ([]byte, error) {
	s := string(doc)
	i, j := strings.Index(s, beginBlock), strings.Index(s, endBlock)
	if i < 0 || j < i {
		return nil, errors.New("no figures block (" + beginBlock + " … " + endBlock + ")")
	}
	old := rows(s[i+len(beginBlock) : j])
	var out bytes.Buffer
	out.WriteString(s[:i+len(beginBlock)])
	out.WriteString("\n")
	out.WriteString(table(o, commit, old))
	out.WriteString(s[j:])
	return out.Bytes(), nil
}

func main() {
	benchFile := flag.String("bench", "_build/bench/bench.txt", "make bench's output")
	file := flag.String("file", "BENCHMARKS.md", "the file whose figures block to rewrite")
	commit := flag.String("commit", "", "the commit measured (default: git rev-parse --short HEAD)")
	flag.Parse()
	if *commit == "" {
		out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
		if err != nil {
			fail(fmt.Errorf("name the commit with -commit: %w", err))
		}
		*commit = strings.TrimSpace(string(out))
	}
	f, err := os.Open(*benchFile)
	if err != nil {
		fail(err)
	}
	o, err := parse(f)
	_ = f.Close()
	if err != nil {
		fail(err)
	}
	doc, err := os.ReadFile(*file)
	if err != nil {
		fail(err)
	}
	out, err := rewrite(doc, o, *commit)
	if err != nil {
		fail(fmt.Errorf("%s: %w", *file, err))
	}
	if err := os.WriteFile(*file, out, 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "figures:", err)
	os.Exit(1)
}
