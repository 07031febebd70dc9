// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package reader

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
)

// memory reads one target's memory for otep.Reader: process_vm_readv when
// the procfs pids are ours and via allows it, else pread on
// <root>/proc/<pid>/mem (opened once, lazily).
type memory struct {
	r   *Reader
	pid int
	via Via
	fd  int // -1 until the mem file is opened
}

func (m *memory) close() {
	if m.fd >= 0 {
		_ = unix.Close(m.fd)
		m.fd = -1
	}
}

// ReadAt implements otep.Memory. Errors wrap otep.ErrBadAddress,
// procfs.ErrProcessGone or procfs.ErrPermissionDenied, or the OS error.
func (m *memory) ReadAt(p []byte, addr uint64) error {
	if len(p) == 0 {
		return nil
	}
	m.r.stats.memoryReads.Add(1)
	m.r.stats.memoryBytes.Add(uint64(len(p)))
	if addr+uint64(len(p)) < addr {
		return fmt.Errorf("read %d bytes at %#x: %w", len(p), addr, otep.ErrBadAddress)
	}
	if m.via == ViaAuto && m.r.fs.SameNamespace() && !m.r.vmReadvUnavailable.Load() {
		err := m.readVM(p, addr)
		// EPERM also comes from seccomp filters (containers) that forbid the
		// syscall outright: the mem file may still be readable.
		if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOSYS) {
			return err
		}
		if errors.Is(err, unix.ENOSYS) {
			m.r.vmReadvUnavailable.Store(true)
		}
	}
	return m.readMemFile(p, addr)
}

func (m *memory) readVM(p []byte, addr uint64) error {
	local := []unix.Iovec{{Base: &p[0]}}
	local[0].SetLen(len(p))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMReadv(m.pid, local, remote, 0)
	switch {
	case errors.Is(err, unix.EFAULT):
		return fmt.Errorf("read %d bytes at %#x: %w", len(p), addr, otep.ErrBadAddress)
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("read memory of pid %d: %w", m.pid, procfs.ErrProcessGone)
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.ENOSYS):
		return err
	case err != nil:
		return fmt.Errorf("read memory of pid %d: %w", m.pid, err)
	case n != len(p):
		return fmt.Errorf("read %d bytes at %#x: got %d: %w", len(p), addr, n, otep.ErrBadAddress)
	}
	return nil
}

func (m *memory) readMemFile(p []byte, addr uint64) error {
	if m.fd < 0 {
		fd, err := unix.Open(m.r.fs.Path(m.pid, "mem"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return procfs.WrapOS("open mem", m.pid, err)
		}
		m.fd = fd
	}
	if addr > 1<<63-1 {
		return fmt.Errorf("read %d bytes at %#x: %w", len(p), addr, otep.ErrBadAddress)
	}
	n, err := unix.Pread(m.fd, p, int64(addr))
	switch {
	case errors.Is(err, unix.EIO), errors.Is(err, unix.EFAULT), errors.Is(err, unix.EINVAL):
		return fmt.Errorf("read %d bytes at %#x: %w", len(p), addr, otep.ErrBadAddress)
	case err != nil:
		return procfs.WrapOS("read mem", m.pid, err)
	case n == 0:
		// The mm is gone: the process exited (or is a zombie).
		return fmt.Errorf("read memory of pid %d: %w", m.pid, procfs.ErrProcessGone)
	case n != len(p):
		return fmt.Errorf("read %d bytes at %#x: got %d: %w", len(p), addr, n, otep.ErrBadAddress)
	}
	return nil
}
