package processctxreceiver

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Entity event formats.
const (
	// FormatLegacy: otel.entity.* attributes, as contrib's
	// pkg/experimentalmetricmetadata emits them by default.
	FormatLegacy = "legacy"
	// FormatSpec: EventName entity.state / entity.delete with entity.id,
	// entity.description and entity.report.interval (seconds).
	FormatSpec = "spec"
)

// Config is the receiver's configuration.
type Config struct {
	// ScanSettings schedule the receiver's own tracker; with a tracker
	// extension, the extension's apply.
	tracker.ScanSettings `mapstructure:",squash"`
	// ReportInterval is how often every live entity is reported again.
	ReportInterval time.Duration `mapstructure:"report_interval"`
	// EntityEventFormat is "legacy" (default) or "spec".
	EntityEventFormat string `mapstructure:"entity_event_format"`
	// RootPath is where the host's filesystem is mounted: "/" on the host,
	// e.g. "/hostfs" in a container with the host's procfs at /hostfs/proc.
	RootPath string `mapstructure:"root_path"`
	// MaxPayloadSize caps the payload a publisher may declare.
	MaxPayloadSize uint32 `mapstructure:"max_payload_size"`
	// Tracker names the process_context extension whose tracker to use;
	// when unset, the only one the collector has, else the receiver's own.
	Tracker *component.ID `mapstructure:"tracker"`
	// Include, when it lists executables, limits the entity events to them.
	Include MatchConfig `mapstructure:"include"`
	// Exclude drops the entity events of processes whose executable matches.
	Exclude MatchConfig `mapstructure:"exclude"`
}

// MatchConfig selects processes by executable name.
type MatchConfig struct {
	// Executables are process.executable.name values or shell patterns
	// (filepath.Match syntax), e.g. "java" or "python3*".
	Executables []string `mapstructure:"executables"`
}

func createDefaultConfig() *Config {
	return &Config{
		ScanSettings:      tracker.DefaultScanSettings(),
		ReportInterval:    5 * time.Minute,
		EntityEventFormat: FormatLegacy,
		RootPath:          "/",
		MaxPayloadSize:    otep.DefaultLimits().MaxPayloadSize,
	}
}

// Validate implements confmap.Validator.
func (c *Config) Validate() error {
	// confmap validates the embedded ScanSettings.
	var errs []error
	if c.ReportInterval <= 0 {
		errs = append(errs, fmt.Errorf("report_interval must be positive, got %s", c.ReportInterval))
	}
	if c.EntityEventFormat != FormatLegacy && c.EntityEventFormat != FormatSpec {
		errs = append(errs, fmt.Errorf("entity_event_format must be %q or %q, got %q", FormatLegacy, FormatSpec, c.EntityEventFormat))
	}
	if c.RootPath == "" || !filepath.IsAbs(c.RootPath) {
		errs = append(errs, fmt.Errorf("root_path must be an absolute path, got %q", c.RootPath))
	}
	limits := c.limits()
	if err := limits.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("max_payload_size: %w", err))
	}
	for _, m := range []struct {
		name string
		cfg  MatchConfig
	}{{"include", c.Include}, {"exclude", c.Exclude}} {
		for _, p := range m.cfg.Executables {
			if _, err := filepath.Match(p, ""); err != nil || p == "" {
				errs = append(errs, fmt.Errorf("%s.executables: bad pattern %q", m.name, p))
			}
		}
	}
	return errors.Join(errs...)
}

func (c *Config) limits() otep.Limits {
	return otep.DefaultLimits().WithMaxPayloadSize(c.MaxPayloadSize)
}

// trackerConfig is the schedule of the receiver's tracker.
func (c *Config) trackerConfig() tracker.Config {
	tc := tracker.DefaultConfig()
	c.Apply(&tc)
	tc.ReportInterval = c.ReportInterval
	return tc
}

// selects reports whether a process with this executable name is watched.
func (c *Config) selects(executable string) bool {
	if len(c.Include.Executables) > 0 && !matchAny(c.Include.Executables, executable) {
		return false
	}
	return !matchAny(c.Exclude.Executables, executable)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	return false
}
