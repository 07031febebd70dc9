// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxextension

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.yaml.in/yaml/v3"

	"github.com/processctx/otelcol-processctx/extension/processctxextension/internal/metadata"
	"github.com/processctx/otelcol-processctx/extension/processctxextension/internal/metadatatest"
	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

// refusingMeterProvider's meters refuse every callback: the extension's
// telemetry fails after its tracker was opened.
type refusingMeterProvider struct{ noop.MeterProvider }

func (refusingMeterProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return refusingMeter{}
}

type refusingMeter struct{ noop.Meter }

func (refusingMeter) RegisterCallback(metric.Callback, ...metric.Observable) (metric.Registration, error) {
	return nil, errors.New("callbacks refused")
}

// refusingSettings are extension settings whose telemetry fails.
func refusingSettings() extension.Settings {
	set := extensiontest.NewNopSettings(metadata.Type)
	set.MeterProvider = refusingMeterProvider{}
	return set
}

// recordingSource is an event source that counts its Run and Close calls.
type recordingSource struct {
	runs, closes atomic.Int32
	closed       chan struct{}
}

func (s *recordingSource) Sources() tracker.Sources { return tracker.ProcessEvents }

func (s *recordingSource) Run(func(tracker.Event)) error {
	s.runs.Add(1)
	<-s.closed
	return nil
}

func (s *recordingSource) Close() error {
	if s.closes.Add(1) == 1 {
		close(s.closed)
	}
	return nil
}

// fakeOpen opens trackers of host with src as their event source.
func fakeOpen(host *trackertest.Host, src tracker.EventSource) openFunc {
	return func(cfg hostopen.Config, logger *zap.Logger, opts ...tracker.Option) (*tracker.Tracker, error) {
		return tracker.New(host, cfg.Config, logger, append(opts, tracker.WithEventSources(src))...)
	}
}

// A Start that fails after the tracker was opened closes its event
// sources: none is left running or open.
func TestFailedStartClosesTheTracker(t *testing.T) {
	src := &recordingSource{closed: make(chan struct{})}
	cfg := createDefaultConfig()
	ext := &processContextExtension{cfg: cfg, settings: refusingSettings(), open: fakeOpen(trackertest.NewHost(), src)}
	err := ext.Start(context.Background(), host{})
	require.ErrorContains(t, err, "process_context extension telemetry")
	require.ErrorContains(t, err, "callbacks refused")
	assert.Equal(t, int32(1), src.closes.Load(), "the event source is closed")
	assert.Zero(t, src.runs.Load(), "and never ran")
	assert.Nil(t, ext.ProcessTracker())
	require.NoError(t, ext.Shutdown(context.Background()))
	assert.Equal(t, int32(1), src.closes.Load(), "closed once")
}

// The same with the host's tracker: what it opened (the proc connector's
// netlink socket, eBPF programs and maps, as far as this process may) is
// closed again.
func TestFailedStartLeavesNoDescriptorOpen(t *testing.T) {
	cfg := createDefaultConfig()
	startFailing := func() {
		ext, err := NewFactory().Create(context.Background(), refusingSettings(), cfg)
		require.NoError(t, err)
		require.ErrorContains(t, ext.Start(context.Background(), host{}), "callbacks refused")
		require.NoError(t, ext.Shutdown(context.Background()))
	}
	startFailing() // the runtime's own descriptors (netpoll) are open from now on
	before := pubtest.OpenFDs(t)
	for range 3 {
		startFailing()
	}
	assert.Empty(t, pubtest.OpenedSince(before, pubtest.OpenFDs(t)))
}

// The tracker's scans are the extension's telemetry: with no receiver
// (a processor-only configuration) they are there, once.
func TestScanTelemetry(t *testing.T) {
	fake := trackertest.NewHost()
	fake.Add(10)
	fake.Publish(10, "cart")
	fake.Add(11) // no context
	denied := fake.Add(12)
	denied.Errs[trackertest.MethodMaps] = fmt.Errorf("open maps of pid 12: %w", procfs.ErrPermissionDenied)
	denied.Why = "the collector runs as uid 998 without CAP_SYS_PTRACE: grant CAP_SYS_PTRACE"

	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := extensiontest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	cfg := createDefaultConfig()
	cfg.CollectionInterval = time.Hour // the test drives the scans
	src := &recordingSource{closed: make(chan struct{})}
	ext := &processContextExtension{cfg: cfg, settings: set, open: fakeOpen(fake, src)}
	require.NoError(t, ext.Start(context.Background(), host{}))
	t.Cleanup(func() {
		require.NoError(t, ext.Shutdown(context.Background()))
		assert.Equal(t, int32(1), src.closes.Load())
	})
	tr := ext.tracker.(*tracker.Tracker)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	<-tr.Ready()
	require.NoError(t, tr.WaitIdle(ctx)) // the first scan's warning is out

	metadatatest.AssertEqualExtensionProcessContextContexts(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExtensionProcessContextTrackedProcesses(t, tel, []metricdata.DataPoint[int64]{{Value: 3}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExtensionProcessContextScannedProcesses(t, tel, []metricdata.DataPoint[int64]{{Value: 3}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExtensionProcessContextDeniedProcesses(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	outcome := func(o string) attribute.Set { return attribute.NewSet(attribute.String("outcome", o)) }
	metadatatest.AssertEqualExtensionProcessContextReads(t, tel, []metricdata.DataPoint[int64]{
		{Attributes: outcome("ok"), Value: 1},
		{Attributes: outcome("no_context"), Value: 1},
		{Attributes: outcome("permission_denied"), Value: 1},
	}, metricdatatest.IgnoreTimestamp())
	m, err := tel.GetMetric("otelcol_extension_process_context_scan_duration")
	require.NoError(t, err)
	require.Len(t, m.Data.(metricdata.Histogram[float64]).DataPoints, 1)
	assert.Equal(t, uint64(1), m.Data.(metricdata.Histogram[float64]).DataPoints[0].Count, "one scan")

	// Another scan: the gauges say it again, the counters add; it lists
	// no process (process events tell of every fork and exit, the host is
	// listed once a minute).
	require.NoError(t, tr.Rescan(ctx))
	metadatatest.AssertEqualExtensionProcessContextScannedProcesses(t, tel, []metricdata.DataPoint[int64]{{Value: 3}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExtensionProcessContextContexts(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualExtensionProcessContextDeniedProcesses(t, tel, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	m, err = tel.GetMetric("otelcol_extension_process_context_scan_duration")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), m.Data.(metricdata.Histogram[float64]).DataPoints[0].Count)
}

// The outcome attribute's values in metadata.yaml are the tracker's.
func TestOutcomeEnum(t *testing.T) {
	data, err := os.ReadFile("metadata.yaml")
	require.NoError(t, err)
	var md struct {
		Attributes map[string]struct{ Enum []string } `yaml:"attributes"`
	}
	require.NoError(t, yaml.Unmarshal(data, &md))
	var want []string
	for _, o := range tracker.Outcomes {
		want = append(want, o.String())
	}
	assert.Equal(t, want, md.Attributes["outcome"].Enum)
}
