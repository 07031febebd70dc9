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

	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

func TestNewFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, "process_context", f.Type().String())
	assert.Equal(t, createDefaultConfig(), f.CreateDefaultConfig())
	assert.Equal(t, component.StabilityLevelDevelopment, f.LogsStability())
	assert.Equal(t, component.StabilityLevelDevelopment, f.MetricsStability())
	assert.Equal(t, component.StabilityLevelDevelopment, f.TracesStability())
	assert.Equal(t, component.StabilityLevelDevelopment, f.ProfilesStability())
}

func TestCreateEverySignal(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig()
	set := processortest.NewNopSettings(metadata.Type)
	ctx := context.Background()
	host := componenttest.NewNopHost()

	logs, err := f.CreateLogs(ctx, set, cfg, consumertest.NewNop())
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
	for _, c := range []component.Component{logs, metrics, traces, profiles} {
		require.NoError(t, c.Shutdown(ctx))
		require.NoError(t, c.Shutdown(ctx), "shutdown twice")
	}
}

func TestVerifyShutdown(t *testing.T) {
	processortest.VerifyShutdown(t, NewFactory(), createDefaultConfig())
}

func TestFactorySharesOneCorePerID(t *testing.T) {
	f := newFactory()
	xf := f.xFactory()
	cfg := createDefaultConfig()
	ctx := context.Background()
	set := processortest.NewNopSettings(metadata.Type)
	other := processortest.NewNopSettings(metadata.Type)
	other.ID = component.NewIDWithName(metadata.Type, "other")

	logs, err := xf.CreateLogs(ctx, set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	profiles, err := xf.CreateProfiles(ctx, set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	otherLogs, err := xf.CreateLogs(ctx, other, cfg, consumertest.NewNop())
	require.NoError(t, err)
	require.Len(t, f.cores, 2)
	assert.Equal(t, 2, f.cores[set.ID].refs, "the logs and profiles pipelines share a core")
	assert.NotSame(t, f.cores[set.ID].core, f.cores[other.ID].core)

	shared := f.cores[set.ID].core
	for _, c := range []component.Component{logs, profiles, otherLogs} {
		require.NoError(t, c.Start(ctx, componenttest.NewNopHost()))
	}
	st := shared.state.Load()
	require.NotNil(t, st)
	require.NoError(t, logs.Shutdown(ctx))
	assert.Same(t, st, shared.state.Load(), "still used by the profiles pipeline")
	require.NoError(t, profiles.Shutdown(ctx))
	assert.Nil(t, shared.state.Load(), "stopped with its last pipeline")
	require.NoError(t, otherLogs.Shutdown(ctx))
	assert.Empty(t, f.cores)

	// Same ID, another configuration (a reload): not shared.
	a, releaseA := f.acquire(set, cfg)
	changed := createDefaultConfig()
	changed.Override = true
	b, releaseB := f.acquire(set, changed)
	assert.NotSame(t, a, b)
	require.NoError(t, releaseB(ctx))
	require.NoError(t, releaseA(ctx))
	assert.Empty(t, f.cores)
}

func TestStartFailsWithoutProcfs(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.RootPath = t.TempDir()
	p, err := NewFactory().CreateLogs(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.NoError(t, err)
	err = p.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, "root_path")
	require.NoError(t, p.Shutdown(context.Background()))
}

func TestStartFailsOnAContainersProcfs(t *testing.T) {
	pubtest.RequireRoot(t)
	cfg := createDefaultConfig()
	cfg.RootPath = pubtest.MountProc(t, pubtest.SleepInNewPidNamespace(t))
	p, err := NewFactory().CreateLogs(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.NoError(t, err)
	err = p.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, "not the host's procfs")
	require.NoError(t, p.Shutdown(context.Background()))

	// The host's procfs under a root path is fine.
	cfg.RootPath = pubtest.MountProc(t, 0)
	p, err = NewFactory().CreateLogs(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, p.Shutdown(context.Background()))
}
