// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxextension

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/processctx/otelcol-processctx/extension/processctxextension/internal/metadata"
	"github.com/processctx/otelcol-processctx/internal/hostopen"
)

// NewFactory returns the factory of the process_context extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, func() component.Config { return createDefaultConfig() }, create, metadata.ExtensionStability)
}

func create(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return &processContextExtension{cfg: cfg.(*Config), settings: set, open: hostopen.Open}, nil
}
