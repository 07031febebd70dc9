// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxextension

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/processctx/otelcol-processctx/extension/processctxextension/internal/metadata"
	"github.com/processctx/otelcol-processctx/extension/processctxextension/internal/metadatatest"
	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/processor/processctxprocessor"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver"
)

// host is a collector host with the extension.
type host map[component.ID]component.Component

func (h host) GetExtensions() map[component.ID]component.Component { return h }

// start starts the extension with cfg until the test ends.
func start(t *testing.T, cfg *Config, set extension.Settings) extension.Extension {
	t.Helper()
	ext, err := NewFactory().Create(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), host{}))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return ext
}

func TestLifecycle(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	ext := start(t, createDefaultConfig(), extensiontest.NewNopSettings(metadata.Type))
	p, ok := ext.(sharedtracker.Provider)
	require.True(t, ok)
	assert.NotNil(t, p.ProcessTracker())
}

func TestStartFailsWithoutProcfs(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.RootPath = t.TempDir()
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.ErrorContains(t, ext.Start(context.Background(), host{}), "no procfs")
	require.NoError(t, ext.Shutdown(context.Background()))
}

func TestRootPath(t *testing.T) {
	pubtest.RequireRoot(t)
	t.Run("host procfs bind-mounted at a temporary root", func(t *testing.T) {
		cfg := createDefaultConfig()
		cfg.RootPath = pubtest.MountProc(t, 0)
		tr := start(t, cfg, extensiontest.NewNopSettings(metadata.Type)).(*processContextExtension).tracker.(*tracker.Tracker)
		p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
		p.Publish(otep.EncodeStrings(map[string]string{"service.name": "via-root-path"}))
		require.Eventually(t, func() bool {
			_ = tr.Rescan(context.Background())
			got, _ := tr.Snapshot().Lookup(p.Pid)
			return got != nil
		}, 10*time.Second, 10*time.Millisecond)
	})
	t.Run("a container's procfs where the host's was meant", func(t *testing.T) {
		cfg := createDefaultConfig()
		cfg.RootPath = pubtest.MountProc(t, pubtest.SleepInNewPidNamespace(t))
		ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
		require.NoError(t, err)
		err = ext.Start(context.Background(), host{})
		require.ErrorContains(t, err, "not the host's procfs")
		require.ErrorContains(t, err, "mount the host's /proc at "+cfg.RootPath+"/proc")
		require.NoError(t, ext.Shutdown(context.Background()))
	})
}

// The kernel events the tracker received are the extension's telemetry.
func TestEventTelemetry(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := extensiontest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	start(t, createDefaultConfig(), set)
	metadatatest.AssertEqualExtensionProcessContextEventDrops(t, tel, []metricdata.DataPoint[int64]{{Value: 0}}, metricdatatest.IgnoreTimestamp())
	m, err := tel.GetMetric("otelcol_extension_process_context_events_received")
	require.NoError(t, err)
	require.Len(t, m.Data.(metricdata.Sum[int64]).DataPoints, 1)
}

// The receiver and the processor of a collector with the extension read
// the host through its one tracker.
func TestReceiverAndProcessorShareTheTracker(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.CollectionInterval = 100 * time.Millisecond
	cfg.RescanInterval = 100 * time.Millisecond // the publisher publishes after it started
	extID := component.NewID(metadata.Type)
	ext := start(t, cfg, extensiontest.NewNopSettings(metadata.Type))
	h := host{extID: ext}
	ctx := context.Background()
	tr := ext.(*processContextExtension).tracker.(*tracker.Tracker)

	entities := new(consumertest.LogsSink)
	rf := processctxreceiver.NewFactory()
	rcv, err := rf.CreateLogs(ctx, receivertest.NewNopSettings(rf.Type()), rf.CreateDefaultConfig(), entities)
	require.NoError(t, err)
	enriched := new(consumertest.LogsSink)
	pf := processctxprocessor.NewFactory()
	proc, err := pf.CreateLogs(ctx, processortest.NewNopSettings(pf.Type()), pf.CreateDefaultConfig(), enriched)
	require.NoError(t, err)
	for _, c := range []component.Component{rcv, proc} {
		require.NoError(t, c.Start(ctx, h))
		t.Cleanup(func() { require.NoError(t, c.Shutdown(ctx)) })
	}

	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	p.Publish(otep.EncodeStrings(map[string]string{"service.name": "shared"}))
	require.Eventually(t, func() bool {
		for _, l := range entities.AllLogs() {
			for _, rl := range l.ResourceLogs().All() {
				for _, sl := range rl.ScopeLogs().All() {
					for _, lr := range sl.LogRecords().All() {
						id, _ := lr.Attributes().Get("otel.entity.id")
						if pid, ok := id.Map().Get("process.pid"); ok && pid.Int() == int64(p.Pid) {
							return true
						}
					}
				}
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "the receiver's entity event")
	got, _ := tr.Snapshot().Lookup(p.Pid)
	require.NotNil(t, got, "the extension's tracker read the publisher")

	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutInt("process.pid", int64(p.Pid))
	rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("hello")
	require.NoError(t, proc.ConsumeLogs(ctx, ld))
	v, ok := enriched.AllLogs()[0].ResourceLogs().At(0).Resource().Attributes().Get("service.name")
	require.True(t, ok)
	assert.Equal(t, "shared", v.Str())
}
