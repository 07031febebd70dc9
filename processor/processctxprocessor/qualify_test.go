// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// startContainedPublisher starts a publisher as pid 1 of its own pid
// namespace in a cgroup named like a Docker container's, and returns it with
// the container id.
func startContainedPublisher(t *testing.T, service string) (*publishing, string) {
	t.Helper()
	pubtest.RequireRoot(t) // pid namespaces, cgroups
	raw := make([]byte, 32)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	id := hex.EncodeToString(raw)
	p := pubtest.StartContained(t, pubtest.Go, "/sys/fs/cgroup/unified/system.slice/docker-"+id+".scope")
	pub := &publishing{Proc: p, created: creationTimeOf(t, p.HostPid())}
	pub.publish(t, map[string]any{"service.name": service, "service.instance.id": service + "-1", "process.pid": int64(1)})
	return pub, id
}

// resourceLogs returns logs with one resource carrying attrs and a record.
func logsWithResource(attrs map[string]any) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	_ = rl.Resource().Attributes().FromRaw(attrs)
	rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("x")
	return ld
}

func TestContainerQualifiedPids(t *testing.T) {
	pub, id := startContainedPublisher(t, "in-container")
	host := pub.HostPid()
	h := newHarness(t, testConfig())
	other := id[:63] + "0" // another container's id
	if id[63] == '0' {
		other = id[:63] + "1"
	}
	enriched := map[string]any{
		"service.name": "in-container", "service.instance.id": "in-container-1",
		"container.id": id, "process.pid": int64(host), "process.vpid": int64(1),
		"process.creation.time": pub.created,
	}
	for _, tt := range []struct {
		name string
		in   map[string]any
		want map[string]any
	}{
		{"SDK in the container: its own pid and container.id", map[string]any{"process.pid": int64(1), "container.id": id}, enriched},
		{"host agent: host pid and container.id", map[string]any{"process.pid": int64(host), "container.id": id}, enriched},
		{"another container's pid 1", map[string]any{"process.pid": int64(1), "container.id": other},
			map[string]any{"process.pid": int64(1), "container.id": other}},
		// The collector's own container.id, from the cgroup, is added.
		{"host pid of the container's process, no container.id", map[string]any{"process.pid": int64(host)}, enriched},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := h.consumeLogs(logsWithResource(tt.in))
			assert.Equal(t, tt.want, out.ResourceLogs().At(0).Resource().Attributes().AsRaw())
		})
	}
}

func TestUnqualifiedPidOfAnotherNamespace(t *testing.T) {
	// A host process publishing "host-service" has pid P. Telemetry from an
	// SDK in a container whose own pid happens to be P, without container.id,
	// must not be stamped with host-service's context.
	hostPub := startPublisher(t, pubtest.C, "host-service")
	sdk := map[string]any{"process.pid": int64(hostPub.Pid), "service.name": "sdk-in-a-container"}
	agent := map[string]any{"process.pid": int64(hostPub.Pid), "host.name": "node-1"}

	t.Run("verify (default)", func(t *testing.T) {
		h := newHarness(t, testConfig())
		out := h.consumeLogs(logsWithResource(sdk))
		assert.Equal(t, sdk, out.ResourceLogs().At(0).Resource().Attributes().AsRaw(), "contradicting identity: untouched")
		out = h.consumeLogs(logsWithResource(agent))
		assert.Equal(t, withAttrs(hostPub.published(), agent), out.ResourceLogs().At(0).Resource().Attributes().AsRaw(), "no identity of its own: a host agent's")
		assert.Equal(t, int64(1), counter(t, h, "otelcol_processor_process_context_errors")["logs/identity_mismatch"])
	})
	t.Run("host", func(t *testing.T) {
		cfg := testConfig()
		cfg.UnqualifiedPids = UnqualifiedHost
		h := newHarness(t, cfg)
		out := h.consumeLogs(logsWithResource(sdk))
		assert.Equal(t, withAttrs(hostPub.published(), sdk), out.ResourceLogs().At(0).Resource().Attributes().AsRaw())
	})
}
