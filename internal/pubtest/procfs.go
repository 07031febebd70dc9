// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pubtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// MountProc mounts a procfs at <root>/proc of a new temporary root and
// returns the root: a bind of the host's /proc when nsPid is 0, else a new
// procfs of nsPid's pid namespace (what a container sees). Unmounted at the
// end of the test. Needs root.
func MountProc(t testing.TB, nsPid int) string {
	t.Helper()
	root, err := os.MkdirTemp("", "pubtest-root-")
	if err != nil {
		t.Fatal(err)
	}
	proc := filepath.Join(root, "proc")
	if err := os.Mkdir(proc, 0o755); err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	if nsPid == 0 {
		cmd = exec.Command("mount", "--bind", "/proc", proc)
	} else {
		cmd = exec.Command("nsenter", "--target", strconv.Itoa(nsPid), "--pid", "--", "mount", "-t", "proc", "proc", proc)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mount %s: %v: %s", proc, err, out)
	}
	t.Cleanup(func() {
		_ = unix.Unmount(proc, unix.MNT_DETACH)
		_ = os.RemoveAll(root)
	})
	return root
}

// SleepInNewPidNamespace starts `sleep` as pid 1 of a new pid namespace and
// returns its host pid. Needs root.
func SleepInNewPidNamespace(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("unshare", "--pid", "--fork", "--kill-child", "--", "sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if pid := childOf(cmd.Process.Pid); pid != 0 {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("unshare did not start its child")
	return 0
}

// childOf returns the first child of parent, 0 when it has none (yet).
func childOf(parent int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", parent, parent))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0
	}
	pid, _ := strconv.Atoi(fields[0])
	return pid
}

// RequireRoot skips the test unless it runs as root (namespaces, mounts,
// cgroups, other users).
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

// ExecutableCopy copies the executable src to a new directory that every
// user may enter (t.TempDir's parent is private to its owner), as name, and
// returns its path; removed at the end of the test. Tests use it to run a
// binary as another user, or under a name of its own.
func ExecutableCopy(t testing.TB, src, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pubtest-exec-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}
