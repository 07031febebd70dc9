// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/reader"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// The scan benchmarks run against a fleet of real processes. Its shape can
// be changed with environment variables (defaults in parentheses):
// PROCESSCTX_BENCH_PROCS (1000) processes in all, PROCESSCTX_BENCH_PUBLISHERS
// (100) of them Go publishers, PROCESSCTX_BENCH_BIG (5) idle processes with
// PROCESSCTX_BENCH_BIG_MAPPINGS (50000) extra mappings; the rest are idle C
// processes without a context, PROCESSCTX_BENCH_ENV_SERVICES (50) of which
// set OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. Every process has the
// benchmark's own environment besides.
type fleetShape struct {
	procs, publishers, big, bigMappings, envServices int
}

func fleetShapeFromEnv(b *testing.B) fleetShape {
	b.Helper()
	get := func(name string, def int) int {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("%s=%q: want a number", name, v)
		}
		return n
	}
	s := fleetShape{
		procs:       get("PROCESSCTX_BENCH_PROCS", 1000),
		publishers:  get("PROCESSCTX_BENCH_PUBLISHERS", 100),
		big:         get("PROCESSCTX_BENCH_BIG", 5),
		bigMappings: get("PROCESSCTX_BENCH_BIG_MAPPINGS", 50_000),
		envServices: get("PROCESSCTX_BENCH_ENV_SERVICES", 50),
	}
	if s.publishers+s.big+s.envServices > s.procs {
		b.Fatalf("fleet %+v: more publishers and big processes than processes", s)
	}
	return s
}

// fleet is the set of processes a scan benchmark observes.
type fleet struct {
	shape        fleetShape
	publishers   []*pubtest.Proc
	idle         []int       // pids without a context, the big ones included
	envServices  []*exec.Cmd // idle processes named by their environment
	pids         map[int]bool
	pubName      string
	idleName     string
	payloadBytes int // average encoded payload of a publisher
	versions     []int
}

// changesOfItsOwn counts the changes of the fleet's processes: the host's
// others (another test's publishers) come and go as they please.
func (f *fleet) changesOfItsOwn(changes []tracker.Change) int {
	n := 0
	for _, c := range changes {
		if f.pids[c.Publication.PID] {
			n++
		}
	}
	return n
}

// benchPayload is a realistic SDK resource: ten string attributes, about
// 380 bytes encoded.
func benchPayload(i, version int) []byte {
	return otep.EncodeStrings(map[string]string{
		"service.name":                fmt.Sprintf("bench-service-%02d", i%20),
		"service.namespace":           "bench",
		"service.version":             fmt.Sprintf("1.%d.0", version),
		"service.instance.id":         fmt.Sprintf("%08x-1f0b-4c4e-9d38-%012x", i, version),
		"deployment.environment.name": "production",
		"telemetry.sdk.name":          "opentelemetry",
		"telemetry.sdk.language":      "go",
		"telemetry.sdk.version":       "1.47.0",
		"host.name":                   "node-17.bench.example.com",
		"process.runtime.name":        "go",
	})
}

// startFleet starts the fleet; every process is killed when b ends.
func startFleet(b *testing.B) *fleet {
	b.Helper()
	shape := fleetShapeFromEnv(b)
	dir := b.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	tag := strconv.Itoa(os.Getpid())
	f := &fleet{
		shape:    shape,
		pids:     map[int]bool{},
		pubName:  "pctxbench-" + tag + "-go",
		idleName: "pctxbench-" + tag + "-c",
	}

	idleBin := filepath.Join(dir, f.idleName)
	cc := exec.Command("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-std=gnu11",
		"-o", idleBin, filepath.Join(pubtest.RepoRoot(), "testdata", "manymaps", "manymaps.c"))
	if out, err := cc.CombinedOutput(); err != nil {
		b.Fatalf("build manymaps (gcc is required): %v\n%s", err, out)
	}
	pubBin := filepath.Join(dir, f.pubName)
	copyExecutable(b, pubtest.Binary(b, pubtest.Go), pubBin)

	start := time.Now()
	for i := range shape.procs - shape.publishers {
		mappings := 0
		if i < shape.big {
			mappings = shape.bigMappings
		}
		cmd := exec.Command(idleBin, strconv.Itoa(mappings))
		if i >= shape.big && i < shape.big+shape.envServices {
			cmd.Env = append(os.Environ(), fmt.Sprintf("OTEL_SERVICE_NAME=bench-env-%02d", i%20),
				"OTEL_RESOURCE_ATTRIBUTES=service.namespace=bench,deployment.environment.name=production,service.version=1.0.0")
			f.envServices = append(f.envServices, cmd)
		}
		p := pubtest.StartCommand(b, pubtest.Kind("manymaps"), cmd)
		f.idle = append(f.idle, p.Pid)
		f.pids[p.Pid] = true
	}
	total := 0
	for i := range shape.publishers {
		p := pubtest.StartCommand(b, pubtest.Go, exec.Command(pubBin, "-control"))
		payload := benchPayload(i, 0)
		total += len(payload)
		p.Publish(payload)
		f.publishers = append(f.publishers, p)
		f.versions = append(f.versions, 0)
		f.pids[p.Pid] = true
	}
	if shape.publishers > 0 {
		f.payloadBytes = total / shape.publishers
	}
	b.Logf("fleet: %d processes (%d Go publishers, %d idle of which %d with %d mappings and %d named by their environment) started in %v",
		shape.procs, shape.publishers, len(f.idle), shape.big, shape.bigMappings, shape.envServices, time.Since(start).Round(time.Millisecond))
	return f
}

// republish publishes publisher i's context again after an unpublish.
func (f *fleet) republish(i int) {
	f.versions[i]++
	f.publishers[i].Publish(benchPayload(i, f.versions[i]))
}

// update publishes a new version of publisher i's context.
func (f *fleet) update(i int) {
	f.versions[i]++
	f.publishers[i].Update(benchPayload(i, f.versions[i]))
}

func copyExecutable(b *testing.B, from, to string) {
	b.Helper()
	src, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		b.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		b.Fatal(err)
	}
}

// meter adds up what scans cost: CPU time of the whole process (getrusage
// RUSAGE_SELF: user + sys of every thread, the tracker's readers and the
// GC included), bytes returned by read(2) in the process (rchar of
// /proc/self/io: procfs files, maps included) and the reader's counters.
type meter struct {
	io     *os.File
	ioBuf  []byte
	scans  int
	cpu    time.Duration
	rchar  uint64
	reader reader.Stats
}

func newMeter(b *testing.B) *meter {
	b.Helper()
	f, err := os.Open("/proc/self/io")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	return &meter{io: f, ioBuf: make([]byte, 512)}
}

// readChar returns rchar of this process and the bytes the read returned.
func (m *meter) readChar() (rchar uint64, n int) {
	n, err := m.io.ReadAt(m.ioBuf, 0)
	if err != nil && err != io.EOF {
		return 0, 0
	}
	rest, ok := bytes.CutPrefix(m.ioBuf[:n], []byte("rchar: "))
	if !ok {
		return 0, n
	}
	end := bytes.IndexByte(rest, '\n')
	if end < 0 {
		return 0, n
	}
	v, _ := strconv.ParseUint(string(rest[:end]), 10, 64)
	return v, n
}

// cpuTime is the process's user+sys time. RUSAGE_SELF, not RUSAGE_THREAD:
// the kernel brings the calling thread's runtime up to date only for the
// former, the latter lags by up to a scheduler tick and undercounts.
func cpuTime() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// statser counts a reader's reads (reader.Reader, the naive scanner).
type statser interface{ Stats() reader.Stats }

// measure runs one scan through fn and adds its costs.
func (m *meter) measure(r statser, fn func()) {
	cpu0 := cpuTime()
	rchar0, ioRead := m.readChar()
	stats0 := r.Stats()

	fn()

	stats1 := r.Stats()
	rchar1, _ := m.readChar()
	cpu1 := cpuTime()

	m.scans++
	m.cpu += cpu1 - cpu0
	// The first io read's bytes count after it took its snapshot.
	m.rchar += rchar1 - rchar0 - uint64(ioRead)
	m.reader.MapsFiles += stats1.MapsFiles - stats0.MapsFiles
	m.reader.MapsBytes += stats1.MapsBytes - stats0.MapsBytes
	m.reader.MemoryReads += stats1.MemoryReads - stats0.MemoryReads
	m.reader.MemoryBytes += stats1.MemoryBytes - stats0.MemoryBytes
}

func (m *meter) cpuPerScan() float64 { return float64(m.cpu.Nanoseconds()) / float64(m.scans) }

// report adds the per-scan figures to b's result line.
func (m *meter) report(b *testing.B) {
	if m.scans == 0 {
		return
	}
	n := float64(m.scans)
	b.ReportMetric(m.cpuPerScan(), "cpu-ns/scan")
	b.ReportMetric(float64(m.rchar)/n, "read-bytes/scan")
	b.ReportMetric(float64(m.reader.MapsFiles)/n, "maps-files/scan")
	b.ReportMetric(float64(m.reader.MapsBytes)/n, "maps-bytes/scan")
	b.ReportMetric(float64(m.reader.MemoryReads)/n, "mem-reads/scan")
	b.ReportMetric(float64(m.reader.MemoryBytes)/n, "mem-bytes/scan")
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC() // sync.Pool keeps its victims for one more cycle
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
