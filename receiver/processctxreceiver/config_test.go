// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/processctx/otelcol-processctx/internal/configtest"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

var trackerID = component.MustNewID("process_context")

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	tests := []struct {
		name         string
		want         *Config
		wantErr      string
		unmarshalErr string
	}{
		{name: "", want: createDefaultConfig()},
		{
			name: "full",
			want: &Config{
				Tracker:           &trackerID,
				ReportInterval:    10 * time.Minute,
				EntityEventFormat: FormatSpec,
				Include:           MatchConfig{MatchType: MatchTypeRegexp, Names: []string{"^java$", "^python3"}},
				Exclude:           MatchConfig{MatchType: MatchTypeStrict, Names: []string{"python3-debug"}},
				EntityTypes:       []string{"process", "service"},
				CommandLine:       CommandLineFull,
				RetryOnFailure: configretry.BackOffConfig{
					Enabled: true, InitialInterval: 2 * time.Second, RandomizationFactor: 0.1,
					Multiplier: 2, MaxInterval: time.Minute, MaxElapsedTime: time.Hour,
				},
				QueueSize: 500,
			},
		},
		{name: "command_line_none", want: func() *Config { c := createDefaultConfig(); c.CommandLine = CommandLineNone; return c }()},
		{name: "invalid_command_line", wantErr: `command_line must be "sanitized", "full" or "none", got "redacted"`},
		{name: "empty_command_line", wantErr: `command_line must be "sanitized", "full" or "none", got ""`},
		{name: "no_entity_types", wantErr: `entity_types must name at least one of "process", "service.instance" and "service"`},
		{name: "unknown_entity_type", wantErr: `entity_types: unknown entity type "host" (known: "process", "service.instance", "service")`},
		{name: "invalid_format", wantErr: `entity_event_format must be unset, "legacy" or "spec", got "otlp"`},
		{name: "invalid_match_type", wantErr: `include.match_type must be "strict" or "regexp", got "glob"`},
		{name: "missing_match_type", wantErr: `exclude.match_type is required with exclude.names: "strict" or "regexp"`},
		{name: "invalid_report_interval", wantErr: "report_interval must be positive, got 0s"},
		{name: "invalid_queue_size", wantErr: "queue_size must be positive, got 0"},
		{name: "invalid_retry", wantErr: "retry_on_failure: multiplier value must be greater than or equal to 0"},
		{name: "tracker_key", wantErr: `unknown key "collection_interval": it is a key of the process_context extension`},
	}
	for _, tt := range tests {
		id := component.NewIDWithName(metadata.Type, tt.name)
		t.Run(id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(id.String())
			require.NoError(t, err)
			if tt.unmarshalErr != "" {
				require.ErrorContains(t, sub.Unmarshal(cfg), tt.unmarshalErr)
				return
			}
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
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

// Every duration has a floor: below it the configuration is refused with a
// message that names the key and the floor and, for a value below a
// millisecond, says that a number without a unit is nanoseconds.
func TestDurationFloors(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want string // "": accepted
	}{
		{"report_interval: 300", "report_interval: 300ns is below the floor of 1s; a duration without a unit is in nanoseconds: write 300s"},
		{"report_interval: 500ms", "report_interval: 500ms is below the floor of 1s"},
		{"report_interval: 1s", ""},
		{"retry_on_failure: {initial_interval: 5}", "retry_on_failure.initial_interval: 5ns is below the floor of 10ms; a duration without a unit is in nanoseconds: write 5s"},
		{"retry_on_failure: {initial_interval: 5ms}", "retry_on_failure.initial_interval: 5ms is below the floor of 10ms"},
		{"retry_on_failure: {initial_interval: 10ms, max_interval: 10ms}", ""},
		{"retry_on_failure: {max_interval: 30}", "retry_on_failure.max_interval: 30ns is below the floor of 10ms; a duration without a unit is in nanoseconds: write 30s"},
		{"retry_on_failure: {initial_interval: 0s}", "retry_on_failure.initial_interval must be positive while retry_on_failure is enabled, got 0s"},
		{"retry_on_failure: {max_interval: 0s}", "retry_on_failure.max_interval must be positive while retry_on_failure is enabled, got 0s"},
		{"retry_on_failure: {enabled: false, initial_interval: 0s, max_interval: 5}", ""}, // not used
		{"retry_on_failure: {max_elapsed_time: 500ms, initial_interval: 100ms, max_interval: 100ms}", "retry_on_failure.max_elapsed_time: 500ms is below the floor of 1s"},
		{"retry_on_failure: {max_elapsed_time: 0s}", ""}, // no limit
		{"retry_on_failure: {max_elapsed_time: 1h}", ""},
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
