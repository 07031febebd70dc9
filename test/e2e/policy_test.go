// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// claimedContainer is the container.id our publishers claim: none of them
// is in that container.
const claimedContainer = "c1a1medc0ffee0000000000000000000000000000000000000000000000000002"

// policyConfig runs the processor twice, at its defaults on otlp (port) and
// with the identity family's override on otlp/override (overridePort),
// each exporting to its own server, and the receiver's entity events (spec
// shape) to the first.
func policyConfig(port, overridePort int, server, overrideServer string) string {
	return fmt.Sprintf(`
extensions:
  process_context:
    collection_interval: 200ms
    rescan_interval: 1s
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
  otlp/override:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
  process_context:
    entity_event_format: spec
processors:
  process_context:
  process_context/override:
    attributes:
      identity: {override: true}
exporters:
  otlp_grpc:
    endpoint: %s
    tls: {insecure: true}
    sending_queue: {batch: {flush_timeout: 50ms}}
  otlp_grpc/override:
    endpoint: %s
    tls: {insecure: true}
    sending_queue: {batch: {flush_timeout: 50ms}}
service:
  telemetry:
    metrics:
      level: none
  extensions: [process_context]
  pipelines:
    logs:
      receivers: [otlp]
      processors: [process_context]
      exporters: [otlp_grpc]
    profiles:
      receivers: [otlp]
      processors: [process_context]
      exporters: [otlp_grpc]
    logs/override:
      receivers: [otlp/override]
      processors: [process_context/override]
      exporters: [otlp_grpc/override]
    profiles/override:
      receivers: [otlp/override]
      processors: [process_context/override]
      exporters: [otlp_grpc/override]
    logs/entities:
      receivers: [process_context]
      exporters: [otlp_grpc]
`, port, overridePort, server, overrideServer)
}

// policyPub is a real publisher of the test and what the collector itself
// knows of it.
type policyPub struct {
	name    string
	pid     int // the host's
	service string
	// container is the container.id of its cgroup, "" for none.
	container string
	// vendor: it publishes acme.team.
	vendor bool
}

// publishPolicyResource publishes, from a publisher of ours, a resource a
// tracer of the field would: its service, host.name (127.0.0.1 or empty),
// a container.id of its own, a vendor key, and threadlocal.* in the
// non-resource attributes.
func publishPolicyResource(t *testing.T, p *pubtest.Proc, service, hostName string) {
	t.Helper()
	res := pcommon.NewMap()
	require.NoError(t, res.FromRaw(map[string]any{
		"service.name": service, "service.version": "1.0", "host.name": hostName,
		"container.id": claimedContainer, "acme.team": "payments", "k8s.pod.uid": "published-pod",
	}))
	attrs := pcommon.NewMap()
	attrs.PutStr("threadlocal.schema_version", "tlsdesc_v1_dev")
	attrs.PutStr("datadog.process_tags", "entrypoint.name:e2e")
	payload, err := otep.Encode(res, attrs)
	require.NoError(t, err)
	p.Publish(payload)
}

// cgroupContainer is the container.id the host reads from pid's cgroup.
func cgroupContainer(t *testing.T, pid int) string {
	t.Helper()
	fs, err := procfs.NewFS("/")
	require.NoError(t, err)
	id, err := procfs.NewIdentityReader(fs).Identity(pid)
	require.NoError(t, err)
	return id.ContainerID
}

// Real publishers started after the collector — ours (Go: host.name
// 127.0.0.1; C: an empty host.name; both a container.id of their own, one
// of them in a container of another id), and dd-trace-go's tracer told to
// name its host 127.0.0.1 — and logs and profiles naming their pids, over
// OTLP through the built collector: the telemetry keeps its host.name and
// gets none of theirs, no output carries their host.name or container.id,
// service.* is added and, with the identity override, replaces the
// telemetry's own; the entity events of the same run describe no published
// host.*, container.*, threadlocal.* or non-resource attribute, and the
// collector's own container.id only for the process in a container.
func TestPolicyThroughTheCollector(t *testing.T) {
	pubtest.RequireRoot(t) // a container's cgroup
	server, overrideServer := startOTLPServer(t), startOTLPServer(t)
	port, overridePort := pubtest.FreePort(t), pubtest.FreePort(t)
	startCollector(t, policyConfig(port, overridePort, server.addr, overrideServer.addr))

	goPub := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	publishPolicyResource(t, goPub, "policy-go", "127.0.0.1")
	cPub := pubtest.Start(t, pubtest.C, pubtest.Options{})
	publishPolicyResource(t, cPub, "policy-c", "")
	raw := make([]byte, 32)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	cgroupID := hex.EncodeToString(raw)
	contained := pubtest.StartContained(t, pubtest.C, "/sys/fs/cgroup/unified/system.slice/docker-"+cgroupID+".scope")
	publishPolicyResource(t, contained, "policy-contained", "127.0.0.1")
	dd := pubtest.StartDDTracer(t, "DD_SERVICE=policy-dd", "DD_ENV=e2e", "DD_TRACE_SOURCE_HOSTNAME=127.0.0.1")

	pubs := []policyPub{
		{name: "go", pid: goPub.Pid, service: "policy-go", vendor: true},
		{name: "c", pid: cPub.Pid, service: "policy-c", vendor: true},
		{name: "contained", pid: contained.HostPid(), service: "policy-contained", vendor: true},
		{name: "dd-trace-go", pid: dd.Pid, service: "policy-dd"},
	}
	for i := range pubs {
		pubs[i].container = cgroupContainer(t, pubs[i].pid)
	}
	require.Equal(t, cgroupID, pubs[2].container, "the contained publisher's cgroup")

	// The collector has read each publisher once its entity event is out:
	// from then on its telemetry is enriched (the batch need not win a
	// race with the publication).
	for _, p := range pubs {
		waitEntityEvents(t, server, p.pid, 1)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, target := range []int{port, overridePort} {
		conn := dial(t, target)
		_, err := plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(policyLogs(pubs)))
		require.NoError(t, err)
		_, err = pprofileotlp.NewGRPCClient(conn).Export(ctx, pprofileotlp.NewExportRequestFromProfiles(policyProfiles(pubs)))
		require.NoError(t, err)
	}

	for _, tc := range []struct {
		name     string
		s        *otlpServer
		override bool
	}{{"defaults", server, false}, {"identity override", overrideServer, true}} {
		t.Run(tc.name, func(t *testing.T) {
			logs := waitLogBodies(t, tc.s, 4*len(pubs))
			profiles := waitSampleValues(t, tc.s, 2*len(pubs))
			for i, p := range pubs {
				t.Run(p.name, func(t *testing.T) {
					assert.Equal(t, "node-1", logs[p.name+"/own"]["host.name"], "the telemetry's host.name stays")
					assert.Equal(t, "node-2", logs[p.name+"/guessed"]["host.name"], "the telemetry's host.name stays")
					assert.Equal(t, "node-3", profiles[int64(2*i+2)]["host.name"], "the telemetry's host.name stays")
					if tc.override {
						assert.Equal(t, p.service, logs[p.name+"/guessed"]["service.name"], "the published service replaces the telemetry's")
					} else {
						assert.Equal(t, "guessed", logs[p.name+"/guessed"]["service.name"], "the telemetry's service stays")
					}
					for what, res := range map[string]map[string]any{
						"own": logs[p.name+"/own"], "bare": logs[p.name+"/bare"], "record": logs[p.name+"/record"],
						"guessed": logs[p.name+"/guessed"], "profile": profiles[int64(2*i+1)], "profile with host.name": profiles[int64(2*i+2)],
					} {
						assertPolicyResource(t, p, what, res)
					}
				})
			}
			assertNeverOut(t, tc.s)
		})
	}

	t.Run("entity events", func(t *testing.T) {
		host := thisHost(t)
		for _, p := range pubs {
			desc := waitEvent(t, server, "entity.state", "process",
				map[string]any{"process.pid": fmt.Sprint(p.pid), "process.creation.time": waitEntityEvents(t, server, p.pid, 1)[0].created})
			attrs, ok := desc["entity.description"].(map[string]any)
			require.True(t, ok, "%s: description", p.name)
			assert.Equal(t, p.service, attrs["service.name"], p.name)
			for k := range attrs {
				assert.False(t, strings.HasPrefix(k, "host.") || strings.HasPrefix(k, "threadlocal.") || strings.HasPrefix(k, "datadog."),
					"%s: %s in the description", p.name, k)
			}
			if p.container != "" {
				assert.Equal(t, p.container, attrs["container.id"], "%s: the cgroup's container.id", p.name)
			} else {
				assert.NotContains(t, attrs, "container.id", "%s: in no container", p.name)
			}
			assert.NotContains(t, attrs, "k8s.pod.uid", p.name)
			assert.NotContains(t, desc, "process_context.attributes", p.name)
		}
		for _, l := range server.allLogs() {
			for _, rl := range l.ResourceLogs().All() {
				if isEntityEvents(rl) {
					assert.Equal(t, host.Name, rl.Resource().Attributes().AsRaw()["host.name"], "the events' host is this one")
				}
			}
		}
	})
}

// isEntityEvents reports whether a resource's logs are entity events.
func isEntityEvents(rl plog.ResourceLogs) bool {
	for _, sl := range rl.ScopeLogs().All() {
		if v, ok := sl.Scope().Attributes().Get("otel.entity.event_as_log"); ok && v.Bool() {
			return true
		}
	}
	return false
}

// assertPolicyResource checks an enriched resource of p's telemetry.
func assertPolicyResource(t *testing.T, p policyPub, what string, res map[string]any) {
	t.Helper()
	require.NotNil(t, res, "%s: not received", what)
	switch what {
	case "own", "guessed", "profile with host.name":
	default:
		assert.Equal(t, p.service, res["service.name"], "%s: the published service, added", what)
		assert.NotContains(t, res, "host.name", "%s: no publisher's host.name", what)
	}
	if p.vendor {
		assert.Equal(t, "payments", res["acme.team"], "%s: a vendor key, added where missing", what)
	}
	if p.container != "" {
		assert.Equal(t, p.container, res["container.id"], "%s: the cgroup's container.id", what)
	} else {
		assert.NotContains(t, res, "container.id", "%s: in no container, none", what)
	}
	assert.NotContains(t, res, "k8s.pod.uid", what)
}

// assertNeverOut fails when anything the server received carries a
// publisher's host.name or container.id, or its non-resource attributes.
func assertNeverOut(t *testing.T, s *otlpServer) {
	t.Helper()
	var out strings.Builder
	for _, l := range s.allLogs() {
		b, err := (&plog.JSONMarshaler{}).MarshalLogs(l)
		require.NoError(t, err)
		out.Write(b)
	}
	for _, p := range s.allProfiles() {
		b, err := (&pprofile.JSONMarshaler{}).MarshalProfiles(p)
		require.NoError(t, err)
		out.Write(b)
	}
	for _, never := range []string{"127.0.0.1", claimedContainer, "published-pod", "threadlocal", "tlsdesc", "datadog.process_tags", "entrypoint.name"} {
		assert.NotContains(t, out.String(), never)
	}
}

// policyLogs are four resources per publisher, bodies "<name>/<variant>":
// own (its pid and a host.name), bare (its pid only), guessed (a host.name
// and a guessed service.name, the pid on the record: a host agent's,
// regrouped) and record (the pid on the record only).
func policyLogs(pubs []policyPub) plog.Logs {
	ld := plog.NewLogs()
	add := func(res map[string]any, body string, recordPid int) {
		rl := ld.ResourceLogs().AppendEmpty()
		_ = rl.Resource().Attributes().FromRaw(res)
		lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.Body().SetStr(body)
		if recordPid != 0 {
			lr.Attributes().PutInt("process.pid", int64(recordPid))
		}
	}
	for _, p := range pubs {
		add(map[string]any{"process.pid": int64(p.pid), "host.name": "node-1"}, p.name+"/own", 0)
		add(map[string]any{"process.pid": int64(p.pid)}, p.name+"/bare", 0)
		add(map[string]any{"host.name": "node-2", "service.name": "guessed"}, p.name+"/guessed", p.pid)
		add(map[string]any{}, p.name+"/record", p.pid)
	}
	return ld
}

// policyProfiles are two resources per publisher (the i-th), each its pid
// and one sample: value 2i+1 without a host.name, 2i+2 with node-3.
func policyProfiles(pubs []policyPub) pprofile.Profiles {
	pd := pprofile.NewProfiles()
	dict := pd.Dictionary()
	dict.StringTable().Append("", "samples", "count")
	dict.AttributeTable().AppendEmpty()
	dict.StackTable().AppendEmpty()
	for i, p := range pubs {
		for v, host := range []string{"", "node-3"} {
			rp := pd.ResourceProfiles().AppendEmpty()
			rp.Resource().Attributes().PutInt("process.pid", int64(p.pid))
			if host != "" {
				rp.Resource().Attributes().PutStr("host.name", host)
			}
			prof := rp.ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
			prof.SampleType().SetTypeStrindex(1)
			prof.SampleType().SetUnitStrindex(2)
			prof.SetTime(pcommon.NewTimestampFromTime(time.Now()))
			prof.Samples().AppendEmpty().Values().Append(int64(2*i + v + 1))
		}
	}
	return pd
}

// waitLogBodies waits for n log records (not entity events) and returns
// the resource attributes of each by its body.
func waitLogBodies(t *testing.T, s *otlpServer, n int) map[string]map[string]any {
	t.Helper()
	byBody := map[string]map[string]any{}
	require.Eventually(t, func() bool {
		clear(byBody)
		for _, l := range s.allLogs() {
			for _, rl := range l.ResourceLogs().All() {
				if isEntityEvents(rl) {
					continue
				}
				for _, sl := range rl.ScopeLogs().All() {
					for _, lr := range sl.LogRecords().All() {
						byBody[lr.Body().Str()] = rl.Resource().Attributes().AsRaw()
					}
				}
			}
		}
		return len(byBody) >= n
	}, 20*time.Second, 20*time.Millisecond, "want %d log records", n)
	require.Len(t, byBody, n)
	return byBody
}

// waitSampleValues waits for n profile samples and returns the resource
// attributes of each by its value.
func waitSampleValues(t *testing.T, s *otlpServer, n int) map[int64]map[string]any {
	t.Helper()
	byValue := map[int64]map[string]any{}
	require.Eventually(t, func() bool {
		clear(byValue)
		for _, pd := range s.allProfiles() {
			for _, rp := range pd.ResourceProfiles().All() {
				for _, sp := range rp.ScopeProfiles().All() {
					for _, prof := range sp.Profiles().All() {
						for _, smp := range prof.Samples().All() {
							byValue[smp.Values().At(0)] = rp.Resource().Attributes().AsRaw()
						}
					}
				}
			}
		}
		return len(byValue) >= n
	}, 20*time.Second, 20*time.Millisecond, "want %d samples", n)
	require.Len(t, byValue, n)
	return byValue
}
