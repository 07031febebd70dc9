package processctxprocessor

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/tracker"
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
	// Override lets published attributes replace attributes already on the
	// telemetry. Off by default: what the telemetry carries wins.
	Override bool `mapstructure:"override"`
	// Include, when not empty, lists the only published keys added.
	Include []string `mapstructure:"include"`
	// Exclude lists published keys never added.
	Exclude []string `mapstructure:"exclude"`
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
	}
}

// Validate implements confmap.Validator: it reports every problem, by key.
func (c *Config) Validate() error {
	var errs []error
	switch {
	case len(c.PIDAttributes) == 0:
		errs = append(errs, errors.New("pid_attributes must list at least one attribute key"))
	case len(c.PIDAttributes) > maxPIDAttributes:
		errs = append(errs, fmt.Errorf("pid_attributes lists %d keys, at most %d are allowed", len(c.PIDAttributes), maxPIDAttributes))
	}
	errs = append(errs, checkKeys("pid_attributes", c.PIDAttributes)...)
	errs = append(errs, checkKeys("include", c.Include)...)
	errs = append(errs, checkKeys("exclude", c.Exclude)...)
	for _, k := range c.Include {
		if slices.Contains(c.Exclude, k) {
			errs = append(errs, fmt.Errorf("key %q is in both include and exclude", k))
		}
	}
	switch d := c.LookupTimeout; {
	case d <= 0 || d > maxLookupTimeout:
		errs = append(errs, fmt.Errorf("lookup_timeout must be positive and at most %s, got %s", maxLookupTimeout, d))
	default:
		errs = append(errs, tracker.BelowFloor("lookup_timeout", d, floorLookupTimeout, maxLookupTimeout))
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
