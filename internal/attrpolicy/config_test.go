// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package attrpolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/filter"
)

// block is a configuration with an attributes block, as a component's
// configuration holds it.
type block struct {
	Attributes Config `mapstructure:"attributes"`
}

func load(raw map[string]any) (Config, error) {
	b := block{Attributes: DefaultConfig()}
	var attrs any = raw
	if raw == nil {
		attrs = nil // attributes: (nothing)
	}
	err := confmap.NewFromStringMap(map[string]any{"attributes": attrs}).Unmarshal(&b)
	if err == nil {
		err = confmap.Validate(&b)
	}
	return b.Attributes, err
}

func TestUnmarshal(t *testing.T) {
	for _, tt := range []struct {
		name    string
		raw     map[string]any
		want    Config
		wantErr []string
	}{
		{name: "empty block: the defaults", raw: map[string]any{}, want: DefaultConfig()},
		{name: "null block: the defaults", raw: nil, want: DefaultConfig()},
		{name: "null entries: the defaults", raw: map[string]any{"identity": nil, "include": nil}, want: DefaultConfig()},
		{
			name: "every key",
			raw: map[string]any{
				"identity": map[string]any{"override": true},
				"observed": map[string]any{"copy": true},
				"other":    map[string]any{"copy": false, "override": true},
				"include":  []any{"service.name", map[string]any{"strict": "host.name"}, map[string]any{"regexp": "^deployment\\."}},
				"exclude":  []any{map[string]any{"regexp": "^datadog\\."}},
			},
			want: Config{
				Identity: IdentityConfig{Override: true}, Observed: ObservedConfig{Copy: true},
				Other:   OtherConfig{Override: true},
				Include: []filter.Config{{Strict: "service.name"}, {Strict: "host.name"}, {Regex: "^deployment\\."}},
				Exclude: []filter.Config{{Regex: "^datadog\\."}},
			},
		},
		{
			name: "a family given in part keeps its other defaults",
			raw:  map[string]any{"other": map[string]any{"override": true}},
			want: Config{Other: OtherConfig{Copy: true, Override: true}},
		},
		{name: "unknown key", raw: map[string]any{"overide": true},
			wantErr: []string{`attributes: unknown key "overide" (valid keys: exclude, identity, include, observed, other)`}},
		{name: "unknown family key", raw: map[string]any{"other": map[string]any{"replace": true}},
			wantErr: []string{`attributes.other: unknown key "replace" (valid keys: copy, override)`}},
		{name: "observed override", raw: map[string]any{"observed": map[string]any{"override": true}},
			wantErr: []string{"attributes.observed.override is not a setting", "always stay"}},
		{name: "unknown pattern key", raw: map[string]any{"include": []any{map[string]any{"regex": "x"}}},
			wantErr: []string{`attributes.include[0]: unknown key "regex" (did you mean "regexp"?)`}},
		{name: "not a list", raw: map[string]any{"exclude": "datadog.x"},
			wantErr: []string{"attributes.exclude must be a list"}},
		{name: "a number in a list", raw: map[string]any{"exclude": []any{7}},
			wantErr: []string{"attributes.exclude[0] must be a key or {strict: key} / {regexp: pattern}, got 7"}},
		{name: "family not a map", raw: map[string]any{"identity": true},
			wantErr: []string{"attributes.identity must be a map of override"}},
		{name: "both strict and regexp", raw: map[string]any{"exclude": []any{map[string]any{"strict": "a", "regexp": "b"}}},
			wantErr: []string{"attributes::exclude::0: strict and regex cannot be used together"}},
		{name: "bad regexp", raw: map[string]any{"exclude": []any{map[string]any{"regexp": "("}}},
			wantErr: []string{"attributes::exclude::0: error parsing regexp"}},
		{name: "empty key", raw: map[string]any{"include": []any{""}},
			wantErr: []string{"attributes::include::0: must specify either strict or regex"}},
		{name: "twice", raw: map[string]any{"exclude": []any{"a", map[string]any{"strict": "a"}, map[string]any{"regexp": "b"}, map[string]any{"regexp": "b"}}},
			wantErr: []string{`attributes: exclude lists "a" twice`, `exclude lists {regexp: "b"} twice`}},
		{name: "included and excluded", raw: map[string]any{"include": []any{"a"}, "exclude": []any{"a"}},
			wantErr: []string{`attributes: key "a" is in both include and exclude`}},
		{name: "every problem at once", raw: map[string]any{"x": 1, "observed": map[string]any{"override": true}, "include": []any{1}},
			wantErr: []string{`unknown key "x"`, "attributes.observed.override is not a setting", "attributes.include[0] must be a key"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := load(tt.raw)
			if len(tt.wantErr) > 0 {
				require.Error(t, err)
				for _, want := range tt.wantErr {
					assert.ErrorContains(t, err, want)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
