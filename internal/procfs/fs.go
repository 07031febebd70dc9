// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// FS is a view of a procfs under a root path: "/" on the host, or e.g.
// "/hostfs" in a container that mounts the host's procfs at /hostfs/proc.
type FS struct {
	root string
	proc string
	pfs  procfs.FS // the same procfs, for the files prometheus/procfs parses
	// sameNS: the pids of this procfs are the pids of our own pid namespace,
	// so process_vm_readv(pid) reaches the process the procfs names.
	sameNS bool

	// reader is what explanations of denied reads call this process.
	reader string

	bootOnce sync.Once
	bootTime int64
	bootErr  error
}

// Option configures NewFS.
type Option func(*FS)

// WithReaderName names this process in the explanations of reads it is
// denied ("ctxdump (uid 1000) lacks CAP_SYS_PTRACE"); without it, or with
// "", it is "the collector".
func WithReaderName(name string) Option {
	return func(fs *FS) {
		if name != "" {
			fs.reader = name
		}
	}
}

// NewFS opens the procfs at <root>/proc. It fails when that is not a procfs.
func NewFS(root string, opts ...Option) (*FS, error) {
	if root == "" {
		root = "/"
	}
	root = filepath.Clean(root) // "/hostfs/" and "/hostfs" are one root
	proc := filepath.Join(root, "proc")
	if err := checkProcfs(proc); err != nil {
		return nil, err
	}
	pfs, err := procfs.NewFS(proc)
	if err != nil {
		return nil, fmt.Errorf("procfs at %s: %w: %w", proc, ErrNoProcfs, err)
	}
	fs := &FS{root: root, proc: proc, pfs: pfs, reader: "the collector"}
	for _, o := range opts {
		o(fs)
	}
	// "self" resolves to the reader's pid as this procfs's namespace sees it.
	self, err := os.Readlink(filepath.Join(proc, "self"))
	fs.sameNS = err == nil && self == strconv.Itoa(os.Getpid())
	return fs, nil
}

// Check reports, wrapping ErrNoProcfs, when <root>/proc is no longer a
// procfs (its mount went away): one statfs.
func (fs *FS) Check() error { return checkProcfs(fs.proc) }

func checkProcfs(proc string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(proc, &st); err != nil {
		return fmt.Errorf("procfs at %s: %w: %w", proc, ErrNoProcfs, err)
	}
	if st.Type != unix.PROC_SUPER_MAGIC {
		return fmt.Errorf("%s is not a procfs (filesystem type %#x): %w", proc, st.Type, ErrNoProcfs)
	}
	return nil
}

// CheckHost reports (with ErrNotHostProcfs) a procfs that belongs to a
// nested pid namespace. Kernel threads are visible only in the initial pid
// namespace, so the host's procfs always lists kthreadd as pid 2 with
// parent 0: a container's procfs (e.g. a root_path whose proc is the
// collector's own instead of the host's) does not.
func (fs *FS) CheckHost() error {
	var buf [statBufSize]byte
	st, err := fs.statFields(2, &buf)
	if err == nil && st.ppid == 0 && string(st.comm) == "kthreadd" {
		return nil
	}
	return fmt.Errorf("%s shows no kernel threads: it is the procfs of a container's pid namespace: %w", fs.proc, ErrNotHostProcfs)
}

// ForeignNamespaces returns which of the host's user, network and pid
// namespaces the reader does not run in ("user", "network", "pid"), as
// this procfs says: its own namespaces (self) against kthreadd's (pid 2,
// always in the initial ones). ok is false when that cannot be told (a
// procfs that is not the host's, or links the reader may not read).
func (fs *FS) ForeignNamespaces() (foreign []string, ok bool) {
	for _, ns := range [...]struct{ link, name string }{{"user", "user"}, {"net", "network"}, {"pid", "pid"}} {
		own, err := os.Readlink(filepath.Join(fs.proc, "self", "ns", ns.link))
		if err != nil {
			return nil, false
		}
		host, err := os.Readlink(fs.Path(2, "ns/"+ns.link))
		if err != nil {
			return nil, false
		}
		if own != host {
			foreign = append(foreign, ns.name)
		}
	}
	return foreign, true
}

// Root returns the root path the FS was opened with.
func (fs *FS) Root() string { return fs.root }

// ProcDir returns the procfs directory, <root>/proc.
func (fs *FS) ProcDir() string { return fs.proc }

// SameNamespace reports whether the procfs pids are those of the reader's pid
// namespace, so that process_vm_readv(pid) reaches the process the procfs
// names.
func (fs *FS) SameNamespace() bool { return fs.sameNS }

// Path returns <root>/proc/<pid>/<name>.
func (fs *FS) Path(pid int, name string) string {
	b := make([]byte, 0, len(fs.proc)+len(name)+12)
	b = append(b, fs.proc...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, '/')
	b = append(b, name...)
	return string(b)
}

// BootTime returns the host's boot time in seconds since the epoch (btime of
// <root>/proc/stat), read once.
func (fs *FS) BootTime() (int64, error) {
	fs.bootOnce.Do(func() {
		st, err := fs.pfs.Stat()
		switch {
		case err != nil:
			fs.bootErr = fmt.Errorf("read boot time: %w", err)
		case st.BootTime == 0:
			fs.bootErr = errors.New("no btime line in stat")
		default:
			fs.bootTime = int64(st.BootTime)
		}
	})
	return fs.bootTime, fs.bootErr
}
