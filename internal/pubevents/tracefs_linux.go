// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package pubevents

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// tracefsDirs are where hosts mount tracefs (systemd mounts the first).
var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// openTracefs returns a descriptor of a tracefs root, to read the ids of
// the syscall events from: a mounted tracefs or, where none is, a tracefs
// mount attached nowhere (fsmount needs CAP_SYS_ADMIN; it appears in no
// mount table and goes with the descriptor).
func openTracefs() (int, error) {
	for _, dir := range tracefsDirs {
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Statfs_t
		if unix.Fstatfs(fd, &st) == nil && st.Type == unix.TRACEFS_MAGIC {
			return fd, nil
		}
		_ = unix.Close(fd)
	}
	fsfd, err := unix.Fsopen("tracefs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("no tracefs at %s, and opening one: %w", tracefsDirs[0], err)
	}
	defer func() { _ = unix.Close(fsfd) }()
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("no tracefs at %s, and creating one: %w", tracefsDirs[0], err)
	}
	fd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("no tracefs at %s, and mounting one: %w", tracefsDirs[0], err)
	}
	return fd, nil
}

// syscallEventID reads the id of the event syscalls/name under the tracefs
// root dirfd.
func syscallEventID(dirfd int, name string) (uint64, error) {
	path := "events/syscalls/" + name + "/id"
	fd, err := unix.Openat(dirfd, path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return 0, fmt.Errorf("tracefs has no %s (a kernel without CONFIG_FTRACE_SYSCALLS): %w", path, ebpf.ErrNotSupported)
	}
	if err != nil {
		return 0, fmt.Errorf("open tracefs %s: %w", path, err)
	}
	defer func() { _ = unix.Close(fd) }()
	var buf [32]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return 0, fmt.Errorf("read tracefs %s: %w", path, err)
	}
	id, err := strconv.ParseUint(string(bytes.TrimSpace(buf[:max(n, 0)])), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("tracefs %s: %w", path, err)
	}
	return id, nil
}

// attachSyscallExit attaches prog to the exit event of syscall, whose id
// it reads under the tracefs root dirfd, through a perf event on one CPU
// (a tracepoint's programs run on every CPU) and a BPF link, which keeps
// the perf event open.
func attachSyscallExit(dirfd int, prog *ebpf.Program, syscall string) (link.Link, error) {
	event := "sys_exit_" + syscall
	id, err := syscallEventID(dirfd, event)
	if err != nil {
		return nil, err
	}
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_TRACEPOINT,
		Size:        unix.PERF_ATTR_SIZE_VER0,
		Config:      id,
		Sample_type: unix.PERF_SAMPLE_RAW,
		Sample:      1,
		Wakeup:      1,
	}
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("perf_event_open syscalls/%s: %w", event, err)
	}
	defer func() { _ = unix.Close(fd) }()
	l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
	if err != nil {
		return nil, fmt.Errorf("syscalls/%s: %w", event, err)
	}
	return l, nil
}
