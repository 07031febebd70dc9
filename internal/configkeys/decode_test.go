// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package configkeys

import (
	"errors"
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
		On    bool          `mapstructure:"on"`
		Every time.Duration `mapstructure:"every"`
	} `mapstructure:"nested"`
	Custom    custom `mapstructure:"custom"`
	Leftovers `mapstructure:",squash"`
}

// custom is a setting with an Unmarshal of its own, whose errors keep
// their text.
type custom struct{}

func (*custom) Unmarshal(*confmap.Conf) error { return errors.New("custom says no") }

// Decode keeps a value of the wrong type for Err, said by its key, what
// the setting takes with an example and what was written; the setting
// keeps its default, and the rest of the section is decoded.
func TestDecode(t *testing.T) {
	cfg := decoded{Mode: "auto", Size: 65536}
	require.NoError(t, Decode(confmap.NewFromStringMap(map[string]any{"mode": "fast", "names": "a,b"}), &cfg, &cfg.Leftovers))
	require.NoError(t, cfg.Err(&cfg))
	assert.Equal(t, mode("fast"), cfg.Mode)
	assert.Equal(t, []string{"a", "b"}, cfg.Names)

	cfg = decoded{Mode: "auto", Size: 65536, Names: []string{"x", "y"}}
	require.NoError(t, Decode(confmap.NewFromStringMap(map[string]any{
		"mode": []any{"fast"}, "size": -1, "interval": "fast", "names": map[string]any{"a": 1},
		"nested": map[string]any{"on": "yes", "every": []any{"5s"}}, "colour": 1,
	}), &cfg, &cfg.Leftovers), "Validate says it")
	assert.Equal(t, mode("auto"), cfg.Mode, "the default stays")
	err := cfg.Err(&cfg)
	require.Error(t, err)
	for _, want := range []string{
		`mode: expected a string such as auto, got a list`,
		`size: expected a whole number such as 65536, got -1`,
		`interval: expected a duration such as 5s, got "fast"`,
		`names: expected a list such as [x, y], got a mapping`,
		`nested.on: expected true or false, got "yes"`,
		`nested.every: expected a duration such as 5s, got a list`,
		`unknown key "colour"`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	for _, noise := range []string{"configkeys.mode", "uint32", "interface {}", "bool", "decoding failed", "''"} {
		assert.NotContains(t, err.Error(), noise)
	}

	// Decoding again starts afresh.
	require.NoError(t, Decode(confmap.NewFromStringMap(map[string]any{"interval": "5s"}), &cfg, &cfg.Leftovers))
	cfg.Unknown = nil
	require.NoError(t, cfg.Err(&cfg))

	// A setting with an Unmarshal of its own keeps its error's text.
	cfg = decoded{}
	require.NoError(t, Decode(confmap.NewFromStringMap(map[string]any{"custom": map[string]any{"x": 1}}), &cfg, &cfg.Leftovers))
	assert.EqualError(t, cfg.Err(&cfg), "custom: custom says no")
}
