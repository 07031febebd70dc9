package processctxprocessor

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/processctx/otelcol-processctx/internal/procmem"
)

// Defaults of the configuration (README.md explains each choice).
const (
	defaultTTL         = 10 * time.Second
	defaultNegativeTTL = 5 * time.Second
	defaultGracePeriod = 2 * time.Minute
	defaultMaxEntries  = 4096
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
	// Cache bounds and times the pid → context cache.
	Cache CacheConfig `mapstructure:"cache"`
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

// CacheConfig configures the pid → context cache.
type CacheConfig struct {
	// TTL is how long a cached context is used without looking at the
	// process; after it the entry is re-validated with the start time and
	// the header's change key (two small reads).
	TTL time.Duration `mapstructure:"ttl"`
	// NegativeTTL is how long a pid without a context (or that could not be
	// read) is remembered, so that a busy pid costs no maps scan per batch.
	NegativeTTL time.Duration `mapstructure:"negative_ttl"`
	// GracePeriod is how long the context of an exited (or unpublished)
	// process keeps enriching late telemetry.
	GracePeriod time.Duration `mapstructure:"grace_period"`
	// MaxEntries bounds the cached pids; the least recently used go first.
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
		MaxPayloadSize:  procmem.DefaultLimits().MaxPayloadSize,
		UnqualifiedPids: UnqualifiedVerify,
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

func (c *Config) limits() procmem.Limits {
	l := procmem.DefaultLimits()
	l.MaxPayloadSize = c.MaxPayloadSize
	return l
}
