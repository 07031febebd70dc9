// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

const noPIDMetric = "otelcol_processor_process_context_no_pid"

// missLines returns the log lines about telemetry without a pid.
func missLines(h *harness) []observer.LoggedEntry {
	return h.logged.FilterFieldKey("pid_attributes").All()
}

// fieldStrings returns the string list of a logged field.
func fieldStrings(t *testing.T, e observer.LoggedEntry, key string) []string {
	t.Helper()
	v, ok := e.ContextMap()[key]
	require.True(t, ok, "field %s of %q", key, e.Message)
	out := []string{}
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// A log with pid (no process.pid) under the default configuration is
// counted and named in one line; a second batch within the interval is
// counted and logs nothing more.
func TestNoPIDCountedAndLoggedOnce(t *testing.T) {
	host := trackertest.NewHost()
	h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)
	batch := func() plog.Logs {
		ld := plog.NewLogs()
		addRecord(ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty(), "x", nil)
		ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().PutInt("pid", 123)
		return ld
	}
	out := h.consumeLogs(batch())
	assert.Equal(t, int64(123), out.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().AsRaw()["pid"], "passed through")
	assert.Equal(t, map[string]int64{"logs": 1}, counter(t, h, noPIDMetric))
	lines := missLines(h)
	require.Len(t, lines, 1)
	assert.Equal(t, zapcore.WarnLevel, lines[0].Level, "a pid-like key: most likely a wrong pid_attributes")
	assert.Equal(t, []string{"process.pid"}, fieldStrings(t, lines[0], "pid_attributes"))
	assert.Equal(t, []string{"pid"}, fieldStrings(t, lines[0], "pid_like_keys_seen"))
	assert.Equal(t, "logs", lines[0].ContextMap()["signal"])

	h.consumeLogs(batch())
	assert.Equal(t, map[string]int64{"logs": 2}, counter(t, h, noPIDMetric))
	assert.Len(t, missLines(h), 1, "within the interval: no second line")
}

// What is counted as carrying no pid, and which keys a line names, by
// signal: where the signal looks for the pid, and only there.
func TestNoPIDBySignal(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(40)
	host.Publish(40, "known")

	t.Run("journald: a map body's _PID", func(t *testing.T) {
		h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("host.name", "n")
		sl := rl.ScopeLogs().AppendEmpty()
		body := sl.LogRecords().AppendEmpty().Body().SetEmptyMap()
		body.PutStr("_PID", "40")
		body.PutStr("MESSAGE", "hello")
		body.PutStr("SYSLOG_PID", "40")
		addRecord(sl, "with a pid", 40)
		h.consumeLogs(ld)
		assert.Equal(t, map[string]int64{"logs": 1}, counter(t, h, noPIDMetric), "the record with process.pid is not counted")
		lines := missLines(h)
		require.Len(t, lines, 1)
		assert.ElementsMatch(t, []string{"_PID", "SYSLOG_PID"}, fieldStrings(t, lines[0], "pid_like_keys_seen"))
	})
	t.Run("nothing pid-like: info", func(t *testing.T) {
		h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)
		ld := plog.NewLogs()
		addRecord(ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty(), "x", nil)
		h.consumeLogs(ld)
		lines := missLines(h)
		require.Len(t, lines, 1)
		assert.Equal(t, zapcore.InfoLevel, lines[0].Level)
		assert.Empty(t, fieldStrings(t, lines[0], "pid_like_keys_seen"))
	})
	t.Run("an invalid pid is no miss", func(t *testing.T) {
		h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)
		ld := plog.NewLogs()
		addRecord(ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty(), "x", "abc")
		h.consumeLogs(ld)
		assert.Empty(t, counter(t, h, noPIDMetric))
		assert.Empty(t, missLines(h))
		assert.Equal(t, map[string]int64{"logs/invalid_pid": 1}, counter(t, h, "otelcol_processor_process_context_errors"))
	})
	t.Run("metrics and traces: the resource only", func(t *testing.T) {
		h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)
		md := hostmetricsLike(40)
		md.ResourceMetrics().At(0).Resource().Attributes().Remove("process.pid")
		md.ResourceMetrics().At(0).Resource().Attributes().PutInt("process_id", 40)
		rm := md.ResourceMetrics().AppendEmpty() // a known pid: enriched, not counted
		rm.Resource().Attributes().PutInt("process.pid", 40)
		rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(1)
		h.consumeMetrics(md)
		const points = 4 // hostmetricsLike's of one process
		td := ptrace.NewTraces()
		span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		span.Attributes().PutInt("process.pid", 40) // spans are not where traces look
		h.consumeTraces(td)
		assert.Equal(t, map[string]int64{"metrics": int64(points), "traces": 1}, counter(t, h, noPIDMetric))
		lines := missLines(h)
		require.Len(t, lines, 2, "one per signal")
		for _, l := range lines {
			if l.ContextMap()["signal"] == "metrics" {
				assert.ElementsMatch(t, []string{"process.parent_pid", "process_id"}, fieldStrings(t, l, "pid_like_keys_seen"))
			}
		}
	})
	t.Run("profiles: samples' keys", func(t *testing.T) {
		h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)
		pb := newProfileBuilder()
		p := pb.profile(pb.pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty(), 1)
		pb.sample(p, 0, nil)
		pb.sample(p, 1, 40)
		kv := pb.pd.Dictionary().AttributeTable().AppendEmpty()
		kv.SetKeyStrindex(pb.str("pid"))
		kv.Value().SetInt(40)
		s := p.Samples().AppendEmpty()
		s.Values().Append(9)
		s.AttributeIndices().Append(int32(pb.pd.Dictionary().AttributeTable().Len() - 1))
		h.consumeProfiles(pb.pd)
		assert.Equal(t, map[string]int64{"profiles": 2}, counter(t, h, noPIDMetric))
		lines := missLines(h)
		require.Len(t, lines, 1)
		assert.Contains(t, fieldStrings(t, lines[0], "pid_like_keys_seen"), "pid")
	})
}

func TestPIDLike(t *testing.T) {
	for key, want := range map[string]bool{
		"process.pid": true, "pid": true, "PID": true, "_PID": true, "process_id": true, "syslog.procid": true,
		"SYSLOG_PID": true, "k8s.container.pid": true, "process.parent_pid": true,
		"process.vpid": false, "pidfile": false, "rapid": false, "service.name": false, "": false,
	} {
		assert.Equal(t, want, pidLike(key), key)
	}
	var seen missKeys
	m := pcommon.NewMap()
	for i := range 2 * maxMissKeys {
		m.PutInt("k"+string(rune('a'+i))+".pid", 1)
	}
	seen.noteMap(m)
	seen.noteMap(m)
	assert.Len(t, seen, maxMissKeys, "bounded, each once")
}
