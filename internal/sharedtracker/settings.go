// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package sharedtracker

import (
	"time"

	"github.com/processctx/otelcol-processctx/internal/configkeys"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Settings are the settings of the tracker that the collector's
// configuration sets, by their keys: the process_context extension's
// section decodes into them, and the receiver and the processor name them
// when one is written in their section. tracker.Config documents each; the
// tracker's other settings (readers, quarantine backoff...) are no keys;
// hostopen.Config documents root_path, discovery and publication_events.
// The extension makes them a hostopen.Config.
type Settings struct {
	RootPath           string           `mapstructure:"root_path"`
	MaxPayloadSize     uint32           `mapstructure:"max_payload_size"`
	Sources            []tracker.Source `mapstructure:"sources"`
	Discovery          string           `mapstructure:"discovery"`
	PublicationEvents  string           `mapstructure:"publication_events"`
	CollectionInterval time.Duration    `mapstructure:"collection_interval"`
	InitialDelay       time.Duration    `mapstructure:"initial_delay"`
	Timeout            time.Duration    `mapstructure:"timeout"`
	RescanInterval     time.Duration    `mapstructure:"rescan_interval"`
	RescanMaxInterval  time.Duration    `mapstructure:"rescan_max_interval"`
	RescanBudget       int              `mapstructure:"rescan_budget"`
	ReadTimeout        time.Duration    `mapstructure:"read_timeout"`
	ReconcileInterval  time.Duration    `mapstructure:"reconcile_interval"`
	GracePeriod        time.Duration    `mapstructure:"grace_period"`
	RecheckInterval    time.Duration    `mapstructure:"recheck_interval"`
	WarningInterval    time.Duration    `mapstructure:"warning_interval"`
	// Leftovers holds the keys that are none of the above (typos) and the
	// values of the wrong type: the extension's Validate names them.
	configkeys.Leftovers `mapstructure:",squash"`
}
