// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

// invalidPIDHarness is a processor over a fake host where pid 25057
// publishes "cart".
func invalidPIDHarness(t *testing.T, cfg *Config) *harness {
	t.Helper()
	host := trackertest.NewHost()
	host.Add(25057)
	host.Publish(25057, "cart")
	return newFakeHarness(t, cfg, fakeTrackerConfig(), host)
}

// Items whose pid attribute is there but holds no pid pass through
// unchanged, counted by the errors metric as invalid_pid, at once (never
// waited for, never a timeout): resources of every signal, log records
// and profile samples. A wrong pid_attributes shows there.
func TestInvalidPIDIsCounted(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(pcommon.Value)
	}{
		{"abc", func(v pcommon.Value) { v.SetStr("abc") }},
		{"zero", func(v pcommon.Value) { v.SetInt(0) }},
		{"negative", func(v pcommon.Value) { v.SetInt(-5) }},
		{"too large", func(v pcommon.Value) { v.SetInt(99999999999999) }},
		{"leading space", func(v pcommon.Value) { v.SetStr(" 25057") }},
		{"double", func(v pcommon.Value) { v.SetDouble(25057) }},
		{"empty string", func(v pcommon.Value) { v.SetStr("") }},
		{"bool", func(v pcommon.Value) { v.SetBool(true) }},
		{"empty value", func(pcommon.Value) {}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := invalidPIDHarness(t, testConfig())
			put := func(m pcommon.Map) { tt.set(m.PutEmpty(entitymodel.ProcessPIDKey)) }

			// Logs: a resource's pid, and records' pids beside a valid one.
			ld := plog.NewLogs()
			rl := ld.ResourceLogs().AppendEmpty()
			put(rl.Resource().Attributes())
			sl := rl.ScopeLogs().AppendEmpty()
			addRecord(sl, "1", nil)
			addRecord(sl, "2", nil)
			in := plog.NewLogs()
			ld.CopyTo(in)
			assert.Equal(t, in, h.consumeLogs(ld), "a resource with an invalid pid passes through")

			ld = plog.NewLogs()
			sl = ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
			addRecord(sl, "invalid", nil)
			put(sl.LogRecords().At(0).Attributes())
			addRecord(sl, "valid", 25057)
			addRecord(sl, "none", nil)
			out := h.consumeLogs(ld)
			require.Equal(t, 2, out.ResourceLogs().Len())
			assert.Equal(t, map[string][]string{"": {"invalid", "none"}}, bodies(out.ResourceLogs().At(0)))
			assert.Equal(t, []string{"", "cart"}, serviceNames(out))

			// Metrics: a resource of three data points.
			md := hostmetricsLike(1)
			put(md.ResourceMetrics().At(0).Resource().Attributes())
			inM := pmetric.NewMetrics()
			md.CopyTo(inM)
			assert.Equal(t, inM, h.consumeMetrics(md))

			// Traces: a resource of one span.
			td := tracesWithPid(1)
			put(td.ResourceSpans().At(0).Resource().Attributes())
			inT := ptrace.NewTraces()
			td.CopyTo(inT)
			assert.Equal(t, inT, h.consumeTraces(td))

			// Profiles: two samples naming the pid through the dictionary.
			pb := newProfileBuilder()
			kv := pb.pd.Dictionary().AttributeTable().AppendEmpty()
			kv.SetKeyStrindex(pb.str(entitymodel.ProcessPIDKey))
			tt.set(kv.Value())
			idx := int32(pb.pd.Dictionary().AttributeTable().Len() - 1)
			p := pb.profile(pb.pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty(), 1)
			for n := range 2 {
				pb.sample(p, n, nil)
				p.Samples().At(n).AttributeIndices().Append(idx)
			}
			sigs, sum := allSamples(pb.pd)
			outP := h.consumeProfiles(pb.pd)
			require.Equal(t, 1, outP.ResourceProfiles().Len())
			outSigs, outSum := allSamples(outP)
			assert.Equal(t, sigs, outSigs)
			assert.Equal(t, sum, outSum)

			assert.Equal(t, map[string]int64{"logs/invalid_pid": 3, "metrics/invalid_pid": int64(dataPointCount(inM.ResourceMetrics().At(0))),
				"traces/invalid_pid": 1, "profiles/invalid_pid": 2},
				counter(t, h, "otelcol_processor_process_context_errors"))
			assert.Equal(t, map[string]int64{"logs/context": 1}, counter(t, h, "otelcol_processor_process_context_enriched"))
			assert.Empty(t, counter(t, h, "otelcol_processor_process_context_no_context"))
		})
	}
}

// A valid pid under any pid_attributes key wins over an invalid one under
// a better key; without any pid key nothing is counted.
func TestInvalidPIDUnderAnotherKey(t *testing.T) {
	cfg := testConfig()
	cfg.PIDAttributes = []string{entitymodel.ProcessPIDKey, "pid"}
	h := invalidPIDHarness(t, cfg)

	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr(entitymodel.ProcessPIDKey, "abc")
	rl.Resource().Attributes().PutInt("pid", 25057)
	addRecord(rl.ScopeLogs().AppendEmpty(), "1", nil)
	other := ld.ResourceLogs().AppendEmpty() // no pid anywhere
	other.Resource().Attributes().PutStr("pids", "abc")
	addRecord(other.ScopeLogs().AppendEmpty(), "2", nil)
	assert.Equal(t, []string{"cart", ""}, serviceNames(h.consumeLogs(ld)))

	assert.Empty(t, counter(t, h, "otelcol_processor_process_context_errors"))
	assert.Equal(t, map[string]int64{"logs/context": 1}, counter(t, h, "otelcol_processor_process_context_enriched"))
}
