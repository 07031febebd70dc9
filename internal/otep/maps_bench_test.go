// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// writeFakeMaps writes a maps file of lines lines, the context mapping last,
// at <dir>/<pid>/maps.
func writeFakeMaps(b *testing.B, dir string, pid, lines int) string {
	b.Helper()
	path := filepath.Join(dir, strconv.Itoa(pid), "maps")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	content := mapsFile(lines-1, lines, ctxLine("rw-p", "/memfd:OTEL_CTX (deleted)"))
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// Parsing cost on a 100,000-line maps file in a fake procfs root (a regular
// file, so that parsing dominates): our scanner against the baseline,
// prometheus/procfs's ProcMaps over the same root, alternating within each
// iteration. Target: procfs/scan >= 5.
func BenchmarkScanMaps100k(b *testing.B) {
	dir := b.TempDir()
	const pid = 4242
	const lines = 100_000
	path := writeFakeMaps(b, dir, pid, lines)
	fs, err := procfs.NewFS(dir)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, MapsBufferSize)

	var scan, baseline time.Duration
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		_, _, err = FindMapping(f, buf)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		proc, err := fs.Proc(pid)
		if err != nil {
			b.Fatal(err)
		}
		maps, err := proc.ProcMaps()
		if err != nil || len(maps) != lines {
			b.Fatal(len(maps), err)
		}
		scan += mid.Sub(start)
		baseline += time.Since(mid)
		i++
	}
	b.ReportMetric(float64(scan.Nanoseconds())/float64(i), "scan-ns/op")
	b.ReportMetric(float64(baseline.Nanoseconds())/float64(i), "procfs-ns/op")
	b.ReportMetric(float64(baseline)/float64(scan), "procfs/scan")
}
