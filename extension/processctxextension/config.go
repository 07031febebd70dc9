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

// createDefaultConfig returns the tracker's defaults.
func createDefaultConfig() *Config {
	c := hostopen.DefaultConfig()
	return &Config{
		RootPath: c.RootPath, MaxPayloadSize: c.MaxPayloadSize, Sources: c.Sources, Discovery: string(c.Discovery),
		PublicationEvents: c.PublicationEvents, CollectionInterval: c.CollectionInterval, InitialDelay: c.InitialDelay,
		Timeout: c.Timeout, RescanInterval: c.RescanInterval, RescanMaxInterval: c.RescanMaxInterval,
		RescanBudget: c.RescanBudget, ReadTimeout: c.ReadTimeout, ReconcileInterval: c.ReconcileInterval,
		GracePeriod: c.GracePeriod, RecheckInterval: c.RecheckInterval, WarningInterval: c.WarningInterval,
	}
}

// Unmarshal reads the extension's section; a value of the wrong type is
// Validate's to say, by its key and the kind of value wanted.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	return configkeys.Decode(conf, (*sharedtracker.Settings)(c), &c.Leftovers)
}

// Validate reports the values of the wrong type, the keys that are no
// setting (by name, with the one most likely meant) and what the tracker
// refuses: every setting that is
// not usable, and a root_path without the host's procfs, with the error
// start would fail with.
func (c *Config) Validate() error {
	return errors.Join(c.Err(c), hostopen.Validate(c.tracker()))
}

// tracker returns the configuration of the tracker hostopen.Open opens:
// its defaults, with c.
func (c *Config) tracker() hostopen.Config {
	t := hostopen.DefaultConfig()
	t.RootPath, t.MaxPayloadSize, t.Sources, t.Discovery = c.RootPath, c.MaxPayloadSize, c.Sources, hostopen.Discovery(c.Discovery)
	t.PublicationEvents, t.CollectionInterval, t.InitialDelay = c.PublicationEvents, c.CollectionInterval, c.InitialDelay
	t.Timeout, t.RescanInterval, t.RescanMaxInterval = c.Timeout, c.RescanInterval, c.RescanMaxInterval
	t.RescanBudget, t.ReadTimeout, t.ReconcileInterval = c.RescanBudget, c.ReadTimeout, c.ReconcileInterval
	t.GracePeriod, t.RecheckInterval, t.WarningInterval = c.GracePeriod, c.RecheckInterval, c.WarningInterval
	return t
}
