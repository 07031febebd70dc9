// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// sharedConfig is the shape of the shipped configurations: the extension's
// tracker under the receiver (entity events) and the processor (OTLP logs).
func sharedConfig(otlpPort int, server string) string {
	return fmt.Sprintf(`
extensions:
  process_context:
    collection_interval: 200ms
    rescan_interval: 200ms
    read_timeout: 300ms
receivers:
  process_context:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
processors:
  process_context:
`, otlpPort) + pubtest.ExportingTo(server) + `  extensions: [process_context]
  pipelines:
    logs/entities:
      receivers: [process_context]
      exporters: [otlp_grpc]
    logs:
      receivers: [otlp]
      processors: [process_context]
      exporters: [otlp_grpc]
`
}

// logsWithPid is one record under a resource with process.pid.
func logsWithPid(pid int, body string) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutInt("process.pid", int64(pid))
	rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr(body)
	return ld
}

// enrichedService returns the service.name of the exported OTLP record
// with body, "" while there is none.
func enrichedService(s *otlpServer, body string) (string, bool) {
	for _, l := range s.allLogs() {
		for _, rl := range l.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					if lr.Body().Str() == body {
						v, _ := rl.Resource().Attributes().Get("service.name")
						return v.Str(), true
					}
				}
			}
		}
	}
	return "", false
}

// A host with processes whose context memory never answers (userfaultfd on
// the header page, on the payload) and a stopped publisher: the built
// collector, receiver and processor on its one tracker, reports a good
// publisher that appears after them on time and enriches its telemetry,
// passes the hostile ones' telemetry through, and stops at SIGTERM within
// 5 s while reads are stuck.
func TestStuckProcessesThroughTheCollector(t *testing.T) {
	stalls := pubtest.StartStalls(t, otep.EncodeStrings(map[string]string{"service.name": "stopped"}))
	header, payload, stopped := stalls.Header, stalls.Payload, stalls.Stopped
	good := otep.EncodeStrings(map[string]string{"service.name": "on-time"})

	server := startOTLPServer(t)
	port := pubtest.FreePort(t)
	col := startCollector(t, sharedConfig(port, server.addr))
	// The stopped publisher is read like any other.
	waitEntityEvents(t, server, stopped.Pid, 1)

	late := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	late.Publish(good)
	began := time.Now()
	events := waitEntityEvents(t, server, late.Pid, 1)
	assert.Equal(t, "on-time", events[0].attrs["service.name"])
	t.Logf("entity event of the late publisher after %s", time.Since(began))

	client := plogotlp.NewGRPCClient(dial(t, port))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		pid  int
		body string
		want string
	}{
		{late.Pid, "from-late", "on-time"},
		{stopped.Pid, "from-stopped", "stopped"},
		{header.Pid, "from-header-stall", ""},
		{payload.Pid, "from-payload-stall", ""},
	} {
		_, err := client.Export(ctx, plogotlp.NewExportRequestFromLogs(logsWithPid(tc.pid, tc.body)))
		require.NoError(t, err)
		var got string
		require.Eventually(t, func() bool {
			var ok bool
			got, ok = enrichedService(server, tc.body)
			return ok
		}, 20*time.Second, 20*time.Millisecond, "record %s exported", tc.body)
		assert.Equal(t, tc.want, got, tc.body)
	}
	for _, p := range []*pubtest.Proc{header, payload} {
		for _, e := range entityEvents(server.allLogs()) {
			assert.NotEqual(t, int64(p.Pid), e.pid, "a stalled process reported as an entity")
		}
	}

	took := col.Stop(t)
	assert.Less(t, took, 5*time.Second, "SIGTERM to exit while reads are stuck")
	out := col.Output.String()
	assert.Contains(t, out, "Shutdown complete")
	assert.NotContains(t, out, "panic")
	assert.Equal(t, 1, strings.Count(out, "quarantined"), "one quarantine warning:\n%s", out)
}
