// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procevents

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// helperEnv selects what TestHelperProcess does in a helper process.
const helperEnv = "PROCEVENTS_TEST_HELPER"

// eventTimeout bounds every wait for an event the test caused: far more
// than the milliseconds the kernel takes, it only ends a test that fails.
const eventTimeout = 10 * time.Second

// listenForTest listens (as root, or skips), closing at the end of the test.
func listenForTest(t *testing.T, receiveBuffer int) *Listener {
	t.Helper()
	pubtest.RequireRoot(t)
	l, err := listen(receiveBuffer)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// readUntil reads events until one satisfies done, for at most
// eventTimeout, and returns them all; lost reports an overflow meanwhile
// (the events wanted may be gone: the caller retries).
func readUntil(t *testing.T, l *Listener, done func(Event) bool) (events []Event, lost bool) {
	t.Helper()
	l.deadline = time.Now().Add(eventTimeout)
	defer func() { l.deadline = time.Time{} }()
	buf := make([]Event, 64)
	for {
		n, overflow, err := l.Read(buf)
		events = append(events, buf[:n]...)
		lost = lost || overflow
		for _, ev := range buf[:n] {
			if done(ev) {
				return events, lost
			}
		}
		if overflow {
			return events, true
		}
		require.NoError(t, err, "events so far: %v", events)
	}
}

// ofProcess keeps the events about pid: its own, and the forks it made,
// without their times once checked (set, never going back: the events of
// one process come in order).
func ofProcess(events []Event, pid int) []Event {
	var kept []Event
	var last uint64
	for _, ev := range events {
		if ev.PID == pid || (ev.Kind == Fork && ev.Parent == pid) {
			if ev.Time == 0 || ev.Time < last {
				ev.Kind = 0 // fails the comparison, showing the event
			}
			last = ev.Time
			ev.Time = 0
			kept = append(kept, ev)
		}
	}
	return kept
}

// observe runs a process with run, which returns its pid once it has
// ended, and reads events up to the process's exits-th Exit: it returns
// those about the process, and all. It retries when events were lost
// meanwhile (another test's burst, on a shared machine).
func observe(t *testing.T, l *Listener, exits int, run func() int) (pid int, events, all []Event) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		pid = run()
		seen := 0
		all, lost := readUntil(t, l, func(ev Event) bool {
			if ev.Kind == Exit && ev.PID == pid {
				seen++
			}
			return seen == exits
		})
		if !lost {
			return pid, ofProcess(all, pid), all
		}
		require.Less(t, attempt, 3, "events lost on every attempt")
		t.Logf("events lost (attempt %d), trying again", attempt)
	}
}

// helperCommand is the test binary running TestHelperProcess as helper.
func helperCommand(exe, helper string) *exec.Cmd {
	cmd := exec.Command(exe, "-test.run=^TestHelperProcess$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"="+helper)
	return cmd
}

// TestHelperProcess is the body of helper processes the other tests start;
// it skips in a normal run.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "":
		t.Skip("only runs as a helper process")
	case "threads":
		helperThreads()
	case "exec-from-thread":
		helperExecFromThread()
	case "listen":
		helperListen()
	default:
		t.Fatalf("unknown helper %q", os.Getenv(helperEnv))
	}
}

// helperThreads starts threads that end before the process does, and
// prints their ids: "tids 123 124".
func helperThreads() {
	const count = 8
	tids := make(chan int)
	release := make(chan struct{})
	for range count {
		go func() {
			// Locked and never unlocked: the thread ends with the goroutine.
			runtime.LockOSThread()
			tids <- unix.Gettid()
			<-release
		}()
	}
	var own []string
	for range count {
		if tid := <-tids; tid != unix.Getpid() {
			own = append(own, fmt.Sprint(tid))
		}
	}
	close(release)
	fmt.Printf("tids %s\n", strings.Join(own, " "))
}

// helperExecFromThread execs /bin/true from a thread other than the
// leader, and prints the thread's id first: "exec from 123".
func helperExecFromThread() {
	for {
		onLeader := make(chan bool)
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == unix.Getpid() {
				onLeader <- true
				select {} // holds the leader thread: the next goroutine gets another
			}
			onLeader <- false
			fmt.Printf("exec from %d\n", unix.Gettid())
			err := syscall.Exec("/bin/true", []string{"true"}, os.Environ())
			fmt.Printf("exec: %v\n", err)
			os.Exit(1)
		}()
		if !<-onLeader {
			select {} // the exec replaces the process
		}
	}
}

// helperListen prints the kind of Listen's error, and when it has none
// whether the events of a child arrive: "listen=none events=ok".
func helperListen() {
	l, err := Listen()
	fmt.Printf("listen=%s (%v)", errorKind(err), err)
	if err != nil {
		fmt.Println()
		return
	}
	defer func() { _ = l.Close() }()
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		fmt.Printf(" events=run:%v\n", err)
		return
	}
	l.deadline = time.Now().Add(eventTimeout)
	buf := make([]Event, 16)
	for {
		n, _, err := l.Read(buf)
		for _, ev := range buf[:n] {
			if ev.Kind == Exit && ev.PID == cmd.Process.Pid {
				fmt.Println(" events=ok")
				return
			}
		}
		if err != nil {
			fmt.Printf(" events=%v\n", err)
			return
		}
	}
}

func errorKind(err error) string {
	switch {
	case err == nil:
		return "none"
	case errors.Is(err, ErrPermission):
		return "permission"
	case errors.Is(err, ErrUnsupported):
		return "unsupported"
	}
	return "other"
}
