package procmem

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// errBadAddress: the address range is not mapped in the target (EFAULT from
// process_vm_readv, EIO or a short read from /proc/<pid>/mem).
var errBadAddress = errors.New("address not readable")

// remoteMemory reads one target's memory: process_vm_readv when the procfs
// pids are ours, else pread on <root>/proc/<pid>/mem (opened once, lazily).
type remoteMemory struct {
	fs    *FS
	stats *readStats
	pid   int
	fd    int // -1 until the mem file is opened
}

func (r *Reader) memory(pid int) remoteMemory {
	return remoteMemory{fs: r.fs, stats: &r.stats, pid: pid, fd: -1}
}

func (m *remoteMemory) close() {
	if m.fd >= 0 {
		_ = unix.Close(m.fd)
		m.fd = -1
	}
}

// readAt fills p from the target's address addr. Errors wrap errBadAddress,
// ErrProcessGone or ErrPermissionDenied.
func (m *remoteMemory) readAt(p []byte, addr uint64) error {
	if len(p) == 0 {
		return nil
	}
	m.stats.memoryReads.Add(1)
	m.stats.memoryBytes.Add(uint64(len(p)))
	if addr+uint64(len(p)) < addr {
		return fmt.Errorf("read %d bytes at %#x: %w", len(p), addr, errBadAddress)
	}
	if m.fs.sameNS && !m.fs.vmReadvUnavailable.Load() {
		err := m.readVM(p, addr)
		// EPERM also comes from seccomp filters (containers) that forbid the
		// syscall outright: the mem file may still be readable.
		if !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOSYS) {
			return err
		}
		if errors.Is(err, unix.ENOSYS) {
			m.fs.vmReadvUnavailable.Store(true)
		}
	}
	return m.readMemFile(p, addr)
}

func (m *remoteMemory) readVM(p []byte, addr uint64) error {
	local := []unix.Iovec{{Base: &p[0]}}
	local[0].SetLen(len(p))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMReadv(m.pid, local, remote, 0)
	switch {
	case errors.Is(err, unix.EFAULT):
		return fmt.Errorf("read %d bytes at %#x: %w", len(p), addr, errBadAddress)
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("read memory of pid %d: %w", m.pid, ErrProcessGone)
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.ENOSYS):
		return err
	case err != nil:
		return fmt.Errorf("read memory of pid %d: %w", m.pid, err)
	case n != len(p):
		return fmt.Errorf("read %d bytes at %#x: got %d: %w", len(p), addr, n, errBadAddress)
	}
	return nil
}

func (m *remoteMemory) readMemFile(p []byte, addr uint64) error {
	if m.fd < 0 {
		fd, err := unix.Open(m.fs.path(m.pid, "mem"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return wrapOS("open mem", m.pid, err)
		}
		m.fd = fd
	}
	if addr > 1<<63-1 {
		return fmt.Errorf("read %d bytes at %#x: %w", len(p), addr, errBadAddress)
	}
	n, err := unix.Pread(m.fd, p, int64(addr))
	switch {
	case errors.Is(err, unix.EIO), errors.Is(err, unix.EFAULT), errors.Is(err, unix.EINVAL):
		return fmt.Errorf("read %d bytes at %#x: %w", len(p), addr, errBadAddress)
	case err != nil:
		return wrapOS("read mem", m.pid, err)
	case n == 0:
		// The mm is gone: the process exited (or is a zombie).
		return fmt.Errorf("read memory of pid %d: %w", m.pid, ErrProcessGone)
	case n != len(p):
		return fmt.Errorf("read %d bytes at %#x: got %d: %w", len(p), addr, n, errBadAddress)
	}
	return nil
}

// readUint64 reads one native (little-endian) 64-bit word.
func (m *remoteMemory) readUint64(addr uint64) (uint64, error) {
	var v uint64
	err := m.readAt(unsafe.Slice((*byte)(unsafe.Pointer(&v)), 8), addr)
	return v, err
}
