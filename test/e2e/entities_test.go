// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// entityEvent is a legacy-format entity event as exported over OTLP.
type entityEvent struct {
	kind    string
	pid     int64
	created string // process.creation.time, the rest of the entity's id
	attrs   map[string]any
	reason  string
}

func entityEvents(logs []plog.Logs) []entityEvent {
	var out []entityEvent
	for _, l := range logs {
		for _, rl := range l.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				if v, ok := sl.Scope().Attributes().Get("otel.entity.event_as_log"); !ok || !v.Bool() {
					continue
				}
				for _, lr := range sl.LogRecords().All() {
					out = append(out, entityEventOf(lr))
				}
			}
		}
	}
	return out
}

// entityEventOf reads one event of either shape: legacy (otel.entity.*
// attributes) or the specification's (an event name, entity.* attributes);
// kinds are the legacy names.
func entityEventOf(lr plog.LogRecord) entityEvent {
	a := lr.Attributes().AsRaw()
	keys := map[string]string{"id": "otel.entity.id", "attrs": "otel.entity.attributes", "reason": "otel.entity.delete.reason"}
	var e entityEvent
	switch lr.EventName() {
	case "":
		e.kind, _ = a["otel.entity.event.type"].(string)
	case "entity.state", "entity.delete":
		e.kind = map[string]string{"entity.state": "entity_state", "entity.delete": "entity_delete"}[lr.EventName()]
		keys = map[string]string{"id": "entity.id", "attrs": "entity.description", "reason": "entity.delete.reason"}
	}
	id, _ := a[keys["id"]].(map[string]any)
	switch pid := id["process.pid"].(type) {
	case int64: // the legacy shape: contrib's types
		e.pid = pid
	case string: // the specification's: every entity.id value a string
		e.pid, _ = strconv.ParseInt(pid, 10, 64)
	}
	e.created, _ = id["process.creation.time"].(string)
	e.attrs, _ = a[keys["attrs"]].(map[string]any)
	e.reason, _ = a[keys["reason"]].(string)
	return e
}

func waitEntityEvents(t *testing.T, s *otlpServer, pid, n int) []entityEvent {
	t.Helper()
	return waitEntityEventsWithin(t, s, pid, n, 20*time.Second)
}

// waitEntityEventsWithin is waitEntityEvents with its own bound.
func waitEntityEventsWithin(t *testing.T, s *otlpServer, pid, n int, within time.Duration) []entityEvent {
	t.Helper()
	var got []entityEvent
	require.Eventually(t, func() bool {
		got = got[:0]
		for _, e := range entityEvents(s.allLogs()) {
			if e.pid == int64(pid) {
				got = append(got, e)
			}
		}
		return len(got) >= n
	}, within, 50*time.Millisecond, "pid %d: want %d entity events, have %+v", pid, n, got)
	return got
}

func TestEntityEventsThroughTheCollector(t *testing.T) {
	server := startOTLPServer(t)
	startCollector(t, entitiesConfig(server.addr))

	goPub := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	goPub.Publish(otep.EncodeStrings(map[string]string{"service.name": "e2e-go", "deployment.environment.name": "test"}))
	cPub := pubtest.Start(t, pubtest.C, pubtest.Options{Separate: true})
	cPub.Publish(otep.EncodeStrings(map[string]string{"service.name": "e2e-c"}))

	g := waitEntityEvents(t, server, goPub.Pid, 1)
	assert.Equal(t, "entity_state", g[0].kind)
	assert.Equal(t, "e2e-go", g[0].attrs["service.name"])
	assert.Equal(t, "test", g[0].attrs["deployment.environment.name"])
	assert.Equal(t, "go-publisher", g[0].attrs["process.executable.name"])
	c := waitEntityEvents(t, server, cPub.Pid, 1)
	assert.Equal(t, "e2e-c", c[0].attrs["service.name"])

	// An update arrives as a state event, an exit as a delete event.
	goPub.Update(otep.EncodeStrings(map[string]string{"service.name": "e2e-go", "service.version": "2"}))
	g = waitEntityEvents(t, server, goPub.Pid, 2)
	assert.Equal(t, "entity_state", g[1].kind)
	assert.Equal(t, "2", g[1].attrs["service.version"])
	cPub.Exit()
	c = waitEntityEvents(t, server, cPub.Pid, 2)
	assert.Equal(t, "entity_delete", c[1].kind)
	assert.Equal(t, "process_exited", c[1].reason)
}

// Through the built collector at the receiver's defaults, in the
// specification's shape: the secrets of a command line do not leave the
// collector while its other arguments do, and every entity.id value, of
// the state and of the delete, is a string.
func TestCommandLineAndSpecIDsThroughTheCollector(t *testing.T) {
	server := startOTLPServer(t)
	cfg := entitiesConfig(server.addr)
	const receiver = "receivers:\n  process_context:\n"
	require.Contains(t, cfg, receiver)
	startCollector(t, strings.Replace(cfg, receiver, receiver+"    entity_event_format: spec\n", 1))

	const secret = "e2e-cmdline-S3CRET"
	cmd := exec.Command("sh", "-c", "sleep 600; :", "sh", "--password", secret, "--api-key="+secret,
		"DB_TOKEN="+secret, "postgresql://app:"+secret+"@db/orders", "--keep", "visible")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "OTEL_SERVICE_NAME=e2e-cmdline"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the shell and its sleep end together
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	kill := func() { _ = syscall.Kill(-pid, syscall.SIGKILL); _ = cmd.Wait() }
	t.Cleanup(kill)

	e := waitEntityEvents(t, server, pid, 1)[0]
	assert.Equal(t, "entity_state", e.kind)
	assert.Equal(t, "e2e-cmdline", e.attrs["service.name"])
	assert.Equal(t, "sh -c sleep 600; : sh --password **** --api-key=**** DB_TOKEN=**** postgresql://app:****@db/orders --keep visible",
		e.attrs["process.command_line"])
	assert.Equal(t, int64(pid), e.attrs["process.pid"], "the description keeps the resource's type")

	kill()
	require.Eventually(t, func() bool {
		for _, e := range entityEvents(server.allLogs()) {
			if e.pid == int64(pid) && e.kind == "entity_delete" {
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond, "the delete of pid %d", pid)

	var ids int
	host := thisHost(t)
	for _, l := range server.allLogs() {
		b, err := (&plog.JSONMarshaler{}).MarshalLogs(l)
		require.NoError(t, err)
		assert.NotContains(t, string(b), secret)
		for _, rl := range l.ResourceLogs().All() {
			// The events' resource names the host.
			assert.Equal(t, host.Name, rl.Resource().Attributes().AsRaw()["host.name"])
			if host.ID != "" {
				assert.Equal(t, host.ID, rl.Resource().Attributes().AsRaw()["host.id"])
			}
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					ids += assertStringEntityIDs(t, lr)
					if lr.EventName() == "entity.state" && host.ID != "" && lr.Attributes().AsRaw()["entity.type"] == "process" {
						assert.Contains(t, lr.Attributes().AsRaw()["entity.relationships"], hostRunsOn(host.ID))
					}
				}
			}
		}
	}
	assert.GreaterOrEqual(t, ids, 2, "the state's and the delete's")
}

// Through the built collector at the receiver's defaults, in the
// specification's shape, a real publisher naming a service instance: the
// states of its process, service instance and service with their
// relationships; its exit deletes the process and the instance, not the
// service.
func TestServiceEntitiesThroughTheCollector(t *testing.T) {
	server := startOTLPServer(t)
	cfg := entitiesConfig(server.addr)
	const receiver = "receivers:\n  process_context:\n"
	require.Contains(t, cfg, receiver)
	startCollector(t, strings.Replace(cfg, receiver, receiver+"    entity_event_format: spec\n", 1))

	pub := pubtest.Start(t, pubtest.C, pubtest.Options{Separate: true})
	pub.Publish(otep.EncodeStrings(map[string]string{"service.name": "e2e-svc", "service.namespace": "e2e",
		"service.version": "3.1", "service.instance.id": "e2e-svc-1"}))
	process := waitEntityEvents(t, server, pub.Pid, 1)[0]
	pubID := map[string]any{"process.pid": strconv.Itoa(pub.Pid), "process.creation.time": process.created}
	serviceID := map[string]any{"service.name": "e2e-svc", "service.namespace": "e2e"}
	instanceID := map[string]any{"service.instance.id": "e2e-svc-1"}

	instance := waitEvent(t, server, "entity.state", "service.instance", instanceID)
	assert.Equal(t, map[string]any{"service.name": "e2e-svc", "service.namespace": "e2e", "service.version": "3.1"},
		instance["entity.description"])
	assert.Equal(t, []any{
		map[string]any{"relationship.type": "runs_on", "entity.type": "process", "entity.id": pubID},
		map[string]any{"relationship.type": "part_of", "entity.type": "service", "entity.id": serviceID},
	}, instance["entity.relationships"])
	service := waitEvent(t, server, "entity.state", "service", serviceID)
	assert.Equal(t, map[string]any{"service.version": "3.1"}, service["entity.description"])

	pub.Exit()
	assert.Equal(t, "process_exited", waitEvent(t, server, "entity.delete", "process", pubID)["entity.delete.reason"])
	assert.Equal(t, "process_exited", waitEvent(t, server, "entity.delete", "service.instance", instanceID)["entity.delete.reason"])
	for _, l := range server.allLogs() {
		for _, rl := range l.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					assertStringEntityIDs(t, lr)
					assert.False(t, lr.EventName() == "entity.delete" && lr.Attributes().AsRaw()["entity.type"] == "service",
						"a service is never deleted")
				}
			}
		}
	}
}

// waitEvent waits for a spec-shaped event (eventName) of the entity of
// type typ and id, and returns its attributes.
func waitEvent(t *testing.T, s *otlpServer, eventName, typ string, id map[string]any) map[string]any {
	t.Helper()
	var found map[string]any
	require.Eventually(t, func() bool {
		for _, l := range s.allLogs() {
			for _, rl := range l.ResourceLogs().All() {
				for _, sl := range rl.ScopeLogs().All() {
					for _, lr := range sl.LogRecords().All() {
						a := lr.Attributes().AsRaw()
						if lr.EventName() == eventName && a["entity.type"] == typ && assert.ObjectsAreEqual(id, a["entity.id"]) {
							found = a
							return true
						}
					}
				}
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond, "%s of %s %v", eventName, typ, id)
	return found
}

// thisHost is the identity the collector, run on this host with root_path
// "/", gives it.
func thisHost(t *testing.T) procfs.HostIdentity {
	t.Helper()
	fs, err := procfs.NewFS("/")
	require.NoError(t, err)
	return fs.HostIdentity()
}

// hostRunsOn is a process's relationship to the host whose host.id is id.
func hostRunsOn(id string) map[string]any {
	return map[string]any{"relationship.type": "runs_on", "entity.type": "host", "entity.id": map[string]any{"host.id": id}}
}

// assertStringEntityIDs fails unless every value of a spec-shaped event's
// entity.id, and of its relationships', is a string; it returns how many
// ids it checked.
func assertStringEntityIDs(t *testing.T, lr plog.LogRecord) int {
	t.Helper()
	require.NotEmpty(t, lr.EventName(), "the specification's shape: %v", lr.Attributes().AsRaw())
	var ids []pcommon.Value
	if id, ok := lr.Attributes().Get("entity.id"); ok {
		ids = append(ids, id)
	}
	if rels, ok := lr.Attributes().Get("entity.relationships"); ok {
		for _, rel := range rels.Slice().All() {
			id, _ := rel.Map().Get("entity.id")
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		require.Equal(t, pcommon.ValueTypeMap, id.Type(), "entity.id of %v", lr.Attributes().AsRaw())
		for k, v := range id.Map().All() {
			assert.Equal(t, pcommon.ValueTypeStr, v.Type(), "entity.id %s: %s", k, v.AsString())
		}
	}
	return len(ids)
}

func TestHostilePublishersAndSIGTERM(t *testing.T) {
	server := startOTLPServer(t)
	col := startCollector(t, entitiesConfig(server.addr))

	good := otep.EncodeStrings(map[string]string{"service.name": "survivor"})
	for _, h := range []string{
		"header 4f54454c5f43545a 2 80 1 inline",         // bad signature
		"header 4f54454c5f435458 2 4294967295 1 inline", // size 4 GiB
		"header 4f54454c5f435458 2 80 0 inline",         // timestamp stuck at 0
		"header 4f54454c5f435458 2 80 1 unmapped",       // payload not mapped
		"header 4f54454c5f435458 999 80 1 inline",       // unknown version
	} {
		p := pubtest.Start(t, pubtest.C, pubtest.Options{})
		p.Publish(good)
		p.Do(h)
	}
	garbage := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	garbage.Publish([]byte(strings.Repeat("\xff", 64)))

	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	p.Publish(good)
	events := waitEntityEvents(t, server, p.Pid, 1)
	assert.Equal(t, "survivor", events[0].attrs["service.name"])
	// Still reporting: a later update comes through.
	p.Update(otep.EncodeStrings(map[string]string{"service.name": "survivor", "round": "2"}))
	events = waitEntityEvents(t, server, p.Pid, 2)
	assert.Equal(t, "2", events[1].attrs["round"])

	took := col.Stop(t)
	assert.Less(t, took, 5*time.Second, "SIGTERM to exit")
	assert.Contains(t, col.Output.String(), "Shutdown complete")
	assert.NotContains(t, col.Output.String(), "panic")
}
