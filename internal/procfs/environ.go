// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"io"

	"golang.org/x/sys/unix"
)

// OpenEnviron opens <root>/proc/<pid>/environ for one streamed read. The
// reader reads the raw descriptor (os.Open would also fstat it to decide
// on the poller) and ends at the first short read: the kernel fills a read
// whole until the environment's end, so the read that would return 0 is
// not made. Reading the environment needs ptrace read access, as the maps
// do. Errors wrap ErrProcessGone or ErrPermissionDenied.
func (fs *FS) OpenEnviron(pid int) (io.ReadCloser, error) {
	fd, err := unix.Open(fs.Path(pid, "environ"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, WrapOS("open environ", pid, err)
	}
	return &environReader{fd: fd, pid: pid}, nil
}

type environReader struct {
	fd, pid int
	done    bool
}

func (r *environReader) Read(p []byte) (int, error) {
	if r.done || len(p) == 0 {
		return 0, io.EOF
	}
	n, err := unix.Read(r.fd, p)
	for err == unix.EINTR {
		n, err = unix.Read(r.fd, p)
	}
	switch {
	case err != nil:
		return 0, WrapOS("read environ", r.pid, err)
	case n < len(p):
		r.done = true
	}
	return n, nil
}

func (r *environReader) Close() error { return unix.Close(r.fd) }
