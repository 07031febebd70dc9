// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package distribution

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// run starts bin with config (YAML) and env, waits until it is ready and
// stops it at the end of the test.
func run(t *testing.T, bin, config string, env ...string) *pubtest.Output {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(config), 0o644))
	return pubtest.StartCollector(t, []string{bin, "--config", path, "--feature-gates=service.profilesSupport"}, env...).Output
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// runRecipesAgainstLocalBackend runs, on this repository's distribution,
// the recipes that need contrib's receivers, as their headers and
// examples/README.md say: against the local backend (the distribution with
// examples/local-backend.yaml), exporting to it through OTLP_ENDPOINT and
// OTLP_INSECURE, their own metrics moved by PROCESSCTX_METRICS_PORT (tests
// run beside other collectors). What they send arrives there with the
// service a publisher published.
func runRecipesAgainstLocalBackend(t *testing.T, ours string) {
	pubtest.RequireRoot(t)
	root := pubtest.RepoRoot()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, "examples", name))
		require.NoError(t, err)
		return string(b)
	}
	// A backend of its own for each recipe: what it shows came from it.
	localBackend := func(t *testing.T) (backend *pubtest.Output, env []string) {
		addr := freeAddr(t)
		backend = run(t, ours, strings.ReplaceAll(read("local-backend.yaml"), "127.0.0.1:14317", addr))
		return backend, []string{"OTLP_ENDPOINT=" + addr, "OTLP_INSECURE=true", fmt.Sprintf("PROCESSCTX_METRICS_PORT=%d", pubtest.FreePort(t))}
	}
	shows := func(t *testing.T, backend *pubtest.Output, what, want string) {
		t.Helper()
		require.Eventually(t, func() bool { return strings.Contains(backend.String(), want) },
			90*time.Second, 100*time.Millisecond, "the local backend never showed %s (%q)", what, want)
	}
	pub := pubtest.Start(t, pubtest.C, pubtest.Options{})
	pub.Publish(otep.EncodeStrings(map[string]string{"service.name": "recipe-contrib-svc"}))

	t.Run("filelog.yaml", func(t *testing.T) {
		backend, env := localBackend(t)
		logFile := filepath.Join(t.TempDir(), "syslog")
		require.NoError(t, os.WriteFile(logFile, nil, 0o644))
		// As written; the file named by the variable its header documents.
		run(t, ours, read("filelog.yaml"), append(env, "FILELOG_INCLUDE="+logFile)...)
		line := fmt.Sprintf("%s host c-publisher[%d]: recipe-filelog-line\n", time.Now().Format("Jan _2 15:04:05"), pub.Pid)
		// start_at: end: lines written once the receiver watches the file.
		require.Eventually(t, func() bool {
			f, err := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString(line)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			return strings.Contains(backend.String(), "recipe-filelog-line")
		}, 60*time.Second, time.Second)
		shows(t, backend, "the line with its process's service", "service.name: Str(recipe-contrib-svc)")
	})

	t.Run("journald.yaml", func(t *testing.T) {
		if _, err := exec.LookPath("journalctl"); err != nil {
			t.Fatal("journalctl is missing (Debian's systemd; .ci/run installs it)")
		}
		backend, env := localBackend(t)
		// A journal of the test's own (no journald runs here), which the
		// recipe reads through its directory key; test/e2e runs the recipe
		// unchanged in the image on such a journal at the default paths.
		journal := pubtest.NewJournal(t)
		journal.Write(t, pub.Pid, "before the receiver") // the directory holds a journal when journalctl starts
		config := read("journald.yaml")
		require.Contains(t, config, "\n  journald:\n")
		run(t, ours, strings.Replace(config, "\n  journald:\n", "\n  journald:\n    directory: "+journal.Dir+"\n", 1), env...)
		// The receiver starts at the journal's end: entries written after it.
		require.Eventually(t, func() bool {
			journal.Write(t, pub.Pid, "recipe-journald-line")
			return strings.Contains(backend.String(), "recipe-journald-line")
		}, 60*time.Second, time.Second)
		shows(t, backend, "the entry with its process's service", "service.name: Str(recipe-contrib-svc)")
	})

	t.Run("hostmetrics-process.yaml", func(t *testing.T) {
		backend, env := localBackend(t)
		run(t, ours, read("hostmetrics-process.yaml"), env...)
		shows(t, backend, "process metrics", "process.cpu.time")
		shows(t, backend, "the publisher's metrics with its service", "service.name: Str(recipe-contrib-svc)")
	})
}
