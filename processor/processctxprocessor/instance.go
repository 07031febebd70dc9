package processctxprocessor

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/trackerstatus"
)

// instance is the processor of one pipeline (one signal).
type instance struct {
	core   *core
	logger *zap.Logger
	tel    *telemetry
	// regroup: records and samples with pids of their own are regrouped
	// (see pointerSlicesOK).
	regroup bool
	// release drops the instance's reference to the shared core, once.
	release func(context.Context) error
	// stopStatus ends the reports of the tracker's health as the
	// instance's status.
	stopStatus func()
	batches    sync.Pool // *batch
}

func newInstance(c *core, set processor.Settings, signal string, release func(context.Context) error) (*instance, error) {
	tel, err := newTelemetry(set.TelemetrySettings, signal)
	if err != nil {
		return nil, err
	}
	p := &instance{core: c, logger: set.Logger, tel: tel, regroup: pointerSlicesOK()}
	if !p.regroup {
		set.Logger.Error("This build's pdata lays out its slices in a way the processor does not know: " +
			"log records and profile samples with pids of their own pass through unenriched (resources with a pid are enriched)")
	}
	var once sync.Once
	p.release = func(ctx context.Context) error {
		var err error
		once.Do(func() { err = release(ctx) })
		return err
	}
	return p, nil
}

// start starts the core (once for the instances that share it); the
// tracker's health becomes the instance's status.
func (p *instance) start(ctx context.Context, host component.Host) error {
	if err := p.core.start(ctx, host, p.logger); err != nil {
		return err
	}
	if st := p.core.state.Load(); st != nil {
		p.stopStatus = trackerstatus.Watch(host, st.src)
	}
	return nil
}

func (p *instance) shutdown(ctx context.Context) error {
	if p.stopStatus != nil {
		p.stopStatus()
	}
	p.tel.shutdown()
	return p.release(ctx)
}
