// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package pubevents

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// eventTimeout bounds the wait for an event that must come; it only
// expires when the test fails, so it is generous for a loaded machine.
const eventTimeout = 30 * time.Second

// requireHost skips unless the test can load BPF programs and sees host
// pids (events carry pids of the initial pid namespace).
func requireHost(t testing.TB) {
	t.Helper()
	pubtest.RequireRoot(t)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok && len(strings.Fields(rest)) > 1 {
			t.Skip("runs in a pid namespace: event pids are host pids")
		}
	}
}

// mustLoad loads a Watcher closed at the end of the test; a mechanism this
// kernel cannot run skips the test.
func mustLoad(t testing.TB, opts Options) *Watcher {
	t.Helper()
	requireHost(t)
	w, err := Load(opts)
	if err != nil {
		if errors.Is(err, ErrUnsupported) || errors.Is(err, ErrPermission) {
			t.Skipf("%s unavailable here: %v", opts.Mechanism, err)
		}
		t.Fatalf("Load: %+v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	})
	return w
}

// loadCheapest loads, with opts, the first of mechanisms this kernel
// allows, for tests of what all of them share.
func loadCheapest(t testing.TB, opts Options) *Watcher {
	t.Helper()
	requireHost(t)
	var errs []error
	for _, m := range mechanisms {
		opts.Mechanism = m
		w, err := Load(opts)
		if err == nil {
			t.Cleanup(func() {
				if err := w.Close(); err != nil {
					t.Error(err)
				}
			})
			return w
		}
		errs = append(errs, err)
	}
	t.Skipf("no mechanism loads here: %v", errors.Join(errs...))
	return nil
}

// mechanisms are those tests and benchmarks try, each where the kernel
// allows it.
var mechanisms = []Mechanism{Fexit, Kprobe, SyscallTracepoints, RawSysExit}

// forEachMechanism runs f once per mechanism, skipping those this kernel
// refuses.
func forEachMechanism(t *testing.T, f func(t *testing.T, opts Options)) {
	for _, m := range mechanisms {
		t.Run(m.String(), func(t *testing.T) { f(t, Options{Mechanism: m}) })
	}
}

// next returns the next event of one of pids, skipping the events of every
// other process of the host.
func next(t testing.TB, w *Watcher, pids ...int) Event {
	t.Helper()
	w.SetDeadline(time.Now().Add(eventTimeout))
	defer w.SetDeadline(time.Time{})
	for {
		var ev Event
		if err := w.Read(&ev); err != nil {
			t.Fatalf("waiting for an event of %v: %v", pids, err)
		}
		if slices.Contains(pids, ev.PID) {
			return ev
		}
	}
}

// expect reads the next event of pids and checks it is want, with a time
// of CLOCK_MONOTONIC between the test's start and now.
func expect(t testing.TB, w *Watcher, want Event, pids ...int) {
	t.Helper()
	got := next(t, w, pids...)
	var now unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
	if got.Time == 0 || got.Time > uint64(now.Nano()) {
		t.Fatalf("event %+v: time not of CLOCK_MONOTONIC (now %d)", got, now.Nano())
	}
	got.Time = 0
	if got != want {
		t.Fatalf("next event of %v = %+v, want %+v", pids, got, want)
	}
}

func payload(service string) []byte {
	return otep.EncodeStrings(map[string]string{"service.name": service})
}

// cstr returns a NUL-terminated copy of s on the Go heap (resident).
func cstr(s string) *byte {
	b := append([]byte(s), 0)
	return &b[0]
}

// prctlName issues prctl(option, arg2, addr, length, name) from this
// process; its result does not matter (EINVAL without CONFIG_ANON_VMA_NAME).
func prctlName(option, arg2 uintptr, addr, length uint64, name *byte) {
	_, _, _ = unix.Syscall6(unix.SYS_PRCTL, option, arg2, uintptr(addr), uintptr(length), uintptr(unsafe.Pointer(name)), 0)
}

// memfdCreate issues memfd_create(name, flags) from this process and closes
// the memfd it may have made.
func memfdCreate(name *byte, flags uintptr) error {
	fd, _, errno := unix.Syscall(unix.SYS_MEMFD_CREATE, uintptr(unsafe.Pointer(name)), flags, 0)
	if errno != 0 {
		return errno
	}
	return unix.Close(int(fd))
}

// buildHelper compiles testdata/<name>.c with gcc (needed by pubtest's C
// publisher anyway) and returns the executable.
func buildHelper(t testing.TB, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	out, err := exec.Command("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", bin, filepath.Join("testdata", name+".c")).CombinedOutput()
	if err != nil {
		t.Fatalf("build %s (gcc is required): %v\n%s", name, err, out)
	}
	return bin
}
