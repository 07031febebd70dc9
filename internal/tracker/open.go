package tracker

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
)

// Open returns a tracker (not started) of the host whose filesystem is
// mounted at rootPath ("/" on the host, e.g. "/hostfs" in a container that
// mounts the host's procfs at /hostfs/proc).
//
// It fails when <rootPath>/proc is not a procfs, or when rootPath is not
// "/" and its procfs belongs to a container's pid namespace (pids would
// name the wrong processes). With rootPath "/" in a container's pid
// namespace it only warns: the collector then sees that container's
// processes, which may be what the user wants.
func Open(rootPath string, limits otep.Limits, cfg Config, logger *zap.Logger, opts ...Option) (*Tracker, error) {
	fs, err := procfs.NewFS(rootPath)
	if err != nil {
		return nil, fmt.Errorf("root_path %q: %w", rootPath, err)
	}
	if err := fs.CheckHost(); err != nil {
		if !errors.Is(err, procfs.ErrNotHostProcfs) || fs.Root() != "/" {
			return nil, fmt.Errorf("root_path %q: %w: mount the host's /proc at %s", rootPath, err, fs.ProcDir())
		}
		logger.Warn("The collector runs in a container's pid namespace and sees only that container's processes: "+
			"mount the host's /proc (e.g. at /hostfs/proc, with root_path: /hostfs) or use the host's pid namespace", zap.Error(err))
	}
	host, err := NewHost(fs, limits)
	if err != nil {
		return nil, err
	}
	return New(host, cfg, logger, opts...)
}
