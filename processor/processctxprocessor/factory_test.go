// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/sharedtracker/sharedtrackertest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

func TestNewFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, "process_context", f.Type().String())
	assert.Equal(t, createDefaultConfig(), f.CreateDefaultConfig())
	assert.Equal(t, component.StabilityLevelAlpha, f.LogsStability())
	assert.Equal(t, component.StabilityLevelAlpha, f.MetricsStability())
	assert.Equal(t, component.StabilityLevelAlpha, f.TracesStability())
	assert.Equal(t, component.StabilityLevelAlpha, f.ProfilesStability())
}

// Every signal starts over the extension's tracker, hands on what it gets,
// and shuts down (twice is fine).
func TestCreateEverySignal(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig()
	set := processortest.NewNopSettings(metadata.Type)
	ctx := context.Background()
	host := newLifecycleHost(t)

	sink := new(consumertest.LogsSink)
	logs, err := f.CreateLogs(ctx, set, cfg, sink)
	require.NoError(t, err)
	metrics, err := f.CreateMetrics(ctx, set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	traces, err := f.CreateTraces(ctx, set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	profiles, err := f.CreateProfiles(ctx, set, cfg, consumertest.NewNop())
	require.NoError(t, err)

	assert.True(t, logs.Capabilities().MutatesData)
	assert.True(t, metrics.Capabilities().MutatesData)
	assert.True(t, traces.Capabilities().MutatesData)
	assert.True(t, profiles.Capabilities().MutatesData)
	for _, c := range []component.Component{logs, metrics, traces, profiles} {
		require.NoError(t, c.Start(ctx, host))
	}
	require.NoError(t, logs.ConsumeLogs(ctx, resourceLogs(10, 11)))
	for _, c := range []component.Component{logs, metrics, traces, profiles} {
		require.NoError(t, c.Shutdown(ctx))
		require.NoError(t, c.Shutdown(ctx), "shutdown twice")
	}
	assert.Equal(t, 2, sink.LogRecordCount(), "everything handed on by shutdown")
}

// Each pipeline's instance has its own view of the tracker: shutting one
// down leaves the others enriching.
func TestInstancesAreIndependent(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(10)
	host.Publish(10, "cart")
	h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)
	require.NoError(t, h.metrics.Shutdown(context.Background()))
	assert.Equal(t, []string{"cart"}, serviceNames(h.consumeLogs(resourceLogs(10))))
}

func TestStartFailsWithoutTheExtension(t *testing.T) {
	tr, err := tracker.New(trackertest.NewHost(), fakeTrackerConfig(), zap.NewNop())
	require.NoError(t, err)
	other := component.MustNewIDWithName("process_context", "other")
	addIt := "add it to the configuration\n  extensions:\n    process_context:\n  service:\n    extensions: [process_context]"
	for _, tt := range []struct {
		name    string
		host    component.Host
		tracker *component.ID
		wantErr string
	}{
		{"no extension", componenttest.NewNopHost(), nil,
			"process_context processor: no process_context extension; the process_context extension runs the collector's process tracker: " + addIt},
		{"the tracker key names a missing extension", sharedtrackertest.Host(tr), &other,
			"process_context processor: tracker: extension process_context/other is not in service::extensions; " +
				"the process_context extension runs the collector's process tracker: " + addIt},
		{"the extension is not started", sharedtrackertest.Host(nil), nil, "process_context processor: tracker: extension process_context is not started"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig()
			cfg.Tracker = tt.tracker
			p, err := NewFactory().CreateLogs(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
			require.NoError(t, err)
			err = p.Start(context.Background(), tt.host)
			require.Error(t, err)
			assert.Equal(t, tt.wantErr, err.Error())
			require.NoError(t, p.Shutdown(context.Background()))
		})
	}
}
