package procmem

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/prometheus/procfs"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

func benchPublisher(b *testing.B) (*Reader, *pubtest.Proc, uint64) {
	r := newTestReader(b)
	p := pubtest.Start(b, pubtest.Go, pubtest.Options{Separate: true})
	resource, attributes := allKinds()
	addr := p.Publish(encode(b, resource, attributes))
	return r, p, addr
}

// The steady state of a scan: a known publisher whose context did not change.
func BenchmarkReadIfChangedUnchanged(b *testing.B) {
	r, p, addr := benchPublisher(b)
	ctx, err := r.ReadContext(p.Pid, addr)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, changed, err := r.ReadIfChanged(p.Pid, addr, ctx.PublishedAt); err != nil || changed {
			b.Fatal(changed, err)
		}
	}
}

// A full seqlock read and decode of a realistic context.
func BenchmarkReadContext(b *testing.B) {
	r, p, addr := benchPublisher(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadContext(p.Pid, addr); err != nil {
			b.Fatal(err)
		}
	}
}

// Finding the mapping in a real (small) maps file.
func BenchmarkFindMapping(b *testing.B) {
	r, p, _ := benchPublisher(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.FindMapping(p.Pid); err != nil {
			b.Fatal(err)
		}
	}
}

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

// Parsing cost on a 100,000-line maps file (a regular file, so that parsing
// dominates): our scanner against prometheus/procfs's ProcMaps on the same
// file, the baseline.
func BenchmarkScanMaps100k(b *testing.B) {
	dir := b.TempDir()
	const pid = 4242
	path := writeFakeMaps(b, dir, pid, 100_000)
	b.Run("scanMaps", func(b *testing.B) {
		buf := make([]byte, mapsBufferSize)
		b.ReportAllocs()
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			_, found, _, err := scanMaps(f, buf)
			f.Close()
			if err != nil || !found {
				b.Fatal(found, err)
			}
		}
	})
	b.Run("procfs.ProcMaps", func(b *testing.B) {
		fs, err := procfs.NewFS(dir)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			proc, err := fs.Proc(pid)
			if err != nil {
				b.Fatal(err)
			}
			maps, err := proc.ProcMaps()
			if err != nil || len(maps) != 100_000 {
				b.Fatal(len(maps), err)
			}
		}
	})
}
