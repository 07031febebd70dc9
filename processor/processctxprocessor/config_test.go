// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

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
	"go.opentelemetry.io/collector/filter"

	"github.com/processctx/otelcol-processctx/internal/attrpolicy"
	"github.com/processctx/otelcol-processctx/internal/configtest"
	"github.com/processctx/otelcol-processctx/processor/processctxprocessor/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	extID := component.MustNewIDWithName("process_context", "host")

	tests := []struct {
		name         string
		want         *Config
		unmarshalErr []string
		wantErr      string
	}{
		{name: "", want: createDefaultConfig()},
		{
			name: "full",
			want: &Config{
				PIDAttributes: []string{"process.pid", "pid"},
				Attributes: attrpolicy.Config{
					Identity: attrpolicy.IdentityConfig{Override: true},
					Observed: attrpolicy.ObservedConfig{Copy: true},
					Other:    attrpolicy.OtherConfig{Copy: false, Override: true},
					Include:  append(attrpolicy.Strict("service.name", "service.version"), filter.Config{Regex: `^deployment\.`}),
					Exclude:  attrpolicy.Strict("service.instance.id"),
				},
				UnqualifiedPids: UnqualifiedHost,
				LookupTimeout:   20 * time.Millisecond,
				Tracker:         &extID,
				EntityRefs:      false,
			},
		},
		{
			name: "old_form",
			want: func() *Config {
				c := createDefaultConfig()
				c.Attributes.Identity.Override = true
				c.Attributes.Include = attrpolicy.Strict("service.name", "service.version")
				c.Attributes.Exclude = attrpolicy.Strict("service.instance.id")
				c.deprecated = []string{"override (now attributes.identity.override)", "include (now attributes.include)", "exclude (now attributes.exclude)"}
				return c
			}(),
		},
		{
			name: "partial_attributes",
			want: func() *Config {
				c := createDefaultConfig()
				c.Attributes.Other = attrpolicy.OtherConfig{Copy: true, Override: true}
				return c
			}(),
		},
		{name: "both_forms_override", unmarshalErr: []string{"override and attributes.identity.override are both set"}},
		{name: "both_forms_include", unmarshalErr: []string{"include and attributes.include are both set"}},
		{name: "observed_override", unmarshalErr: []string{"attributes.observed.override is not a setting", "always stay"}},
		{name: "unknown_attributes_key", unmarshalErr: []string{`attributes: unknown key "overide" (valid keys: exclude, identity, include, observed, other)`}},
		{name: "unknown_family_key", unmarshalErr: []string{`attributes.identity: unknown key "copy" (valid keys: override)`}},
		{name: "unknown_pattern_key", unmarshalErr: []string{`attributes.exclude[0]: unknown key "prefix" (valid keys: regexp, strict)`}},
		{name: "invalid_unqualified_pids", wantErr: `unqualified_pids must be "verify" or "host", got "trust"`},
		{name: "invalid_pid_attributes", wantErr: "pid_attributes must list at least one attribute key"},
		{name: "too_many_pid_attributes", wantErr: "pid_attributes lists 9 keys, at most 8 are allowed"},
		{name: "duplicate_pid_attribute", wantErr: `pid_attributes lists "process.pid" twice`},
		{name: "empty_key", wantErr: "attributes::include::1: must specify either strict or regex"},
		{name: "invalid_regexp", wantErr: "attributes::exclude::0: error parsing regexp"},
		{name: "duplicate_exclude", wantErr: `attributes: exclude lists "service.name" twice`},
		{name: "include_and_exclude", wantErr: `attributes: key "service.name" is in both include and exclude`},
		{name: "invalid_lookup_timeout", wantErr: "lookup_timeout must be positive and at most 5s, got 1m0s"},
		{name: "zero_lookup_timeout", wantErr: "lookup_timeout must be positive and at most 5s, got 0s"},
		{name: "invalid_tracker", wantErr: `tracker: `},
		{name: "invalid_entity_refs", wantErr: `entity_refs: expected true or false, got "sometimes"`},
		{name: "unknown_field", wantErr: `unknown key "pid_attribute" (did you mean "pid_attributes"?)`},
		{name: "unknown_key_far_from_all", wantErr: `unknown key "zzz" (valid keys: attributes, entity_refs, lookup_timeout, pid_attributes, tracker, unqualified_pids)`},
		{name: "tracker_key", wantErr: `unknown key "grace_period": it is a key of the process_context extension`},
	}
	for _, tt := range tests {
		id := component.NewIDWithName(metadata.Type, tt.name)
		t.Run(id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(id.String())
			require.NoError(t, err)
			err = sub.Unmarshal(cfg)
			if len(tt.unmarshalErr) > 0 {
				for _, want := range tt.unmarshalErr {
					require.ErrorContains(t, err, want)
				}
				return
			}
			require.NoError(t, err)
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

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.LookupTimeout = 0
	cfg.UnqualifiedPids = ""
	cfg.Attributes.Include, cfg.Attributes.Exclude = attrpolicy.Strict("service.name", ""), attrpolicy.Strict("service.name")
	err := confmap.Validate(cfg)
	require.Error(t, err)
	for _, want := range []string{
		"lookup_timeout must be positive",
		`unqualified_pids must be "verify" or "host", got ""`,
		"attributes::include::1: must specify either strict or regex",
		`attributes: key "service.name" is in both include and exclude`,
	} {
		assert.ErrorContains(t, err, want)
	}
}

// lookup_timeout has a floor of 1ms: below it the configuration is refused
// with a message that names the key and the floor and says that a number
// without a unit is nanoseconds.
func TestLookupTimeoutFloor(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want string // "": accepted
	}{
		{"lookup_timeout: 50", "lookup_timeout: 50ns is below the floor of 1ms; a duration without a unit is in nanoseconds: write 50ms"},
		{"lookup_timeout: 20000", "lookup_timeout: 20µs is below the floor of 1ms; a duration without a unit is in nanoseconds"},
		{"lookup_timeout: 500us", "lookup_timeout: 500µs is below the floor of 1ms"},
		{"lookup_timeout: 1ms", ""},
		{"lookup_timeout: 5s", ""},
		{"lookup_timeout: 0s", "lookup_timeout must be positive and at most 5s, got 0s"},
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
	// 20µs is no number of milliseconds a batch may wait: no suggestion.
	cfg := createDefaultConfig()
	cfg.LookupTimeout = 20 * time.Microsecond
	assert.EqualError(t, cfg.Validate(), "lookup_timeout: 20µs is below the floor of 1ms; a duration without a unit is in nanoseconds")
}
