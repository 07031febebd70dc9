package processctxextension

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Config is the extension's configuration: the tracker's.
type Config struct {
	// ScanSettings schedule the tracker.
	tracker.ScanSettings `mapstructure:",squash"`
	// RootPath is where the host's filesystem is mounted: "/" on the host,
	// e.g. "/hostfs" in a container with the host's procfs at /hostfs/proc.
	RootPath string `mapstructure:"root_path"`
	// MaxPayloadSize caps the payload a publisher may declare.
	MaxPayloadSize uint32 `mapstructure:"max_payload_size"`
	// GracePeriod is how long the context of an exited (or unpublished)
	// process keeps enriching late telemetry.
	GracePeriod time.Duration `mapstructure:"grace_period"`
	// RecheckInterval is how often a process without a context is read
	// again when telemetry names it.
	RecheckInterval time.Duration `mapstructure:"recheck_interval"`
	// ReportInterval paces the warnings about processes that cannot be read.
	ReportInterval time.Duration `mapstructure:"report_interval"`
}

func createDefaultConfig() *Config {
	d := tracker.DefaultConfig()
	return &Config{
		ScanSettings:    tracker.DefaultScanSettings(),
		RootPath:        "/",
		MaxPayloadSize:  otep.DefaultLimits().MaxPayloadSize,
		GracePeriod:     d.Retention,
		RecheckInterval: d.HintInterval,
		ReportInterval:  d.ReportInterval,
	}
}

// Validate implements confmap.Validator.
func (c *Config) Validate() error {
	// confmap validates the embedded ScanSettings.
	var errs []error
	if c.RootPath == "" || !filepath.IsAbs(c.RootPath) {
		errs = append(errs, fmt.Errorf("root_path must be an absolute path, got %q", c.RootPath))
	}
	if err := c.limits().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("max_payload_size: %w", err))
	}
	if c.GracePeriod < 0 {
		errs = append(errs, fmt.Errorf("grace_period must not be negative, got %s", c.GracePeriod))
	}
	if c.RecheckInterval <= 0 {
		errs = append(errs, fmt.Errorf("recheck_interval must be positive, got %s", c.RecheckInterval))
	}
	if c.ReportInterval <= 0 {
		errs = append(errs, fmt.Errorf("report_interval must be positive, got %s", c.ReportInterval))
	}
	return errors.Join(errs...)
}

func (c *Config) limits() otep.Limits {
	return otep.DefaultLimits().WithMaxPayloadSize(c.MaxPayloadSize)
}

func (c *Config) trackerConfig() tracker.Config {
	tc := tracker.DefaultConfig()
	c.Apply(&tc)
	tc.Retention = c.GracePeriod
	tc.HintInterval = c.RecheckInterval
	tc.ReportInterval = c.ReportInterval
	return tc
}
