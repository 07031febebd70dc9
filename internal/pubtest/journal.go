// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pubtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// journalRemote is Debian's systemd-journal-remote (package
// systemd-journal-remote; .ci/run installs it).
const journalRemote = "/lib/systemd/systemd-journal-remote"

// Journal is a journal of a test's own, written with systemd-journal-remote
// as a log shipper writes one: no journald is needed. Its entries carry
// this machine's id and current boot id, as journald's do (journalctl
// --follow reading a machine's journal shows its current boot only).
type Journal struct {
	// Dir holds the journal file: <Dir>/<machine-id>/test.journal, as
	// journald lays out /var/log/journal.
	Dir               string
	machineID, bootID string
}

// NewJournal returns an empty journal in a new temporary directory. Fails
// the test without systemd-journal-remote or /etc/machine-id.
func NewJournal(t testing.TB) *Journal {
	t.Helper()
	if _, err := os.Stat(journalRemote); err != nil {
		t.Fatalf("%s is missing (apt-get install systemd-journal-remote; .ci/run does)", journalRemote)
	}
	machineID, err := os.ReadFile("/etc/machine-id")
	if err != nil {
		t.Fatalf("a journal of this machine needs its /etc/machine-id: %v", err)
	}
	bootID, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	j := &Journal{
		Dir:       t.TempDir(),
		machineID: strings.TrimSpace(string(machineID)),
		bootID:    strings.ReplaceAll(strings.TrimSpace(string(bootID)), "-", ""),
	}
	if err := os.Mkdir(filepath.Join(j.Dir, j.machineID), 0o755); err != nil {
		t.Fatal(err)
	}
	return j
}

// Write appends an entry of pid's, with message, at priority info.
func (j *Journal) Write(t testing.TB, pid int, message string) {
	t.Helper()
	entry := fmt.Sprintf("__REALTIME_TIMESTAMP=%d\n_PID=%d\nPRIORITY=6\nMESSAGE=%s\n_BOOT_ID=%s\n_MACHINE_ID=%s\n\n",
		time.Now().UnixMicro(), pid, message, j.bootID, j.machineID)
	cmd := exec.Command(journalRemote, "--output="+filepath.Join(j.Dir, j.machineID, "test.journal"), "-")
	cmd.Stdin = strings.NewReader(entry)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", journalRemote, err, out)
	}
}
