// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxextension

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.yaml.in/yaml/v3"

	"github.com/processctx/otelcol-processctx/extension/processctxextension/internal/metadata"
	"github.com/processctx/otelcol-processctx/internal/configtest"
	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	full := *createDefaultConfig()
	full.RootPath = "/hostfs"
	full.MaxPayloadSize = 32768
	full.Sources = []tracker.Source{tracker.SourceEnvironment}
	full.Discovery = string(hostopen.DiscoveryPoll)
	full.PublicationEvents = "syscall_tracepoints"
	full.CollectionInterval = 5 * time.Second
	full.InitialDelay = time.Second
	full.Timeout = 30 * time.Second
	full.RescanInterval = time.Minute
	full.RescanMaxInterval = 30 * time.Minute
	full.RescanBudget = 64
	full.ReadTimeout = 500 * time.Millisecond
	full.ReconcileInterval = 30 * time.Minute
	full.GracePeriod = 5 * time.Minute
	full.RecheckInterval = 10 * time.Second
	full.WarningInterval = 10 * time.Minute

	tests := []struct {
		name    string
		want    component.Config
		wantErr []string
	}{
		{name: "", want: createDefaultConfig()},
		// Validate reads the filesystem: /hostfs is no procfs here, and
		// only that is refused, as the extension's start would.
		{name: "full", want: &full, wantErr: []string{`root_path "/hostfs": procfs at /hostfs/proc: `}},
		{name: "invalid", wantErr: []string{
			// The keys as the user wrote them, not the struct's path.
			`root_path must be an absolute path, got "hostfs"`,
			`sources lists "context" twice`,
			`discovery must be "auto", "events" or "poll", got "ebpf"`,
			`publication_events must be "auto", "fexit", "kprobe", "syscall_tracepoints", "raw_sys_exit" or "none", got "sys_exit"`,
			"collection_interval must be positive, got 0s",
			"grace_period must not be negative, got -1s",
			"recheck_interval must be positive, got 0s",
		}},
		// By name, not by the Go type that did not take it.
		{name: "unknown_key", wantErr: []string{`unknown key "cache"`}},
		{name: "unknown_source", wantErr: []string{`sources[1]: unknown source "envvars": use "context" or "environment"`}},
	}
	for _, tt := range tests {
		id := component.NewIDWithName(metadata.Type, tt.name)
		t.Run(id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			for _, want := range tt.wantErr {
				assert.ErrorContains(t, err, want)
			}
			if tt.wantErr != nil {
				assert.NotContains(t, err.Error(), "::")
				assert.NotContains(t, err.Error(), "Config")
				if tt.want != nil {
					assert.Equal(t, tt.want, cfg)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}

// A number without a unit is nanoseconds: every duration key refuses what
// is below its floor, as the user wrote it, at start.
func TestDurationFloors(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want string // "": accepted
	}{
		{"collection_interval: 5", "collection_interval: 5ns is below the floor of 100ms; a duration without a unit is in nanoseconds: write 5s"},
		{"collection_interval: 100ms", ""},
		{"initial_delay: 10", "initial_delay: 10ns is below the floor of 1ms; a duration without a unit is in nanoseconds: write 10s"},
		{"initial_delay: 0s", ""},
		{"timeout: 30", "timeout: 30ns is below the floor of 10ms; a duration without a unit is in nanoseconds: write 30s"},
		{"timeout: 0s", ""},
		{"rescan_interval: 30", "rescan_interval: 30ns is below the floor of 100ms; a duration without a unit is in nanoseconds: write 30s"},
		{"rescan_max_interval: 600", "rescan_max_interval: 600ns is below the floor of 100ms; a duration without a unit is in nanoseconds: write 600s"},
		{"read_timeout: 1", "read_timeout: 1ns is below the floor of 10ms; a duration without a unit is in nanoseconds: write 1s"},
		{"read_timeout: 5ms", "read_timeout: 5ms is below the floor of 10ms"},
		{"read_timeout: 10ms", ""},
		{"reconcile_interval: 3600", "reconcile_interval: 3.6µs is below the floor of 1s; a duration without a unit is in nanoseconds: write 3600s"},
		{"grace_period: 120", "grace_period: 120ns is below the floor of 1s; a duration without a unit is in nanoseconds: write 120s"},
		{"grace_period: 0s", ""},
		{"recheck_interval: 50ms", "recheck_interval: 50ms is below the floor of 100ms"},
		{"recheck_interval: 100ms", ""},
		{"warning_interval: 300", "warning_interval: 300ns is below the floor of 1s; a duration without a unit is in nanoseconds: write 300s"},
	} {
		t.Run(tt.yaml, func(t *testing.T) {
			err := configtest.Validate(t, NewFactory(), tt.yaml)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// A value of the wrong type is said by Validate, as the collector then
// prints it (extensions::process_context: collection_interval: ...), by
// its key, what the key takes with an example and what was written, never
// by the Go type that refused it.
func TestWrongTypes(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"discovery: [auto]", "discovery: expected a string such as auto, got a list"},
		{"root_path: 5", "root_path: expected a string such as /, got 5"},
		{"sources: {context: true}", "sources: expected a list such as [context, environment], got a mapping"},
		{"max_payload_size: -1", "max_payload_size: expected a whole number such as 65536, got -1"},
		{"collection_interval: fast", `collection_interval: expected a duration such as 5s, got "fast"`},
		{"collection_interval: [5s]", "collection_interval: expected a duration such as 5s, got a list"},
		{"rescan_budget: many", `rescan_budget: expected a whole number such as 256, got "many"`},
	} {
		t.Run(tt.yaml, func(t *testing.T) {
			var raw map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(tt.yaml), &raw))
			cfg := NewFactory().CreateDefaultConfig()
			require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(cfg), "Validate says it")
			err := confmap.Validate(cfg)
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
		})
	}
	err := configtest.Validate(t, NewFactory(), "colection_interval: 5s")
	require.Error(t, err)
	assert.Equal(t, `unknown key "colection_interval" (did you mean "collection_interval"?)`, err.Error())
}
