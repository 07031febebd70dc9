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

// runRecipesAgainstLocalBackend runs, on the recipes' collector, the
// recipes that need contrib components, as their headers and
// examples/README.md say: against the local backend (this repository's
// collector with examples/local-backend.yaml), exporting to it through
// OTLP_ENDPOINT and OTLP_INSECURE. What they send arrives there with the
// service a publisher published.
func runRecipesAgainstLocalBackend(t *testing.T, ours, recipes string) {
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
		return backend, []string{"OTLP_ENDPOINT=" + addr, "OTLP_INSECURE=true"}
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
		config := strings.Replace(read("filelog.yaml"), "include: [/var/log/syslog, /var/log/messages]", "include: ["+logFile+"]", 1)
		run(t, recipes, config, env...)
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
		// A journal of the test's own, written with systemd-journal-remote
		// (as a log shipper would): no journald needed.
		remote := "/lib/systemd/systemd-journal-remote"
		if _, err := os.Stat(remote); err != nil {
			t.Skipf("%s is missing (Debian's systemd-journal-remote; .ci/run installs it)", remote)
		}
		if _, err := exec.LookPath("journalctl"); err != nil {
			t.Skip("journalctl is missing (Debian's systemd; .ci/run installs it)")
		}
		backend, env := localBackend(t)
		dir := t.TempDir()
		journal := func(message string) {
			entry := fmt.Sprintf("__REALTIME_TIMESTAMP=%d\n_PID=%d\nPRIORITY=6\nMESSAGE=%s\n_BOOT_ID=%s\n_MACHINE_ID=%s\n\n",
				time.Now().UnixMicro(), pub.Pid, message, strings.Repeat("0f", 16), strings.Repeat("0f", 16))
			cmd := exec.Command(remote, "--output="+filepath.Join(dir, "remote.journal"), "-")
			cmd.Stdin = strings.NewReader(entry)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
		}
		journal("before the receiver") // the directory holds a journal when journalctl starts
		run(t, recipes, strings.Replace(read("journald.yaml"), "directory: /var/log/journal", "directory: "+dir, 1), env...)
		// The receiver starts at the journal's end: entries written after it.
		require.Eventually(t, func() bool {
			journal("recipe-journald-line")
			return strings.Contains(backend.String(), "recipe-journald-line")
		}, 60*time.Second, time.Second)
		shows(t, backend, "the entry with its process's service", "service.name: Str(recipe-contrib-svc)")
	})

	t.Run("hostmetrics-process.yaml", func(t *testing.T) {
		backend, env := localBackend(t)
		run(t, recipes, read("hostmetrics-process.yaml"), env...)
		shows(t, backend, "process metrics", "process.cpu.time")
		shows(t, backend, "the publisher's metrics with its service", "service.name: Str(recipe-contrib-svc)")
	})
}
