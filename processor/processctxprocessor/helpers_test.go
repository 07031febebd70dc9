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

	"github.com/processctx/otelcol-processctx/internal/procmem"
	"github.com/processctx/otelcol-processctx/internal/publisher"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

func TestMain(m *testing.M) { os.Exit(pubtest.Main(m)) }

// fakeClock drives the cache's notion of time: TTLs and grace periods are
// tested without sleeping.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// harness is the processor of every signal, created through the factory
// (so that they share one core) with sinks behind them.
type harness struct {
	t        testing.TB
	core     *core
	clock    *fakeClock
	tel      *componenttest.Telemetry
	logObs   *observer.ObservedLogs
	logs     processor.Logs
	metrics  processor.Metrics
	traces   processor.Traces
	profiles xprocessor.Profiles
	// direct is a logs instance on the same core, called without a sink
	// (for concurrent callers).
	direct *instance

	logsSink     *consumertest.LogsSink
	metricsSink  *consumertest.MetricsSink
	tracesSink   *consumertest.TracesSink
	profilesSink *consumertest.ProfilesSink
}

func testConfig() *Config {
	return createDefaultConfig()
}

func newHarness(t testing.TB, cfg *Config) *harness {
	t.Helper()
	require.NoError(t, cfg.Validate())
	h := &harness{
		t:            t,
		clock:        newFakeClock(),
		tel:          componenttest.NewTelemetry(),
		logsSink:     new(consumertest.LogsSink),
		metricsSink:  new(consumertest.MetricsSink),
		tracesSink:   new(consumertest.TracesSink),
		profilesSink: new(consumertest.ProfilesSink),
	}
	t.Cleanup(func() { _ = h.tel.Shutdown(context.Background()) })
	core, obs := observer.New(zap.InfoLevel)
	h.logObs = obs
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	set.Logger = zap.New(core)

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
	h.core.now = h.clock.Now
	h.direct, err = newInstance(h.core, set.TelemetrySettings, metadata.SignalLogs, func() {})
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
	return h
}

func (h *harness) resolver() *resolver { return h.core.res.Load() }

// ioCounts is every read the processor made of /proc: stat files, maps
// files and memory reads.
type ioCounts struct {
	Stats, Maps, Memory uint64
}

func (h *harness) io() ioCounts {
	r := h.resolver()
	s := r.reader.Stats()
	return ioCounts{Stats: r.statReads.Load(), Maps: s.MapsFiles, Memory: s.MemoryReads}
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
	payload, err := publisher.Encode(m, threadlocal())
	require.NoError(t, err)
	p.resource = res
	p.Publish(payload)
}

func (p *publishing) update(t testing.TB, res map[string]any) {
	t.Helper()
	m := pcommon.NewMap()
	require.NoError(t, m.FromRaw(res))
	payload, err := publisher.Encode(m, threadlocal())
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
	fs, err := procmem.NewFS("/")
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
