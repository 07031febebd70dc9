// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// statusConfig runs the extension, the receiver and the processor on
// root_path, with the health check extension (v2, component status) on
// port.
func statusConfig(root string, port, otlpPort int) string {
	return fmt.Sprintf(`
extensions:
  process_context:
    root_path: %[1]s
    collection_interval: 200ms
  healthcheckv2:
    use_v2: true
    component_health:
      include_recoverable_errors: true
      recovery_duration: 1ms
    http:
      endpoint: 127.0.0.1:%[2]d
      status:
        enabled: true
        path: /status
receivers:
  process_context:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%[3]d
processors:
  process_context:
exporters:
  debug:
service:
  extensions: [process_context, healthcheckv2]
  telemetry:
    metrics:
      level: none
  pipelines:
    logs/entities:
      receivers: [process_context]
      exporters: [debug]
    logs:
      receivers: [otlp]
      processors: [process_context]
      exporters: [debug]
`, root, port, otlpPort)
}

// componentStatus is one component of the health check's verbose status.
type componentStatus struct {
	Status     string                     `json:"status"`
	Error      string                     `json:"error"`
	Components map[string]componentStatus `json:"components"`
}

// processContextStatuses returns the status of every process_context
// component, by "<pipeline or extensions>/<component>".
func processContextStatuses(t *testing.T, port int) map[string]componentStatus {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/status?verbose", port))
	if err != nil {
		return nil
	}
	defer func() { _ = resp.Body.Close() }()
	var st componentStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil
	}
	out := map[string]componentStatus{}
	for group, g := range st.Components {
		for name, c := range g.Components {
			if strings.HasSuffix(name, ":process_context") {
				out[group+"/"+name] = c
			}
		}
	}
	return out
}

// waitStatuses waits until the extension, the receiver and the processor
// all report status, with an error containing errPart when it is not "".
func waitStatuses(t *testing.T, col *collector, port int, status, errPart string) {
	t.Helper()
	want := []string{"extensions/extension:process_context", "pipeline:logs/entities/receiver:process_context", "pipeline:logs/processor:process_context"}
	var last map[string]componentStatus
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		last = processContextStatuses(t, port)
		ok := len(last) == len(want)
		for _, k := range want {
			c := last[k]
			ok = ok && c.Status == status && strings.Contains(c.Error, errPart)
		}
		if ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("want every process_context component %s (%q), got %+v\n%s", status, errPart, last, col.Output.String())
}

// The components' status follows the tracker's health: a recoverable
// error while the procfs is gone or the collector lacks the privileges to
// read other users' processes, OK again once the procfs is back.
func TestStatusInTheHealthCheck(t *testing.T) {
	pubtest.RequireRoot(t) // mounts, another user
	t.Run("procfs unmounted and mounted again", func(t *testing.T) {
		root := pubtest.MountProc(t, 0)
		proc := filepath.Join(root, "proc")
		port := pubtest.FreePort(t)
		col := startCollector(t, statusConfig(root, port, pubtest.FreePort(t)))
		waitStatuses(t, col, port, "StatusOK", "")

		require.NoError(t, unix.Unmount(proc, unix.MNT_DETACH))
		waitStatuses(t, col, port, "StatusRecoverableError", "no longer a procfs")

		require.NoError(t, unix.Mount("/proc", proc, "", unix.MS_BIND, ""))
		waitStatuses(t, col, port, "StatusOK", "")
		col.Stop(t)
	})

	t.Run("without CAP_SYS_PTRACE", func(t *testing.T) {
		setpriv, err := exec.LookPath("setpriv")
		require.NoError(t, err, "setpriv (util-linux) runs the collector as another user")
		port := pubtest.FreePort(t)
		col := startCollector(t, statusConfig("/", port, pubtest.FreePort(t)), setpriv,
			"--reuid=65534", "--regid=65534", "--clear-groups")
		waitStatuses(t, col, port, "StatusRecoverableError", "lacks CAP_SYS_PTRACE")
		col.Stop(t)
	})
}
