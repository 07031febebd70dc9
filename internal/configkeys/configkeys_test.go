// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package configkeys

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type inner struct {
	Depth int `mapstructure:"depth"`
}

type sample struct {
	inner              `mapstructure:",squash"`
	Inner2             inner          `mapstructure:",squash"`
	CollectionInterval int            `mapstructure:"collection_interval"`
	RootPath           string         `mapstructure:"root_path"`
	Hidden             int            `mapstructure:"-"`
	Untagged           int            // a key by its lower-cased name
	Rest               map[string]any `mapstructure:",remain"`
}

func TestKeys(t *testing.T) {
	assert.Equal(t, []string{"depth", "collection_interval", "root_path", "untagged"}, Keys(&sample{}))
	assert.Nil(t, Keys(42))
}

func TestUnknown(t *testing.T) {
	require.NoError(t, Unknown(&sample{}, nil))
	err := Unknown(sample{}, map[string]any{"collection_intervl": 1, "zzz": true, "rootpath": "/"})
	require.Error(t, err)
	assert.Equal(t, `unknown key "collection_intervl" (did you mean "collection_interval"?)`+"\n"+
		`unknown key "rootpath" (did you mean "root_path"?)`+"\n"+
		`unknown key "zzz" (valid keys: collection_interval, depth, root_path, untagged)`, err.Error())
	assert.NotContains(t, err.Error(), "sample", "no Go type")
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"root_path", "rootpath", 1}} {
		assert.Equal(t, tt.want, distance(tt.a, tt.b), "%q %q", tt.a, tt.b)
	}
}

func TestUnknownElsewhere(t *testing.T) {
	err := Unknown(inner{}, map[string]any{"root_path": "/"}, Elsewhere{Name: "the sample", Config: sample{}})
	require.Error(t, err)
	assert.Equal(t, `unknown key "root_path": it is a key of the sample`, err.Error())
}
