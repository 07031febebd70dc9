// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package configtest loads a component's configuration from YAML text the
// way the collector loads a config file, for the components' tests of what
// a user may write.
package configtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// Validate unmarshals text, written to a file, into f's default
// configuration and returns what validating it says.
func Validate(t testing.TB, f component.Factory, text string) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	cm, err := confmaptest.LoadConf(path)
	require.NoError(t, err)
	cfg := f.CreateDefaultConfig()
	require.NoError(t, cm.Unmarshal(cfg))
	return confmap.Validate(cfg)
}
