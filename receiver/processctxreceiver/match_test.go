// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExecutableFilter(t *testing.T) {
	tests := []struct {
		name             string
		include, exclude MatchConfig
		want             map[string]bool
	}{
		{
			name: "everything by default",
			want: map[string]bool{"java": true, "": true},
		},
		{
			name:    "strict",
			include: MatchConfig{MatchType: MatchTypeStrict, Names: []string{"java", "node"}},
			want:    map[string]bool{"java": true, "node": true, "javac": false, "python3": false},
		},
		{
			name:    "regexp matches anywhere unless anchored",
			include: MatchConfig{MatchType: MatchTypeRegexp, Names: []string{"^python3", "jav"}},
			exclude: MatchConfig{MatchType: MatchTypeStrict, Names: []string{"python3-debug"}},
			want:    map[string]bool{"python3.12": true, "python3-debug": false, "java": true, "ajava": true, "mypython3": false},
		},
		{
			name:    "exclude only",
			exclude: MatchConfig{MatchType: MatchTypeRegexp, Names: []string{"^kworker"}},
			want:    map[string]bool{"kworker/0:1": false, "java": true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.include.validate("include"))
			require.NoError(t, tt.exclude.validate("exclude"))
			f := newExecutableFilter(tt.include, tt.exclude)
			for exe, want := range tt.want {
				assert.Equal(t, want, f.selects(exe), exe)
			}
		})
	}
}

func TestMatchConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		m       MatchConfig
		wantErr string
	}{
		{name: "empty", m: MatchConfig{}},
		{name: "strict", m: MatchConfig{MatchType: MatchTypeStrict, Names: []string{"java"}}},
		{name: "no match type", m: MatchConfig{Names: []string{"java"}}, wantErr: `include.match_type is required with include.names: "strict" or "regexp"`},
		{name: "another match type", m: MatchConfig{MatchType: "glob", Names: []string{"java"}}, wantErr: `include.match_type must be "strict" or "regexp", got "glob"`},
		{name: "bad regexp", m: MatchConfig{MatchType: MatchTypeRegexp, Names: []string{"ok", "(java"}}, wantErr: "include.names[1]: error parsing regexp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.m.validate("include")
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
