// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/collector/processor/xprocessor"

	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

// flakyNext is a next consumer of every signal that returns errs[i] on its
// i-th call (nil past the end) and keeps the JSON of what each call got:
// data is mutated again by a retry, so only a copy taken on arrival says
// what the consumer saw.
type flakyNext struct {
	errs []error
	// inPlace marshals profiles the way the otlphttp exporter does: pdata's
	// marshalers turn the resource attributes of mutable profiles into
	// string table references, in place. Otherwise a copy is marshaled.
	inPlace bool
	got     []string
	// dicts: for profiles, the attribute and string table lengths of each
	// call's dictionary.
	dicts [][2]int
}

func (f *flakyNext) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (f *flakyNext) take(b []byte, err error) error {
	if err != nil {
		return fmt.Errorf("marshal what the next consumer got: %w", err)
	}
	f.got = append(f.got, string(b))
	if i := len(f.got) - 1; i < len(f.errs) {
		return f.errs[i]
	}
	return nil
}

func (f *flakyNext) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	return f.take((&plog.JSONMarshaler{}).MarshalLogs(ld))
}

func (f *flakyNext) ConsumeMetrics(_ context.Context, md pmetric.Metrics) error {
	return f.take((&pmetric.JSONMarshaler{}).MarshalMetrics(md))
}

func (f *flakyNext) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	return f.take((&ptrace.JSONMarshaler{}).MarshalTraces(td))
}

func (f *flakyNext) ConsumeProfiles(_ context.Context, pd pprofile.Profiles) error {
	d := pd.Dictionary()
	f.dicts = append(f.dicts, [2]int{d.AttributeTable().Len(), d.StringTable().Len()})
	if !f.inPlace {
		cp := pprofile.NewProfiles()
		pd.CopyTo(cp)
		pd = cp
	}
	return f.take((&pprofile.JSONMarshaler{}).MarshalProfiles(pd))
}

// pipelines are the processors of every signal in front of one next
// consumer.
type pipelines struct {
	logs     processor.Logs
	metrics  processor.Metrics
	traces   processor.Traces
	profiles xprocessor.Profiles
}

// newPipelines creates the processors of every signal in front of next,
// started with host when it is not nil, else never started (data passes
// through: the tracker is unavailable).
func newPipelines(t *testing.T, host component.Host, cfg *Config, next *flakyNext) *pipelines {
	t.Helper()
	f := NewFactory()
	set := processortest.NewNopSettings(metadata.Type)
	ctx := context.Background()
	var p pipelines
	var err error
	p.logs, err = f.CreateLogs(ctx, set, cfg, next)
	require.NoError(t, err)
	p.metrics, err = f.CreateMetrics(ctx, set, cfg, next)
	require.NoError(t, err)
	p.traces, err = f.CreateTraces(ctx, set, cfg, next)
	require.NoError(t, err)
	p.profiles, err = f.CreateProfiles(ctx, set, cfg, next)
	require.NoError(t, err)
	comps := []any{p.logs, p.metrics, p.traces, p.profiles}
	if host != nil {
		startAll(t, host, comps...)
		return &p
	}
	t.Cleanup(func() {
		for _, comp := range comps {
			assert.NoError(t, comp.(component.Component).Shutdown(ctx))
		}
	})
	return &p
}

// consume hands data (plog.Logs, pmetric.Metrics, ptrace.Traces or
// pprofile.Profiles) to the processor of its signal.
func (p *pipelines) consume(data any) error {
	ctx := context.Background()
	switch d := data.(type) {
	case plog.Logs:
		return p.logs.ConsumeLogs(ctx, d)
	case pmetric.Metrics:
		return p.metrics.ConsumeMetrics(ctx, d)
	case ptrace.Traces:
		return p.traces.ConsumeTraces(ctx, d)
	case pprofile.Profiles:
		return p.profiles.ConsumeProfiles(ctx, d)
	}
	panic(fmt.Sprintf("not telemetry: %T", data))
}

// marshalJSON is the JSON of data, the form flakyNext keeps; data is left
// as it is (profiles are marshaled from a copy).
func marshalJSON(t *testing.T, data any) string {
	t.Helper()
	var b []byte
	var err error
	switch d := data.(type) {
	case plog.Logs:
		b, err = (&plog.JSONMarshaler{}).MarshalLogs(d)
	case pmetric.Metrics:
		b, err = (&pmetric.JSONMarshaler{}).MarshalMetrics(d)
	case ptrace.Traces:
		b, err = (&ptrace.JSONMarshaler{}).MarshalTraces(d)
	case pprofile.Profiles:
		cp := pprofile.NewProfiles()
		d.CopyTo(cp)
		b, err = (&pprofile.JSONMarshaler{}).MarshalProfiles(cp)
	default:
		t.Fatalf("not telemetry: %T", data)
	}
	require.NoError(t, err)
	return string(b)
}

// Pids of the fake host of the retry tests.
const (
	retryCart      = 10 // publishes cart
	retryPay       = 11 // publishes pay
	retryNoContext = 12 // publishes nothing
	retryContained = 13 // pid 1 of container retryContainer, publishes box
	retryContainer = "c0ffee"
)

// retryHost is a fake host with a process of each kind the retry tests
// need.
func retryHost() *trackertest.Host {
	host := trackertest.NewHost()
	for pid, svc := range map[int]string{retryCart: "cart", retryPay: "pay", retryContained: "box"} {
		host.Add(pid)
		res := pcommon.NewMap()
		res.PutStr(entitymodel.ServiceNameKey, svc)
		res.PutStr(entitymodel.ServiceInstanceIDKey, svc+"-1")
		res.PutStr("deployment.environment.name", "test")
		res.PutInt("service.shard", 7)
		host.PublishResource(pid, res)
	}
	host.Add(retryNoContext)
	host.Set(retryContained, func(p *trackertest.Proc) {
		p.ContainerID, p.NSpid = retryContainer, []int{retryContained, 1}
	})
	return host
}

// signalErrors are errors of the next consumer of each kind a caller tells
// apart; sentinel is what each wraps.
func signalErrors(sentinel error, data any) map[string]error {
	retryable := consumererror.NewRetryableError(sentinel)
	switch d := data.(type) {
	case plog.Logs:
		retryable = consumererror.NewLogs(sentinel, d)
	case pmetric.Metrics:
		retryable = consumererror.NewMetrics(sentinel, d)
	case ptrace.Traces:
		retryable = consumererror.NewTraces(sentinel, d)
	}
	return map[string]error{
		"plain":      sentinel,
		"wrapped":    fmt.Errorf("exporter: %w", sentinel),
		"permanent":  consumererror.NewPermanent(sentinel),
		"retryable":  retryable,
		"downstream": consumererror.NewDownstream(sentinel),
	}
}

// TestNextConsumerErrorsUnchanged: whatever the next consumer returns, the
// processor returns, unchanged (the same value), whichever path the data
// took: enriched, regrouped, waiting for a lookup, or passed through.
func TestNextConsumerErrorsUnchanged(t *testing.T) {
	host := retryHost()
	h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)
	next := &flakyNext{}
	started := newPipelines(t, h.extHost, testConfig(), next)
	stopped := newPipelines(t, nil, testConfig(), next)
	// Each call of a "new pid" path names a pid the tracker has not seen:
	// the batch waits for its read.
	newPid := 100
	fresh := func() int {
		newPid++
		host.Add(newPid)
		host.Publish(newPid, "fresh")
		return newPid
	}
	type path struct {
		name  string
		p     *pipelines
		build func() any
	}
	var paths []path
	for _, sig := range []string{signalLogs, signalMetrics, signalTraces, signalProfiles} {
		paths = append(paths,
			path{sig + "/enriched", started, func() any { return resourcePidData(sig, retryCart) }},
			path{sig + "/no context", started, func() any { return resourcePidData(sig, retryNoContext) }},
			path{sig + "/lookup wait", started, func() any { return resourcePidData(sig, fresh()) }},
			path{sig + "/tracker unavailable", stopped, func() any { return resourcePidData(sig, retryCart) }},
		)
	}
	paths = append(paths,
		path{"logs/regrouped", started, func() any { return recordPidLogs(entitymodel.ProcessPIDKey, retryCart, retryPay, retryNoContext, 0) }},
		path{"logs/regrouped lookup wait", started, func() any { return recordPidLogs(entitymodel.ProcessPIDKey, fresh(), retryPay) }},
		path{"profiles/regrouped", started, func() any {
			return samplePidProfiles(entitymodel.ProcessPIDKey, retryCart, retryPay, retryNoContext, 0)
		}},
		path{"profiles/regrouped lookup wait", started, func() any { return samplePidProfiles(entitymodel.ProcessPIDKey, fresh(), retryPay) }},
	)
	for _, pt := range paths {
		sentinel := errors.New("next consumer refused " + pt.name)
		for kind, want := range signalErrors(sentinel, pt.build()) {
			t.Run(pt.name+"/"+kind, func(t *testing.T) {
				next.errs, next.got = []error{want}, nil
				got := pt.p.consume(pt.build())
				require.Error(t, got)
				assert.Equal(t, want, got, "the same error value")
				assert.ErrorIs(t, got, sentinel)
				assert.Equal(t, consumererror.IsPermanent(want), consumererror.IsPermanent(got))
				assert.Len(t, next.got, 1, "handed on once")
				var logsErr consumererror.Logs
				if errors.As(want, &logsErr) {
					var gotErr consumererror.Logs
					require.ErrorAs(t, got, &gotErr)
					assert.Equal(t, logsErr.Data(), gotErr.Data(), "the data to retry")
				}
			})
		}
	}
}

// resourcePidData is telemetry of one signal with one resource naming pid.
func resourcePidData(signal string, pid int) any {
	switch signal {
	case signalLogs:
		return resourceLogs(pid)
	case signalMetrics:
		return hostmetricsLike(pid)
	case signalTraces:
		return tracesWithPid(pid)
	}
	pb := newProfileBuilder()
	rp := pb.pd.ResourceProfiles().AppendEmpty()
	rp.Resource().Attributes().PutInt(entitymodel.ProcessPIDKey, int64(pid))
	p := pb.profile(rp.ScopeProfiles().AppendEmpty(), 1)
	for i := range 3 {
		pb.sample(p, i, nil)
	}
	return pb.pd
}

// recordPidLogs is two resources without a pid whose records name pids
// under key (0: no pid): the first with every pid in turn, twice, plus
// (given several pids) a record without a pid; the second with the records of the first two pids
// only, which regrouping empties.
func recordPidLogs(key string, pids ...int) plog.Logs {
	ld := plog.NewLogs()
	add := func(sl plog.ScopeLogs, body string, pid int) {
		lr := sl.LogRecords().AppendEmpty()
		lr.Body().SetStr(body)
		lr.Attributes().PutStr("log.iostream", "stdout")
		if pid != 0 {
			lr.Attributes().PutInt(key, int64(pid))
		}
	}
	rl := ld.ResourceLogs().AppendEmpty()
	rl.SetSchemaUrl("https://opentelemetry.io/schemas/1.30.0")
	rl.Resource().Attributes().PutStr("host.name", "node-1")
	for s := range 2 {
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName(fmt.Sprintf("scope-%d", s))
		for round := range 2 {
			for _, pid := range pids {
				add(sl, fmt.Sprintf("%d/%d/%d", s, round, pid), pid)
			}
		}
		if len(pids) > 1 {
			add(sl, fmt.Sprintf("%d/none", s), 0)
		}
	}
	rl = ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("host.name", "node-2")
	sl := rl.ScopeLogs().AppendEmpty()
	for _, pid := range pids[:min(2, len(pids))] {
		add(sl, fmt.Sprintf("all/%d", pid), pid)
	}
	return ld
}

// samplePidProfiles is the old eBPF profiler's layout: one resource without
// a pid, whose samples name pids under key (0: no pid) through the shared
// dictionary's attribute table. A first profile has samples of every pid
// and (given several pids) one without; a second only samples of the first two pids, so
// regrouping empties it.
func samplePidProfiles(key string, pids ...int) pprofile.Profiles {
	pb := newProfileBuilder()
	at := pb.pd.Dictionary().AttributeTable()
	idx := map[int]int32{}
	for _, pid := range pids {
		if _, ok := idx[pid]; ok || pid == 0 {
			continue
		}
		kv := at.AppendEmpty()
		kv.SetKeyStrindex(pb.str(key))
		kv.Value().SetInt(int64(pid))
		idx[pid] = int32(at.Len() - 1)
	}
	sample := func(p pprofile.Profile, n, pid int) {
		pb.sample(p, n, nil)
		if pid != 0 {
			p.Samples().At(p.Samples().Len() - 1).AttributeIndices().Append(idx[pid])
		}
	}
	rp := pb.pd.ResourceProfiles().AppendEmpty()
	rp.Resource().Attributes().PutStr("host.name", "node-1")
	sp := rp.ScopeProfiles().AppendEmpty()
	sp.Scope().SetName("ebpf-profiler")
	first := pb.profile(sp, 1)
	n := 0
	for range 2 {
		for _, pid := range pids {
			sample(first, n, pid)
			n++
		}
	}
	if len(pids) > 1 {
		sample(first, n, 0)
	}
	second := pb.profile(sp, 2)
	for _, pid := range pids[:min(2, len(pids))] {
		n++
		sample(second, n, pid)
	}
	return pb.pd
}

// retryCase is one layout of telemetry; build returns a fresh copy of it.
type retryCase struct {
	name  string
	build func(key string) any
	// untouched: the processor must hand it on exactly as it came.
	untouched bool
	// enriched: the processor must change it (the case tests something).
	enriched bool
}

func retryCases() []retryCase {
	logsWith := func(pid any, extra map[string]any) func(string) any {
		return func(key string) any {
			ld := plog.NewLogs()
			rl := ld.ResourceLogs().AppendEmpty()
			attrs := rl.Resource().Attributes()
			attrs.PutStr("host.name", "node-1")
			for k, v := range extra {
				_ = attrs.PutEmpty(k).FromRaw(v)
			}
			_ = attrs.PutEmpty(key).FromRaw(pid)
			sl := rl.ScopeLogs().AppendEmpty()
			addRecord(sl, "a", nil)
			addRecord(sl, "b", nil)
			return ld
		}
	}
	keyed := func(fn func() any) func(string) any {
		// Layouts whose pid sits where only process.pid is looked for.
		return func(string) any { return fn() }
	}
	return []retryCase{
		{name: "logs/resource pid", enriched: true, build: func(key string) any {
			ld := plog.NewLogs()
			for _, pid := range []any{int64(retryCart), fmt.Sprint(retryPay)} {
				rl := ld.ResourceLogs().AppendEmpty()
				_ = rl.Resource().Attributes().PutEmpty(key).FromRaw(pid)
				addRecord(rl.ScopeLogs().AppendEmpty(), "x", nil)
			}
			return ld
		}},
		{name: "logs/record pids, regrouped", enriched: true, build: func(key string) any {
			return recordPidLogs(key, retryCart, retryPay, retryNoContext, 0)
		}},
		{name: "logs/record pids, one process", enriched: true, build: func(key string) any {
			return recordPidLogs(key, retryCart)
		}},
		{name: "profiles/resource pid", enriched: true, build: keyed(func() any { return resourcePidData(signalProfiles, retryCart) })},
		{name: "profiles/sample pids, regrouped", enriched: true, build: func(key string) any {
			return samplePidProfiles(key, retryCart, retryPay, retryNoContext, 0)
		}},
		{name: "profiles/sample pids, one process", enriched: true, build: func(key string) any {
			return samplePidProfiles(key, retryPay)
		}},
		{name: "metrics/resource pid", enriched: true, build: keyed(func() any { return hostmetricsLike(retryCart, retryPay) })},
		{name: "traces/resource pid", enriched: true, build: keyed(func() any { return tracesWithPid(retryCart) })},
		{name: "logs/no context", untouched: true, build: logsWith(int64(retryNoContext), nil)},
		{name: "metrics/no context", untouched: true, build: keyed(func() any { return hostmetricsLike(retryNoContext) })},
		{name: "profiles/no context", untouched: true, build: func(key string) any {
			return samplePidProfiles(key, retryNoContext)
		}},
		{name: "logs/identity mismatch", build: logsWith(int64(retryCart), map[string]any{entitymodel.ServiceNameKey: "not-cart"})},
		{name: "logs/container pid", enriched: true, build: logsWith(int64(1), map[string]any{entitymodel.ContainerIDKey: retryContainer})},
	}
}

// TestRetriedBatchEnrichedOnce: a caller that retries a refused batch hands
// the processor the very pdata object it already enriched (exporterhelper's
// retry, a receiver's). Every attempt must hand on what a single pass over
// a fresh copy hands on: nothing added twice, moved twice or grown.
func TestRetriedBatchEnrichedOnce(t *testing.T) {
	for _, cfgCase := range []struct {
		name string
		key  string // where the layouts put their pids
		edit func(*Config)
		// inPlace: the next consumer marshals profiles in place.
		inPlace bool
	}{
		{"default", entitymodel.ProcessPIDKey, func(*Config) {}, false},
		{"default, marshaled in place", entitymodel.ProcessPIDKey, func(*Config) {}, true},
		{"override", entitymodel.ProcessPIDKey, func(c *Config) {
			c.Attributes.Identity.Override, c.Attributes.Other.Override, c.Attributes.Observed.Copy = true, true, true
		}, true},
		{"unqualified host", entitymodel.ProcessPIDKey, func(c *Config) { c.UnqualifiedPids = UnqualifiedHost }, true},
		// The pid key is not process.pid, which regrouping stamps: a retry
		// regroups the regrouped resources again.
		{"other pid key", "pid", func(c *Config) { c.PIDAttributes = []string{"pid"} }, false},
		{"other pid key, marshaled in place", "pid", func(c *Config) { c.PIDAttributes = []string{"pid"} }, true},
	} {
		t.Run(cfgCase.name, func(t *testing.T) {
			cfg := testConfig()
			cfgCase.edit(cfg)
			// With creation times, so that resources get every entity
			// reference: a retry must not repeat them either.
			h := newBootedHarness(t, cfg, retryHost())
			next := &flakyNext{inPlace: cfgCase.inPlace}
			p := newPipelines(t, h.extHost, cfg, next)
			for _, tc := range retryCases() {
				t.Run(tc.name, func(t *testing.T) { checkRetries(t, p, next, tc, cfgCase.key) })
			}
		})
	}
}

// checkRetries hands the pipelines a fresh copy of tc's telemetry once,
// then one object refused until its last attempt, and checks that every
// attempt hands on what the single pass did.
func checkRetries(t *testing.T, p *pipelines, next *flakyNext, tc retryCase, key string) {
	t.Helper()
	const attempts = 3
	next.errs, next.got, next.dicts = nil, nil, nil
	in := tc.build(key)
	inJSON := marshalJSON(t, in)
	require.NoError(t, p.consume(tc.build(key)))
	require.Len(t, next.got, 1)
	want, wantDicts := next.got[0], next.dicts
	switch {
	case tc.untouched:
		assert.JSONEq(t, inJSON, want, "passes through untouched")
	case tc.enriched && key == entitymodel.ProcessPIDKey:
		assert.NotEqual(t, inJSON, want, "enriched")
	}

	refused := errors.New("refused")
	next.errs, next.got, next.dicts = make([]error, attempts-1), nil, nil
	for i := range attempts - 1 {
		next.errs[i] = refused
	}
	for i := range attempts - 1 {
		require.ErrorIs(t, p.consume(in), refused, "attempt %d", i+1)
	}
	require.NoError(t, p.consume(in), "the last attempt")
	require.Len(t, next.got, attempts)
	for i, got := range next.got {
		assert.JSONEq(t, want, got, "attempt %d", i+1)
	}
	assert.JSONEq(t, want, marshalJSON(t, in), "the caller's object after the last attempt")
	// The dictionary does not grow from attempt to attempt. A next consumer
	// that marshals in place adds the resource attributes' strings once, on
	// the first attempt.
	for i, d := range next.dicts {
		want := wantDicts[0]
		if next.inPlace && i > 0 {
			want = next.dicts[1]
		}
		assert.Equal(t, want, d, "attempt %d: attribute and string table lengths", i+1)
	}
}

// TestProfilesMarshaledInPlaceAreEnriched: profiles whose resource
// attributes a marshaler turned into string table references (as pdata's do
// to mutable profiles) are read like any others: the pid is found, and each
// key is on the resource once.
func TestProfilesMarshaledInPlaceAreEnriched(t *testing.T) {
	h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), retryHost())
	for _, tt := range []struct {
		name  string
		build func() pprofile.Profiles
	}{
		{"resource pid", func() pprofile.Profiles { return resourcePidData(signalProfiles, retryCart).(pprofile.Profiles) }},
		{"sample pids, one process", func() pprofile.Profiles { return samplePidProfiles(entitymodel.ProcessPIDKey, retryCart) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pd := tt.build()
			_, err := (&pprofile.ProtoMarshaler{}).MarshalProfiles(pd)
			require.NoError(t, err)
			_, plain := pd.ResourceProfiles().At(0).Resource().Attributes().Get(entitymodel.ProcessPIDKey)
			require.False(t, plain, "the marshaler converted the attributes in place")

			out := h.consumeProfiles(pd)
			require.Equal(t, 1, out.ResourceProfiles().Len())
			attrs := out.ResourceProfiles().At(0).Resource().Attributes()
			assert.Equal(t, "cart", serviceOf(attrs))
			seen := map[string]int{}
			for k := range attrs.All() {
				seen[k]++
			}
			for k, n := range seen {
				assert.Equal(t, 1, n, "key %q", k)
			}
			assert.Contains(t, seen, entitymodel.ProcessPIDKey)
		})
	}
}
