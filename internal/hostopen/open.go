// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package hostopen opens the real host for a tracker: the procfs at
// root_path as a tracker.Host (reads through internal/reader and
// internal/procfs) and the kernel's event sources (the proc connector,
// the eBPF publication events) that the configuration asks for and the
// privileges allow. The tracker itself knows hosts and sources only
// through its interfaces; the extension and ctxdump call Open.
package hostopen

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/procevents"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubevents"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Config is what Open needs: the tracker's settings, and how to open the
// host, which the tracker never sees. The settings are the
// process_context extension's keys (sharedtracker.Settings) by the same
// names; what each means to a user is docs/configuration.md's.
type Config struct {
	tracker.Config
	// RootPath is where the host's filesystem is mounted ("/hostfs" in a
	// container with the host's procfs at /hostfs/proc).
	RootPath  string
	Discovery Discovery // which event sources Open starts
	// PublicationEvents names the eBPF source of publication events (a
	// pubevents mechanism, AutoPublicationEvents or NoPublicationEvents).
	PublicationEvents string
	// ReaderName is what the explanations of unreadable processes call the
	// tracker's process ("ctxdump (uid 1000) lacks CAP_SYS_PTRACE"); empty:
	// "the collector". Commands built on the tracker set it.
	ReaderName string
}

// DefaultConfig returns the defaults of every setting.
func DefaultConfig() Config {
	return Config{Config: tracker.DefaultConfig(), RootPath: "/", Discovery: DiscoveryAuto, PublicationEvents: AutoPublicationEvents}
}

// PublicationEvents values besides the pubevents mechanisms' names.
const (
	// AutoPublicationEvents: fexit where the kernel allows it, else
	// kprobe, else none: the sources that cost the host's other syscalls
	// nothing.
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
	// DiscoveryEvents: every event source; Open fails without one.
	DiscoveryEvents Discovery = "events"
	// DiscoveryPoll: scans only.
	DiscoveryPoll Discovery = "poll"
)

// check reports every setting that is not usable, by its key (Validate
// checks root_path's procfs too).
func (c *Config) check() error {
	var errs []error
	if c.RootPath == "" || !filepath.IsAbs(c.RootPath) {
		errs = append(errs, fmt.Errorf("root_path must be an absolute path, got %q", c.RootPath))
	}
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch c.Discovery {
	case DiscoveryAuto, DiscoveryEvents, DiscoveryPoll:
	default:
		errs = append(errs, fmt.Errorf("discovery must be %q, %q or %q, got %q", DiscoveryAuto, DiscoveryEvents, DiscoveryPoll, c.Discovery))
	}
	if c.PublicationEvents != AutoPublicationEvents && c.PublicationEvents != NoPublicationEvents {
		if _, err := pubevents.ParseMechanism(c.PublicationEvents); err != nil {
			errs = append(errs, fmt.Errorf("publication_events must be %q, %q, %q, %q, %q or %q, got %q", AutoPublicationEvents,
				pubevents.Fexit, pubevents.Kprobe, pubevents.SyscallTracepoints, pubevents.RawSysExit, NoPublicationEvents, c.PublicationEvents))
		}
	}
	return errors.Join(errs...)
}

// Open returns a tracker (not started) of the host whose filesystem is
// mounted at cfg.RootPath ("/" on the host, e.g. "/hostfs" in a container
// that mounts the host's procfs at /hostfs/proc), with the event sources
// that cfg.Discovery asks for and the privileges allow; it logs which, and
// what to change for the rest.
//
// It fails when <root_path>/proc is not a procfs, or when root_path is not
// "/" and its procfs belongs to a container's pid namespace (pids would
// name the wrong processes). With root_path "/" in a container's pid
// namespace it only warns: the collector then sees that container's
// processes, which may be what the user wants (and polls: the kernel's
// events name the host's pids). With DiscoveryEvents it fails
// when an event source cannot be opened. The tracker holds its event
// sources (a netlink socket, eBPF programs) from then on: the caller
// calls Stop, whether it started the tracker or not, to release them.
func Open(cfg Config, logger *zap.Logger, opts ...tracker.Option) (*tracker.Tracker, error) {
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("tracker: %w", err)
	}
	fs, notHost, err := openRoot(cfg)
	if err != nil {
		return nil, err
	}
	hostPids := notHost == nil
	if !hostPids {
		logger.Warn("The collector runs in a container's pid namespace and sees only that container's processes: "+
			"mount the host's /proc (e.g. at /hostfs/proc, with root_path: /hostfs) or use the host's pid namespace", zap.Error(notHost))
	}
	host, err := NewHost(fs, cfg.Limits())
	if err != nil {
		return nil, err
	}
	processes := -1
	if pids, err := host.ListPids(); err == nil {
		processes = len(pids)
	}
	sources, err := openSources(cfg, fs, hostPids, processes, logger)
	if err != nil {
		return nil, err
	}
	t, err := tracker.New(host, cfg.Config, logger, append(opts, tracker.WithEventSources(sources...), tracker.WithHostIdentity(fs.HostIdentity()))...)
	if err != nil {
		return nil, err
	}
	for _, s := range sources {
		if ps, ok := s.(*processSource); ok {
			ps.publishes = func(pid int) bool { p, _ := t.Snapshot().Lookup(pid); return p != nil }
		}
	}
	return t, nil
}

// Validate reports the settings of cfg that are not usable and a root_path
// whose proc is not a procfs of the host, with the error Open would fail with: the
// collector's validate command calls it, and starts nothing. It reads the
// filesystem of the machine it runs on: validate a container's
// configuration where its root_path is mounted.
func Validate(cfg Config) error {
	if err := cfg.check(); err != nil {
		return err
	}
	_, _, err := openRoot(cfg)
	return err
}

// openRoot opens the procfs of cfg.RootPath. It fails when it is not a
// procfs, or is a container's with a root_path other than "/"; with "/" in
// a container's pid namespace it returns, as notHost, why the pids are not
// the host's. Validate calls it too: validate fails as start would.
func openRoot(cfg Config) (fs *procfs.FS, notHost, err error) {
	rootPath := cfg.RootPath
	fs, err = procfs.NewFS(rootPath, procfs.WithReaderName(cfg.ReaderName))
	if err != nil {
		return nil, nil, fmt.Errorf("root_path %q: %w", rootPath, err)
	}
	if err := fs.CheckHost(); err != nil {
		if !errors.Is(err, procfs.ErrNotHostProcfs) || fs.Root() != "/" {
			return nil, nil, fmt.Errorf("root_path %q: %w: mount the host's /proc at %s", rootPath, err, fs.ProcDir())
		}
		return fs, err, nil
	}
	return fs, nil, nil
}

// openSources opens the event sources cfg.Discovery asks for and logs, in
// one short line, what discovery then is (sources, scan interval, the
// processes visible) and, when a source the configuration asks for could
// not be opened, a second one naming what to change, with the
// documentation of the trade-off (the kernel's errors at debug level).
func openSources(cfg Config, fs *procfs.FS, hostPids bool, processes int, logger *zap.Logger) ([]tracker.EventSource, error) {
	visible := zap.Int("processes", processes)
	interval := zap.Duration("collection_interval", cfg.CollectionInterval)
	if cfg.Discovery == DiscoveryPoll {
		logger.Info(fmt.Sprintf("Process discovery: polling (discovery: poll), scans every %s, %d processes visible",
			cfg.CollectionInterval, processes), interval, visible)
		return nil, nil
	}
	var (
		sources           []tracker.EventSource
		procErr, pubErr   error
		procWhat, pubWhat = "none", "none"
	)
	if !hostPids {
		procErr = errNotHostPids
		pubErr = procErr
	} else {
		if s, err := openProcessEvents(); err != nil {
			procErr = err
		} else {
			sources = append(sources, s)
			procWhat = "proc connector"
		}
		if slices.Contains(cfg.Sources, tracker.SourceContext) {
			s, what, err := openPublicationEvents(cfg.PublicationEvents)
			if s != nil {
				sources = append(sources, s)
				pubWhat = what
			}
			pubErr = err
		}
	}
	if cfg.Discovery == DiscoveryEvents && (procErr != nil || pubErr != nil) {
		for _, s := range sources {
			_ = s.Close()
		}
		return nil, fmt.Errorf("discovery: events: %w", errors.Join(wrapNonNil("process events", procErr), wrapNonNil("publication events", pubErr)))
	}
	logger.Info(fmt.Sprintf("Process discovery: %s, scans every %s, %d processes visible", discoveryMode(procWhat, pubWhat), cfg.CollectionInterval, processes),
		zap.String("process_events", procWhat), zap.String("publication_events", pubWhat), interval, visible)
	if procErr != nil || pubErr != nil {
		logger.Debug("Process discovery: event sources not opened", zap.NamedError("process_events", procErr), zap.NamedError("publication_events", pubErr))
	}
	var foreign []string
	if procErr != nil && hostPids {
		foreign, _ = fs.ForeignNamespaces()
	}
	if hint := missingHint(cfg, procErr, pubErr, foreign); hint != "" {
		logger.Info("Process discovery: " + hint + "; see " + discoveryDocs)
	}
	return sources, nil
}

// discoveryMode says which event sources run ("none" where none does).
func discoveryMode(procWhat, pubWhat string) string {
	switch {
	case procWhat != "none" && pubWhat != "none":
		return fmt.Sprintf("kernel events (%s, %s)", procWhat, pubWhat)
	case procWhat != "none":
		return procWhat + " for processes, polling for publications"
	case pubWhat != "none":
		return pubWhat + " for publications, polling for exits"
	}
	return "polling, without kernel events"
}

// discoveryDocs explains what each event source needs and costs.
const discoveryDocs = "https://github.com/processctx/otelcol-processctx/blob/main/docs/discovery.md#when-an-event-source-is-missing"

// errNotHostPids: the kernel's events name the host's pids, which a
// container's procfs does not (Open warns of it already).
var errNotHostPids = errors.New("the procfs is not the host's: the kernel's events name the host's pids")

// missingHint says, in a few words, what polls instead of each source that
// could not be opened, why, and what to change; "" when nothing is
// missing, or when Open's warning about a container's procfs says it.
// foreign are the host's namespaces the collector does not run in
// (procfs.FS.ForeignNamespaces): the proc connector's refusal is theirs
// first, whatever else it lacks.
func missingHint(cfg Config, procErr, pubErr error, foreign []string) string {
	if errors.Is(procErr, errNotHostPids) {
		return ""
	}
	var parts []string
	if pubErr != nil {
		var why string
		mechanism := cfg.PublicationEvents
		if mechanism == AutoPublicationEvents {
			mechanism = pubevents.Fexit.String()
		}
		switch {
		case errors.Is(pubErr, pubevents.ErrUnsupported) && cfg.PublicationEvents == AutoPublicationEvents:
			why = "this kernel refuses fexit and has no kprobes; publication_events: syscall_tracepoints sees them at once at a cost to every syscall of the host"
		case errors.Is(pubErr, pubevents.ErrUnsupported) && mechanism == pubevents.Fexit.String():
			why = "this kernel refuses fexit; publication_events: kprobe (auto tries it too) or syscall_tracepoints, at a cost to every syscall of the host, see them at once"
		case errors.Is(pubErr, pubevents.ErrUnsupported):
			why = fmt.Sprintf("this kernel cannot run publication_events: %s; try another", mechanism)
		case errors.Is(pubErr, pubevents.ErrPermission):
			why = "the collector lacks CAP_BPF and CAP_PERFMON (in a container, a seccomp profile that allows bpf too): grant them"
		default:
			why = fmt.Sprintf("publication_events: %s failed to load (its error is logged at debug level)", mechanism)
		}
		parts = append(parts, fmt.Sprintf("publications are polled (seconds after a process starts, not at once): %s", why))
	}
	if procErr != nil {
		var why string
		switch {
		case len(foreign) > 0:
			why = namespacesHint(foreign)
			if errors.Is(procErr, procevents.ErrPermission) {
				why += ", with CAP_NET_ADMIN"
			}
		case errors.Is(procErr, procevents.ErrPermission):
			why = "the collector lacks CAP_NET_ADMIN, which the proc connector needs: grant it"
		case errors.Is(procErr, procevents.ErrUnsupported):
			why = "the proc connector needs the host's user, network and pid namespaces (Kubernetes: hostNetwork and hostPID)"
		default:
			why = "the proc connector failed (its error is logged at debug level)"
		}
		parts = append(parts, fmt.Sprintf("exits are seen by scans (within collection_interval, %s): %s", cfg.CollectionInterval, why))
	}
	return strings.Join(parts, "; ")
}

// namespacesHint says which of the host's namespaces the proc connector
// needs and the collector does not run in, and how to run it there.
func namespacesHint(foreign []string) string {
	var runtime, kubernetes []string
	for _, ns := range foreign {
		switch ns {
		case "user":
			runtime, kubernetes = append(runtime, "--userns host"), append(kubernetes, "hostUsers")
		case "network":
			runtime, kubernetes = append(runtime, "--network host"), append(kubernetes, "hostNetwork")
		case "pid":
			runtime, kubernetes = append(runtime, "--pid host"), append(kubernetes, "hostPID")
		}
	}
	names := strings.Join(foreign, " and ")
	if len(foreign) == 3 {
		names = foreign[0] + ", " + foreign[1] + " and " + foreign[2]
	}
	noun := "namespace"
	if len(foreign) > 1 {
		noun += "s"
	}
	return fmt.Sprintf("the proc connector serves only the host's %s %s, and the collector runs in its own: run it in the host's (podman or docker: %s; Kubernetes: %s)",
		names, noun, strings.Join(runtime, " "), strings.Join(kubernetes, ", "))
}

func wrapNonNil(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
