// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.yaml.in/yaml/v3"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// counter returns the value of an int64 sum of h's processors per
// "signal[/kind][/source]".
func counter(t *testing.T, h *harness, name string) map[string]int64 {
	t.Helper()
	return counterOf(t, h.tel, name)
}

// counterOf returns the value of an int64 sum of tel per
// "signal[/kind][/source]".
func counterOf(t *testing.T, tel *componenttest.Telemetry, name string) map[string]int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		return map[string]int64{}
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is %T", name, m.Data)
	assert.True(t, sum.IsMonotonic)
	out := map[string]int64{}
	for _, dp := range sum.DataPoints {
		signal, _ := dp.Attributes.Value(attribute.Key("signal"))
		key := signal.AsString()
		for _, attr := range []attribute.Key{"kind", "source"} {
			if v, ok := dp.Attributes.Value(attr); ok {
				key += "/" + v.AsString()
			}
		}
		out[key] = dp.Value
	}
	return out
}

func TestTelemetry(t *testing.T) {
	good := startPublisher(t, pubtest.Go, "good")
	invalid := pubtest.Start(t, pubtest.C, pubtest.Options{})
	payload := otep.EncodeStrings(map[string]string{"service.name": "x"})
	invalid.Publish(payload)
	invalid.Header("OTEL_CTZ", 2, uint32(len(payload)), 1, "inline")
	h := newHarness(t, testConfig())

	ld := resourceLogs(good.Pid, noContextPID(), invalid.Pid)
	addRecord(ld.ResourceLogs().At(0).ScopeLogs().At(0), "second", nil)
	out := h.consumeLogs(ld)
	assert.Equal(t, []string{"good", "", ""}, serviceNames(out))
	pb := newProfileBuilder()
	p := pb.profile(pb.pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty(), 1)
	for n := range 3 {
		pb.sample(p, n, good.Pid)
	}
	pb.sample(p, 4, invalid.Pid)
	h.consumeProfiles(pb.pd)
	h.consumeTraces(tracesWithPid(good.Pid))
	h.consumeMetrics(hostmetricsLike(good.Pid))

	assert.Equal(t, map[string]int64{"logs/context": 2, "profiles/context": 3, "traces/context": 1, "metrics/context": 4},
		counter(t, h, "otelcol_processor_process_context_enriched"))
	assert.Equal(t, map[string]int64{"logs": 1}, counter(t, h, "otelcol_processor_process_context_no_context"))
	assert.Equal(t, map[string]int64{"logs/invalid": 1, "profiles/invalid": 1},
		counter(t, h, "otelcol_processor_process_context_errors"))
}

// The kind and signal attributes' values in metadata.yaml are the code's:
// the kinds are the names of the error counts, in order.
func TestAttributeEnums(t *testing.T) {
	data, err := os.ReadFile("metadata.yaml")
	require.NoError(t, err)
	var md struct {
		Attributes map[string]struct{ Enum []string } `yaml:"attributes"`
	}
	require.NoError(t, yaml.Unmarshal(data, &md))
	var kinds []string
	for i := range numCounts {
		if isErrorCount(i) {
			kinds = append(kinds, countName(i))
		}
	}
	assert.Equal(t, kinds, md.Attributes["kind"].Enum)
	assert.Equal(t, []string{signalLogs, signalMetrics, signalTraces, signalProfiles}, md.Attributes["signal"].Enum)
	var sources []string
	for i := range numSources {
		sources = append(sources, tracker.Source(i).String())
	}
	assert.Equal(t, sources, md.Attributes["source"].Enum)
}

// TestSourceNames: the enriched counts are by tracker.Source, each under
// its own name; a source the processor does not know is counted as
// context rather than out of range.
func TestSourceNames(t *testing.T) {
	assert.Equal(t, "context", tracker.SourceContext.String())
	assert.Equal(t, "environment", tracker.SourceEnvironment.String())
	assert.Equal(t, int(tracker.SourceEnvironment), sourceIndex(tracker.SourceEnvironment))
	assert.Equal(t, int(tracker.SourceContext), sourceIndex(tracker.Source(numSources)))
}

// Every tracker outcome a lookup gives is counted by one metric: ok by
// enriched, no_context and gone by no_context, every failure by errors
// under its own name.
func TestCountNames(t *testing.T) {
	want := map[string]bool{
		"ok": false, "unchanged": false, "no_context": false, "gone": false,
		"permission_denied": true, "invalid": true, "too_large": true, "torn": true, "stalled": true, "error": true,
	}
	for _, o := range tracker.Outcomes {
		isError, ok := want[o.String()]
		require.True(t, ok, o.String())
		assert.Equal(t, isError, isErrorCount(int(o)), o.String())
		assert.Equal(t, o.String(), countName(int(o)))
	}
	assert.Equal(t, "identity_mismatch", countName(identityMismatch))
	assert.Equal(t, "timeout", countName(timedOut))
	assert.Equal(t, "invalid_pid", countName(invalidPIDCount))
	assert.True(t, isErrorCount(identityMismatch))
	assert.True(t, isErrorCount(timedOut))
	assert.True(t, isErrorCount(invalidPIDCount))
	assert.Equal(t, invalidPIDCount, int(outcomeInvalidPID))
	assert.False(t, isErrorCount(numCounts))
}
