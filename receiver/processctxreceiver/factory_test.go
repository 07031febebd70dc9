// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/sharedtracker/sharedtrackertest"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

func TestFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, "process_context", f.Type().String())
	assert.Equal(t, metadata.LogsStability, f.LogsStability())
	cfg := f.CreateDefaultConfig()
	require.NoError(t, cfg.(*Config).Validate())

	rcv, err := f.CreateLogs(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), sharedtrackertest.Host(startTracker(t, hostopen.DefaultConfig()))))
	require.NoError(t, rcv.Shutdown(context.Background()))
}
