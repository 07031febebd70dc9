// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package attrpolicy

// config.go owns the configuration block of a Policy (the processor's
// "attributes"): its keys, defaults, how a user's YAML is read into it
// (plain strings as strict patterns, unknown keys refused with the valid
// ones listed) and its validation.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/filter"

	"github.com/processctx/otelcol-processctx/internal/configkeys"
)

// Config configures a Policy: per family, whether a published value is
// copied and whether it replaces the telemetry's own; and key patterns.
type Config struct {
	Identity IdentityConfig `mapstructure:"identity"`
	Observed ObservedConfig `mapstructure:"observed"`
	Other    OtherConfig    `mapstructure:"other"`
	// Include, when not empty, are the patterns of the only keys added.
	Include []filter.Config `mapstructure:"include"`
	// Exclude are the patterns of keys never added.
	Exclude []filter.Config `mapstructure:"exclude"`
}

// IdentityConfig configures the identity family.
type IdentityConfig struct {
	// Override: a published value replaces the telemetry's own.
	Override bool `mapstructure:"override"`
}

// ObservedConfig configures the observed family. It has no override: the
// telemetry's own value always stays.
type ObservedConfig struct {
	// Copy: a published value is copied where neither the telemetry nor
	// the collector has one.
	Copy bool `mapstructure:"copy"`
}

// OtherConfig configures the other family.
type OtherConfig struct {
	// Copy: a published value is copied where the telemetry has none.
	Copy bool `mapstructure:"copy"`
	// Override: a published value replaces the telemetry's own.
	Override bool `mapstructure:"override"`
}

// DefaultConfig is the policy of the defaults: identity and other added
// where missing, observed never copied, no patterns.
func DefaultConfig() Config {
	return Config{Other: OtherConfig{Copy: true}}
}

// Strict returns one strict pattern per key.
func Strict(keys ...string) []filter.Config {
	out := make([]filter.Config, len(keys))
	for i, k := range keys {
		out[i] = filter.Config{Strict: k}
	}
	return out
}

// The keys of the block, by level, as the user writes them.
var (
	blockKeys    = []string{"identity", "observed", "other", "include", "exclude"}
	familyKeys   = map[string][]string{"identity": {"override"}, "observed": {"copy"}, "other": {"copy", "override"}}
	patternKeys  = []string{"strict", "regexp"}
	observedNote = "attributes.observed.override is not a setting: the telemetry's own host.*, os.*, cloud.*, container.*, " +
		"k8s.* and process.* values always stay, and the collector's own observation wins over a publisher's; " +
		"attributes.observed.copy says whether a published value is copied where neither has one"
)

// plainConfig is Config without its Unmarshal, for decoding.
type plainConfig Config

// Unmarshal implements confmap.Unmarshaler: it refuses unknown keys,
// listing the valid ones (the collector's own message does not), and
// reads a plain string among include / exclude as a strict pattern.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	raw := conf.ToStringMap()
	var errs []error
	for _, k := range sortedKeys(raw) {
		if !slices.Contains(blockKeys, k) {
			errs = append(errs, unknownKey("attributes", k, blockKeys))
			continue
		}
		if valid, family := familyKeys[k]; family {
			errs = append(errs, checkFamily(k, raw[k], valid))
		}
	}
	for _, k := range []string{"include", "exclude"} {
		if v, ok := raw[k]; ok {
			patterns, err := normalizePatterns("attributes."+k, v)
			errs = append(errs, err)
			raw[k] = patterns
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return confmap.NewFromStringMap(raw).Unmarshal((*plainConfig)(c))
}

// checkFamily checks the keys of the family block name.
func checkFamily(name string, v any, valid []string) error {
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil
		}
		return fmt.Errorf("attributes.%s must be a map of %s, got %v", name, strings.Join(valid, ", "), v)
	}
	var errs []error
	for _, k := range sortedKeys(m) {
		switch {
		case slices.Contains(valid, k):
		case name == "observed" && k == "override":
			errs = append(errs, errors.New(observedNote))
		default:
			errs = append(errs, unknownKey("attributes."+name, k, valid))
		}
	}
	return errors.Join(errs...)
}

// normalizePatterns returns the entries of a pattern list, each a map of
// strict or regexp: a plain string is a strict key.
func normalizePatterns(name string, v any) ([]any, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a list of keys or of {strict: key} / {regexp: pattern}, got %v", name, v)
	}
	out := make([]any, len(list))
	var errs []error
	for i, e := range list {
		switch e := e.(type) {
		case string:
			out[i] = map[string]any{"strict": e}
		case map[string]any:
			for _, k := range sortedKeys(e) {
				if !slices.Contains(patternKeys, k) {
					errs = append(errs, unknownKey(fmt.Sprintf("%s[%d]", name, i), k, patternKeys))
				}
			}
			out[i] = e
		default:
			errs = append(errs, fmt.Errorf("%s[%d] must be a key or {strict: key} / {regexp: pattern}, got %v", name, i, e))
		}
	}
	return out, errors.Join(errs...)
}

// unknownKey is the error of a key that where does not have.
func unknownKey(where, key string, valid []string) error {
	return fmt.Errorf("%s: %v", where, configkeys.UnknownKey(key, valid)) //nolint:errorlint // one message: decoders flatten wrapped errors to their leaves
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Validate implements confmap.Validator: the repeated patterns, and keys
// both included and excluded (confmap prefixes the messages with
// "attributes: "). confmap validates each pattern itself
// (filter.Config.Validate: strict or regexp, not both, a regexp that
// compiles), naming it by its position (attributes::include::1).
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, repeatedPatterns("include", c.Include)...)
	errs = append(errs, repeatedPatterns("exclude", c.Exclude)...)
	for _, in := range c.Include {
		if in.Strict != "" && slices.ContainsFunc(c.Exclude, func(ex filter.Config) bool { return ex.Strict == in.Strict }) {
			errs = append(errs, fmt.Errorf("key %q is in both include and exclude", in.Strict))
		}
	}
	return errors.Join(errs...)
}

// repeatedPatterns reports the patterns a list has twice.
func repeatedPatterns(name string, patterns []filter.Config) []error {
	var errs []error
	for i, p := range patterns {
		if slices.ContainsFunc(patterns[:i], func(q filter.Config) bool { return q.Strict == p.Strict && q.Regex == p.Regex }) {
			errs = append(errs, fmt.Errorf("%s lists %s twice", name, describe(p)))
		}
	}
	return errs
}

// describe names a pattern in messages.
func describe(p filter.Config) string {
	if p.Regex != "" {
		return fmt.Sprintf("{regexp: %q}", p.Regex)
	}
	return fmt.Sprintf("%q", p.Strict)
}
