// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Paths of the systemd deployment, from this package's directory.
const (
	systemdUnitPath   = "../../deploy/systemd/otelcol-processctx.service"
	systemdConfigPath = "../../deploy/systemd/config.yaml"
)

// unitSettings returns the unit's [Service] settings, by key (a key set
// several times has each value).
func unitSettings(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(systemdUnitPath)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	settings := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			key, value, ok := strings.Cut(line, "=")
			require.True(t, ok, "%s: %q", systemdUnitPath, line)
			settings[key] = append(settings[key], value)
		}
	}
	require.NoError(t, sc.Err())
	return settings
}

// systemd accepts the unit: systemd-analyze verify says nothing of it (an
// unknown or misspelt key is only a warning there, so any output fails
// the test). Its ExecStart names where the README installs the collector;
// verify checks that the command is executable, so the test points it at
// an executable of this machine.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatalf("systemd-analyze is required (Debian's systemd; .ci/run installs it): %v", err)
	}
	unit, err := os.ReadFile(systemdUnitPath)
	require.NoError(t, err)
	const installed = "/usr/local/bin/otelcol-processctx"
	require.Contains(t, string(unit), "ExecStart="+installed+" ")
	self, err := os.Executable()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), filepath.Base(systemdUnitPath))
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(unit), "ExecStart="+installed, "ExecStart="+self, 1)), 0o644))

	cmd := exec.Command(analyze, "verify", path)
	// Without a journald its warnings would go nowhere.
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_TARGET=console")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "systemd-analyze verify:\n%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify warns")
}

// The unit reads the journal and /var/log (the journald and filelog
// recipes) through supplementary groups, keeps its hardening and its
// capabilities, and its config runs the journald recipe.
func TestSystemdUnitReadsTheJournal(t *testing.T) {
	s := unitSettings(t)
	var groups []string
	for _, v := range s["SupplementaryGroups"] {
		groups = append(groups, strings.Fields(v)...)
	}
	assert.Subset(t, groups, []string{"systemd-journal", "adm"}, "SupplementaryGroups")
	for key, want := range map[string]string{
		"User": "otelcol-processctx", "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "read-only",
		"PrivateTmp": "yes", "PrivateDevices": "yes", "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes",
		"ProtectControlGroups": "yes", "RestrictNamespaces": "yes", "LockPersonality": "yes",
		"AmbientCapabilities":   "CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_BPF CAP_PERFMON CAP_NET_ADMIN",
		"CapabilityBoundingSet": "CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_BPF CAP_PERFMON CAP_NET_ADMIN",
	} {
		assert.Equal(t, []string{want}, s[key], "%s", key)
	}
	for _, hides := range []string{"ProtectProc", "ProcSubset"} {
		assert.NotContains(t, s, hides, "%s hides the processes the collector reads", hides)
	}

	config := parseYAMLMap(t, systemdConfigPath, readFile(t, systemdConfigPath))
	_, ok := lookup(config, "receivers.journald")
	require.True(t, ok, "%s has no journald receiver", systemdConfigPath)
	assert.True(t, enrichesJournal(config), "no pipeline of %s takes the journald receiver's logs through the process_context processor", systemdConfigPath)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
