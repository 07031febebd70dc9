// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// BenchmarkAtRest is what the shipped config.yaml costs a host on which
// nothing changes: how often the collector wakes (the context switches of
// all its threads, voluntary and involuntary, of
// /proc/<pid>/task/*/status: each a sleep and a wake-up or a preemption)
// and its CPU, a second, over REST_WINDOW (30 s) after REST_SETTLE (a
// minute: the start-up's reads and the young reads of the host's
// processes are over). Beside it, in the same window, one collector each
// runs the same configuration less one of its components (an extension, a
// receiver, a processor, the collector's own metrics): what each costs is
// the difference, reported as wakeups/s-for-NAME and cpu-ms/s-for-NAME.
//
// With full windows on a quiet host (at most quietForks forks a second by
// other processes: each process's fork, exec and exit wake the collector
// and are read), it checks that the shipped configuration wakes at most
// maxRestWakeups times a second.
func BenchmarkAtRest(b *testing.B) {
	pubtest.RequireRoot(b)
	settle, window := pubtest.EnvDuration(b, "REST_SETTLE", time.Minute), pubtest.EnvDuration(b, "REST_WINDOW", 30*time.Second)
	shipped, err := os.ReadFile(filepath.Join(pubtest.RepoRoot(), "config.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	variants := restVariants(b, string(shipped))
	for range b.N {
		var m meters
		for _, v := range variants {
			col := startRestCollector(b, v.config)
			m = append(m, col.Cmd.Process.Pid)
		}
		time.Sleep(settle)
		w := m.measure(b, func() { time.Sleep(window) })
		rate := func(i int) (float64, float64) {
			return float64(w.switches[i]) / w.d.Seconds(), ms(w.cpu[i]) / w.d.Seconds()
		}
		wakeups, cpu := rate(0)
		b.ReportMetric(wakeups, "wakeups/s")
		b.ReportMetric(cpu, "cpu-ms/s")
		b.ReportMetric(w.forkRate(0), "host-forks/s")
		var sb strings.Builder
		fmt.Fprintf(&sb, "===== BenchmarkAtRest: %s after %s, %.1f host forks a second =====\n", w.d.Round(time.Millisecond), settle, w.forkRate(0))
		fmt.Fprintf(&sb, "  config.yaml: %.1f wake-ups/s, %.2f ms/s of CPU\n", wakeups, cpu)
		for i, v := range variants[1:] {
			lw, lc := rate(i + 1)
			b.ReportMetric(wakeups-lw, "wakeups/s-for-"+v.name)
			b.ReportMetric(cpu-lc, "cpu-ms/s-for-"+v.name)
			fmt.Fprintf(&sb, "  without %s: %.1f wake-ups/s, %.2f ms/s: it costs %.1f wake-ups/s, %.2f ms/s\n", v.name, lw, lc, wakeups-lw, cpu-lc)
		}
		sb.WriteString("===== end =====\n")
		fmt.Print(sb.String())
		switch full := settle >= time.Minute && window >= 30*time.Second; {
		case !full || wakeups <= maxRestWakeups:
		case w.forkRate(0) > quietForks:
			b.Logf("%.1f wake-ups a second, above %d, not checked: the host was not quiet (%.1f forks a second by other processes; quiet is at most %.0f)",
				wakeups, maxRestWakeups, w.forkRate(0), quietForks)
		default:
			b.Errorf("the shipped config.yaml wakes %.1f times a second at rest: want at most %d", wakeups, maxRestWakeups)
		}
	}
}

// maxRestWakeups is issue 47's bound on the wake-ups a second of the
// shipped config.yaml at rest.
const maxRestWakeups = 10

// restVariant is a configuration BenchmarkAtRest runs: the shipped one,
// or the shipped one less the component name.
type restVariant struct {
	name, config string
}

// restVariants returns the shipped configuration first, then one without
// each of its extensions, receivers and processors and one without the
// collector's own metrics. Without the process_context extension, its
// receiver and processor go too (they need it); a pipeline left without
// receivers goes.
func restVariants(b *testing.B, shipped string) []restVariant {
	b.Helper()
	out := []restVariant{{"", shipped}}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(shipped), &cfg); err != nil {
		b.Fatal(err)
	}
	without := func(name string, edit func(cfg map[string]any)) {
		var c map[string]any
		if err := yaml.Unmarshal([]byte(shipped), &c); err != nil {
			b.Fatal(err)
		}
		edit(c)
		text, err := yaml.Marshal(c)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, restVariant{name, string(text)})
	}
	service := mapAt(cfg, "service")
	for _, ext := range service["extensions"].([]any) {
		name := ext.(string)
		without(name+"-extension", func(c map[string]any) {
			dropComponent(c, "extensions", name)
			if name == "process_context" {
				dropComponent(c, "receivers", name)
				dropComponent(c, "processors", name)
			}
		})
	}
	for _, kind := range []string{"receivers", "processors"} {
		for _, name := range slices.Sorted(maps.Keys(mapAt(cfg, kind))) {
			without(name+"-"+strings.TrimSuffix(kind, "s"), func(c map[string]any) { dropComponent(c, kind, name) })
		}
	}
	without("own-metrics", func(c map[string]any) {
		mapAt(mapAt(c, "service"), "telemetry")["metrics"] = map[string]any{"level": "none"}
	})
	return out
}

// dropComponent removes the component name of kind ("extensions",
// "receivers", "processors") from cfg and from the service's lists; a
// pipeline left without receivers goes.
func dropComponent(cfg map[string]any, kind, name string) {
	delete(mapAt(cfg, kind), name)
	service := mapAt(cfg, "service")
	if kind == "extensions" {
		service["extensions"] = dropName(service["extensions"], name)
		return
	}
	pipelines := mapAt(service, "pipelines")
	for id, p := range pipelines {
		pipeline := p.(map[string]any)
		if pipeline[kind] = dropName(pipeline[kind], name); len(pipeline["receivers"].([]any)) == 0 {
			delete(pipelines, id)
		}
	}
}

// dropName returns the list v without name.
func dropName(v any, name string) []any {
	list, _ := v.([]any)
	return slices.DeleteFunc(slices.Clone(list), func(x any) bool { return x == name })
}

// mapAt returns cfg[key] as a map, nil when it is not one.
func mapAt(cfg map[string]any, key string) map[string]any {
	m, _ := cfg[key].(map[string]any)
	return m
}

// startRestCollector runs the built collector with config, its listening
// addresses moved to free ports through the documented variables (the
// collectors run side by side), its output discarded but for the test's
// log when it fails.
func startRestCollector(b *testing.B, config string) *collector {
	b.Helper()
	var env []string
	for _, v := range append(slices.Collect(maps.Values(listenVars)), metricsPortVar) {
		value := fmt.Sprintf("127.0.0.1:%d", pubtest.FreePort(b))
		if v == metricsPortVar {
			value = strconv.Itoa(pubtest.FreePort(b))
		}
		env = append(env, v+"="+value)
	}
	path := filepath.Join(b.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		b.Fatal(err)
	}
	return pubtest.StartCollector(b, []string{collectorBinary(b), "--config", path}, env...)
}
