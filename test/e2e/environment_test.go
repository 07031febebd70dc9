// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
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
	"go.opentelemetry.io/collector/pdata/xpdata/entity"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// envSecret stands for a password in the environment of every process of
// these tests: it must appear nowhere the collector writes.
const envSecret = "e2e-hunter2-NEVER-SHOWN"

// startWithEnv starts a program whose environment holds env and a secret;
// it is killed when the test ends.
func startWithEnv(t *testing.T, env []string, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "DB_PASSWORD=" + envSecret}, env...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// environmentConfig runs the three components at the extension's
// defaults: entity events and enriched logs and profiles go to server, the
// collector's own metrics to promPort.
func environmentConfig(t *testing.T, otlpPort, promPort int, server string) string {
	return fmt.Sprintf(`
extensions:
  process_context:
receivers:
  process_context:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
processors:
  process_context:
`, otlpPort) + soakExporting(t, server, promPort, true, `  extensions: [process_context]
  pipelines:
    logs/entities:
      receivers: [process_context]
      exporters: [otlp_grpc]
    logs:
      receivers: [otlp]
      processors: [process_context]
      exporters: [otlp_grpc]
    profiles:
      receivers: [otlp]
      processors: [process_context]
      exporters: [otlp_grpc]
`)
}

// A service that only sets OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
// gets its entity event and its telemetry enriched, with a process entity
// reference, through the built collector at default settings; a secret
// beside those variables appears nowhere.
func TestEnvironmentIdentityThroughTheCollector(t *testing.T) {
	// Started before the collector (found by its first scan) ...
	svc := startWithEnv(t, []string{
		"OTEL_SERVICE_NAME=e2e-env-svc",
		"OTEL_RESOURCE_ATTRIBUTES=service.name=overridden,deployment.environment.name=e2e%2Cenv,team=caf%C3%A9",
	}, "sleep", "600")
	// ... a value that fails to decode: the whole variable is dropped, as
	// the SDK would, the service name stays.
	broken := startWithEnv(t, []string{
		"OTEL_SERVICE_NAME=e2e-env-broken",
		"OTEL_RESOURCE_ATTRIBUTES=team=ok,token=" + envSecret + "%ZZ",
	}, "sleep", "600")
	// ... and a process with both: its context wins, whole.
	bothCmd := exec.Command(pubtest.Binary(t, pubtest.Go), "-control")
	bothCmd.Env = []string{"OTEL_SERVICE_NAME=env-loses", "OTEL_RESOURCE_ATTRIBUTES=from.env=yes", "DB_PASSWORD=" + envSecret}
	both := pubtest.StartCommand(t, pubtest.Go, bothCmd)
	both.Publish(otep.EncodeStrings(map[string]string{"service.name": "context-wins"}))

	server := startOTLPServer(t)
	otlpPort, promPort := pubtest.FreePort(t), pubtest.FreePort(t)
	c := startCollector(t, environmentConfig(t, otlpPort, promPort, server.addr))

	// Started after: found from its exec, then it execs into a program
	// with other variables: the entity changes.
	late := startWithEnv(t, []string{"OTEL_SERVICE_NAME=before-exec"}, "sh", "-c",
		"sleep 4; exec env OTEL_SERVICE_NAME=after-exec sleep 600") // DB_PASSWORD stays in its environment
	// An SDK that publishes a while after start: named by its environment
	// first, then by its context.
	laterCmd := exec.Command(pubtest.Binary(t, pubtest.Go), "-control")
	laterCmd.Env = []string{"OTEL_SERVICE_NAME=env-first", "DB_PASSWORD=" + envSecret}
	later := pubtest.StartCommand(t, pubtest.Go, laterCmd)

	t.Run("entity events", func(t *testing.T) {
		e := waitEntityEvents(t, server, svc.Process.Pid, 1)[0]
		assert.Equal(t, "entity_state", e.kind)
		assert.Equal(t, "e2e-env-svc", e.attrs["service.name"], "OTEL_SERVICE_NAME wins")
		assert.Equal(t, "e2e,env", e.attrs["deployment.environment.name"], "percent-decoded")
		assert.Equal(t, "café", e.attrs["team"])
		assert.Equal(t, "environment", e.attrs["process_context.source"])
		assert.NotEmpty(t, e.created)

		b := waitEntityEvents(t, server, broken.Process.Pid, 1)[0]
		assert.Equal(t, "e2e-env-broken", b.attrs["service.name"])
		assert.NotContains(t, b.attrs, "team", "an undecodable OTEL_RESOURCE_ATTRIBUTES is dropped whole")

		w := waitEntityEvents(t, server, both.Pid, 1)[0]
		assert.Equal(t, "context-wins", w.attrs["service.name"])
		assert.NotContains(t, w.attrs, "from.env")
		assert.Equal(t, "context", w.attrs["process_context.source"])

		// Named by its environment, then it publishes: a state change.
		first := waitEntityEvents(t, server, later.Pid, 1)[0]
		assert.Equal(t, "env-first", first.attrs["service.name"])
		assert.Equal(t, "environment", first.attrs["process_context.source"])
		later.Publish(otep.EncodeStrings(map[string]string{"service.name": "published-later"}))
		require.Eventually(t, func() bool {
			for _, e := range entityEvents(server.allLogs()) {
				if e.pid == int64(later.Pid) && e.kind == "entity_state" && e.attrs["service.name"] == "published-later" {
					return e.attrs["process_context.source"] == "context"
				}
			}
			return false
		}, 60*time.Second, 50*time.Millisecond, "the later publication changes the entity's source")

		// The exec changes the entity: the new program's variables.
		require.Eventually(t, func() bool {
			for _, e := range entityEvents(server.allLogs()) {
				if e.pid == int64(late.Process.Pid) && e.kind == "entity_state" && e.attrs["service.name"] == "after-exec" {
					return true
				}
			}
			return false
		}, 30*time.Second, 50*time.Millisecond, "the exec'd program's identity")
		var names []any
		for _, e := range waitEntityEvents(t, server, late.Process.Pid, 1) {
			if e.kind == "entity_state" {
				names = append(names, e.attrs["service.name"])
			}
		}
		assert.Equal(t, "before-exec", names[0])
	})

	conn := dial(t, otlpPort)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("logs", func(t *testing.T) {
		ld := plog.NewLogs()
		for _, pid := range []int{svc.Process.Pid, both.Pid} {
			rl := ld.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutInt("process.pid", int64(pid))
			rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr(fmt.Sprint(pid))
		}
		_, err := plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
		require.NoError(t, err)
		byPid := map[string]pcommon.Resource{}
		require.Eventually(t, func() bool {
			for _, l := range server.allLogs() {
				for _, rl := range l.ResourceLogs().All() {
					for _, sl := range rl.ScopeLogs().All() {
						for _, lr := range sl.LogRecords().All() {
							byPid[lr.Body().Str()] = rl.Resource()
						}
					}
				}
			}
			return len(byPid) >= 2 // entity events have no body
		}, 10*time.Second, 20*time.Millisecond)

		res := byPid[fmt.Sprint(svc.Process.Pid)]
		attrs := res.Attributes().AsRaw()
		assert.Equal(t, "e2e-env-svc", attrs["service.name"])
		assert.Equal(t, "e2e,env", attrs["deployment.environment.name"])
		assert.NotEmpty(t, attrs["process.creation.time"], "the process entity's second identifying attribute")
		refs := map[string][]string{}
		for _, ref := range entity.ResourceEntityRefs(res).All() {
			refs[ref.Type()] = ref.IdKeys().AsRaw()
		}
		assert.Equal(t, []string{"process.pid", "process.creation.time"}, refs["process"])
		assert.Equal(t, []string{"service.name"}, refs["service"])

		assert.Equal(t, "context-wins", byPid[fmt.Sprint(both.Pid)].Attributes().AsRaw()["service.name"])
	})

	t.Run("profiles", func(t *testing.T) {
		pd := pprofile.NewProfiles()
		dict := pd.Dictionary()
		dict.StringTable().Append("", "process.pid", "samples", "count")
		dict.AttributeTable().AppendEmpty()
		dict.StackTable().AppendEmpty()
		kv := dict.AttributeTable().AppendEmpty()
		kv.SetKeyStrindex(1)
		kv.Value().SetInt(int64(svc.Process.Pid))
		p := pd.ResourceProfiles().AppendEmpty().ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
		p.SampleType().SetTypeStrindex(2)
		p.SampleType().SetUnitStrindex(3)
		p.SetTime(pcommon.NewTimestampFromTime(time.Now()))
		s := p.Samples().AppendEmpty()
		s.Values().Append(77)
		s.AttributeIndices().Append(1)
		_, err := pprofileotlp.NewGRPCClient(conn).Export(ctx, pprofileotlp.NewExportRequestFromProfiles(pd))
		require.NoError(t, err)
		var got map[string]any
		require.Eventually(t, func() bool {
			for _, out := range server.allProfiles() {
				for _, rp := range out.ResourceProfiles().All() {
					got = rp.Resource().Attributes().AsRaw()
					if got["service.name"] != nil {
						return true
					}
				}
			}
			return false
		}, 10*time.Second, 20*time.Millisecond)
		assert.Equal(t, "e2e-env-svc", got["service.name"], "the sample's pid names its resource")
		assert.Equal(t, "café", got["team"])
	})

	t.Run("the secret is nowhere", func(t *testing.T) {
		metrics := scrapeAll(t, promPort)
		assert.Contains(t, metrics, `source="environment"`, "the processor counts what the environment named")
		var exported strings.Builder
		for _, l := range server.allLogs() {
			b, err := (&plog.JSONMarshaler{}).MarshalLogs(l)
			require.NoError(t, err)
			exported.Write(b)
		}
		for _, pd := range server.allProfiles() {
			b, err := (&pprofile.JSONMarshaler{}).MarshalProfiles(pd)
			require.NoError(t, err)
			exported.Write(b)
		}
		for what, text := range map[string]string{"output": c.Output.String(), "metrics": metrics, "exported": exported.String()} {
			assert.NotContains(t, text, envSecret, what)
			assert.NotContains(t, text, "DB_PASSWORD", what)
		}
	})
}

// scrapeAll returns the collector's Prometheus endpoint's whole text.
func scrapeAll(t *testing.T, port int) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// A process in a real container that publishes no context but has the SDK
// variables: its entity event (the specification's shape) says where its
// identity comes from and that it runs on its container.
func TestEnvironmentIdentityInAContainer(t *testing.T) {
	image := publisherImage(t)
	name := containerName("envpub")
	cmd := exec.Command(podman(t), "run", "--rm", "-i", "--network", "none", "--name", name,
		"-e", "OTEL_SERVICE_NAME=env-in-a-container", "-e", "DB_PASSWORD="+envSecret, image)
	pubtest.StartCommand(t, pubtest.C, cmd) // publishes nothing
	t.Cleanup(func() { _ = exec.Command(podman(t), "rm", "-f", "-t", "0", name).Run() })
	fields := strings.Fields(podmanOut(t, "inspect", "--format", "{{.Id}} {{.State.Pid}}", name))
	require.Len(t, fields, 2)
	id, hostPid := fields[0], fields[1]

	server := startOTLPServer(t)
	cfg := containersConfig("/", pubtest.FreePort(t), server.addr)
	const receiver = "receivers:\n  process_context:\n"
	require.Contains(t, cfg, receiver)
	cfg = strings.Replace(cfg, receiver, receiver+"    entity_event_format: spec\n", 1)
	startCollector(t, cfg)

	var state plog.LogRecord
	require.Eventually(t, func() bool {
		for _, l := range server.allLogs() {
			for _, rl := range l.ResourceLogs().All() {
				for _, sl := range rl.ScopeLogs().All() {
					for _, lr := range sl.LogRecords().All() {
						eid, _ := lr.Attributes().Get("entity.id")
						if lr.EventName() == "entity.state" && eid.Type() == pcommon.ValueTypeMap &&
							eid.Map().AsRaw()["process.pid"] == hostPid { // a string: the pid in decimal
							state = lr
							return true
						}
					}
				}
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond, "the state event of the container's process")
	a := state.Attributes().AsRaw()
	desc, _ := a["entity.description"].(map[string]any)
	assert.Equal(t, "env-in-a-container", desc["service.name"])
	assert.Equal(t, "environment", desc["process_context.source"])
	want := []any{map[string]any{
		"relationship.type": "runs_on", "entity.type": "container", "entity.id": map[string]any{"container.id": id},
	}}
	if host := thisHost(t); host.ID != "" {
		want = append(want, hostRunsOn(host.ID))
	}
	assert.Equal(t, want, a["entity.relationships"])
	assertStringEntityIDs(t, state)
	b, err := (&plog.JSONMarshaler{}).MarshalLogs(server.allLogs()[0])
	require.NoError(t, err)
	assert.NotContains(t, string(b), envSecret)
}
