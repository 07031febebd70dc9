// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// listenVars are the variables the shipped configurations take their
// listening endpoints from, by the port of their defaults.
var listenVars = map[string]string{
	"4317":  "PROCESSCTX_OTLP_GRPC_ENDPOINT",
	"4318":  "PROCESSCTX_OTLP_HTTP_ENDPOINT",
	"13133": "PROCESSCTX_HEALTH_ENDPOINT",
	"1777":  "PROCESSCTX_PPROF_ENDPOINT",
	"55679": "PROCESSCTX_ZPAGES_ENDPOINT",
}

// metricsPortVar moves the collector's own metrics (port 8888 by default).
const metricsPortVar = "PROCESSCTX_METRICS_PORT"

// recipe returns examples/<name>.yaml, and moves its listening addresses
// to free ports (tests run beside other collectors): those the file takes
// from the documented variables through them, as a user would (their
// values set for the test), the others in the text; moved maps each
// address of the file to its replacement. The collector's own metrics
// move to a free port too.
func recipe(t *testing.T, name string, addrs ...string) (config string, moved map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pubtest.RepoRoot(), "examples", name+".yaml"))
	require.NoError(t, err)
	config, moved = string(b), map[string]string{}
	for _, addr := range addrs {
		require.Contains(t, config, addr, "%s.yaml listens on %s", name, addr)
		host, port, _ := strings.Cut(addr, ":")
		moved[addr] = fmt.Sprintf("%s:%d", host, pubtest.FreePort(t))
		if v, ok := listenVars[port]; ok && strings.Contains(config, "${env:"+v+":-"+addr+"}") {
			t.Setenv(v, moved[addr])
			continue
		}
		config = strings.ReplaceAll(config, addr, moved[addr])
	}
	if strings.Contains(config, "${env:"+metricsPortVar+":-8888}") {
		t.Setenv(metricsPortVar, strconv.Itoa(pubtest.FreePort(t)))
	}
	return config, moved
}

// moveShippedPorts sets the documented variables so that a shipped
// configuration listens on free ports of 127.0.0.1, and returns their
// values by variable.
func moveShippedPorts(t *testing.T) map[string]string {
	t.Helper()
	set := map[string]string{}
	for _, v := range listenVars {
		set[v] = fmt.Sprintf("127.0.0.1:%d", pubtest.FreePort(t))
	}
	set[metricsPortVar] = strconv.Itoa(pubtest.FreePort(t))
	for v, value := range set {
		t.Setenv(v, value)
	}
	return set
}

// startLocalBackend runs examples/local-backend.yaml as its header says
// and points the recipes' exporters at it, as their headers say
// (OTLP_ENDPOINT, OTLP_INSECURE).
func startLocalBackend(t *testing.T) *collector {
	t.Helper()
	config, moved := recipe(t, "local-backend", "127.0.0.1:14317")
	backend := startCollector(t, config)
	t.Setenv("OTLP_ENDPOINT", moved["127.0.0.1:14317"])
	t.Setenv("OTLP_INSECURE", "true")
	return backend
}

func waitOutput(t *testing.T, c *collector, what, want string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(c.Output.String(), want) },
		30*time.Second, 50*time.Millisecond, "the local backend never showed %s (%q)", what, want)
}

// The recipes that run on this repository's distribution run as their
// headers say against the local backend: what they send arrives there,
// with the service identity the processes published.
func TestRecipesAgainstTheLocalBackend(t *testing.T) {
	pubtest.RequireRoot(t)
	backend := startLocalBackend(t)
	published := publishService(t, pubtest.C, "recipe-svc")

	t.Run("entity-events", func(t *testing.T) {
		config, _ := recipe(t, "entity-events")
		startCollector(t, config)
		waitOutput(t, backend, "the publisher's entity event", "recipe-svc")
	})

	t.Run("containers", func(t *testing.T) {
		config, moved := recipe(t, "containers", "0.0.0.0:4317", "0.0.0.0:4318")
		// As in its container: the host's /proc under root_path.
		config = strings.ReplaceAll(config, "root_path: /hostfs", "root_path: "+hostProcUnder(t))
		startCollectorWith(t, config, patientLookups)
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutInt("process.pid", int64(published.Pid))
		rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("recipe-containers-record")
		conn := dial(t, portOf(t, moved["0.0.0.0:4317"]))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
		require.NoError(t, err)
		waitOutput(t, backend, "the enriched record", "recipe-containers-record")
		assert.Contains(t, resourceBlock(backend.Output.String(), "ResourceLog #", "recipe-containers-record"), "service.name: Str(recipe-svc)")
	})

	t.Run("ebpf-profiler", func(t *testing.T) {
		config, moved := recipe(t, "ebpf-profiler", "127.0.0.1:4317")
		startCollectorWith(t, config, patientLookups)
		pd := pprofile.NewProfiles()
		dict := pd.Dictionary()
		dict.StringTable().Append("", "samples", "count")
		dict.AttributeTable().AppendEmpty()
		dict.StackTable().AppendEmpty()
		rp := pd.ResourceProfiles().AppendEmpty()
		rp.Resource().Attributes().PutInt("process.pid", int64(published.Pid))
		rp.Resource().Attributes().PutStr("recipe.marker", "recipe-ebpf-profile")
		p := rp.ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
		p.SampleType().SetTypeStrindex(1)
		p.SampleType().SetUnitStrindex(2)
		p.SetTime(pcommon.NewTimestampFromTime(time.Now()))
		p.Samples().AppendEmpty().Values().Append(1)
		conn := dial(t, portOf(t, moved["127.0.0.1:4317"]))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := pprofileotlp.NewGRPCClient(conn).Export(ctx, pprofileotlp.NewExportRequestFromProfiles(pd))
		require.NoError(t, err)
		waitOutput(t, backend, "the enriched profile", "recipe-ebpf-profile")
		assert.Contains(t, resourceBlock(backend.Output.String(), "ResourceProfiles #", "recipe-ebpf-profile"), "service.name: Str(recipe-svc)")
	})
}

// resourceBlock returns the part of the debug exporter's detailed output
// that describes the resource (from its header line) whose telemetry
// mentions marker, up to the next resource.
func resourceBlock(output, header, marker string) string {
	at := strings.Index(output, marker)
	if at < 0 {
		return ""
	}
	start := max(strings.LastIndex(output[:at], header), 0)
	end := len(output)
	if next := strings.Index(output[at:], header); next >= 0 {
		end = at + next
	}
	return output[start:end]
}

// hostProcUnder bind-mounts the host's /proc at <dir>/proc, as the
// collector's container has it at /hostfs/proc, and returns dir.
func hostProcUnder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	proc := filepath.Join(dir, "proc")
	require.NoError(t, os.Mkdir(proc, 0o755))
	require.NoError(t, unix.Mount("/proc", proc, "", unix.MS_BIND|unix.MS_REC, ""))
	t.Cleanup(func() { _ = unix.Unmount(proc, unix.MNT_DETACH) })
	return dir
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	var port int
	_, err := fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port)
	require.NoError(t, err, addr)
	return port
}

// The entity-events recipe keeps an entity's events in order through a
// backend outage: publishers come and go while the backend refuses
// everything (Unavailable, which the exporter retries); once it accepts
// again, each entity's state arrives before its delete, never after.
func TestEntityEventsKeepTheirOrderThroughAnOutage(t *testing.T) {
	pubtest.RequireRoot(t)
	server := startOTLPServer(t)
	server.setRefuse(status.Error(codes.Unavailable, "backend down"))
	t.Setenv("OTLP_ENDPOINT", server.addr)
	t.Setenv("OTLP_INSECURE", "true")
	config, _ := recipe(t, "entity-events")
	startCollector(t, config)

	const n = 8
	pubs := make([]*pubtest.Proc, n)
	for i := range pubs {
		pubs[i] = publishService(t, pubtest.C, fmt.Sprintf("outage-%d", i))
	}
	// Their states are found (young re-reads 1 s after exec) and refused,
	// three times: the exporter's backoff before their next try is long
	// by then (5 s, then about 7.5 s, 11 s, … up to 30 s).
	require.Eventually(t, func() bool { return server.refusals() >= 3 }, 90*time.Second, 50*time.Millisecond)
	for _, p := range pubs {
		p.Exit()
	}
	// The backend comes back right after it refused what came next (the
	// deletes, where a free queue consumer sends them at once): with
	// several consumers, their first retry (5 s) would now beat the
	// states'.
	refused := server.refusals()
	require.Eventually(t, func() bool { return server.refusals() > refused }, 90*time.Second, 50*time.Millisecond)
	server.setRefuse(nil)

	// Delivered at the exporter's next retry: its backoff grows up to 30 s.
	const delivery = 90 * time.Second
	for _, p := range pubs {
		events := waitEntityEventsWithin(t, server, p.Pid, 2, delivery)
		deleted := -1
		for i, e := range events {
			if e.kind == "entity_delete" {
				deleted = i
				break
			}
		}
		if deleted < 0 { // the state came; the delete is still on its way
			events = waitEntityEventsWithin(t, server, p.Pid, len(events)+1, delivery)
			for i, e := range events {
				if e.kind == "entity_delete" {
					deleted = i
					break
				}
			}
		}
		require.GreaterOrEqual(t, deleted, 0, "pid %d: no delete in %+v", p.Pid, events)
		assert.Positive(t, deleted, "pid %d: its delete arrived before any state: %+v", p.Pid, events)
		for _, e := range events[deleted+1:] {
			assert.NotEqual(t, "entity_state", e.kind, "pid %d: a state arrived after its delete: %+v", p.Pid, events)
		}
	}
}
