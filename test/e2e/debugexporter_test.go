// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// The churn losses of issue 19 (a publisher with a delete event and no
// state, or a state and no delete, 1 in ~500 through `make run`'s debug
// exporter) were the collector's log sampling, not the receiver: the debug
// exporter writes each batch through the collector's own logger, whose
// sampler (service::telemetry::logs::sampling: 10 messages per message
// text per 10 s, then 1 in 100) keeps its counts in 4096 buckets by a hash
// of the text. The exporter's one-line "Logs" summary, logged for every
// batch, fills its bucket within a second; a detailed event whose text
// hashes into that bucket (1 in 4096) is dropped. The shipped configs give
// the debug exporter a logger of its own (use_internal_logger: false),
// which samples nothing away.
func TestDebugExporterShowsEveryEntityEvent(t *testing.T) {
	unlucky := eventSharingTheSummaryBucket(t)
	root := pubtest.RepoRoot()
	configs, err := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	require.NoError(t, err)
	configs = append(configs, filepath.Join(root, "config.yaml"), filepath.Join(root, "deploy", "container", "config.yaml"), filepath.Join(root, "deploy", "systemd", "config.yaml"))
	detailed := 0
	for _, path := range configs {
		cm, err := confmaptest.LoadConf(path)
		require.NoError(t, err)
		sub, err := cm.Sub("exporters::debug")
		require.NoError(t, err)
		if sub.Get("verbosity") != "detailed" {
			continue // no events to show: a line per batch
		}
		detailed++
		rel, _ := filepath.Rel(root, path)
		t.Run(rel, func(t *testing.T) {
			shown := exportThroughCollectorLogger(t, sub, unlucky)
			require.Contains(t, shown, unlucky.service, "the event is in the debug exporter's output")
		})
	}
	require.Positive(t, detailed, "config.yaml shows events in detail")
	t.Run("with the collector's own logger the event is lost", func(t *testing.T) {
		shown := exportThroughCollectorLogger(t, confmap.NewFromStringMap(map[string]any{"verbosity": "detailed"}), unlucky)
		require.NotContains(t, shown, unlucky.service)
		require.Contains(t, shown, "svc-ordinary", "the ordinary batches are shown")
	})
}

// unluckyEvent is a batch whose detailed text shares the sampler's bucket
// with the "Logs" summary line.
type unluckyEvent struct {
	service string
	logs    plog.Logs
}

// entityEventLogs is one entity state event, as the receiver writes it,
// for a process of service, at a fixed time.
func entityEventLogs(service string) plog.Logs {
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	sl.Scope().SetName("github.com/processctx/otelcol-processctx/receiver/processctxreceiver")
	lr := sl.LogRecords().AppendEmpty()
	lr.SetTimestamp(1_700_000_000_000_000_000)
	lr.Attributes().PutStr("otel.entity.event.type", "entity_state")
	lr.Attributes().PutEmptyMap("otel.entity.attributes").PutStr("service.name", service)
	return ld
}

// samplerBucket is the bucket of zap's sampler a message's counts go to.
func samplerBucket(msg string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(msg))
	return h.Sum32() % 4096
}

// eventSharingTheSummaryBucket finds a service name whose event's detailed
// text, as the debug exporter writes it, lands in the "Logs" summary's
// bucket.
func eventSharingTheSummaryBucket(t *testing.T) unluckyEvent {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	exp := newDebugExporter(t, confmap.NewFromStringMap(map[string]any{"verbosity": "detailed"}), zap.New(core))
	want := samplerBucket("Logs")
	for i := range 200_000 {
		service := fmt.Sprintf("svc-unlucky-%d", i)
		ld := entityEventLogs(service)
		require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
		for _, e := range logs.TakeAll() {
			if strings.Contains(e.Message, service) && samplerBucket(e.Message) == want {
				return unluckyEvent{service: service, logs: entityEventLogs(service)}
			}
		}
	}
	t.Fatal("no event text lands in the summary's bucket")
	return unluckyEvent{}
}

// exportThroughCollectorLogger runs the debug exporter configured by cfg
// under a logger sampled as the collector's (its defaults), exports a
// dozen ordinary batches and then the unlucky one, and returns what the
// exporter wrote.
func exportThroughCollectorLogger(t *testing.T, cfg *confmap.Conf, unlucky unluckyEvent) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "debug.out")
	// Where the exporter's own logger writes, when it has one.
	require.NoError(t, cfg.Merge(confmap.NewFromStringMap(map[string]any{"output_paths": []any{out}})))
	core, logs := observer.New(zapcore.InfoLevel)
	// service::telemetry::logs::sampling at its defaults.
	collectorLogger := zap.New(zapcore.NewSamplerWithOptions(core, 10*time.Second, 10, 100))
	exp := newDebugExporter(t, cfg, collectorLogger)
	for range 12 {
		require.NoError(t, exp.ConsumeLogs(context.Background(), entityEventLogs("svc-ordinary")))
	}
	require.NoError(t, exp.ConsumeLogs(context.Background(), unlucky.logs))
	require.NoError(t, exp.Shutdown(context.Background()))
	var b strings.Builder
	for _, e := range logs.All() {
		b.WriteString(e.Message)
	}
	if written, err := os.ReadFile(out); err == nil {
		b.Write(written)
	}
	return b.String()
}

// newDebugExporter starts a debug exporter configured by cfg, logging to
// logger, with its sending queue off (the test reads what it wrote at
// once).
func newDebugExporter(t *testing.T, cfg *confmap.Conf, logger *zap.Logger) exporter.Logs {
	t.Helper()
	f := debugexporter.NewFactory()
	c := f.CreateDefaultConfig()
	require.NoError(t, cfg.Merge(confmap.NewFromStringMap(map[string]any{"sending_queue": map[string]any{"enabled": false}})))
	require.NoError(t, cfg.Unmarshal(c))
	set := exportertest.NewNopSettings(f.Type())
	set.Logger = logger
	exp, err := f.CreateLogs(context.Background(), set, c)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	return exp
}

var _ component.Config = (*debugexporter.Config)(nil)

// make run's configuration, with publishers started from a shell at 8 a
// second and killed 2.5 s later: each one's state and delete event are in
// the debug exporter's output, once each.
func TestDefaultConfigShowsEveryPublisher(t *testing.T) {
	pubtest.RequireRoot(t)
	cfg, err := os.ReadFile(filepath.Join(pubtest.RepoRoot(), "config.yaml"))
	require.NoError(t, err)
	moveShippedPorts(t) // beside other collectors, as the README says
	col := startCollector(t, string(cfg))
	cpub := pubtest.Binary(t, pubtest.C)

	const n = 24
	pids := make(chan int, n)
	var shells []*exec.Cmd
	for i := range n {
		sh := exec.Command("sh", "-c", fmt.Sprintf("%s -life 0 -service e2e-shell-%d & p=$!; sleep 2.5; kill $p; wait $p", cpub, i))
		out, err := sh.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, sh.Start())
		shells = append(shells, sh)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "ready" {
					pid, _ := strconv.Atoi(f[1])
					pids <- pid
				}
			}
		}()
		time.Sleep(125 * time.Millisecond)
	}
	for _, sh := range shells {
		_ = sh.Wait() // the shell's kill ends the publisher: not an error here
	}
	close(pids)
	var started []int
	for pid := range pids {
		started = append(started, pid)
	}
	require.Len(t, started, n, "every publisher started")

	var counts map[int][2]int
	require.Eventually(t, func() bool {
		counts = debugEntityEvents(col.Output.String())
		for _, pid := range started {
			if counts[pid] != [2]int{1, 1} {
				return false
			}
		}
		return true
	}, 30*time.Second, 200*time.Millisecond, "one state and one delete each: %v of %v", counts, started)
}

// debugEntityEvents counts, by pid, the entity state and delete events the
// debug exporter printed in detail.
func debugEntityEvents(out string) map[int][2]int {
	counts := map[int][2]int{}
	pid := 0
	for line := range strings.Lines(out) {
		if _, id, ok := strings.Cut(line, "otel.entity.id: Map("); ok {
			_, after, _ := strings.Cut(id, `"process.pid":`)
			pid, _ = strconv.Atoi(strings.TrimRight(after, "})\n"))
			continue
		}
		if _, typ, ok := strings.Cut(line, "otel.entity.event.type: Str("); ok && pid != 0 {
			c := counts[pid]
			if strings.HasPrefix(typ, "entity_state") {
				c[0]++
			} else {
				c[1]++
			}
			counts[pid] = c
			pid = 0
		}
	}
	return counts
}
