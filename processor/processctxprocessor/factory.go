// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"

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
	return xprocessor.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		xprocessor.WithLogs(createLogs, metadata.LogsStability),
		xprocessor.WithMetrics(createMetrics, metadata.MetricsStability),
		xprocessor.WithTraces(createTraces, metadata.TracesStability),
		xprocessor.WithProfiles(createProfiles, metadata.ProfilesStability),
	)
}

// helperOptions are the options of every signal's processorhelper but
// profiles' (xprocessorhelper takes options of its own type).
func helperOptions(p *instance) []processorhelper.Option {
	return []processorhelper.Option{
		// It replaces resource attributes and moves records.
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithStart(p.start),
		processorhelper.WithShutdown(p.shutdown),
	}
}

func createLogs(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	p, err := newInstance(set, cfg.(*Config), signalLogs)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewLogs(ctx, set, cfg, next, p.processLogs, helperOptions(p)...)
}

func createMetrics(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Metrics) (processor.Metrics, error) {
	p, err := newInstance(set, cfg.(*Config), signalMetrics)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewMetrics(ctx, set, cfg, next, p.processMetrics, helperOptions(p)...)
}

func createTraces(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	p, err := newInstance(set, cfg.(*Config), signalTraces)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewTraces(ctx, set, cfg, next, p.processTraces, helperOptions(p)...)
}

func createProfiles(ctx context.Context, set processor.Settings, cfg component.Config, next xconsumer.Profiles) (xprocessor.Profiles, error) {
	p, err := newInstance(set, cfg.(*Config), signalProfiles)
	if err != nil {
		return nil, err
	}
	return xprocessorhelper.NewProfiles(ctx, set, cfg, next, p.processProfiles,
		xprocessorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		xprocessorhelper.WithStart(p.start),
		xprocessorhelper.WithShutdown(p.shutdown))
}
