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
// Add it to an ocb manifest under converters (builder-config.yaml does);
// without it the same configuration is refused at start.
package processctxconverter

import (
	"context"

	"go.opentelemetry.io/collector/confmap"

	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
)

// NewFactory returns the converter's factory.
func NewFactory() confmap.ConverterFactory {
	return confmap.NewConverterFactory(func(confmap.ConverterSettings) confmap.Converter { return converter{} })
}

// converter changes nothing: it checks.
type converter struct{}

func (converter) Convert(_ context.Context, conf *confmap.Conf) error {
	return sharedtracker.CheckConfig(conf.ToStringMap())
}
