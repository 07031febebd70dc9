// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// The systemd unit runs the collector as a dedicated user with the ambient
// capabilities CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH: check that this is
// enough to read a root process's context, and that without them the
// collector warns instead of failing.
func TestUnprivilegedUserWithCapabilities(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch users")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux) is needed to run as another user: %v", err)
	}
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	p.Publish(otep.EncodeStrings(map[string]string{"service.name": "root-service"}))

	t.Run("with CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH", func(t *testing.T) {
		server := startOTLPServer(t)
		startCollector(t, entitiesConfig(server.addr), setpriv,
			"--reuid=65534", "--regid=65534", "--clear-groups",
			"--inh-caps=+sys_ptrace,+dac_read_search", "--ambient-caps=+sys_ptrace,+dac_read_search")
		events := waitEntityEvents(t, server, p.Pid, 1)
		assert.Equal(t, "root-service", events[0].attrs["service.name"])
	})

	t.Run("without capabilities", func(t *testing.T) {
		server := startOTLPServer(t)
		col := startCollector(t, entitiesConfig(server.addr), setpriv,
			"--reuid=65534", "--regid=65534", "--clear-groups")
		// The warning comes after the scan that could not read the root
		// processes (the start-up line may say "permission denied" before
		// it): wait for the warning's own line, then look at it.
		var warning string
		require.Eventually(t, func() bool {
			out := col.Output.String()
			lines := strings.Split(out, "\n")
			for _, line := range lines[:len(lines)-1] { // whole lines only
				if strings.Contains(line, "Cannot read the process context of some processes: permission denied\t") {
					warning = line
					return true
				}
			}
			return false
		}, 30*time.Second, 50*time.Millisecond, "a permission warning")
		assert.Contains(t, warning, "CAP_SYS_PTRACE")
		assert.Less(t, col.Stop(t), 5*time.Second)
		// Stopped: every event it had is exported by now.
		for _, e := range entityEvents(server.allLogs()) {
			assert.NotEqual(t, int64(p.Pid), e.pid, "a root process read without permission")
		}
	})
}
