// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

func dirent(ino uint64, name string) []byte {
	reclen := (19 + len(name) + 1 + 7) &^ 7
	b := make([]byte, reclen)
	binary.NativeEndian.PutUint64(b[0:], ino)
	binary.NativeEndian.PutUint16(b[16:], uint16(reclen))
	copy(b[19:], name)
	return b
}

func TestAppendPidEntries(t *testing.T) {
	var buf []byte
	for _, d := range []struct {
		ino  uint64
		name string
	}{{1, "."}, {2, ".."}, {3, "self"}, {40, "1"}, {41, "4242"}, {42, "12a"}, {43, "0"}, {44, "12345678901"}, {45, "99"}} {
		buf = append(buf, dirent(d.ino, d.name)...)
	}
	got := appendPidEntries(nil, buf)
	assert.Equal(t, []PidEntry{{1, 40}, {4242, 41}, {99, 45}}, got)

	// A truncated or corrupt record stops the parse instead of misreading.
	assert.Equal(t, []PidEntry{{1, 40}}, appendPidEntries(nil, append(dirent(40, "1"), 1, 2, 3)))
	bad := dirent(40, "1")
	binary.NativeEndian.PutUint16(bad[16:], 1000)
	assert.Empty(t, appendPidEntries(nil, bad))
}

func TestPidListerSeesProcesses(t *testing.T) {
	fs, err := NewFS("/")
	require.NoError(t, err)
	var l PidLister
	entries, err := l.List(fs)
	require.NoError(t, err)
	byPid := map[int]uint64{}
	for _, e := range entries {
		byPid[e.Pid] = e.Ino
	}
	require.Contains(t, byPid, os.Getpid())
	assert.NotZero(t, byPid[os.Getpid()])

	// The inode of a pid's directory stays while the process lives.
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	first := inoOf(t, fs, &l, cmd.Process.Pid)
	assert.Equal(t, first, inoOf(t, fs, &l, cmd.Process.Pid))
}

func inoOf(t *testing.T, fs *FS, l *PidLister, pid int) uint64 {
	t.Helper()
	entries, err := l.List(fs)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Pid == pid {
			return e.Ino
		}
	}
	t.Fatalf("pid %d not listed", pid)
	return 0
}

// A procfs unmounted under a running reader is an error, not an empty host.
func TestPidListerUnmountedProcfs(t *testing.T) {
	pubtest.RequireRoot(t)
	root := pubtest.MountProc(t, 0)
	proc := filepath.Join(root, "proc")
	fs, err := NewFS(root)
	require.NoError(t, err)
	var l PidLister
	_, err = l.List(fs)
	require.NoError(t, err)

	require.NoError(t, unix.Unmount(proc, unix.MNT_DETACH))
	_, err = l.List(fs)
	require.ErrorIs(t, err, ErrNoProcfs)
	assert.ErrorContains(t, err, "no longer a procfs")

	require.NoError(t, unix.Mount("/proc", proc, "", unix.MS_BIND, ""))
	entries, err := l.List(fs)
	require.NoError(t, err)
	assert.NotEmpty(t, entries)
}
