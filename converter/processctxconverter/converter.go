// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package processctxconverter is a confmap converter that refuses, when the
// collector resolves its configuration (at start, and in the validate
// command, which starts no component), a configuration whose pipelines use
// the process_context receiver or processor without the process_context
// extension they need in service::extensions, with the error they would
// fail to start with. A component's own Validate sees only its own
// section; a converter sees the whole configuration.
//
// It also warns, at start, of a journald or file_log receiver of the
// pipelines whose source has nothing to read on this host (no journal, no
// file matching include), which would otherwise read nothing without a
// word (sources.go).
//
// Add it to an ocb manifest under converters (builder-config.yaml does);
// without it the same configuration is refused at start.
package processctxconverter

import (
	"context"

	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
)

// NewFactory returns the converter's factory.
func NewFactory() confmap.ConverterFactory {
	return confmap.NewConverterFactory(func(set confmap.ConverterSettings) confmap.Converter {
		if set.Logger == nil {
			set.Logger = zap.NewNop()
		}
		return converter{logger: set.Logger}
	})
}

// converter changes nothing: it checks, and warns.
type converter struct{ logger *zap.Logger }

func (c converter) Convert(_ context.Context, conf *confmap.Conf) error {
	cfg := conf.ToStringMap()
	if err := sharedtracker.CheckConfig(cfg); err != nil {
		return err
	}
	warnEmptySources(cfg, c.logger)
	return nil
}
