package tracker

import (
	"errors"
	"fmt"
	"time"
)

// Config schedules a tracker's reads. Zero values take the defaults of
// DefaultConfig when passed through WithDefaults.
type Config struct {
	// ScanInterval is the time between scans of the host's processes.
	ScanInterval time.Duration
	// InitialDelay is the wait before the first scan.
	InitialDelay time.Duration
	// ScanTimeout, when positive, bounds a scan: reads still out then are
	// applied when they come back, outside the scan (their processes are
	// swept at the next scan).
	ScanTimeout time.Duration
	// RescanInterval is how long a process without a context waits before
	// its maps are read again (SDKs often publish seconds after start).
	RescanInterval time.Duration
	// RescanMaxInterval caps the wait between re-reads, which doubles after
	// rescanFastChecks re-reads that found nothing.
	RescanMaxInterval time.Duration
	// RescanBudget caps the maps files re-read for late publishers in one
	// scan; the longest-waiting processes go first.
	RescanBudget int
	// HintInterval is how often a process without a context is read again
	// when telemetry names it (Hint): at most once per interval.
	HintInterval time.Duration
	// Retention is how long an ended publication (the process exited,
	// unpublished or published something invalid) stays in the snapshot,
	// so that late telemetry is still enriched.
	Retention time.Duration
	// ReadTimeout is the deadline of the reads of one process (maps file,
	// header and payload, identity files).
	ReadTimeout time.Duration
	// ReportInterval paces the warnings about processes that cannot be
	// read (permission, stalled reads): at most one of each per interval.
	ReportInterval time.Duration
	// Readers is the number of goroutines reading processes.
	Readers int
	// QuarantineBackoff is the first wait before a quarantined process is
	// read again; it doubles with every stalled read, up to 20 times as
	// long.
	QuarantineBackoff time.Duration
	// Discovery says which event sources Open starts: DiscoveryAuto (those
	// the privileges and the kernel allow), DiscoveryEvents (all, or fail)
	// or DiscoveryPoll (none).
	Discovery Discovery
	// ReconcileInterval is how often, while process and publication events
	// both come, a scan reads every publisher's timestamp and a process
	// without a context has its maps read again: a slow repair of what
	// events could have missed.
	ReconcileInterval time.Duration
	// MaxStalled bounds the reader goroutines left blocked by processes
	// that never answer. Once reached, no reader is replaced, and every
	// memory read goes through /proc/<pid>/mem, which fails at once where
	// process_vm_readv waits.
	MaxStalled int
}

// DefaultConfig returns the defaults of every setting.
func DefaultConfig() Config {
	return Config{
		ScanInterval:      10 * time.Second,
		RescanInterval:    30 * time.Second,
		RescanMaxInterval: 10 * time.Minute,
		RescanBudget:      256,
		HintInterval:      5 * time.Second,
		Retention:         2 * time.Minute,
		ReadTimeout:       time.Second,
		ReportInterval:    5 * time.Minute,
		Readers:           2,
		QuarantineBackoff: 30 * time.Second,
		MaxStalled:        32,
		Discovery:         DiscoveryAuto,
		ReconcileInterval: time.Hour,
	}
}

// Discovery is how a tracker learns of processes and publications.
type Discovery string

// Discovery modes.
const (
	// DiscoveryAuto: the event sources the privileges and the kernel
	// allow, polling for the rest.
	DiscoveryAuto Discovery = "auto"
	// DiscoveryEvents: every event source; Open fails without one.
	DiscoveryEvents Discovery = "events"
	// DiscoveryPoll: scans only.
	DiscoveryPoll Discovery = "poll"
)

// Validate reports every setting that is not usable.
func (c Config) Validate() error {
	var errs []error
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", name, d))
		}
	}
	positive("scan interval", c.ScanInterval)
	positive("rescan interval", c.RescanInterval)
	positive("hint interval", c.HintInterval)
	positive("read timeout", c.ReadTimeout)
	positive("report interval", c.ReportInterval)
	positive("quarantine backoff", c.QuarantineBackoff)
	positive("reconcile interval", c.ReconcileInterval)
	switch c.Discovery {
	case DiscoveryAuto, DiscoveryEvents, DiscoveryPoll, "":
	default:
		errs = append(errs, fmt.Errorf("discovery must be %q, %q or %q, got %q", DiscoveryAuto, DiscoveryEvents, DiscoveryPoll, c.Discovery))
	}
	if c.InitialDelay < 0 {
		errs = append(errs, fmt.Errorf("initial delay must not be negative, got %s", c.InitialDelay))
	}
	if c.ScanTimeout < 0 {
		errs = append(errs, fmt.Errorf("scan timeout must not be negative, got %s", c.ScanTimeout))
	}
	if c.RescanMaxInterval < c.RescanInterval {
		errs = append(errs, fmt.Errorf("rescan max interval (%s) must not be less than rescan interval (%s)", c.RescanMaxInterval, c.RescanInterval))
	}
	if c.RescanBudget <= 0 {
		errs = append(errs, fmt.Errorf("rescan budget must be positive, got %d", c.RescanBudget))
	}
	if c.Retention < 0 {
		errs = append(errs, fmt.Errorf("retention must not be negative, got %s", c.Retention))
	}
	if c.Readers <= 0 || c.Readers > 64 {
		errs = append(errs, fmt.Errorf("readers must be between 1 and 64, got %d", c.Readers))
	}
	if c.MaxStalled <= 0 {
		errs = append(errs, fmt.Errorf("max stalled must be positive, got %d", c.MaxStalled))
	}
	return errors.Join(errs...)
}
