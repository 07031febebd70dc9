package processctxreceiver

import (
	"path/filepath"
	"regexp"
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
		{
			name:    "deprecated globs",
			include: MatchConfig{Executables: []string{"java", "python3*"}},
			exclude: MatchConfig{Executables: []string{"python3-debug"}},
			want:    map[string]bool{"java": true, "python3.12": true, "python3-debug": false, "node": false, "xjava": false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.include.validate("include", false))
			require.NoError(t, tt.exclude.validate("exclude", false))
			f := newExecutableFilter(tt.include, tt.exclude)
			for exe, want := range tt.want {
				assert.Equal(t, want, f.selects(exe), exe)
			}
		})
	}
}

func TestMatchConfigValidate(t *testing.T) {
	tests := []struct {
		name         string
		m            MatchConfig
		disallowGlob bool
		wantErr      string
	}{
		{name: "empty", m: MatchConfig{}},
		{name: "strict", m: MatchConfig{MatchType: MatchTypeStrict, Names: []string{"java"}}},
		{name: "no match type", m: MatchConfig{Names: []string{"java"}}, wantErr: `include.match_type must be "strict" or "regexp", got ""`},
		{name: "bad regexp", m: MatchConfig{MatchType: MatchTypeRegexp, Names: []string{"ok", "(java"}}, wantErr: "include.names[1]: error parsing regexp"},
		{name: "glob accepted", m: MatchConfig{Executables: []string{"python3*"}}},
		{name: "bad glob", m: MatchConfig{Executables: []string{"[java"}}, wantErr: `include.executables: bad pattern "[java"`},
		{
			name: "both forms", m: MatchConfig{Executables: []string{"java"}, Names: []string{"java"}, MatchType: MatchTypeStrict},
			wantErr: `include: executables and names cannot be used together; executables is deprecated: include: {match_type: strict, names: ["java"]}`,
		},
		{
			name: "glob refused under the gate", m: MatchConfig{Executables: []string{"java", "python3*"}}, disallowGlob: true,
			wantErr: `include.executables is no longer accepted (feature gate receiver.processcontext.disallowExecutablesGlob): use include: {match_type: regexp, names: ["^java$", "^python3[^/]*$"]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.m.validate("include", tt.disallowGlob)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// A glob and the regular expression it becomes select the same names.
func TestGlobToRegexp(t *testing.T) {
	names := []string{"", "java", "javac", "python3", "python3.12", "a.b", "a*b", "a?b", "[x]", "x-1", "é", "node-18", "a]b", `a\b`}
	for _, glob := range []string{"java", "python3*", "a.b", "a?b", `a\*b`, "[a-c]*", "[^a-c]*", "x-[0-9]", "é", "*-18", `[\]]`, "a]b", "*"} {
		re := regexp.MustCompile(globToRegexp(glob))
		for _, name := range names {
			want, err := filepath.Match(glob, name)
			require.NoError(t, err, glob)
			assert.Equal(t, want, re.MatchString(name), "glob %q (regexp %q), name %q", glob, re, name)
		}
	}
}
