package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/processctx/otelcol-processctx/internal/otep"
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
	e.pid, _ = id["process.pid"].(int64)
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
