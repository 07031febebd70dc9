// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/collector/processor/xprocessor"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/sharedtracker/sharedtrackertest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

// harness is the processor of every signal, created through the factory,
// with sinks behind them, over a tracker of the real host or of a fake one
// that a fake process_context extension provides.
type harness struct {
	t   testing.TB
	tel *componenttest.Telemetry
	// logged is what the processors logged, at info and above.
	logged   *observer.ObservedLogs
	logs     processor.Logs
	metrics  processor.Metrics
	traces   processor.Traces
	profiles xprocessor.Profiles
	// direct is a started logs instance called without a sink
	// (benchmarks, concurrent callers).
	direct *instance

	tracker *tracker.Tracker
	// extHost is the collector host whose extension provides tracker.
	extHost component.Host
	// mapsReads counts the maps reads of each pid on the real host.
	mapsReads *mapsCountingHost
	host      *trackertest.Host  // the fake host, nil for the real one
	clock     *trackertest.Clock // the fake host's clock

	logsSink     *consumertest.LogsSink
	metricsSink  *consumertest.MetricsSink
	tracesSink   *consumertest.TracesSink
	profilesSink *consumertest.ProfilesSink
}

// testConfig waits as long as it may for the reads of new pids: tests with
// real processes must not depend on the machine's speed.
func testConfig() *Config {
	cfg := createDefaultConfig()
	cfg.LookupTimeout = maxLookupTimeout
	return cfg
}

// newHarness runs the processor over a tracker of this host with the
// extension's default configuration.
func newHarness(t testing.TB, cfg *Config) *harness {
	t.Helper()
	tc := tracker.DefaultConfig()
	fs, err := procfs.NewFS(hostopen.DefaultConfig().RootPath)
	require.NoError(t, err)
	host, err := hostopen.NewHost(fs, tc.Limits())
	require.NoError(t, err)
	counting := &mapsCountingHost{Host: host, reads: map[int]int{}}
	tr, err := tracker.New(counting, tc, zap.NewNop())
	require.NoError(t, err)
	h := newHarnessOn(t, cfg, tr)
	h.mapsReads = counting
	return h
}

// fakeTrackerConfig is the configuration of a tracker of a fake host: it
// scans when a test calls rescan, and a read stuck in the fake host is
// abandoned soon.
func fakeTrackerConfig() tracker.Config {
	tc := tracker.DefaultConfig()
	tc.CollectionInterval = time.Hour
	tc.ReadTimeout = 50 * time.Millisecond
	return tc
}

// newFakeHarness runs the processor over a tracker of host with
// configuration tc, on a fake clock, after a first scan. The fake host's
// processes have no creation time (as when the boot time cannot be read).
func newFakeHarness(t testing.TB, cfg *Config, tc tracker.Config, host *trackertest.Host) *harness {
	t.Helper()
	return newFakeHarnessVia(t, cfg, tc, host, host)
}

// newFakeHarnessVia is newFakeHarness with the tracker reading host
// through via (a wrapper of host).
func newFakeHarnessVia(t testing.TB, cfg *Config, tc tracker.Config, host *trackertest.Host, via tracker.Host) *harness {
	t.Helper()
	clock := trackertest.NewClock()
	tr, err := tracker.New(via, tc, zap.NewNop(), tracker.WithClock(clock.Now))
	require.NoError(t, err)
	h := newHarnessOn(t, cfg, tr)
	t.Cleanup(host.Unblock) // before the tracker stops: stuck readers exit
	h.host, h.clock = host, clock
	h.rescan()
	return h
}

// newHarnessOn starts tr (stopped when the test ends) and the processor of
// every signal over it.
func newHarnessOn(t testing.TB, cfg *Config, tr *tracker.Tracker) *harness {
	t.Helper()
	require.NoError(t, cfg.Validate())
	tr.Start()
	t.Cleanup(func() { assert.NoError(t, tr.Stop(context.Background())) })
	h := &harness{
		t:            t,
		tracker:      tr,
		extHost:      sharedtrackertest.Host(tr),
		tel:          componenttest.NewTelemetry(),
		logsSink:     new(consumertest.LogsSink),
		metricsSink:  new(consumertest.MetricsSink),
		tracesSink:   new(consumertest.TracesSink),
		profilesSink: new(consumertest.ProfilesSink),
	}
	t.Cleanup(func() { _ = h.tel.Shutdown(context.Background()) })
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	var core zapcore.Core
	core, h.logged = observer.New(zap.InfoLevel)
	set.Logger = zap.New(core)

	f := NewFactory()
	ctx := context.Background()
	var err error
	h.logs, err = f.CreateLogs(ctx, set, cfg, h.logsSink)
	require.NoError(t, err)
	h.metrics, err = f.CreateMetrics(ctx, set, cfg, h.metricsSink)
	require.NoError(t, err)
	h.traces, err = f.CreateTraces(ctx, set, cfg, h.tracesSink)
	require.NoError(t, err)
	h.profiles, err = f.CreateProfiles(ctx, set, cfg, h.profilesSink)
	require.NoError(t, err)
	h.direct, err = newInstance(set, cfg, signalLogs)
	require.NoError(t, err)
	startAll(t, h.extHost, h.logs, h.metrics, h.traces, h.profiles, h.direct)
	return h
}

// startAll starts each component (or instance) with host, and shuts it
// down when the test ends.
func startAll(t testing.TB, host component.Host, comps ...any) {
	t.Helper()
	ctx := context.Background()
	for _, c := range comps {
		switch c := c.(type) {
		case component.Component:
			require.NoError(t, c.Start(ctx, host))
			t.Cleanup(func() { assert.NoError(t, c.Shutdown(ctx)) })
		case *instance:
			require.NoError(t, c.start(ctx, host))
			t.Cleanup(func() { assert.NoError(t, c.shutdown(ctx)) })
		}
	}
}

// newLifecycleHost is the host of the generated lifecycle tests
// (metadata.yaml's tests::host): the extension of a started tracker of an
// empty fake host.
func newLifecycleHost(t *testing.T) component.Host {
	tr, err := tracker.New(trackertest.NewHost(), fakeTrackerConfig(), zap.NewNop())
	require.NoError(t, err)
	tr.Start()
	t.Cleanup(func() { assert.NoError(t, tr.Stop(context.Background())) })
	return sharedtrackertest.Host(tr)
}

// bootedHost is a fake host whose processes have a creation time, derived
// from their start time as procfs derives it from the boot time; the fake
// host's identities have none.
type bootedHost struct{ *trackertest.Host }

func (h bootedHost) Identity(pid int) (procfs.Identity, error) {
	id, err := h.Host.Identity(pid)
	if err == nil {
		id.CreationTime = fakeCreationTime(id.StartTicks)
	}
	return id, err
}

// fakeCreationTime is the creation time bootedHost gives a process started
// startTicks clock ticks after its fake boot.
func fakeCreationTime(startTicks uint64) time.Time {
	boot := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	return boot.Add(time.Duration(startTicks) * time.Second / procfs.ClockTicks)
}

// newBootedHarness is newFakeHarness over host with creation times.
func newBootedHarness(t testing.TB, cfg *Config, host *trackertest.Host) *harness {
	t.Helper()
	return newFakeHarnessVia(t, cfg, fakeTrackerConfig(), host, bootedHost{host})
}

// rescan waits for a scan of the (fake) host that starts now.
func (h *harness) rescan() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(h.t, h.tracker.Rescan(ctx))
}

// mapsCountingHost counts the maps reads of each pid: the host's other
// processes come and go (other tests run beside), so counts of the
// reader's are not the processor's alone.
type mapsCountingHost struct {
	tracker.Host
	mu    sync.Mutex
	reads map[int]int
}

func (m *mapsCountingHost) FindMapping(pid int) (otep.Mapping, error) {
	m.mu.Lock()
	m.reads[pid]++
	m.mu.Unlock()
	return m.Host.FindMapping(pid)
}

// of returns how many times the maps of pids were read.
func (m *mapsCountingHost) of(pids ...int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, pid := range pids {
		n += m.reads[pid]
	}
	return n
}

func (h *harness) consumeLogs(ld plog.Logs) plog.Logs {
	h.t.Helper()
	h.logsSink.Reset()
	require.NoError(h.t, h.logs.ConsumeLogs(context.Background(), ld))
	all := h.logsSink.AllLogs()
	require.Len(h.t, all, 1)
	return all[0]
}

func (h *harness) consumeMetrics(md pmetric.Metrics) pmetric.Metrics {
	h.t.Helper()
	h.metricsSink.Reset()
	require.NoError(h.t, h.metrics.ConsumeMetrics(context.Background(), md))
	all := h.metricsSink.AllMetrics()
	require.Len(h.t, all, 1)
	return all[0]
}

func (h *harness) consumeTraces(td ptrace.Traces) ptrace.Traces {
	h.t.Helper()
	h.tracesSink.Reset()
	require.NoError(h.t, h.traces.ConsumeTraces(context.Background(), td))
	all := h.tracesSink.AllTraces()
	require.Len(h.t, all, 1)
	return all[0]
}

func (h *harness) consumeProfiles(pd pprofile.Profiles) pprofile.Profiles {
	h.t.Helper()
	h.profilesSink.Reset()
	require.NoError(h.t, h.profiles.ConsumeProfiles(context.Background(), pd))
	all := h.profilesSink.AllProfiles()
	require.Len(h.t, all, 1)
	return all[0]
}

// publishing is a real publisher process and what it published.
type publishing struct {
	*pubtest.Proc
	resource map[string]any
	// created is the process's process.creation.time, which the processor
	// adds beside what it published.
	created string
}

// creationTimeOf returns process.creation.time of a process of this host,
// as the tracker reads it.
func creationTimeOf(t testing.TB, pid int) string {
	t.Helper()
	fs, err := procfs.NewFS("/")
	require.NoError(t, err)
	id, err := procfs.NewIdentityReader(fs).Identity(pid)
	require.NoError(t, err)
	require.NotEmpty(t, id.CreationTimeString(), "creation time of pid %d", pid)
	return id.CreationTimeString()
}

// threadlocal is the non-resource part every test publisher publishes: it
// must never show up on a resource.
func threadlocal() pcommon.Map {
	m := pcommon.NewMap()
	m.PutStr("threadlocal.schema_version", "tlsdesc_v1_dev")
	keys := m.PutEmptySlice("threadlocal.attribute_key_map")
	keys.AppendEmpty().SetStr("http.route")
	return m
}

// startPublisher starts a publisher of kind that publishes service name.
func startPublisher(t testing.TB, kind pubtest.Kind, service string) *publishing {
	t.Helper()
	p := pubtest.Start(t, kind, pubtest.Options{})
	res := map[string]any{
		"service.name":                service,
		"service.instance.id":         service + "-" + string(kind) + "-1",
		"deployment.environment.name": "test",
		"service.shard":               int64(7),
		// A containerized SDK publishes its own namespace's pid: it must
		// not replace the pid the telemetry carries.
		"process.pid": int64(1),
	}
	pub := &publishing{Proc: p, resource: res, created: creationTimeOf(t, p.Pid)}
	pub.publish(t, res)
	return pub
}

func (p *publishing) publish(t testing.TB, res map[string]any) {
	t.Helper()
	m := pcommon.NewMap()
	require.NoError(t, m.FromRaw(res))
	payload, err := otep.Encode(m, threadlocal())
	require.NoError(t, err)
	p.resource = res
	p.Publish(payload)
}

func (p *publishing) update(t testing.TB, res map[string]any) {
	t.Helper()
	m := pcommon.NewMap()
	require.NoError(t, m.FromRaw(res))
	payload, err := otep.Encode(m, threadlocal())
	require.NoError(t, err)
	p.resource = res
	p.Update(payload)
}

// published returns the attributes the processor adds for p with the
// default configuration: everything published but the pid, and the
// process's creation time.
func (p *publishing) published() map[string]any {
	out := map[string]any{}
	for k, v := range p.resource {
		if k != "process.pid" {
			out[k] = v
		}
	}
	if p.created != "" {
		out["process.creation.time"] = p.created
	}
	return out
}

// withAttrs returns base plus extra (extra wins).
func withAttrs(base map[string]any, extra map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// unusedPID returns a pid no process has (the largest possible pid is
// almost never in use; checked).
func unusedPID(t testing.TB) int {
	t.Helper()
	fs, err := procfs.NewFS("/")
	require.NoError(t, err)
	for pid := tracker.MaxPID - 1; pid > tracker.MaxPID-1000; pid-- {
		if _, err := fs.StartTime(pid); err != nil {
			return pid
		}
	}
	t.Fatal("no unused pid found")
	return 0
}

// noContextPID returns the pid of a live process that publishes nothing:
// the test binary itself.
func noContextPID() int { return os.Getpid() }
