// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/internal/tracker/trackertest"
)

// A container id a publisher claims while it is in no container.
const claimedContainer = "c1a1medc0ffee0000000000000000000000000000000000000000000000000001"

// policyPublisher is a real process publishing a resource the policy must
// sort: its service, and what a tracer of the field publishes besides.
type policyPublisher struct {
	name    string
	pid     int
	service string
}

// startPolicyPublishers starts our Go publisher (host.name 127.0.0.1, the
// address of an agent), the C publisher (an empty host.name), both with a
// container.id of their own, a vendor key, an empty identity value and
// threadlocal.* in the non-resource attributes; dd-trace-go's tracer told
// to name its host 127.0.0.1; and a process named by its environment
// whose OTEL_RESOURCE_ATTRIBUTES say host.name and container.id.
func startPolicyPublishers(t *testing.T) []policyPublisher {
	t.Helper()
	var pubs []policyPublisher
	for kind, host := range map[pubtest.Kind]string{pubtest.Go: "127.0.0.1", pubtest.C: ""} {
		service := "policy-" + string(kind)
		res := pcommon.NewMap()
		require.NoError(t, res.FromRaw(map[string]any{
			"service.name": service, "service.version": "1.0", "deployment.environment.name": "",
			"host.name": host, "container.id": claimedContainer, "acme.team": "payments",
			"process.executable.name": "forged", "threadlocal.schema_version": "in-the-resource",
		}))
		payload, err := otep.Encode(res, threadlocal())
		require.NoError(t, err)
		p := pubtest.Start(t, kind, pubtest.Options{})
		p.Publish(payload)
		pubs = append(pubs, policyPublisher{name: string(kind), pid: p.Pid, service: service})
	}
	dd := pubtest.StartDDTracer(t, "DD_SERVICE=policy-dd", "DD_ENV=prod", "DD_TRACE_SOURCE_HOSTNAME=127.0.0.1")
	pubs = append(pubs, policyPublisher{name: "dd-trace-go", pid: dd.Pid, service: "policy-dd"})

	env := exec.Command("sleep", "600")
	env.Env = []string{"PATH=" + os.Getenv("PATH"), "OTEL_SERVICE_NAME=policy-env",
		"OTEL_RESOURCE_ATTRIBUTES=host.name=127.0.0.1,container.id=" + claimedContainer + ",acme.team=payments"}
	require.NoError(t, env.Start())
	t.Cleanup(func() { _ = env.Process.Kill(); _ = env.Wait() })
	pubs = append(pubs, policyPublisher{name: "environment", pid: env.Process.Pid, service: "policy-env"})
	return pubs
}

// observedContainer is the container.id the host reads from pid's cgroup
// ("" outside a container): the only container.id enriched telemetry may
// carry that it did not carry itself.
func observedContainer(t *testing.T, pid int) string {
	t.Helper()
	fs, err := procfs.NewFS("/")
	require.NoError(t, err)
	id, err := procfs.NewIdentityReader(fs).Identity(pid)
	require.NoError(t, err)
	return id.ContainerID
}

// What real publishers publish reaches telemetry as the policy says, for
// logs (a resource pid, with and without the telemetry's own host.name and
// service.name; record pids, regrouped) and profiles, by default and with
// the identity family's override.
func TestPolicyWithRealPublishers(t *testing.T) {
	pubs := startPolicyPublishers(t)
	for _, override := range []bool{false, true} {
		cfg := testConfig()
		cfg.Attributes.Identity.Override = override
		h := newHarness(t, cfg)
		for _, pub := range pubs {
			t.Run(pub.name+map[bool]string{false: "", true: "/identity override"}[override], func(t *testing.T) {
				ld := plog.NewLogs()
				own := ld.ResourceLogs().AppendEmpty()
				require.NoError(t, own.Resource().Attributes().FromRaw(map[string]any{"process.pid": int64(pub.pid), "host.name": "node-1"}))
				addRecord(own.ScopeLogs().AppendEmpty(), "own", nil)
				bare := ld.ResourceLogs().AppendEmpty()
				bare.Resource().Attributes().PutInt("process.pid", int64(pub.pid))
				addRecord(bare.ScopeLogs().AppendEmpty(), "bare", nil)
				// A shipper's guess of the service, pids on the records
				// (host pids of a host agent: not verified).
				guessed := ld.ResourceLogs().AppendEmpty()
				require.NoError(t, guessed.Resource().Attributes().FromRaw(map[string]any{"host.name": "node-2", "service.name": "guessed"}))
				addRecord(guessed.ScopeLogs().AppendEmpty(), "guessed", pub.pid)
				records := ld.ResourceLogs().AppendEmpty()
				addRecord(records.ScopeLogs().AppendEmpty(), "record", pub.pid)
				out := h.consumeLogs(ld)

				byBody := map[string]map[string]any{}
				for _, rl := range out.ResourceLogs().All() {
					for _, sl := range rl.ScopeLogs().All() {
						for _, lr := range sl.LogRecords().All() {
							byBody[lr.Body().Str()] = rl.Resource().Attributes().AsRaw()
						}
					}
				}
				require.Len(t, byBody, 4)
				assert.Equal(t, "node-1", byBody["own"]["host.name"], "the telemetry's host.name stays")
				assert.Equal(t, "node-2", byBody["guessed"]["host.name"], "the telemetry's host.name stays")
				if override {
					assert.Equal(t, pub.service, byBody["guessed"]["service.name"], "identity override: the published service wins")
				} else {
					assert.Equal(t, "guessed", byBody["guessed"]["service.name"], "the telemetry's service.name stays")
				}
				for body, res := range byBody {
					assertPolicy(t, pub, res, body)
				}

				pb := newProfileBuilder()
				for _, host := range []string{"", "node-3"} {
					rp := pb.pd.ResourceProfiles().AppendEmpty()
					rp.Resource().Attributes().PutInt("process.pid", int64(pub.pid))
					if host != "" {
						rp.Resource().Attributes().PutStr("host.name", host)
					}
					pb.sample(pb.profile(rp.ScopeProfiles().AppendEmpty(), 1), 0, nil)
				}
				profiles := h.consumeProfiles(pb.pd).ResourceProfiles()
				assertPolicy(t, pub, profiles.At(0).Resource().Attributes().AsRaw(), "profile")
				assertPolicy(t, pub, profiles.At(1).Resource().Attributes().AsRaw(), "profile with host.name")
				assert.Equal(t, "node-3", profiles.At(1).Resource().Attributes().AsRaw()["host.name"])
			})
		}
	}
}

// assertPolicy checks an enriched resource of pub against the policy.
func assertPolicy(t *testing.T, pub policyPublisher, res map[string]any, what string) {
	t.Helper()
	switch what {
	case "own", "guessed", "profile with host.name":
	default:
		assert.Equal(t, pub.service, res["service.name"], "%s: the published service, added", what)
		assert.NotContains(t, res, "host.name", "%s: no publisher's host.name", what)
	}
	if pub.name != "dd-trace-go" {
		assert.Equal(t, "payments", res["acme.team"], "%s: a vendor key, added where missing", what)
	}
	if cid := observedContainer(t, pub.pid); cid != "" {
		assert.Equal(t, cid, res["container.id"], "%s: the cgroup's container.id", what)
	} else {
		assert.NotContains(t, res, "container.id", "%s: in no container, none", what)
	}
	for _, k := range []string{"deployment.environment.name", "process.executable.name", "threadlocal.schema_version", "threadlocal.attribute_key_map"} {
		if k == "deployment.environment.name" && pub.name == "dd-trace-go" {
			continue // DD_ENV=prod: published, not empty
		}
		assert.NotContains(t, res, k, what)
	}
	for k, v := range res {
		if s, ok := v.(string); ok {
			assert.NotEqual(t, "127.0.0.1", s, "%s: %s", what, k)
			assert.NotEqual(t, claimedContainer, s, "%s: %s", what, k)
			assert.NotEqual(t, "forged", s, "%s: %s", what, k)
		}
	}
}

// dd-trace-go publishes what the test relies on, with the configuration
// the test gives it: read by the tracker as the processor reads it.
func TestDDTracerPublishes(t *testing.T) {
	dd := pubtest.StartDDTracer(t, "DD_SERVICE=policy-dd", "DD_ENV=prod", "DD_TRACE_SOURCE_HOSTNAME=127.0.0.1")
	h := newHarness(t, testConfig())
	h.consumeLogs(resourceLogs(dd.Pid)) // the tracker reads it
	proc, o := h.tracker.Snapshot().Lookup(dd.Pid)
	require.NotNil(t, proc, "outcome %s", o)
	res := proc.Context.Resource.AsRaw()
	t.Logf("dd-trace-go publishes resource %v, attributes %v", res, proc.Context.Attributes.AsRaw())
	assert.Equal(t, tracker.SourceContext, proc.Source)
	assert.Equal(t, "policy-dd", res["service.name"])
	assert.Equal(t, "dd-trace-go", res["telemetry.sdk.name"])
	assert.Equal(t, "127.0.0.1", res["host.name"], "DD_TRACE_SOURCE_HOSTNAME")
	for k := range proc.Context.Attributes.All() {
		assert.True(t, strings.HasPrefix(k, "datadog.") || strings.HasPrefix(k, "threadlocal."), "non-resource attribute %s", k)
	}
}

// A process named by its environment goes through the same policy:
// OTEL_RESOURCE_ATTRIBUTES=host.name=x puts no host.name on telemetry.
func TestEnvironmentThroughThePolicy(t *testing.T) {
	host := trackertest.NewHost()
	host.Add(70)
	host.SetEnv(70, "from-env", "host.name=x,container.id=y,k8s.pod.uid=z,acme.team=t,threadlocal.k=v,deployment.environment.name=")
	h := newFakeHarness(t, testConfig(), fakeTrackerConfig(), host)
	got := h.consumeLogs(resourceLogs(70)).ResourceLogs().At(0).Resource().Attributes().AsRaw()
	assert.Equal(t, map[string]any{"process.pid": int64(70), "service.name": "from-env", "acme.team": "t"}, got)
}
