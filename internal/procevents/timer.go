// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procevents

// timer.go owns the Listener's gathering timer (Listener.Gather); only the
// Listener calls it.

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timer is a one-shot timerfd in the runtime's poller, set and read by raw
// syscalls. A sleep on it wakes one thread, the poller's, when it ends; a
// time.Sleep also wakes the runtime's monitor thread (sysmon sleeps until
// the next timer of the runtime) and, when it is set, the poller's thread
// to take the new deadline: some three wake-ups for every wait where this
// costs one, 20 times a second while events come.
type timer struct {
	f    *os.File
	conn syscall.RawConn
}

func newTimer() (*timer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("create the gathering timer (timerfd): %w", err)
	}
	f := os.NewFile(uintptr(fd), "proc-events-timer") // non-blocking: in the poller
	conn, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("gathering timer: %w", err)
	}
	return &timer{f: f, conn: conn}, nil
}

// sleep returns d after it was called, or an error once close was called.
func (t *timer) sleep(d time.Duration) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	var errno syscall.Errno
	if err := t.conn.Control(func(fd uintptr) {
		_, _, errno = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	}); err != nil {
		return err
	}
	if errno != 0 {
		return fmt.Errorf("set the gathering timer: %w", errno)
	}
	var expirations uint64
	err := t.conn.Read(func(fd uintptr) bool {
		_, _, errno = unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&expirations)), 8)
		return errno != unix.EAGAIN
	})
	switch {
	case err != nil:
		return err
	case errno != 0 && errno != unix.EINTR:
		return fmt.Errorf("read the gathering timer: %w", errno)
	}
	return nil
}

// close ends a sleep in progress.
func (t *timer) close() error { return t.f.Close() }
