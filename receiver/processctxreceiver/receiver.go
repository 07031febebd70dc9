package processctxreceiver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/procmem"
	"github.com/processctx/otelcol-processctx/internal/registry"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

type processContextReceiver struct {
	cfg       *Config
	settings  receiver.Settings
	next      consumer.Logs
	telemetry *metadata.TelemetryBuilder
	obsrecv   *receiverhelper.ObsReport

	cancel  context.CancelFunc
	done    chan struct{}
	release func()
}

func newReceiver(set receiver.Settings, cfg *Config, next consumer.Logs) (*processContextReceiver, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("create telemetry: %w", err)
	}
	obsrecv, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             set.ID,
		Transport:              "procfs",
		ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, fmt.Errorf("create obsreport: %w", err)
	}
	return &processContextReceiver{cfg: cfg, settings: set, next: next, telemetry: tb, obsrecv: obsrecv}, nil
}

// Start opens the procfs, then scans at once and every collection interval
// in the background.
func (r *processContextReceiver) Start(_ context.Context, _ component.Host) error {
	fs, err := procmem.NewFS(r.cfg.RootPath)
	if err != nil {
		return fmt.Errorf("root_path %q: %w", r.cfg.RootPath, err)
	}
	if err := fs.CheckHost(); err != nil {
		if r.cfg.RootPath != "/" {
			return fmt.Errorf("root_path %q: %w: mount the host's /proc at %s", r.cfg.RootPath, err, fs.ProcDir())
		}
		r.settings.Logger.Warn("The collector runs in a container's pid namespace and sees only that container's processes: "+
			"mount the host's /proc (e.g. at /hostfs/proc, with root_path: /hostfs) or use the host's pid namespace", zap.Error(err))
	}
	reg, release := registry.Acquire(fs.Root())
	s, err := newScanner(r.cfg, fs, reg, r.settings.Logger)
	if err != nil {
		release()
		return err
	}
	r.release = release
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done = make(chan struct{})
	go r.run(ctx, s)
	return nil
}

func (r *processContextReceiver) run(ctx context.Context, s *scanner) {
	defer close(r.done)
	ticker := time.NewTicker(r.cfg.CollectionInterval)
	defer ticker.Stop()
	for {
		r.scanOnce(ctx, s)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (r *processContextReceiver) scanOnce(ctx context.Context, s *scanner) {
	began := time.Now()
	res, err := s.scan(ctx, began)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			r.settings.Logger.Error("Scan of the host's processes failed", zap.Error(err))
		}
		return
	}
	r.telemetry.RecordScan(ctx, res.scanned, res.publishers, time.Since(began))
	for outcome, n := range s.outcomes {
		r.telemetry.RecordReads(ctx, outcome, n)
	}
	if s.events.len() == 0 {
		return
	}
	logs := s.events.take()
	n := logs.LogRecordCount()
	obsCtx := r.obsrecv.StartLogsOp(ctx)
	err = r.next.ConsumeLogs(obsCtx, logs)
	r.obsrecv.EndLogsOp(obsCtx, metadata.Type.String(), n, err)
	if err != nil {
		r.settings.Logger.Warn("Entity events were refused by the next consumer", zap.Int("events", n), zap.Error(err))
	}
}

// Shutdown stops scanning. A scan stuck in a read (a process in
// uninterruptible sleep can hold its maps) does not hold up Shutdown past
// ctx's deadline.
func (r *processContextReceiver) Shutdown(ctx context.Context) error {
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	defer r.release()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
