// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `goos: linux
BenchmarkScan/steady-2   	       1	  20819463 ns/op	         5.275 baseline/scan	  19327000 cpu-ns/scan
BenchmarkLogsResourcePidVsBaseline/entity_refs=false         	       1	    498753 ns/op	         1.10 x-baseline
BenchmarkLogsResourcePidVsBaseline/entity_refs=false         	       1	    498753 ns/op	         1.02 x-baseline
BenchmarkLogsResourcePidVsBaseline/entity_refs=false         	       1	    498753 ns/op	         1.05 x-baseline
BenchmarkStorm-2                       	       1	67982267119 ns/op	      8877 baseline-cpu-ns/process	     39731 cpu-ns/process	         0 events-lost
--- FAIL: BenchmarkCollector/procs=400
--- FAIL: BenchmarkCollector
BenchmarkCollector/procs=4000-2        	       1	160667316655 ns/op	        44.41 naive/collector-x	       523.6 cpu-us/young-proc
--- FAIL: BenchmarkX
`

func TestParse(t *testing.T) {
	o, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	assert.Equal(t, []float64{5.275}, o.values["BenchmarkScan/steady"]["baseline/scan"], "the GOMAXPROCS suffix dropped")
	assert.Equal(t, []float64{20819463}, o.values["BenchmarkScan/steady"]["ns/op"])
	v, n, ok := o.value(figure{bench: "BenchmarkLogsResourcePidVsBaseline/entity_refs=false", unit: "x-baseline"})
	assert.True(t, ok)
	assert.Equal(t, 3, n)
	assert.InDelta(t, 1.05, v, 1e-9, "the median")
	assert.Equal(t, map[string]bool{"BenchmarkCollector/procs=400": true, "BenchmarkCollector": true, "BenchmarkX": true}, o.failed)
}

// A figure the output has is written with the commit; one whose
// benchmark failed says so; one it lacks keeps the previous table's value
// and commit; the rest of the file stays.
func TestRewrite(t *testing.T) {
	o, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	storm := figureNamed(t, "BenchmarkStorm", "rss-growth-MiB")
	doc := "# Title\n\n" + beginBlock + "\n" + table(output{}, "old", nil) + endBlock + "\n\nHistory.\n"
	doc = strings.Replace(doc, "| "+storm.name+" | "+storm.goal+" | — | "+storm.command+" | — |",
		"| "+storm.name+" | "+storm.goal+" | 2.9 MiB | "+storm.command+" | `1234567` |", 1)
	out, err := rewrite([]byte(doc), o, "abcdef0")
	require.NoError(t, err)
	s := string(out)
	assert.True(t, strings.HasPrefix(s, "# Title\n\n"+beginBlock+"\n| figure |"))
	assert.True(t, strings.HasSuffix(s, endBlock+"\n\nHistory.\n"))

	row := func(bench, unit string) []string {
		t.Helper()
		return rows(s)[figureNamed(t, bench, unit).name]
	}
	assert.Equal(t, []string{"5x", "`make bench` (`-bench BenchmarkScan ./internal/tracker`)", "`abcdef0`"}, row("BenchmarkScan/steady", "baseline/scan")[2:])
	assert.Equal(t, "1.05x (median of 3)", row("BenchmarkLogsResourcePidVsBaseline/entity_refs=false", "x-baseline")[2])
	assert.Equal(t, "40 µs", row("BenchmarkStorm", "cpu-ns/process")[2], "scaled")
	assert.Equal(t, []string{"0", "`abcdef0`"}, []string{row("BenchmarkStorm", "events-lost")[2], row("BenchmarkStorm", "events-lost")[4]})
	assert.Equal(t, []string{"2.9 MiB", "`1234567`"}, []string{row("BenchmarkStorm", "rss-growth-MiB")[2], row("BenchmarkStorm", "rss-growth-MiB")[4]}, "kept from the old table")
	assert.Equal(t, []string{failedToday, "`abcdef0`"}, []string{row("BenchmarkCollector/procs=400", "naive/collector-x")[2], row("BenchmarkCollector/procs=400", "naive/collector-x")[4]})
	assert.Equal(t, "44.4x", row("BenchmarkCollector/procs=4000", "naive/collector-x")[2], "a sibling that passed")
	assert.Equal(t, []string{"—", "—"}, []string{row("BenchmarkHostCost", "x-defaults")[2], row("BenchmarkHostCost", "x-defaults")[4]}, "never measured")

	_, err = rewrite([]byte("no block"), o, "x")
	assert.Error(t, err)
}

func figureNamed(t *testing.T, bench, unit string) figure {
	t.Helper()
	for _, f := range figures {
		if f.bench == bench && f.unit == unit {
			return f
		}
	}
	t.Fatalf("no figure of %s %s", bench, unit)
	return figure{}
}

// The rows are found again by their name, and a cell holds no "|": every
// name is unique and every row has its five cells.
func TestFiguresAreRows(t *testing.T) {
	names := map[string]bool{}
	verb := regexp.MustCompile(`^[^%]*%\.\df[^%]*$`)
	for _, f := range figures {
		assert.False(t, names[f.name], "%q twice", f.name)
		names[f.name] = true
		for _, cell := range []string{f.name, f.goal, f.command} {
			assert.NotContains(t, cell, "|", f.name)
		}
		assert.Regexp(t, verb, f.format, f.name)
		assert.Regexp(t, `^Benchmark`, f.bench, f.name)
		assert.NotEmpty(t, f.unit, f.name)
	}
	got := rows(table(output{}, "x", nil))
	for _, f := range figures {
		assert.Len(t, got[f.name], 5, fmt.Sprintf("row %q", f.name))
	}
}

// testdata/bench.txt is make bench's output of 2026-12-06 (branch bench
// at c562b47; the collector's logs left out): a benchmark's summary
// printed before its result line, a failed sub-benchmark, skipped ones.
// Every figure is read from it but the failed host of 400 processes, the
// scan with publication events and the kprobe source, which this kernel
// (no fexit, no kprobes) skips, and the munmap loop, added after it.
func TestMakeBenchOutput(t *testing.T) {
	data, err := os.ReadFile("testdata/bench.txt")
	require.NoError(t, err)
	o, err := parse(strings.NewReader(string(data)))
	require.NoError(t, err)
	assert.True(t, o.failed["BenchmarkCollector/procs=400"])
	absent := map[string]bool{"BenchmarkCollector/procs=400": true, "BenchmarkScan/steady-defaults-events": true,
		"BenchmarkHostCost x-kprobe": true, "BenchmarkHostCost x-munmap-defaults": true}
	for _, f := range figures {
		_, n, ok := o.value(f)
		if absent[f.bench] || absent[f.bench+" "+f.unit] {
			assert.False(t, ok, f.name)
			continue
		}
		if assert.True(t, ok, "%s: no %s %s", f.name, f.bench, f.unit) {
			assert.Equal(t, 1, n, f.name)
		}
	}
	v, _, _ := o.value(figureNamed(t, "BenchmarkCollector/procs=4000", "naive/collector-x"))
	assert.InDelta(t, 39.80, v, 1e-9)
	v, _, _ = o.value(figureNamed(t, "BenchmarkScan/discovery-environment", "environment/context-only"))
	assert.InDelta(t, 1.149, v, 1e-9)
}

// Every figure's benchmark is a function of a test file of the
// repository (its sub-benchmarks and units are the benchmark's own: a
// make bench that lacks them leaves the row as it was, which
// TestMakeBenchOutput would show on a new output).
func TestBenchmarksExist(t *testing.T) {
	declared := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Benchmark\w+)\(b \*testing\.B\)`)
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "_build" || strings.HasPrefix(d.Name(), ".")) && path != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			declared[m[1]] = true
		}
		return nil
	})
	require.NoError(t, err)
	for _, f := range figures {
		top, _, _ := strings.Cut(f.bench, "/")
		assert.True(t, declared[top], "%s: no func %s in the repository's tests", f.name, top)
	}
}
