// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// minimalConfig runs the process_context extension with extensionSettings
// (YAML lines at its indentation, may be empty), the receiver and an
// exporter: what costs the host is the extension's tracker.
func minimalConfig(extensionSettings, exporter string) string {
	if exporter == "" {
		exporter = `
exporters:
  debug:
    verbosity: basic
service:
  telemetry:
    metrics:
      level: none
`
	}
	name := "debug"
	if strings.Contains(exporter, "otlp_grpc:") {
		name = "otlp_grpc"
	}
	return `
extensions:
  process_context:
` + extensionSettings + `
receivers:
  process_context:
` + exporter + `  extensions: [process_context]
  pipelines:
    logs/entities:
      receivers: [process_context]
      exporters: [` + name + `]
`
}

// publicationSource is what the collector's start-up line says of its
// publication events ("eBPF syscall_tracepoints" or "none") and, when
// none runs that it asked for, why: the start-up's second line.
func publicationSource(output string) string {
	_, rest, ok := strings.Cut(output, `"publication_events": "`)
	if !ok {
		return ""
	}
	src, _, _ := strings.Cut(rest, `"`)
	if _, missing, ok := strings.Cut(output, "Process discovery: publications are polled"); ok {
		why, _, _ := strings.Cut(missing, "\n")
		src += " (publications are polled" + why + ")"
	}
	return src
}

// TestLatePublisherAtDefaults: a process that publishes 11 s after it
// started, when its first young re-reads (1, 3 and 8 s after its exec)
// have found nothing, is reported by its publication event where a
// publication event source runs (at the defaults where the kernel allows
// fexit; with publication_events: syscall_tracepoints where it allows
// those), and by the young re-read 18 s after its exec where none does
// (the bound the README gives).
func TestLatePublisherAtDefaults(t *testing.T) {
	pubtest.RequireRoot(t)
	for _, tc := range []struct{ name, settings string }{
		{"defaults", ""},
		{"syscall_tracepoints", "    publication_events: syscall_tracepoints"},
		{"none", "    publication_events: none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			server := startOTLPServer(t)
			col := startCollector(t, minimalConfig(tc.settings, pubtest.ExportingTo(server.addr)))
			src := publicationSource(col.Output.String())
			t.Logf("publication events: %s", src)
			events := strings.HasPrefix(src, "eBPF ")
			if tc.name == "syscall_tracepoints" && !events {
				t.Skipf("the kernel refuses it here: %s", src)
			}

			p := pubtest.Start(t, pubtest.C, pubtest.Options{})
			time.Sleep(11 * time.Second)
			p.Publish(otep.EncodeStrings(map[string]string{"service.name": "late"}))
			published := time.Now()
			got := waitEntityEvents(t, server, p.Pid, 1)
			latency := time.Since(published)
			t.Logf("reported %s after the publish", latency)
			assert.Equal(t, "late", got[0].attrs["service.name"])
			if events {
				// The event, not the young re-read 7 s later.
				assert.Less(t, latency, 5*time.Second)
			} else {
				assert.Less(t, latency, 7*time.Second+5*time.Second, "the young re-read 18 s after the exec")
			}
		})
	}
}

// BenchmarkHostCost is what the collector costs the host's other
// processes: the CPU time of a getppid syscall in another process (a C
// loop of HOSTCOST_SYSCALLS, default 10,000,000), and of an mmap and
// munmap of a page (HOSTCOST_MUNMAPS, default 1,000,000: munmap is one of
// the three syscalls the publication events hook, and every process makes
// it), without the collector and with it running at its defaults and
// with each publication event source, interleaved round by round
// (HOSTCOST_ROUNDS, default 5). Each loop starts once the collector's
// start-up work is over (hostCostSettle), so that it measures what a
// running collector costs. It reports the median ns per syscall (per
// mmap and munmap) without the collector and each variant's median ratio
// to it; a source the kernel refuses is left out.
func BenchmarkHostCost(b *testing.B) {
	pubtest.RequireRoot(b)
	loop := buildGetppid(b)
	syscalls := pubtest.EnvInt(b, "HOSTCOST_SYSCALLS", 10_000_000)
	munmaps := pubtest.EnvInt(b, "HOSTCOST_MUNMAPS", 1_000_000)
	rounds := pubtest.EnvInt(b, "HOSTCOST_ROUNDS", 5)
	variants := []struct {
		name      string
		collector bool
		settings  string
	}{
		{"without", false, ""},
		{"defaults", true, ""},
		{"poll", true, "    discovery: poll"},
		{"fexit", true, "    publication_events: fexit"},
		{"kprobe", true, "    publication_events: kprobe"},
		{"syscall_tracepoints", true, "    publication_events: syscall_tracepoints"},
		{"raw_sys_exit", true, "    publication_events: raw_sys_exit"},
	}
	// Per variant, the ns per getppid and per mmap + munmap of each round.
	ns, munmapNS := map[string][]float64{}, map[string][]float64{}
	refused := map[string]string{}
	for range b.N {
		for r := 0; r < rounds; r++ {
			for _, v := range variants {
				if refused[v.name] != "" {
					continue
				}
				var col *collector
				if v.collector {
					col = startCollector(b, minimalConfig(v.settings, ""))
					src := publicationSource(col.Output.String())
					if strings.Contains(v.settings, "publication_events") && !strings.HasPrefix(src, "eBPF ") {
						refused[v.name] = src
						col.Stop(b)
						continue
					}
					if r == 0 {
						b.Logf("%s: publication events: %s", v.name, src)
					}
					time.Sleep(hostCostSettle)
				}
				ns[v.name] = append(ns[v.name], runGetppid(b, loop, syscalls))
				munmapNS[v.name] = append(munmapNS[v.name], runGetppid(b, loop, munmaps, "munmap"))
				if col != nil {
					col.Stop(b)
				}
			}
		}
	}
	base := median(ns["without"])
	b.ReportMetric(base, "ns/syscall-without")
	b.ReportMetric(median(munmapNS["without"]), "ns/munmap-without")
	b.Logf("without: %.1f ns per getppid (runs %v), %.1f ns per mmap + munmap (runs %v)",
		base, ns["without"], median(munmapNS["without"]), munmapNS["without"])
	for _, v := range variants[1:] {
		if why := refused[v.name]; why != "" {
			b.Logf("%s: refused here: %s", v.name, why)
			continue
		}
		for _, loop := range []struct {
			what, unit string
			ns         map[string][]float64
		}{{"getppid", "x-", ns}, {"mmap + munmap", "x-munmap-", munmapNS}} {
			runs := loop.ns[v.name]
			ratios := make([]float64, len(runs))
			for i, x := range runs {
				ratios[i] = x / loop.ns["without"][i]
			}
			b.Logf("%s: %.1f ns per %s (runs %v); ratio to the same round without: median %.3fx (%v)",
				v.name, median(runs), loop.what, runs, median(ratios), ratios)
			b.ReportMetric(median(ratios), loop.unit+v.name)
		}
	}
}

// hostCostSettle is how long BenchmarkHostCost waits after the collector
// is ready: its first scan of the host is over well before.
const hostCostSettle = 3 * time.Second

// buildGetppid builds the syscall loop, or takes the prebuilt one
// $HOSTCOST_GETPPID names (the kernel matrix's guests have no compiler).
func buildGetppid(b *testing.B) string {
	if bin := os.Getenv("HOSTCOST_GETPPID"); bin != "" {
		return bin
	}
	bin := filepath.Join(b.TempDir(), "getppid")
	src := filepath.Join(pubtest.RepoRoot(), "test", "e2e", "testdata", "getppid", "getppid.c")
	if out, err := exec.Command("gcc", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		b.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// runGetppid runs the loop of n calls (args: "munmap" for mmap and munmap
// pairs) and returns the ns of one.
func runGetppid(b *testing.B, bin string, n int, args ...string) float64 {
	out, err := exec.Command(bin, append([]string{strconv.Itoa(n)}, args...)...).Output()
	if err != nil {
		b.Fatalf("%s: %v", bin, err)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	require.NoError(b, err)
	return v
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}
