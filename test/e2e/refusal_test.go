// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// refusalConfig: the receiver's entity events through the memory_limiter
// to an exporter that hands the backend's refusals back (no queue, no
// retry of its own), so that the receiver is the one that keeps them.
func refusalConfig(server string) string {
	return fmt.Sprintf(`
extensions:
  process_context:
    collection_interval: 200ms
    rescan_interval: 1s
receivers:
  process_context:
    retry_on_failure:
      initial_interval: 50ms
      max_interval: 200ms
processors:
  memory_limiter:
    check_interval: 1s
    limit_percentage: 80
    spike_limit_percentage: 20
exporters:
  otlp_grpc:
    endpoint: %s
    tls:
      insecure: true
    sending_queue:
      enabled: false
    retry_on_failure:
      enabled: false
service:
  telemetry:
    metrics:
      level: none
  extensions: [process_context]
  pipelines:
    logs/entities:
      receivers: [process_context]
      processors: [memory_limiter]
      exporters: [otlp_grpc]
`, server)
}

// TestEntityEventsAfterTheBackendRefused: publishers exit while the
// backend answers Unavailable; once it accepts again, every delete event
// arrives, exactly once, after its state.
func TestEntityEventsAfterTheBackendRefused(t *testing.T) {
	server := startOTLPServer(t)
	col := startCollector(t, refusalConfig(server.addr))

	var pubs []*pubtest.Proc
	for i, kind := range []pubtest.Kind{pubtest.Go, pubtest.C, pubtest.C} {
		p := pubtest.Start(t, kind, pubtest.Options{})
		p.Publish(otep.EncodeStrings(map[string]string{"service.name": fmt.Sprintf("refused-%d", i)}))
		pubs = append(pubs, p)
	}
	for _, p := range pubs {
		waitEntityEvents(t, server, p.Pid, 1)
	}

	server.setRefuse(status.Error(codes.Unavailable, "backend restarting"))
	for _, p := range pubs {
		p.Exit()
	}
	require.Eventually(t, func() bool { return server.refusals() >= 3 }, 20*time.Second, 20*time.Millisecond,
		"the deletes were not retried: %d refusals\n%s", server.refusals(), col.Output.String())
	server.setRefuse(nil)

	for _, p := range pubs {
		waitEntityEvents(t, server, p.Pid, 2)
	}
	col.Stop(t) // what else it had to send, it has sent
	for _, p := range pubs {
		events := waitEntityEvents(t, server, p.Pid, 2)
		require.Len(t, events, 2, "pid %d: one state and one delete: %+v", p.Pid, events)
		assert.Equal(t, "entity_state", events[0].kind)
		assert.Equal(t, "entity_delete", events[1].kind)
		assert.Equal(t, "process_exited", events[1].reason)
	}
	assert.Contains(t, col.Output.String(), "Entity events refused by the next consumer; kept and retried")
	assert.Contains(t, col.Output.String(), "Entity events accepted again by the next consumer")
}
