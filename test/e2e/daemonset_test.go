// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// The DaemonSet runs the collector in its own pid namespace with the host's
// /proc mounted at /hostfs/proc and root_path: /hostfs. Do the same here:
// the collector under unshare (a new pid namespace with its own /proc), the
// host's procfs bind-mounted at a temporary root, and a publisher on the
// host. Its pid is not in the collector's namespace, so the context must be
// read through <root>/proc/<pid>/mem, and reported with the host pid.
func TestHostModeFromAContainersPidNamespace(t *testing.T) {
	pubtest.RequireRoot(t)
	root := pubtest.MountProc(t, 0)
	p := pubtest.Start(t, pubtest.C, pubtest.Options{Separate: true})
	p.Publish(otep.EncodeStrings(map[string]string{"service.name": "on-the-host"}))

	server := startOTLPServer(t)
	config := `
extensions:
  process_context:
    root_path: ` + root + `
    collection_interval: 200ms
receivers:
  process_context:
` + pubtest.ExportingTo(server.addr) + `  extensions: [process_context]
  pipelines:
    logs/entities:
      receivers: [process_context]
      exporters: [otlp_grpc]
`
	col := startCollector(t, config, "unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "--")
	events := waitEntityEvents(t, server, p.Pid, 1)
	assert.Equal(t, "on-the-host", events[0].attrs["service.name"])
	assert.Equal(t, int64(p.Pid), events[0].attrs["process.pid"])
	assert.NotContains(t, col.Output.String(), "not the host's procfs")
	// The proc connector does not answer outside the host's pid
	// namespace: the start-up says so, and how to run in it.
	assert.Contains(t, col.Output.String(), "the proc connector serves only the host's pid namespace, and the collector runs in its own: "+
		"run it in the host's (podman or docker: --pid host; Kubernetes: hostPID)")
}
