package processctxprocessor

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Defaults of the configuration (README.md explains each choice).
const (
	defaultTTL           = 10 * time.Second
	defaultNegativeTTL   = 5 * time.Second
	defaultGracePeriod   = 2 * time.Minute
	defaultMaxEntries    = 4096
	defaultLookupTimeout = 50 * time.Millisecond
	// maxLookupTimeout bounds how long a batch may be held.
	maxLookupTimeout = 5 * time.Second
	// maxMaxEntries keeps a typo from turning the cache into a memory leak:
	// a host runs at most a few hundred thousand processes.
	maxMaxEntries = 1 << 20
	// maxPIDAttributes bounds the keys looked up for every record or sample.
	maxPIDAttributes = 8
)

// Config is the processor's configuration.
type Config struct {
	// RootPath is where the host's filesystem is mounted: "/" on the host,
	// e.g. "/hostfs" in a container with the host's procfs at /hostfs/proc.
	// Pids in telemetry are pids of that procfs.
	RootPath string `mapstructure:"root_path"`
	// PIDAttributes are the attribute keys holding the pid, tried in order,
	// on the resource first, then on each log record or profile sample.
	PIDAttributes []string `mapstructure:"pid_attributes"`
	// Override lets published attributes replace attributes already on the
	// telemetry. Off by default: what the telemetry carries wins.
	Override bool `mapstructure:"override"`
	// Include, when not empty, lists the only published keys added.
	Include []string `mapstructure:"include"`
	// Exclude lists published keys never added.
	Exclude []string `mapstructure:"exclude"`
	// Cache times what the processor's tracker knows of processes.
	Cache CacheConfig `mapstructure:"cache"`
	// LookupTimeout is the longest a batch waits for the reads of pids the
	// tracker does not know yet; what is not read by then passes through
	// unenriched (and is enriched from the next batch on).
	LookupTimeout time.Duration `mapstructure:"lookup_timeout"`
	// ReadTimeout is the deadline of the reads of one process: a process
	// whose reads do not return in time is quarantined.
	ReadTimeout time.Duration `mapstructure:"read_timeout"`
	// Tracker names the process_context extension whose tracker to use;
	// when unset, the only one the collector has, else the processor's own.
	Tracker *component.ID `mapstructure:"tracker"`
	// MaxPayloadSize caps the payload (bytes) a publisher may declare.
	MaxPayloadSize uint32 `mapstructure:"max_payload_size"`
	// UnqualifiedPids says how to treat a pid that comes without a
	// container.id: "verify" (default) takes it for a host pid unless the
	// telemetry's own service identity contradicts what that host process
	// published (an SDK in a container reports its container's pids);
	// "host" takes it for a host pid, for pipelines fed only by host agents.
	UnqualifiedPids string `mapstructure:"unqualified_pids"`
}

// Values of unqualified_pids.
const (
	UnqualifiedVerify = "verify"
	UnqualifiedHost   = "host"
)

// CacheConfig times what the processor's tracker knows of processes.
type CacheConfig struct {
	// TTL is how long a context is used before it is checked again (the
	// scan interval of the processor's own tracker: a timestamp read per
	// publisher).
	TTL time.Duration `mapstructure:"ttl"`
	// NegativeTTL is how long a pid without a context is taken to have none
	// before telemetry naming it makes its maps be read again.
	NegativeTTL time.Duration `mapstructure:"negative_ttl"`
	// GracePeriod is how long the context of an exited (or unpublished)
	// process keeps enriching late telemetry.
	GracePeriod time.Duration `mapstructure:"grace_period"`
	// MaxEntries is no longer used: the tracker knows every process of the
	// host, a few dozen bytes each. Kept so that configurations still load.
	MaxEntries int `mapstructure:"max_entries"`
}

func createDefaultConfig() *Config {
	return &Config{
		RootPath:      "/",
		PIDAttributes: []string{"process.pid"},
		Cache: CacheConfig{
			TTL:         defaultTTL,
			NegativeTTL: defaultNegativeTTL,
			GracePeriod: defaultGracePeriod,
			MaxEntries:  defaultMaxEntries,
		},
		MaxPayloadSize:  otep.DefaultLimits().MaxPayloadSize,
		UnqualifiedPids: UnqualifiedVerify,
		LookupTimeout:   defaultLookupTimeout,
		ReadTimeout:     tracker.DefaultConfig().ReadTimeout,
	}
}

// Validate implements confmap.Validator.
func (c *Config) Validate() error {
	var errs []error
	if c.RootPath == "" || !filepath.IsAbs(c.RootPath) {
		errs = append(errs, fmt.Errorf("root_path must be an absolute path, got %q", c.RootPath))
	}
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
	if c.Cache.TTL <= 0 {
		errs = append(errs, fmt.Errorf("cache.ttl must be positive, got %s", c.Cache.TTL))
	}
	if c.Cache.NegativeTTL <= 0 {
		errs = append(errs, fmt.Errorf("cache.negative_ttl must be positive, got %s", c.Cache.NegativeTTL))
	}
	if c.Cache.GracePeriod < 0 {
		errs = append(errs, fmt.Errorf("cache.grace_period must not be negative, got %s", c.Cache.GracePeriod))
	}
	if c.Cache.MaxEntries <= 0 || c.Cache.MaxEntries > maxMaxEntries {
		errs = append(errs, fmt.Errorf("cache.max_entries must be between 1 and %d, got %d", maxMaxEntries, c.Cache.MaxEntries))
	}
	if c.LookupTimeout <= 0 || c.LookupTimeout > maxLookupTimeout {
		errs = append(errs, fmt.Errorf("lookup_timeout must be positive and at most %s, got %s", maxLookupTimeout, c.LookupTimeout))
	}
	if c.ReadTimeout <= 0 {
		errs = append(errs, fmt.Errorf("read_timeout must be positive, got %s", c.ReadTimeout))
	}
	if c.UnqualifiedPids != UnqualifiedVerify && c.UnqualifiedPids != UnqualifiedHost {
		errs = append(errs, fmt.Errorf("unqualified_pids must be %q or %q, got %q", UnqualifiedVerify, UnqualifiedHost, c.UnqualifiedPids))
	}
	if err := c.limits().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("max_payload_size: %w", err))
	}
	return errors.Join(errs...)
}

// checkKeys reports empty and duplicate keys of a list.
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

func (c *Config) limits() otep.Limits {
	return otep.DefaultLimits().WithMaxPayloadSize(c.MaxPayloadSize)
}

// trackerConfig is the schedule of the processor's own tracker.
func (c *Config) trackerConfig() tracker.Config {
	tc := tracker.DefaultConfig()
	tc.ScanInterval = c.Cache.TTL
	tc.HintInterval = c.Cache.NegativeTTL
	tc.Retention = c.Cache.GracePeriod
	tc.ReadTimeout = c.ReadTimeout
	return tc
}
