package tracker

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/procfs"
)

// Open returns a tracker (not started) of the host whose filesystem is
// mounted at Config.RootPath ("/" on the host, e.g. "/hostfs" in a
// container that mounts the host's procfs at /hostfs/proc), with the event
// sources that Config.Discovery asks for and the privileges allow; it logs
// which, and what polling costs in latency for the rest.
//
// It fails when <root_path>/proc is not a procfs, or when root_path is not
// "/" and its procfs belongs to a container's pid namespace (pids would
// name the wrong processes). With root_path "/" in a container's pid
// namespace it only warns: the collector then sees that container's
// processes, which may be what the user wants (and polls: the kernel's
// events name the host's pids). With DiscoveryEvents it fails when an
// event source cannot be opened.
//
// The tracker holds its event sources (a netlink socket, eBPF programs)
// from then on: the caller calls Stop, whether it started the tracker or
// not, to release them.
func Open(cfg Config, logger *zap.Logger, opts ...Option) (*Tracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tracker: %w", err)
	}
	rootPath := cfg.RootPath
	fs, err := procfs.NewFS(rootPath, procfs.WithReaderName(cfg.ReaderName))
	if err != nil {
		return nil, fmt.Errorf("root_path %q: %w", rootPath, err)
	}
	hostPids := true
	if err := fs.CheckHost(); err != nil {
		if !errors.Is(err, procfs.ErrNotHostProcfs) || fs.Root() != "/" {
			return nil, fmt.Errorf("root_path %q: %w: mount the host's /proc at %s", rootPath, err, fs.ProcDir())
		}
		hostPids = false
		logger.Warn("The collector runs in a container's pid namespace and sees only that container's processes: "+
			"mount the host's /proc (e.g. at /hostfs/proc, with root_path: /hostfs) or use the host's pid namespace", zap.Error(err))
	}
	host, err := NewHost(fs, cfg.Limits())
	if err != nil {
		return nil, err
	}
	sources, err := openSources(cfg, hostPids, logger)
	if err != nil {
		return nil, err
	}
	return build(host, cfg, logger, append(opts, WithEventSources(sources...), WithHostIdentity(fs.HostIdentity()))...), nil
}

// openSources opens the event sources cfg.Discovery asks for and logs what
// discovery then is.
func openSources(cfg Config, hostPids bool, logger *zap.Logger) ([]EventSource, error) {
	if cfg.Discovery == DiscoveryPoll {
		logger.Info("Process discovery: polling (discovery: poll)", zap.String("latency", pollLatency(cfg, 0)))
		return nil, nil
	}
	var (
		sources           []EventSource
		procErr, pubErr   error
		procWhat, pubWhat string
	)
	if !hostPids {
		procErr = errors.New("the procfs is not the host's: the kernel's events name the host's pids")
		pubErr = procErr
	} else {
		if s, err := openProcessEvents(); err != nil {
			procErr = err
		} else {
			sources = append(sources, s)
			procWhat = "proc connector"
		}
		if cfg.uses(SourceContext) {
			s, what, err := openPublicationEvents(cfg.PublicationEvents)
			pubWhat, pubErr = what, err
			if s != nil {
				sources = append(sources, s)
			}
		} else {
			pubWhat = "none (contexts are not a source)"
		}
	}
	if cfg.Discovery == DiscoveryEvents && (procErr != nil || pubErr != nil) {
		for _, s := range sources {
			_ = s.Close()
		}
		return nil, fmt.Errorf("discovery: events: %w", errors.Join(wrapNonNil("process events", procErr), wrapNonNil("publication events", pubErr)))
	}
	var live Sources
	for _, s := range sources {
		live |= s.Sources()
	}
	fields := []zap.Field{
		describe("process_events", procWhat, procErr),
		describe("publication_events", pubWhat, pubErr),
		zap.String("latency", pollLatency(cfg, live)),
	}
	mode := "events"
	switch live {
	case 0:
		mode = "polling, without kernel events"
	case ProcessEvents, PublicationEvents:
		mode = "events and polling"
	}
	logger.Info("Process discovery: "+mode, fields...)
	return sources, nil
}

func describe(key, what string, err error) zap.Field {
	if err != nil {
		return zap.String(key, "unavailable: "+err.Error())
	}
	return zap.String(key, what)
}

func wrapNonNil(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// pollLatency says how soon what the events do not tell is seen.
func pollLatency(cfg Config, live Sources) string {
	var pub, exit string
	if live&PublicationEvents != 0 {
		pub = "publications and updates within milliseconds"
	} else {
		pub = fmt.Sprintf("a publication by the re-reads %s after its process's exec (or first sighting), then every rescan_interval (%s, "+
			"doubling up to rescan_max_interval, %s), or within recheck_interval (%s) once telemetry names its pid; an update within collection_interval (%s)",
			youngSchedule(), cfg.RescanInterval, cfg.RescanMaxInterval, cfg.RecheckInterval, cfg.CollectionInterval)
	}
	if live&ProcessEvents != 0 {
		exit = "exits and execs within milliseconds"
	} else {
		exit = fmt.Sprintf("an exit within collection_interval (%s)", cfg.CollectionInterval)
	}
	s := pub + "; " + exit
	if live == ProcessEvents|PublicationEvents {
		s += fmt.Sprintf("; scans every %s find what events missed, reconcile every %s", cfg.CollectionInterval, cfg.ReconcileInterval)
	}
	return s
}

// youngSchedule lists when a young process is read, from its exec: "1s,
// 3s, 8s, 18s and 38s".
func youngSchedule() string {
	var at time.Duration
	var s strings.Builder
	for i, d := range youngDelays {
		at += d
		switch {
		case i == len(youngDelays)-1:
			s.WriteString(" and ")
		case i > 0:
			s.WriteString(", ")
		}
		s.WriteString(at.String())
	}
	return s.String()
}
