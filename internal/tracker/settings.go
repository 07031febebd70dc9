package tracker

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/scraper/scraperhelper"
)

// ScanSettings are the configuration keys of a tracker's schedule, shared
// by the components that run one (squashed into their configurations).
// The schedule is a scraper controller's: collection_interval between
// scans, initial_delay before the first, timeout bounding one scan.
type ScanSettings struct {
	scraperhelper.ControllerConfig `mapstructure:",squash"`
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
	// Discovery is how the tracker learns of processes and publications:
	// "auto" (the kernel's events where the privileges allow, polling for
	// the rest), "events" (fail without them) or "poll".
	Discovery Discovery `mapstructure:"discovery"`
	// ReconcileInterval is how often, with events, scans read again what
	// the events tell (publishers' timestamps, maps of processes without a
	// context): a repair of anything they missed.
	ReconcileInterval time.Duration `mapstructure:"reconcile_interval"`
}

// DefaultScanSettings returns the defaults of DefaultConfig. Unlike a
// scraper's, the first scan runs at once (initial_delay 0) and a scan has
// no timeout: each read has its own deadline.
func DefaultScanSettings() ScanSettings {
	d := DefaultConfig()
	cc := scraperhelper.NewDefaultControllerConfig()
	cc.CollectionInterval = d.ScanInterval
	cc.InitialDelay = d.InitialDelay
	cc.Timeout = d.ScanTimeout
	return ScanSettings{
		ControllerConfig:  cc,
		RescanInterval:    d.RescanInterval,
		RescanMaxInterval: d.RescanMaxInterval,
		RescanBudget:      d.RescanBudget,
		ReadTimeout:       d.ReadTimeout,
		Discovery:         d.Discovery,
		ReconcileInterval: d.ReconcileInterval,
	}
}

// Validate reports every unusable key, by its configuration name; confmap
// validates the embedded ControllerConfig (collection_interval, timeout).
func (s ScanSettings) Validate() error {
	var errs []error
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
	switch s.Discovery {
	case DiscoveryAuto, DiscoveryEvents, DiscoveryPoll:
	default:
		errs = append(errs, fmt.Errorf("discovery must be %q, %q or %q, got %q", DiscoveryAuto, DiscoveryEvents, DiscoveryPoll, s.Discovery))
	}
	if s.ReconcileInterval <= 0 {
		errs = append(errs, fmt.Errorf("reconcile_interval must be positive, got %s", s.ReconcileInterval))
	}
	return errors.Join(errs...)
}

// Apply sets the schedule of cfg from the settings.
func (s ScanSettings) Apply(cfg *Config) {
	cfg.ScanInterval = s.CollectionInterval
	cfg.InitialDelay = max(s.InitialDelay, 0)
	cfg.ScanTimeout = s.Timeout
	cfg.RescanInterval = s.RescanInterval
	cfg.RescanMaxInterval = s.RescanMaxInterval
	cfg.RescanBudget = s.RescanBudget
	cfg.ReadTimeout = s.ReadTimeout
	cfg.Discovery = s.Discovery
	cfg.ReconcileInterval = s.ReconcileInterval
}
