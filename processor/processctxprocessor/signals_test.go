// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/processctx/otelcol-processctx/internal/attrpolicy"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

// hostmetricsLike builds what the hostmetrics process scraper emits: one
// resource per process with process.pid and process.executable.name, and
// a few metrics of several types.
func hostmetricsLike(pids ...int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	for _, pid := range pids {
		rm := md.ResourceMetrics().AppendEmpty()
		attrs := rm.Resource().Attributes()
		attrs.PutInt("process.pid", int64(pid))
		attrs.PutInt("process.parent_pid", 1)
		attrs.PutStr("process.executable.name", "publisher")
		attrs.PutStr("process.command_line", "publisher -control")
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName("github.com/open-telemetry/opentelemetry-collector-contrib/receiver/hostmetricsreceiver/internal/scraper/processscraper")
		cpu := sm.Metrics().AppendEmpty()
		cpu.SetName("process.cpu.time")
		sum := cpu.SetEmptySum()
		for _, state := range []string{"user", "system", "wait"} {
			dp := sum.DataPoints().AppendEmpty()
			dp.Attributes().PutStr("state", state)
			dp.SetDoubleValue(1.5)
		}
		mem := sm.Metrics().AppendEmpty()
		mem.SetName("process.memory.usage")
		mem.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(1 << 20)
	}
	return md
}

func TestMetricsHostmetricsResource(t *testing.T) {
	for _, kind := range pubtest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			pub := startPublisher(t, kind, "checkout")
			h := newHarness(t, testConfig())
			md := hostmetricsLike(pub.Pid, noContextPID())
			in := pmetric.NewMetrics()
			md.CopyTo(in)

			out := h.consumeMetrics(md)
			require.Equal(t, 2, out.ResourceMetrics().Len())
			assert.Equal(t, in.DataPointCount(), out.DataPointCount())
			want := withAttrs(pub.published(), in.ResourceMetrics().At(0).Resource().Attributes().AsRaw())
			got := out.ResourceMetrics().At(0).Resource().Attributes()
			assert.Equal(t, want, got.AsRaw())
			assertNoThreadlocal(t, got)
			assert.Equal(t, in.ResourceMetrics().At(1).Resource().Attributes().AsRaw(),
				out.ResourceMetrics().At(1).Resource().Attributes().AsRaw(), "no context: unchanged")
			assert.Equal(t, in.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Name(),
				out.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Name())
		})
	}
}

func TestTracesResourcePid(t *testing.T) {
	for _, kind := range pubtest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			pub := startPublisher(t, kind, "checkout")
			h := newHarness(t, testConfig())
			td := ptrace.NewTraces()
			for _, pid := range []string{strconv.Itoa(pub.Pid), "not-a-pid"} {
				rs := td.ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr("process.pid", pid)
				rs.Resource().Attributes().PutStr("telemetry.sdk.name", "from-the-sdk")
				span := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
				span.SetName("GET /")
			}
			in := ptrace.NewTraces()
			td.CopyTo(in)

			out := h.consumeTraces(td)
			require.Equal(t, 2, out.ResourceSpans().Len())
			assert.Equal(t, 2, out.SpanCount())
			want := withAttrs(pub.published(), map[string]any{"process.pid": strconv.Itoa(pub.Pid), "telemetry.sdk.name": "from-the-sdk"})
			assert.Equal(t, want, out.ResourceSpans().At(0).Resource().Attributes().AsRaw())
			assert.Equal(t, in.ResourceSpans().At(1).Resource().Attributes().AsRaw(),
				out.ResourceSpans().At(1).Resource().Attributes().AsRaw())
		})
	}
}

// TestOverride: each family's override replaces the telemetry's values of
// that family only; observed values (the telemetry's, and the collector's
// own) are never replaced, and the pid never.
func TestOverride(t *testing.T) {
	pub := startPublisher(t, pubtest.Go, "checkout")
	pub.update(t, withAttrs(pub.resource, map[string]any{"datadog.env": "published"}))
	// The telemetry's own: deployment.environment.name is identity,
	// datadog.env other, process.creation.time observed.
	own := map[string]any{
		"datadog.env": "own", "deployment.environment.name": "staging",
		"process.creation.time": "2000-01-01T00:00:00Z", "process.pid": int64(pub.Pid),
	}
	for _, tt := range []struct {
		name string
		edit func(*attrpolicy.Config)
		want map[string]any
	}{
		{"off: the telemetry's attributes win", func(*attrpolicy.Config) {}, withAttrs(pub.published(), own)},
		{"identity: the published identity wins", func(c *attrpolicy.Config) { c.Identity.Override = true },
			withAttrs(pub.published(), withAttrs(own, map[string]any{"deployment.environment.name": "test"}))},
		{"other: the published vendor keys win", func(c *attrpolicy.Config) { c.Other.Override = true },
			withAttrs(pub.published(), withAttrs(own, map[string]any{"datadog.env": "published"}))},
		{"both: never the observed keys nor the pid", func(c *attrpolicy.Config) { c.Identity.Override, c.Other.Override = true, true },
			withAttrs(pub.published(), withAttrs(own, map[string]any{"deployment.environment.name": "test", "datadog.env": "published"}))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.edit(&cfg.Attributes)
			h := newHarness(t, cfg)
			ld := plog.NewLogs()
			rl := ld.ResourceLogs().AppendEmpty()
			require.NoError(t, rl.Resource().Attributes().FromRaw(own))
			addRecord(rl.ScopeLogs().AppendEmpty(), "x", nil)
			out := h.consumeLogs(ld)
			assert.Equal(t, tt.want, out.ResourceLogs().At(0).Resource().Attributes().AsRaw())
		})
	}
}

func TestIncludeExclude(t *testing.T) {
	pub := startPublisher(t, pubtest.C, "checkout")
	for _, tt := range []struct {
		name             string
		include, exclude []string
		want             []string
	}{
		// process.pid: the record's pid, stamped on the resource of its
		// process; process.creation.time comes from the host, and is
		// included and excluded as the published keys are.
		{"all", nil, nil, []string{"deployment.environment.name", "service.instance.id", "service.name", "service.shard", "process.pid", "process.creation.time"}},
		{"include", []string{"service.name", "service.shard", "not.published"}, nil, []string{"service.name", "service.shard", "process.pid"}},
		{"include the creation time", []string{"service.name", "process.creation.time"}, nil, []string{"service.name", "process.pid", "process.creation.time"}},
		{"exclude", nil, []string{"service.instance.id"}, []string{"deployment.environment.name", "service.name", "service.shard", "process.pid", "process.creation.time"}},
		{"exclude the creation time", nil, []string{"process.creation.time"}, []string{"deployment.environment.name", "service.instance.id", "service.name", "service.shard", "process.pid"}},
		{"both", []string{"service.name", "service.shard"}, []string{"service.shard"}, nil}, // rejected by Validate
		{"include a pid key: the published one is never added", []string{"service.name", "process.pid"}, nil, []string{"service.name", "process.pid"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Attributes.Include, cfg.Attributes.Exclude = attrpolicy.Strict(tt.include...), attrpolicy.Strict(tt.exclude...)
			if tt.want == nil {
				require.Error(t, confmap.Validate(cfg))
				return
			}
			h := newHarness(t, cfg)
			ld := plog.NewLogs()
			rl := ld.ResourceLogs().AppendEmpty()
			addRecord(rl.ScopeLogs().AppendEmpty(), "x", pub.Pid)
			out := h.consumeLogs(ld)
			var keys []string
			for k := range out.ResourceLogs().At(0).Resource().Attributes().All() {
				keys = append(keys, k)
			}
			assert.ElementsMatch(t, tt.want, keys)
		})
	}
}

// TestPassThrough: telemetry whose pid has no context, or no valid pid,
// comes out exactly as it went in, for every signal.
func TestPassThrough(t *testing.T) {
	gone := unusedPID(t)
	h := newHarness(t, testConfig())
	for _, tt := range []struct {
		name string
		pid  any
	}{
		{"live process without a context", noContextPID()},
		{"pid of no process", gone},
		{"pid of no process as a string", strconv.Itoa(gone)},
		{"non-numeric", "java"},
		{"digits and garbage", "123x"},
		{"signed string", "+1"},
		{"zero", 0},
		{"negative", -5},
		{"at the pid limit", tracker.MaxPID},
		{"huge", tracker.MaxPID + 1},
		{"huge string", "99999999999999999999"},
		{"empty string", ""},
		{"no pid", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ld := plog.NewLogs()
			rl := ld.ResourceLogs().AppendEmpty()
			putPID(rl.Resource().Attributes(), tt.pid)
			rl.Resource().Attributes().PutStr("host.name", "n")
			sl := rl.ScopeLogs().AppendEmpty()
			addRecord(sl, "1", tt.pid)
			addRecord(sl, "2", tt.pid)
			in := plog.NewLogs()
			ld.CopyTo(in)
			assert.Equal(t, in, h.consumeLogs(ld))

			md := hostmetricsLike(0)
			putPID(md.ResourceMetrics().At(0).Resource().Attributes(), tt.pid)
			inM := pmetric.NewMetrics()
			md.CopyTo(inM)
			assert.Equal(t, inM, h.consumeMetrics(md))

			pb := newProfileBuilder()
			rp := pb.pd.ResourceProfiles().AppendEmpty()
			p := pb.profile(rp.ScopeProfiles().AppendEmpty(), 1)
			pb.sample(p, 1, tt.pid)
			pb.sample(p, 2, tt.pid)
			sigs, sum := allSamples(pb.pd)
			out := h.consumeProfiles(pb.pd)
			require.Equal(t, 1, out.ResourceProfiles().Len())
			outSigs, outSum := allSamples(out)
			assert.Equal(t, sigs, outSigs)
			assert.Equal(t, sum, outSum)
			assert.Equal(t, 0, out.ResourceProfiles().At(0).Resource().Attributes().Len())
		})
	}
}

// Before start and after shutdown, data passes through.
func TestNotStartedPassesThrough(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(10)
	host.Publish(10, "cart")
	h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)
	p, err := newInstance(processortest.NewNopSettings(metadata.Type), testConfig(), signalLogs)
	require.NoError(t, err)
	assert.Equal(t, []string{""}, serviceNames(processLogs(t, p, resourceLogs(10))), "not started")
	require.NoError(t, p.start(t.Context(), h.extHost))
	assert.Equal(t, []string{"cart"}, serviceNames(processLogs(t, p, resourceLogs(10))), "started")
	require.NoError(t, p.shutdown(t.Context()))
	assert.Equal(t, []string{""}, serviceNames(processLogs(t, p, resourceLogs(10))), "shut down")
}

func processLogs(t *testing.T, p *instance, ld plog.Logs) plog.Logs {
	t.Helper()
	out, err := p.processLogs(t.Context(), ld)
	require.NoError(t, err)
	return out
}

func tracesWithPid(pid int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutInt("process.pid", int64(pid))
	rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName("span")
	return td
}

// k8s.pod.uid comes from the process's cgroup, not its publication: added
// like a published key, and subject to include and exclude.
func TestPodUID(t *testing.T) {
	const uid = "5e0a1f2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	for _, tt := range []struct {
		name             string
		include, exclude []string
		want             any
	}{
		{"added", nil, nil, uid},
		{"excluded", nil, []string{"k8s.pod.uid"}, nil},
		{"not included", []string{"service.name"}, nil, nil},
		{"included", []string{"service.name", "k8s.pod.uid"}, nil, uid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			host := trackertest.NewHost()
			host.Add(60).PodUID = uid
			host.Publish(60, "in-a-pod")
			cfg := testConfig()
			cfg.Attributes.Include, cfg.Attributes.Exclude = attrpolicy.Strict(tt.include...), attrpolicy.Strict(tt.exclude...)
			h := newFakeHarness(t, cfg, fakeTrackerConfig(), host)
			out := h.consumeLogs(resourceLogs(60))
			got := out.ResourceLogs().At(0).Resource().Attributes().AsRaw()
			assert.Equal(t, "in-a-pod", got["service.name"])
			assert.Equal(t, tt.want, got["k8s.pod.uid"])
		})
	}
}
