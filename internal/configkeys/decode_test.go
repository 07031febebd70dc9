// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package configkeys

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

type mode string

type decoded struct {
	Mode     mode          `mapstructure:"mode"`
	Size     uint32        `mapstructure:"size"`
	Interval time.Duration `mapstructure:"interval"`
	Names    []string      `mapstructure:"names"`
	Nested   struct {
		On bool `mapstructure:"on"`
	} `mapstructure:"nested"`
}

// Decode says a value of the wrong type by its key and the kind wanted,
// and keeps every other error's text.
func TestDecode(t *testing.T) {
	var cfg decoded
	require.NoError(t, Decode(confmap.NewFromStringMap(map[string]any{"mode": "fast", "names": "a,b"}), &cfg))
	assert.Equal(t, decoded{Mode: "fast", Names: []string{"a", "b"}}, cfg)

	err := Decode(confmap.NewFromStringMap(map[string]any{
		"mode": []any{"fast"}, "size": -1, "interval": "soon", "nested": map[string]any{"on": "yes"},
	}), &decoded{})
	require.Error(t, err)
	for _, want := range []string{
		"'mode' expected a string, got a list",
		"'size' cannot read -1 as a whole number, not negative",
		"'interval' time: invalid duration",
		"'nested.on' expected true or false, got a string",
	} {
		assert.Contains(t, err.Error(), want)
	}
	for _, goType := range []string{"configkeys.mode", "uint32", "interface {}", "bool"} {
		assert.NotContains(t, err.Error(), goType)
	}
}
