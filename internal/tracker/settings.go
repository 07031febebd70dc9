package tracker

import (
	"errors"
	"fmt"
	"time"
)

// ScanSettings are the configuration keys of a tracker's schedule, shared
// by the components that run one (squashed into their configurations).
type ScanSettings struct {
	// CollectionInterval is the time between scans of the host.
	CollectionInterval time.Duration `mapstructure:"collection_interval"`
	// RescanInterval is how long a process without a context waits before
	// its maps are read again (SDKs often publish seconds after start).
	RescanInterval time.Duration `mapstructure:"rescan_interval"`
	// RescanMaxInterval caps the wait between re-reads, which doubles after
	// every re-read that found no context.
	RescanMaxInterval time.Duration `mapstructure:"rescan_max_interval"`
	// RescanBudget caps the maps files re-read for late publishers in one
	// scan; the longest-waiting processes go first.
	RescanBudget int `mapstructure:"rescan_budget"`
	// ReadTimeout is the deadline of the reads of one process: a process
	// whose reads do not return in time is quarantined.
	ReadTimeout time.Duration `mapstructure:"read_timeout"`
}

// DefaultScanSettings returns the defaults of DefaultConfig.
func DefaultScanSettings() ScanSettings {
	d := DefaultConfig()
	return ScanSettings{
		CollectionInterval: d.ScanInterval,
		RescanInterval:     d.RescanInterval,
		RescanMaxInterval:  d.RescanMaxInterval,
		RescanBudget:       d.RescanBudget,
		ReadTimeout:        d.ReadTimeout,
	}
}

// Validate reports every unusable key, by its configuration name.
func (s ScanSettings) Validate() error {
	var errs []error
	if s.CollectionInterval <= 0 {
		errs = append(errs, fmt.Errorf("collection_interval must be positive, got %s", s.CollectionInterval))
	}
	if s.RescanInterval <= 0 {
		errs = append(errs, fmt.Errorf("rescan_interval must be positive, got %s", s.RescanInterval))
	}
	if s.RescanMaxInterval < s.RescanInterval {
		errs = append(errs, fmt.Errorf("rescan_max_interval (%s) must not be less than rescan_interval (%s)", s.RescanMaxInterval, s.RescanInterval))
	}
	if s.RescanBudget <= 0 {
		errs = append(errs, fmt.Errorf("rescan_budget must be positive, got %d", s.RescanBudget))
	}
	if s.ReadTimeout <= 0 {
		errs = append(errs, fmt.Errorf("read_timeout must be positive, got %s", s.ReadTimeout))
	}
	return errors.Join(errs...)
}

// Apply sets the schedule of cfg from the settings.
func (s ScanSettings) Apply(cfg *Config) {
	cfg.ScanInterval = s.CollectionInterval
	cfg.RescanInterval = s.RescanInterval
	cfg.RescanMaxInterval = s.RescanMaxInterval
	cfg.RescanBudget = s.RescanBudget
	cfg.ReadTimeout = s.ReadTimeout
}
