// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package reader

import (
	"bytes"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// manyMapsMappings is the size of the big real maps file: close to the
// default vm.max_map_count (65,530), the most mappings a process can have.
const manyMapsMappings = 60_000

// buildManyMaps compiles testdata/manymaps into a directory of t's.
func buildManyMaps(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "manymaps")
	cmd := exec.Command("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-std=gnu11",
		"-o", bin, filepath.Join(pubtest.RepoRoot(), "testdata", "manymaps", "manymaps.c"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build manymaps (gcc is required): %v\n%s", err, out)
	}
	return bin
}

// startManyMaps starts bin (buildManyMaps) with n extra mappings, publishing
// payload unless it is nil; it is killed when the test ends.
func startManyMaps(t testing.TB, bin string, n int, payload []byte) *pubtest.Proc {
	t.Helper()
	args := []string{strconv.Itoa(n)}
	if payload != nil {
		args = append(args, hex.EncodeToString(payload))
	}
	return pubtest.StartCommand(t, pubtest.Kind("manymaps"), exec.Command(bin, args...))
}

// copyMaps reads a maps file to the end and throws it away: the cost of
// having the kernel generate the text, the floor for any maps reader.
func copyMaps(b *testing.B, path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	n, err := io.Copy(io.Discard, f)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// Finding the context in a real process with 60,000 mappings, the context
// mapping near the end of its maps, against the floor: io.Copy of the same
// maps file to io.Discard. The two alternate within each iteration (the
// order flips every iteration) so that both see the same machine state.
// Target: find/copy <= 1.3; with PROCMAP_QUERY (the anonymous VMAs skipped
// in the kernel) it is well below 1, the text alone is the floor's 1.1.
func BenchmarkFindMapping60k(b *testing.B) {
	p := startManyMaps(b, buildManyMaps(b), manyMapsMappings, serviceContext(b, "manymaps"))
	r := newTestReader(b)
	path := r.FS().Path(p.Pid, "maps")

	maps, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Count(maps, []byte("\n"))
	hit := bytes.Index(maps, []byte(otep.Signature))
	if lines < manyMapsMappings || hit < 0 || hit < len(maps)*9/10 {
		b.Fatalf("maps of pid %d: %d lines, context at byte %d of %d: want %d+ lines, context in the last 10%%",
			p.Pid, lines, hit, len(maps), manyMapsMappings)
	}

	var find, copied time.Duration
	var mapsBytes int64
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		timeFind := func() {
			start := time.Now()
			if _, err := r.FindMapping(p.Pid); err != nil {
				b.Fatal(err)
			}
			find += time.Since(start)
		}
		timeCopy := func() {
			start := time.Now()
			mapsBytes += copyMaps(b, path)
			copied += time.Since(start)
		}
		if i%2 == 0 {
			timeFind()
			timeCopy()
		} else {
			timeCopy()
			timeFind()
		}
		i++
	}
	b.ReportMetric(float64(lines), "lines")
	b.ReportMetric(float64(mapsBytes)/float64(i), "maps-bytes/op")
	b.ReportMetric(float64(find.Nanoseconds())/float64(i), "find-ns/op")
	b.ReportMetric(float64(copied.Nanoseconds())/float64(i), "copy-ns/op")
	b.ReportMetric(float64(find)/float64(copied), "find/copy")
}

// The text scan (the whole maps text) against FindMapping (64 KiB of text,
// then PROCMAP_QUERY), on a small publisher and on a real process with
// 50,000 anonymous mappings before its context.
func BenchmarkFindMappingTextVsQuery(b *testing.B) {
	small := pubtest.Start(b, pubtest.Go, pubtest.Options{})
	small.Publish(serviceContext(b, "small"))
	big := startManyMaps(b, buildManyMaps(b), bigMappings, serviceContext(b, "manymaps"))
	for _, p := range []struct {
		name string
		pid  int
	}{{"small", small.Pid}, {"50k", big.Pid}} {
		for _, way := range []string{"text", "query"} {
			b.Run(p.name+"/"+way, func(b *testing.B) {
				r := newTestReader(b)
				find := r.FindMapping
				if way == "text" {
					find = func(pid int) (otep.Mapping, error) { return r.findMapping(pid, 0) }
				}
				before := r.Stats()
				b.ReportAllocs()
				for b.Loop() {
					if _, err := find(p.pid); err != nil {
						b.Fatal(err)
					}
				}
				s := sub(r.Stats(), before)
				b.ReportMetric(float64(s.MapsBytes)/float64(b.N), "maps-bytes/op")
				b.ReportMetric(float64(s.MapsQueries)/float64(b.N), "queries/op")
			})
		}
	}
}
