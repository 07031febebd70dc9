// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxextension

import (
	"errors"

	"go.opentelemetry.io/collector/confmap"

	"github.com/processctx/otelcol-processctx/internal/configkeys"
	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
)

// Config is the extension's configuration: the settings of its tracker
// that keys set (sharedtracker.Settings; README.md lists them). A type of
// its own, so that its errors name keys, not Go types.
type Config sharedtracker.Settings

var (
	_ confmap.Unmarshaler = (*Config)(nil)
	_ confmap.Validator   = (*Config)(nil)
)

func createDefaultConfig() *Config {
	cfg := Config(sharedtracker.DefaultSettings())
	return &cfg
}

// Unmarshal reads the extension's section; a value of the wrong type is
// said by its key and the kind of value wanted.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	return configkeys.Decode(conf, (*sharedtracker.Settings)(c))
}

// Validate reports the keys that are no setting (by name, with the one
// most likely meant) and what the tracker refuses: every setting that is
// not usable, and a root_path without the host's procfs, with the error
// start would fail with.
func (c *Config) Validate() error {
	return errors.Join(configkeys.Unknown(c, c.Unknown), hostopen.Validate(c.tracker()))
}

// tracker returns the configuration of the tracker.
func (c *Config) tracker() hostopen.Config { return (*sharedtracker.Settings)(c).Tracker() }
