// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

const unknownPid = 4_000_000 // above pid_max: never a process

func enrichConfig(otlpPort int, server string) string {
	return fmt.Sprintf(`
extensions:
  process_context:
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
processors:
  process_context:
    # The batch may wait for the first scan's reads as long as it takes:
    # what is tested here is where the pid is found, not how fast a
    # loaded machine reads (firstbatch_test.go tests the default).
    lookup_timeout: 5s
`, otlpPort) + pubtest.ExportingTo(server) + `  extensions: [process_context]
  pipelines:
    logs:
      receivers: [otlp]
      processors: [process_context]
      exporters: [otlp_grpc]
    profiles:
      receivers: [otlp]
      processors: [process_context]
      exporters: [otlp_grpc]
`
}

// publishService starts a publisher of kind with service.name service and
// thread-context attributes that must never reach a resource.
func publishService(t *testing.T, kind pubtest.Kind, service string) *pubtest.Proc {
	t.Helper()
	res := pcommon.NewMap()
	res.PutStr("service.name", service)
	res.PutStr("deployment.environment.name", "e2e")
	attrs := pcommon.NewMap()
	attrs.PutStr("threadlocal.schema_version", "tlsdesc_v1_dev")
	payload, err := otep.Encode(res, attrs)
	require.NoError(t, err)
	p := pubtest.Start(t, kind, pubtest.Options{})
	p.Publish(payload)
	return p
}

func dial(t *testing.T, port int) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func TestEnrichmentThroughTheCollector(t *testing.T) {
	server := startOTLPServer(t)
	port := pubtest.FreePort(t)
	// Published before the collector starts: its first scan knows them.
	// (Telemetry sent within a millisecond of a publish can beat the
	// publication event to the tracker and pass through unenriched.)
	goPub := publishService(t, pubtest.Go, "e2e-go-svc")
	cPub := publishService(t, pubtest.C, "e2e-c-svc")
	startCollector(t, enrichConfig(port, server.addr))
	conn := dial(t, port)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("logs", func(t *testing.T) {
		ld := plog.NewLogs()
		addRecords := func(rl plog.ResourceLogs, prefix string, pids ...any) {
			sl := rl.ScopeLogs().AppendEmpty()
			for i, pid := range pids {
				lr := sl.LogRecords().AppendEmpty()
				lr.Body().SetStr(fmt.Sprintf("%s/%d", prefix, i))
				switch v := pid.(type) {
				case int:
					lr.Attributes().PutInt("process.pid", int64(v))
				case string:
					lr.Attributes().PutStr("process.pid", v)
				}
			}
		}
		resourcePid := ld.ResourceLogs().AppendEmpty()
		resourcePid.Resource().Attributes().PutInt("process.pid", int64(goPub.Pid))
		resourcePid.Resource().Attributes().PutStr("host.name", "h1")
		addRecords(resourcePid, "resource-pid", nil, nil)
		unknown := ld.ResourceLogs().AppendEmpty()
		unknown.Resource().Attributes().PutInt("process.pid", unknownPid)
		addRecords(unknown, "unknown-resource-pid", nil)
		mixed := ld.ResourceLogs().AppendEmpty()
		mixed.Resource().Attributes().PutStr("host.name", "h2")
		addRecords(mixed, "mixed", strconv.Itoa(cPub.Pid), cPub.Pid, goPub.Pid, nil, unknownPid)
		sent := ld.LogRecordCount()

		_, err := plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
		require.NoError(t, err)

		// Each record's body names the pid it came from: map body → resource.
		byBody := map[string]pcommon.Map{}
		require.Eventually(t, func() bool {
			clear(byBody)
			for _, l := range server.allLogs() {
				for _, rl := range l.ResourceLogs().All() {
					for _, sl := range rl.ScopeLogs().All() {
						for _, lr := range sl.LogRecords().All() {
							byBody[lr.Body().Str()] = rl.Resource().Attributes()
						}
					}
				}
			}
			return len(byBody) >= sent
		}, 10*time.Second, 20*time.Millisecond)
		require.Len(t, byBody, sent, "nothing lost, nothing duplicated")

		service := func(body string) any { return byBody[body].AsRaw()["service.name"] }
		assert.Equal(t, "e2e-go-svc", service("resource-pid/0"), "resource pid")
		assert.Equal(t, "e2e-go-svc", service("resource-pid/1"))
		assert.Equal(t, "h1", byBody["resource-pid/0"].AsRaw()["host.name"])
		assert.Equal(t, map[string]any{"process.pid": int64(unknownPid)}, byBody["unknown-resource-pid/0"].AsRaw(), "unknown pid: unchanged")
		assert.Equal(t, "e2e-c-svc", service("mixed/0"), "string record pid")
		assert.Equal(t, "e2e-c-svc", service("mixed/1"), "int record pid")
		assert.Equal(t, "e2e-go-svc", service("mixed/2"))
		assert.Equal(t, "h2", byBody["mixed/2"].AsRaw()["host.name"], "original resource attributes kept")
		assert.Equal(t, map[string]any{"host.name": "h2"}, byBody["mixed/3"].AsRaw(), "records without a pid stay where they were")
		assert.Equal(t, map[string]any{"host.name": "h2"}, byBody["mixed/4"].AsRaw(), "unknown record pid stays")
		for body, res := range byBody {
			assert.NotContains(t, res.AsRaw(), "threadlocal.schema_version", body)
		}
	})

	t.Run("profiles", func(t *testing.T) {
		pd := pprofile.NewProfiles()
		dict := pd.Dictionary()
		strs := map[string]int32{}
		str := func(v string) int32 {
			if i, ok := strs[v]; ok {
				return i
			}
			dict.StringTable().Append(v)
			strs[v] = int32(dict.StringTable().Len() - 1)
			return strs[v]
		}
		str("")
		dict.AttributeTable().AppendEmpty()
		dict.StackTable().AppendEmpty()
		pidAttr := map[int]int32{}
		for _, pid := range []int{goPub.Pid, cPub.Pid, unknownPid} {
			kv := dict.AttributeTable().AppendEmpty()
			kv.SetKeyStrindex(str("process.pid"))
			kv.Value().SetInt(int64(pid))
			pidAttr[pid] = int32(dict.AttributeTable().Len() - 1)
		}
		newProfile := func(rp pprofile.ResourceProfiles) pprofile.Profile {
			p := rp.ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
			p.SampleType().SetTypeStrindex(str("samples"))
			p.SampleType().SetUnitStrindex(str("count"))
			p.SetPeriod(10_000_000)
			p.SetTime(pcommon.NewTimestampFromTime(time.Now()))
			return p
		}
		addSample := func(p pprofile.Profile, value int64, pid int) {
			s := p.Samples().AppendEmpty()
			s.Values().Append(value)
			if pid != 0 {
				s.AttributeIndices().Append(pidAttr[pid])
			}
		}
		// Newer eBPF profiler layout: the pid on the resource.
		byResource := pd.ResourceProfiles().AppendEmpty()
		byResource.Resource().Attributes().PutInt("process.pid", int64(cPub.Pid))
		p := newProfile(byResource)
		addSample(p, 1, 0)
		addSample(p, 2, 0)
		// Older layout: several pids on the samples under one resource.
		bySample := pd.ResourceProfiles().AppendEmpty()
		bySample.Resource().Attributes().PutStr("host.name", "h3")
		p = newProfile(bySample)
		addSample(p, 10, goPub.Pid)
		addSample(p, 20, cPub.Pid)
		addSample(p, 30, goPub.Pid)
		addSample(p, 40, unknownPid)
		addSample(p, 50, 0)

		_, err := pprofileotlp.NewGRPCClient(conn).Export(ctx, pprofileotlp.NewExportRequestFromProfiles(pd))
		require.NoError(t, err)

		// Sample values identify samples: value → the service of its resource.
		services := map[int64]any{}
		require.Eventually(t, func() bool {
			clear(services)
			for _, out := range server.allProfiles() {
				for _, rp := range out.ResourceProfiles().All() {
					for _, sp := range rp.ScopeProfiles().All() {
						for _, prof := range sp.Profiles().All() {
							for _, s := range prof.Samples().All() {
								services[s.Values().At(0)] = rp.Resource().Attributes().AsRaw()["service.name"]
								assert.NotContains(t, rp.Resource().Attributes().AsRaw(), "threadlocal.schema_version")
							}
						}
					}
				}
			}
			return len(services) >= 7
		}, 10*time.Second, 20*time.Millisecond)
		assert.Equal(t, map[int64]any{
			1: "e2e-c-svc", 2: "e2e-c-svc", // resource pid
			10: "e2e-go-svc", 20: "e2e-c-svc", 30: "e2e-go-svc", // regrouped by sample pid
			40: nil, 50: nil, // unknown pid, no pid: unchanged
		}, services)
	})
}
