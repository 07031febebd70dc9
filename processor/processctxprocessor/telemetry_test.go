package processctxprocessor

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/processctx/otelcol-processctx/internal/procmem"
	"github.com/processctx/otelcol-processctx/internal/publisher"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// counter returns the value of an int64 sum per "signal[/kind]".
func counter(t *testing.T, h *harness, name string) map[string]int64 {
	t.Helper()
	m, err := h.tel.GetMetric(name)
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
		if kind, ok := dp.Attributes.Value(attribute.Key("kind")); ok {
			key += "/" + kind.AsString()
		}
		out[key] = dp.Value
	}
	return out
}

func TestTelemetryAndWarnings(t *testing.T) {
	good := startPublisher(t, pubtest.Go, "good")
	invalid := pubtest.Start(t, pubtest.C, pubtest.Options{})
	payload := publisher.EncodeStrings(map[string]string{"service.name": "x"})
	invalid.Publish(payload)
	invalid.Header("OTEL_CTZ", 2, uint32(len(payload)), 1, "inline")
	torn := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	torn.Publish(payload)
	torn.Header("OTEL_CTX", 2, uint32(len(payload)), 0, "inline")
	h := newHarness(t, testConfig())

	ld := resourceLogs(good.Pid, noContextPID(), invalid.Pid, torn.Pid)
	addRecord(ld.ResourceLogs().At(0).ScopeLogs().At(0), "second", nil)
	out := h.consumeLogs(ld)
	assert.Equal(t, []string{"good", "", "", ""}, serviceNames(out))
	pb := newProfileBuilder()
	p := pb.profile(pb.pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty(), 1)
	for n := range 3 {
		pb.sample(p, n, good.Pid)
	}
	pb.sample(p, 4, invalid.Pid)
	h.consumeProfiles(pb.pd)
	h.consumeTraces(tracesWithPid(good.Pid))
	h.consumeMetrics(hostmetricsLike(good.Pid))

	assert.Equal(t, map[string]int64{"logs": 2, "profiles": 3, "traces": 1, "metrics": 4},
		counter(t, h, "otelcol_processor_process_context_enriched"))
	assert.Equal(t, map[string]int64{"logs": 1}, counter(t, h, "otelcol_processor_process_context_no_context"))
	assert.Equal(t, map[string]int64{"logs/invalid": 1, "logs/torn": 1, "profiles/invalid": 1},
		counter(t, h, "otelcol_processor_process_context_errors"))

	// One warning summarizing the failures, without a permission hint.
	warnings := takeWarnings(h)
	require.Len(t, warnings, 1)
	fields := warnings[0].ContextMap()
	assert.Equal(t, uint64(1), fields["invalid"])
	assert.Equal(t, uint64(1), fields["torn"])
	assert.Contains(t, fields["example"], "pid")
	assert.NotContains(t, fields, "hint")

	// A torn read is not remembered: the next batch tries again. Further
	// failures within the minute are only counted.
	maps := h.io().Maps
	h.clock.Advance(time.Second)
	h.consumeLogs(resourceLogs(invalid.Pid, torn.Pid))
	assert.Equal(t, maps+1, h.io().Maps, "the invalid context is remembered, the torn one is not")
	assert.Empty(t, takeWarnings(h))
	assert.Equal(t, map[string]int64{"logs/invalid": 2, "logs/torn": 2, "profiles/invalid": 1},
		counter(t, h, "otelcol_processor_process_context_errors"))

	h.clock.Advance(warnInterval)
	h.consumeLogs(resourceLogs(torn.Pid))
	warnings = takeWarnings(h)
	require.Len(t, warnings, 1)
	assert.Equal(t, uint64(2), warnings[0].ContextMap()["torn"])
}

func TestWarnerPermissionHint(t *testing.T) {
	core, obs := observer.New(zap.InfoLevel)
	logger := zap.New(core)
	var w warner
	now := time.Unix(100, 0)
	w.flush(logger, now, false)
	assert.Zero(t, obs.Len(), "nothing to report")

	err := fmt.Errorf("open maps of pid 7: %w", procmem.ErrPermissionDenied)
	for i := range 1000 {
		w.record(outcomeOf(err), err)
		w.flush(logger, now.Add(time.Duration(i)*time.Millisecond), false)
	}
	require.Equal(t, 1, obs.Len(), "the first failure is reported at once, the others wait")
	assert.Equal(t, uint64(1), obs.TakeAll()[0].ContextMap()["permission_denied"])
	w.flush(logger, now.Add(warnInterval), false)
	require.Equal(t, 1, obs.Len(), "a minute later, one line for the rest")
	fields := obs.TakeAll()[0].ContextMap()
	assert.Equal(t, uint64(999), fields["permission_denied"])
	assert.Equal(t, permissionHint, fields["hint"])
	assert.Contains(t, fields["hint"], "CAP_SYS_PTRACE")

	w.record(outcomeOf(err), err)
	w.flush(logger, now.Add(time.Second), true) // shutdown flushes what is left
	assert.Equal(t, 1, obs.Len())
}

func TestOutcomeOf(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want outcome
	}{
		{nil, outcomeEnriched},
		{fmt.Errorf("x: %w", procmem.ErrNoContext), outcomeNoContext},
		{fmt.Errorf("x: %w", procmem.ErrProcessGone), outcomeNoContext},
		{fmt.Errorf("x: %w", procmem.ErrPermissionDenied), outcomePermissionDenied},
		{fmt.Errorf("x: %w", procmem.ErrInvalid), outcomeInvalid},
		{fmt.Errorf("x: %w", procmem.ErrTooLarge), outcomeTooLarge},
		{fmt.Errorf("x: %w", procmem.ErrTorn), outcomeTorn},
		{errors.New("EIO"), outcomeOther},
	} {
		assert.Equal(t, tt.want, outcomeOf(tt.err), "%v", tt.err)
	}
}

// takeWarnings removes and returns the warnings logged so far.
func takeWarnings(h *harness) []observer.LoggedEntry {
	var out []observer.LoggedEntry
	for _, e := range h.logObs.TakeAll() {
		if e.Level == zap.WarnLevel {
			out = append(out, e)
		}
	}
	return out
}
