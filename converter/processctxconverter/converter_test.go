// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxconverter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

// The converter refuses a configuration with the processor in a pipeline
// and no extension, and changes nothing of one it accepts.
func TestConvert(t *testing.T) {
	conv := NewFactory().Create(confmap.ConverterSettings{})
	pipelines := map[string]any{"logs": map[string]any{"receivers": []any{"otlp"}, "processors": []any{"process_context"}, "exporters": []any{"debug"}}}
	without := confmap.NewFromStringMap(map[string]any{
		"processors": map[string]any{"process_context": nil},
		"service":    map[string]any{"pipelines": pipelines},
	})
	err := conv.Convert(context.Background(), without)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "process_context processor: no process_context extension")

	withMap := map[string]any{
		"extensions": map[string]any{"process_context": nil},
		"processors": map[string]any{"process_context": nil},
		"service":    map[string]any{"extensions": []any{"process_context"}, "pipelines": pipelines},
	}
	with := confmap.NewFromStringMap(withMap)
	before := with.ToStringMap()
	require.NoError(t, conv.Convert(context.Background(), with))
	assert.Equal(t, before, with.ToStringMap())
}
