// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// PidEntry is a pid directory of the procfs and its inode number. The
// inode number changes when the pid names a new process (procfs gives every
// new struct pid a new inode), so a caller that saw the same number before
// knows it is the same process without reading its stat.
type PidEntry struct {
	Pid int
	Ino uint64
}

// PidLister lists the pid directories of a procfs with getdents64, which
// gives each entry's inode number beside its name (os.ReadDir does not).
// Its buffers are reused from call to call; it is not safe for concurrent
// use.
type PidLister struct {
	buf     []byte
	entries []PidEntry
}

const listingBufferSize = 64 << 10

// List returns the pid entries of fs, valid until the next call. It fails,
// wrapping ErrNoProcfs, when <root>/proc is no longer a procfs.
func (l *PidLister) List(fs *FS) ([]PidEntry, error) {
	procDir := fs.ProcDir()
	fd, err := unix.Open(procDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("list processes in %s: %w", procDir, err)
	}
	defer func() { _ = unix.Close(fd) }()
	// The mount can go away under a running collector (a container's
	// /hostfs/proc): an empty directory would read as every process gone.
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return nil, fmt.Errorf("list processes in %s: %w", procDir, err)
	}
	if st.Type != unix.PROC_SUPER_MAGIC {
		return nil, fmt.Errorf("list processes in %s: no longer a procfs (filesystem type %#x): %w", procDir, st.Type, ErrNoProcfs)
	}
	if l.buf == nil {
		l.buf = make([]byte, listingBufferSize)
	}
	l.entries = l.entries[:0]
	for {
		n, err := unix.Getdents(fd, l.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list processes in %s: %w", procDir, err)
		}
		if n <= 0 {
			return l.entries, nil
		}
		l.entries = appendPidEntries(l.entries, l.buf[:n])
	}
}

// appendPidEntries parses linux_dirent64 records (u64 ino, s64 off, u16
// reclen, u8 type, NUL-terminated name) and appends those named by a pid.
func appendPidEntries(entries []PidEntry, buf []byte) []PidEntry {
	const header = 19 // offset of d_name
	for len(buf) >= header {
		reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
		if reclen < header || reclen > len(buf) {
			return entries // malformed: stop rather than misread
		}
		name := buf[header:reclen]
		if pid, ok := parsePidName(name); ok {
			entries = append(entries, PidEntry{Pid: pid, Ino: binary.NativeEndian.Uint64(buf[0:8])})
		}
		buf = buf[reclen:]
	}
	return entries
}

// parsePid parses a NUL-terminated decimal name; anything else is no pid.
func parsePidName(name []byte) (int, bool) {
	pid := 0
	for i, c := range name {
		if c == 0 {
			return pid, i > 0 && pid > 0
		}
		if c < '0' || c > '9' || i >= 10 {
			return 0, false
		}
		pid = pid*10 + int(c-'0')
	}
	return pid, len(name) > 0 && pid > 0
}
