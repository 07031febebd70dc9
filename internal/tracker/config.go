// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/processctx/otelcol-processctx/internal/configkeys"
	"github.com/processctx/otelcol-processctx/internal/otep"
)

// Config is a tracker's configuration. The settings before Readers are
// the process_context extension's keys (sharedtracker.Settings), by the
// same names: one vocabulary from the YAML to the loop; what each means to
// a user is docs/configuration.md's. How the host is opened
// (hostopen.Config) is no part of it.
type Config struct {
	// MaxPayloadSize caps the payload a publisher may declare, and each of
	// the two SDK variables kept from an environment.
	MaxPayloadSize     uint32
	Sources            []Source      // where identities come from
	CollectionInterval time.Duration // between scans of the host
	InitialDelay       time.Duration // before the first scan
	// Timeout, when positive, bounds a scan: reads still out then are
	// applied when they come back, outside the scan.
	Timeout time.Duration
	// RescanInterval is the wait before a process without a context has
	// its maps read again; it doubles after rescanFastChecks re-reads that
	// found nothing, up to RescanMaxInterval. RescanBudget caps those
	// re-reads per scan, the longest-waiting first.
	RescanInterval    time.Duration
	RescanMaxInterval time.Duration
	RescanBudget      int
	// ReadTimeout is the deadline of the reads of one process: one whose
	// reads do not return in time is quarantined.
	ReadTimeout time.Duration
	// ReconcileInterval is how often, while process and publication events
	// both come, a scan reads every publisher's timestamp and rescans the
	// processes without a context: a repair of what events could miss.
	ReconcileInterval time.Duration
	// GracePeriod is how long an ended publication stays in snapshots.
	GracePeriod time.Duration
	// RecheckInterval is how long, while no publication events come, a
	// process read without a context is known to have none (then a probe
	// reads it again); also how often ScanSoon may start a scan.
	RecheckInterval time.Duration
	// WarningInterval paces the warnings about processes that cannot be
	// read: at most one of each kind per interval.
	WarningInterval time.Duration

	Readers int // goroutines reading processes
	// QuarantineBackoff is the first wait before a quarantined process is
	// read again, doubling with every stalled read up to quarantineGrowth
	// times as long.
	QuarantineBackoff time.Duration
	// MaxStalled bounds the readers left blocked by processes that never
	// answer; once reached, none is replaced and all memory is read
	// through /proc/<pid>/mem, which fails at once where
	// process_vm_readv waits.
	MaxStalled int
}

// DefaultConfig returns the defaults of every setting.
func DefaultConfig() Config {
	return Config{
		MaxPayloadSize:     otep.DefaultLimits().MaxPayloadSize,
		Sources:            []Source{SourceContext, SourceEnvironment},
		CollectionInterval: 10 * time.Second,
		RescanInterval:     30 * time.Second,
		RescanMaxInterval:  10 * time.Minute,
		RescanBudget:       256,
		ReadTimeout:        time.Second,
		ReconcileInterval:  time.Hour,
		GracePeriod:        2 * time.Minute,
		RecheckInterval:    5 * time.Second,
		WarningInterval:    5 * time.Minute,
		Readers:            2,
		QuarantineBackoff:  30 * time.Second,
		MaxStalled:         32,
	}
}

// Floors of the duration keys, and why each: docs/configuration.md's
// table. Validate refuses a shorter one and says that a number without a
// unit is nanoseconds (YAML's "collection_interval: 5" is 5ns, and once
// made the tracker scan without pause); keys where 0 means "off" still
// take 0.
const (
	floorCollectionInterval = 100 * time.Millisecond
	floorInitialDelay       = time.Millisecond
	floorTimeout            = 10 * time.Millisecond // shorter than the reads of one process
	floorReadTimeout        = 10 * time.Millisecond
	floorRescanInterval     = 100 * time.Millisecond // rescan_max_interval's too
	floorRecheckInterval    = 100 * time.Millisecond
	floorReconcileInterval  = time.Second
	floorGracePeriod        = time.Second
	floorWarningInterval    = time.Second
)

// Validate reports every setting that is not usable, by its key
// (hostopen checks how the host is opened).
func (c *Config) Validate() error {
	var errs []error
	positive := func(key string, d, least time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", key, d))
		}
		errs = append(errs, configkeys.BelowFloor(key, d, least, 0))
	}
	notNegative := func(key string, d, least time.Duration) {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %s", key, d))
		}
		errs = append(errs, configkeys.BelowFloor(key, d, least, 0))
	}
	if err := c.Limits().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("max_payload_size: %w", err))
	}
	if len(c.Sources) == 0 {
		errs = append(errs, fmt.Errorf("sources must list %q, %q or both", SourceContext, SourceEnvironment))
	}
	for i, src := range c.Sources {
		if slices.Contains(c.Sources[:i], src) {
			errs = append(errs, fmt.Errorf("sources lists %q twice", src))
		}
	}
	positive("collection_interval", c.CollectionInterval, floorCollectionInterval)
	notNegative("initial_delay", c.InitialDelay, floorInitialDelay) // 0: the first scan at once
	notNegative("timeout", c.Timeout, floorTimeout)                 // 0: scans unbounded
	positive("rescan_interval", c.RescanInterval, floorRescanInterval)
	if c.RescanMaxInterval < c.RescanInterval {
		errs = append(errs, fmt.Errorf("rescan_max_interval (%s) must not be less than rescan_interval (%s)", c.RescanMaxInterval, c.RescanInterval))
	}
	errs = append(errs, configkeys.BelowFloor("rescan_max_interval", c.RescanMaxInterval, floorRescanInterval, 0))
	if c.RescanBudget <= 0 {
		errs = append(errs, fmt.Errorf("rescan_budget must be positive, got %d", c.RescanBudget))
	}
	positive("read_timeout", c.ReadTimeout, floorReadTimeout)
	positive("reconcile_interval", c.ReconcileInterval, floorReconcileInterval)
	notNegative("grace_period", c.GracePeriod, floorGracePeriod) // 0: ended publications leave at once
	positive("recheck_interval", c.RecheckInterval, floorRecheckInterval)
	positive("warning_interval", c.WarningInterval, floorWarningInterval)
	if c.Readers <= 0 || c.Readers > 64 {
		errs = append(errs, fmt.Errorf("readers must be between 1 and 64, got %d", c.Readers))
	}
	positive("quarantine backoff", c.QuarantineBackoff, 0)
	if c.MaxStalled <= 0 {
		errs = append(errs, fmt.Errorf("max stalled readers must be positive, got %d", c.MaxStalled))
	}
	return errors.Join(errs...)
}

// uses reports whether identities come from s.
func (c *Config) uses(s Source) bool { return slices.Contains(c.Sources, s) }

// Limits returns the bounds of a context that MaxPayloadSize sets.
func (c *Config) Limits() otep.Limits {
	return otep.DefaultLimits().WithMaxPayloadSize(c.MaxPayloadSize)
}
