// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/processctx/otelcol-processctx/internal/configkeys"
	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubevents"
)

// Config is a tracker's configuration. The settings before Readers are
// the process_context extension's keys (sharedtracker.Settings), by the
// same names: one vocabulary from the YAML to the loop.
type Config struct {
	// RootPath is where the host's filesystem is mounted: "/" on the host,
	// e.g. "/hostfs" in a container with the host's procfs at /hostfs/proc.
	RootPath string
	// MaxPayloadSize caps the payload a publisher may declare, and each of
	// the two SDK variables kept from an environment.
	MaxPayloadSize uint32
	// Sources says where identities come from: SourceContext (published
	// contexts), SourceEnvironment (OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES of processes that publish none), or both.
	Sources []Source
	// Discovery says which event sources hostopen.Open starts:
	// DiscoveryAuto (those the privileges and the kernel allow),
	// DiscoveryEvents (all, or fail) or DiscoveryPoll (none).
	Discovery Discovery
	// PublicationEvents chooses the eBPF source of publication events by
	// what it costs the host's other processes: "auto" (fexit where the
	// kernel allows it, else none), "fexit", "syscall_tracepoints" and
	// "raw_sys_exit" (each slows every syscall of the host: never chosen
	// by auto) or "none". Not used with discovery: poll.
	PublicationEvents string
	// CollectionInterval is the time between scans of the host.
	CollectionInterval time.Duration
	// InitialDelay is the wait before the first scan.
	InitialDelay time.Duration
	// Timeout, when positive, bounds a scan: reads still out then are
	// applied when they come back, outside the scan.
	Timeout time.Duration
	// RescanInterval is how long a process without a context waits before
	// its maps are read again (SDKs often publish seconds after start).
	RescanInterval time.Duration
	// RescanMaxInterval caps the wait between re-reads, which doubles after
	// rescanFastChecks re-reads that found nothing.
	RescanMaxInterval time.Duration
	// RescanBudget caps the maps files re-read for late publishers in one
	// scan; the longest-waiting processes go first.
	RescanBudget int
	// ReadTimeout is the deadline of the reads of one process (maps file,
	// header and payload, identity files): a process whose reads do not
	// return in time is quarantined.
	ReadTimeout time.Duration
	// ReconcileInterval is how often, while process and publication events
	// both come, a scan reads every publisher's timestamp and a process
	// without a context has its maps read again: a slow repair of what
	// events could have missed.
	ReconcileInterval time.Duration
	// GracePeriod is how long an ended publication (the process exited,
	// unpublished or published something unreadable) stays in snapshots,
	// so that late telemetry is still enriched.
	GracePeriod time.Duration
	// RecheckInterval is how long a process read without a context is
	// known to have none while no publication events come: then telemetry
	// naming it has it read again (Probe), at most this often. It is also
	// how often ScanSoon may start a scan.
	RecheckInterval time.Duration
	// WarningInterval paces the warnings about processes that cannot be
	// read (permission, stalled reads): at most one of each per interval.
	WarningInterval time.Duration

	// Readers is the number of goroutines reading processes.
	Readers int
	// QuarantineBackoff is the first wait before a quarantined process is
	// read again; it doubles with every stalled read, up to
	// quarantineGrowth times as long.
	QuarantineBackoff time.Duration
	// MaxStalled bounds the reader goroutines left blocked by processes
	// that never answer. Once reached, no reader is replaced, and every
	// memory read goes through /proc/<pid>/mem, which fails at once where
	// process_vm_readv waits.
	MaxStalled int
	// ReaderName is what the explanations of unreadable processes call the
	// tracker's process ("ctxdump (uid 1000) lacks CAP_SYS_PTRACE"); empty:
	// "the collector". hostopen.Open gives it to the procfs it opens. Not
	// a key: commands built on the tracker set it.
	ReaderName string
}

// DefaultConfig returns the defaults of every setting.
func DefaultConfig() Config {
	return Config{
		RootPath:           "/",
		MaxPayloadSize:     otep.DefaultLimits().MaxPayloadSize,
		Sources:            []Source{SourceContext, SourceEnvironment},
		Discovery:          DiscoveryAuto,
		PublicationEvents:  AutoPublicationEvents,
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

// PublicationEvents values besides the pubevents mechanisms' names.
const (
	// AutoPublicationEvents: fexit where the kernel allows it, else none.
	AutoPublicationEvents = "auto"
	// NoPublicationEvents: no eBPF program.
	NoPublicationEvents = "none"
)

// Discovery is how a tracker learns of processes and publications.
type Discovery string

// Discovery modes.
const (
	// DiscoveryAuto: the event sources the privileges and the kernel
	// allow, polling for the rest.
	DiscoveryAuto Discovery = "auto"
	// DiscoveryEvents: every event source; hostopen.Open fails without one.
	DiscoveryEvents Discovery = "events"
	// DiscoveryPoll: scans only.
	DiscoveryPoll Discovery = "poll"
)

// Floors of the duration keys: a shorter interval is refused by Validate,
// which says that a number without a unit is nanoseconds (YAML's
// "collection_interval: 5" is 5ns, and once made the tracker scan
// without pause). Keys where 0 means "off" (initial_delay, timeout,
// grace_period) still take 0.
const (
	// floorCollectionInterval: a listing of the host more often than ten
	// times a second is a core spent on nothing.
	floorCollectionInterval = 100 * time.Millisecond
	// floorInitialDelay: any delay is harmless; below 1ms it is a number
	// without a unit.
	floorInitialDelay = time.Millisecond
	// floorTimeout and floorReadTimeout: a deadline shorter than the
	// reads of one process fails them all (the tracker's tests use 20ms
	// and 40ms).
	floorTimeout     = 10 * time.Millisecond
	floorReadTimeout = 10 * time.Millisecond
	// floorRescanInterval and floorRecheckInterval (rescan_max_interval
	// too): maps files read again, at most ten times a second.
	floorRescanInterval  = 100 * time.Millisecond
	floorRecheckInterval = 100 * time.Millisecond
	// floorReconcileInterval, floorGracePeriod and floorWarningInterval:
	// a repair, a retention and a pace measured in seconds.
	floorReconcileInterval = time.Second
	floorGracePeriod       = time.Second
	floorWarningInterval   = time.Second
)

// Validate reports every setting that is not usable, by its key
// (hostopen.Validate checks root_path's procfs too).
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
	if c.RootPath == "" || !filepath.IsAbs(c.RootPath) {
		errs = append(errs, fmt.Errorf("root_path must be an absolute path, got %q", c.RootPath))
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
	switch c.Discovery {
	case DiscoveryAuto, DiscoveryEvents, DiscoveryPoll:
	default:
		errs = append(errs, fmt.Errorf("discovery must be %q, %q or %q, got %q", DiscoveryAuto, DiscoveryEvents, DiscoveryPoll, c.Discovery))
	}
	if c.PublicationEvents != AutoPublicationEvents && c.PublicationEvents != NoPublicationEvents {
		if _, err := pubevents.ParseMechanism(c.PublicationEvents); err != nil {
			errs = append(errs, fmt.Errorf("publication_events must be %q, %q, %q, %q or %q, got %q", AutoPublicationEvents,
				pubevents.Fexit, pubevents.SyscallTracepoints, pubevents.RawSysExit, NoPublicationEvents, c.PublicationEvents))
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
