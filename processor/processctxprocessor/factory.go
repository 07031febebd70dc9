package processctxprocessor

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
	"go.opentelemetry.io/collector/processor/processorhelper/xprocessorhelper"
	"go.opentelemetry.io/collector/processor/xprocessor"

	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

// NewFactory returns the factory of the process_context processor.
func NewFactory() xprocessor.Factory {
	return newFactory().xFactory()
}

// factory shares one core (configuration, tracker) among the instances of
// one component ID: the collector creates one per pipeline, all with the
// same configuration.
type factory struct {
	mu    sync.Mutex
	cores map[component.ID]*sharedCore
}

type sharedCore struct {
	core *core
	refs int
}

func newFactory() *factory {
	return &factory{cores: map[component.ID]*sharedCore{}}
}

func (f *factory) xFactory() xprocessor.Factory {
	return xprocessor.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		xprocessor.WithLogs(f.createLogs, metadata.LogsStability),
		xprocessor.WithMetrics(f.createMetrics, metadata.MetricsStability),
		xprocessor.WithTraces(f.createTraces, metadata.TracesStability),
		xprocessor.WithProfiles(f.createProfiles, metadata.ProfilesStability),
	)
}

// acquire returns the core of id and the function releasing it; the last
// release stops the core. Instances of one ID share a core when they come
// with the same configuration (the collector passes one *Config per
// component ID).
func (f *factory) acquire(set processor.Settings, cfg *Config) (*core, func(context.Context) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sc, ok := f.cores[set.ID]
	if !ok || sc.core.cfg != cfg {
		c := newCore(cfg)
		if ok {
			return c, c.stop // another configuration under the same ID: not shared
		}
		sc = &sharedCore{core: c}
		f.cores[set.ID] = sc
	}
	sc.refs++
	return sc.core, func(ctx context.Context) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if sc.refs--; sc.refs > 0 {
			return nil
		}
		if f.cores[set.ID] == sc {
			delete(f.cores, set.ID)
		}
		return sc.core.stop(ctx)
	}
}

func (f *factory) newInstance(set processor.Settings, cfg component.Config, signal string) (*instance, error) {
	c, release := f.acquire(set, cfg.(*Config))
	p, err := newInstance(c, set, signal, release)
	if err != nil {
		_ = release(context.Background())
		return nil, err
	}
	return p, nil
}

// The processor replaces resource attributes and moves records.
var mutatesData = consumer.Capabilities{MutatesData: true}

func (f *factory) createLogs(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	p, err := f.newInstance(set, cfg, signalLogs)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewLogs(ctx, set, cfg, next, p.processLogs,
		processorhelper.WithCapabilities(mutatesData),
		processorhelper.WithStart(p.start),
		processorhelper.WithShutdown(p.shutdown))
}

func (f *factory) createMetrics(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Metrics) (processor.Metrics, error) {
	p, err := f.newInstance(set, cfg, signalMetrics)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewMetrics(ctx, set, cfg, next, p.processMetrics,
		processorhelper.WithCapabilities(mutatesData),
		processorhelper.WithStart(p.start),
		processorhelper.WithShutdown(p.shutdown))
}

func (f *factory) createTraces(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	p, err := f.newInstance(set, cfg, signalTraces)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewTraces(ctx, set, cfg, next, p.processTraces,
		processorhelper.WithCapabilities(mutatesData),
		processorhelper.WithStart(p.start),
		processorhelper.WithShutdown(p.shutdown))
}

func (f *factory) createProfiles(ctx context.Context, set processor.Settings, cfg component.Config, next xconsumer.Profiles) (xprocessor.Profiles, error) {
	p, err := f.newInstance(set, cfg, signalProfiles)
	if err != nil {
		return nil, err
	}
	return xprocessorhelper.NewProfiles(ctx, set, cfg, next, p.processProfiles,
		xprocessorhelper.WithCapabilities(mutatesData),
		xprocessorhelper.WithStart(p.start),
		xprocessorhelper.WithShutdown(p.shutdown))
}
