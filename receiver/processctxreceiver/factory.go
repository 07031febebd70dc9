// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/xreceiver"

	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

// NewFactory returns the factory of the process_context receiver.
func NewFactory() xreceiver.Factory {
	return xreceiver.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		xreceiver.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	return newReceiver(set, cfg.(*Config), next)
}
