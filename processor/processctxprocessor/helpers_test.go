package processctxprocessor

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

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
	"go.uber.org/zap/zaptest/observer"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

// harness is the processor of every signal, created through the factory
// (so that they share one core) with sinks behind them, over a tracker of
// the real host or of a fake one.
type harness struct {
	t        testing.TB
	core     *core
	tel      *componenttest.Telemetry
	logObs   *observer.ObservedLogs
	logs     processor.Logs
	metrics  processor.Metrics
	traces   processor.Traces
	profiles xprocessor.Profiles
	// direct is a logs instance on the same core, called without a sink
	// (benchmarks, concurrent callers).
	direct *instance

	tracker *tracker.Tracker
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

// newHarness runs the processor over a tracker of this host.
func newHarness(t testing.TB, cfg *Config) *harness {
	t.Helper()
	h := &harness{t: t}
	h.build(cfg, func(ctx context.Context, logger *zap.Logger) (source, func(context.Context) error, error) {
		fs, err := procfs.NewFS(cfg.RootPath)
		if err != nil {
			return nil, nil, err
		}
		host, err := tracker.NewHost(fs, cfg.limits())
		if err != nil {
			return nil, nil, err
		}
		h.mapsReads = &mapsCountingHost{Host: host, reads: map[int]int{}}
		tr, err := tracker.New(h.mapsReads, cfg.trackerConfig(), logger)
		if err != nil {
			return nil, nil, err
		}
		tr.Start()
		h.tracker = tr
		return tr, tr.Stop, nil
	})
	return h
}

// newFakeHarness runs the processor over a tracker of host, on a fake
// clock; the tracker scans when the test calls rescan.
func newFakeHarness(t testing.TB, cfg *Config, host *trackertest.Host) *harness {
	t.Helper()
	h := &harness{t: t, host: host, clock: trackertest.NewClock()}
	h.build(cfg, func(ctx context.Context, logger *zap.Logger) (source, func(context.Context) error, error) {
		tc := cfg.trackerConfig()
		tc.ScanInterval = time.Hour
		tr, err := tracker.New(host, tc, logger, tracker.WithClock(h.clock.Now))
		if err != nil {
			return nil, nil, err
		}
		tr.Start()
		h.tracker = tr
		t.Cleanup(host.Unblock) // before the tracker stops: stuck readers exit
		return tr, tr.Stop, nil
	})
	h.rescan()
	return h
}

func (h *harness) build(cfg *Config, open func(context.Context, *zap.Logger) (source, func(context.Context) error, error)) {
	t := h.t
	t.Helper()
	require.NoError(t, cfg.Validate())
	h.tel = componenttest.NewTelemetry()
	h.logsSink = new(consumertest.LogsSink)
	h.metricsSink = new(consumertest.MetricsSink)
	h.tracesSink = new(consumertest.TracesSink)
	h.profilesSink = new(consumertest.ProfilesSink)
	t.Cleanup(func() { _ = h.tel.Shutdown(context.Background()) })
	logCore, obs := observer.New(zap.InfoLevel)
	h.logObs = obs
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	set.Logger = zap.New(logCore)

	f := newFactory()
	xf := f.xFactory()
	ctx := context.Background()
	var err error
	h.logs, err = xf.CreateLogs(ctx, set, cfg, h.logsSink)
	require.NoError(t, err)
	h.metrics, err = xf.CreateMetrics(ctx, set, cfg, h.metricsSink)
	require.NoError(t, err)
	h.traces, err = xf.CreateTraces(ctx, set, cfg, h.tracesSink)
	require.NoError(t, err)
	h.profiles, err = xf.CreateProfiles(ctx, set, cfg, h.profilesSink)
	require.NoError(t, err)

	f.mu.Lock()
	h.core = f.cores[set.ID].core
	f.mu.Unlock()
	h.core.open = open
	h.direct, err = newInstance(h.core, set, signalLogs, func(context.Context) error { return nil })
	require.NoError(t, err)

	host := componenttest.NewNopHost()
	for _, c := range []component.Component{h.logs, h.metrics, h.traces, h.profiles} {
		require.NoError(t, c.Start(ctx, host))
	}
	t.Cleanup(func() {
		for _, c := range []component.Component{h.logs, h.metrics, h.traces, h.profiles} {
			require.NoError(t, c.Shutdown(ctx))
		}
	})
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
	pub := &publishing{Proc: p, resource: res}
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
// default configuration: everything but the pid.
func (p *publishing) published() map[string]any {
	out := map[string]any{}
	for k, v := range p.resource {
		if k != "process.pid" {
			out[k] = v
		}
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
	for pid := maxPID; pid > maxPID-1000; pid-- {
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

func processortestSettings() processor.Settings { return processortest.NewNopSettings(metadata.Type) }
