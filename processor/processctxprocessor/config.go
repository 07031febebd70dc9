// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/processctx/otelcol-processctx/internal/attrpolicy"
	"github.com/processctx/otelcol-processctx/internal/configkeys"
	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
)

// Defaults and bounds of the configuration (README.md explains each).
const (
	defaultLookupTimeout = 50 * time.Millisecond
	// floorLookupTimeout: a batch may wait very little, but not
	// nanoseconds (YAML's "lookup_timeout: 50" is 50ns).
	floorLookupTimeout = time.Millisecond
	// maxLookupTimeout bounds how long a batch may be held.
	maxLookupTimeout = 5 * time.Second
	// maxPIDAttributes bounds the keys looked up for every record or sample.
	maxPIDAttributes = 8
)

// Config is the processor's configuration. How processes are read and for
// how long their contexts are kept is the process_context extension's
// configuration: its tracker is the one the processor uses.
type Config struct {
	// PIDAttributes are the attribute keys holding the pid, the best
	// first, on the resource first, then on each log record or profile
	// sample.
	PIDAttributes []string `mapstructure:"pid_attributes"`
	// Attributes says what a publication may add to telemetry, by family
	// of keys (internal/attrpolicy): identity added where missing (and
	// replacing with identity.override), observed never copied (the
	// telemetry's and the collector's own values win), other added where
	// missing; include / exclude key patterns narrow it.
	Attributes attrpolicy.Config `mapstructure:"attributes"`
	// LookupTimeout is the longest a batch waits for the reads of pids the
	// tracker does not know yet; what is not read by then passes through
	// unenriched (and is enriched from the next batch on).
	LookupTimeout time.Duration `mapstructure:"lookup_timeout"`
	// Tracker names the process_context extension whose tracker to use;
	// when unset, the only one the collector has.
	Tracker *component.ID `mapstructure:"tracker"`
	// UnqualifiedPids says how to treat a pid that comes without a
	// container.id: "verify" (default) takes it for a host pid unless the
	// telemetry's own service identity contradicts what that host process
	// published (an SDK in a container reports its container's pids);
	// "host" takes it for a host pid, for pipelines fed only by host agents.
	UnqualifiedPids string `mapstructure:"unqualified_pids"`
	// EntityRefs makes every resource the processor enriches reference the
	// entities its added keys describe (the process, and the service,
	// service instance and service namespace), so that backends that
	// follow entities need not guess them from attribute names. On by
	// default; off, only attributes are added.
	EntityRefs bool `mapstructure:"entity_refs"`
	// Leftovers holds the keys of the configuration that are none of the
	// above (typos, the extension's keys) and the values of the wrong
	// type: Validate names them.
	configkeys.Leftovers `mapstructure:",squash"`

	// deprecated are the keys of an older form the configuration used
	// (override, include, exclude), for a warning at start.
	deprecated []string
}

// Values of unqualified_pids.
const (
	UnqualifiedVerify = "verify"
	UnqualifiedHost   = "host"
)

func createDefaultConfig() *Config {
	return &Config{
		PIDAttributes:   []string{entitymodel.ProcessPIDKey},
		UnqualifiedPids: UnqualifiedVerify,
		LookupTimeout:   defaultLookupTimeout,
		EntityRefs:      true,
		Attributes:      attrpolicy.DefaultConfig(),
	}
}

// Validate implements confmap.Validator: it reports every problem, by key.
func (c *Config) Validate() error {
	errs := []error{c.Err(c, configkeys.Elsewhere{Name: "the process_context extension", Config: sharedtracker.Settings{}})}
	switch {
	case len(c.PIDAttributes) == 0:
		errs = append(errs, errors.New("pid_attributes must list at least one attribute key"))
	case len(c.PIDAttributes) > maxPIDAttributes:
		errs = append(errs, fmt.Errorf("pid_attributes lists %d keys, at most %d are allowed", len(c.PIDAttributes), maxPIDAttributes))
	}
	errs = append(errs, checkKeys("pid_attributes", c.PIDAttributes)...)
	switch d := c.LookupTimeout; {
	case d <= 0 || d > maxLookupTimeout:
		errs = append(errs, fmt.Errorf("lookup_timeout must be positive and at most %s, got %s", maxLookupTimeout, d))
	default:
		errs = append(errs, configkeys.BelowFloor("lookup_timeout", d, floorLookupTimeout, maxLookupTimeout))
	}
	if c.UnqualifiedPids != UnqualifiedVerify && c.UnqualifiedPids != UnqualifiedHost {
		errs = append(errs, fmt.Errorf("unqualified_pids must be %q or %q, got %q", UnqualifiedVerify, UnqualifiedHost, c.UnqualifiedPids))
	}
	return errors.Join(errs...)
}

// checkKeys reports the empty and duplicate keys of the list under key name.
func checkKeys(name string, keys []string) []error {
	var errs []error
	for i, k := range keys {
		if k == "" {
			errs = append(errs, fmt.Errorf("%s[%d] is empty", name, i))
			continue
		}
		if slices.Contains(keys[:i], k) {
			errs = append(errs, fmt.Errorf("%s lists %q twice", name, k))
		}
	}
	return errs
}

// renamed are the keys of the configuration before the attributes block,
// and where each went: a configuration that uses them still works.
var renamed = [...]struct{ old, new, note string }{
	{"override", "attributes::identity::override", " (which now decides for the identity family only)"},
	{"include", "attributes::include", ""},
	{"exclude", "attributes::exclude", ""},
}

// plainConfig is Config without its Unmarshal, for decoding.
type plainConfig Config

// Unmarshal implements confmap.Unmarshaler: it reads the keys of the
// older form (override, include, exclude) as the attributes block's:
// override as attributes.identity.override (it now decides for the
// identity family only), include / exclude, lists of keys, as strict
// patterns of attributes.include / exclude. Setting both forms of one key
// is refused. Unknown keys and values of the wrong type are Validate's
// to say, by their keys, never a Go type (configkeys).
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	c.deprecated = nil
	var errs []error
	for _, r := range renamed {
		if !conf.IsSet(r.old) {
			continue
		}
		newName := strings.ReplaceAll(r.new, confmap.KeyDelimiter, ".")
		if conf.IsSet(r.new) {
			errs = append(errs, fmt.Errorf("%s and %s are both set: %s is the older name of %s%s; keep one",
				r.old, newName, r.old, newName, r.note))
			continue
		}
		c.deprecated = append(c.deprecated, r.old+" (now "+newName+")")
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, r := range renamed {
		if !conf.IsSet(r.old) {
			continue
		}
		moved := map[string]any{}
		cur := moved
		parts := strings.Split(r.new, confmap.KeyDelimiter)
		for _, p := range parts[:len(parts)-1] {
			next := map[string]any{}
			cur[p] = next
			cur = next
		}
		cur[parts[len(parts)-1]] = conf.Get(r.old)
		conf.Delete(r.old)
		if err := conf.Merge(confmap.NewFromStringMap(moved)); err != nil {
			return fmt.Errorf("move %s to %s: %w", r.old, r.new, err)
		}
	}
	return configkeys.Decode(conf, (*plainConfig)(c), &c.Leftovers)
}
