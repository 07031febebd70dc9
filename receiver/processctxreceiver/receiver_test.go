// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"context"
	"os"
	"os/user"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/experimentalmetricmetadata"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/hostopen"
	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/sharedtracker/sharedtrackertest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

// event is one process entity event, decoded from either format.
type event struct {
	kind         string // "state" or "delete"
	pid          int
	creationTime string
	description  map[string]any
	// recordAttrs are the record's attributes: the event's fields only.
	recordAttrs map[string]any
	reason      string
	interval    int64
}

// decodeEvents decodes the process entity events of logs (the service
// entities' are decoded by decodeEntities).
func decodeEvents(t testing.TB, logs []plog.Logs) []event {
	t.Helper()
	var out []event
	for _, l := range logs {
		for _, rl := range l.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				marker, ok := sl.Scope().Attributes().Get(experimentalmetricmetadata.SemconvOtelEntityEventAsScope)
				require.True(t, ok && marker.Bool(), "scope marker")
				require.Equal(t, metadata.ScopeName, sl.Scope().Name())
				for _, lr := range sl.LogRecords().All() {
					if entityTypeOf(lr) == "process" {
						out = append(out, decodeEvent(t, lr))
					}
				}
			}
		}
	}
	return out
}

// entityTypeOf is the type of the entity of an event in either format.
func entityTypeOf(lr plog.LogRecord) string {
	for _, k := range []string{specEntityType, legacyEntityType} {
		if v, ok := lr.Attributes().Get(k); ok {
			return v.Str()
		}
	}
	return ""
}

func decodeEvent(t testing.TB, lr plog.LogRecord) event {
	t.Helper()
	a := lr.Attributes().AsRaw()
	var e event
	var id map[string]any
	if lr.EventName() != "" { // spec format
		e.kind = map[string]string{specEventState: "state", specEventDelete: "delete"}[lr.EventName()]
		require.Equal(t, "process", a[specEntityType])
		id, _ = a[specEntityID].(map[string]any)
		e.description, _ = a[specEntityDescription].(map[string]any)
		e.reason, _ = a[specDeleteReason].(string)
		e.interval, _ = a[specEntityInterval].(int64)
	} else {
		e.kind = map[string]string{legacyEventState: "state", legacyEventDelete: "delete"}[a[legacyEventType].(string)]
		require.Equal(t, "process", a[legacyEntityType])
		id, _ = a[legacyEntityID].(map[string]any)
		e.description, _ = a[legacyEntityAttrs].(map[string]any)
		e.reason, _ = a[legacyDeleteReason].(string)
		e.interval, _ = a[legacyEntityInterval].(int64)
	}
	require.NotEmpty(t, e.kind, "event type of %v", a)
	require.Len(t, id, 2, "entity id %v", id)
	if lr.EventName() != "" { // the specification's ids are strings
		pid, ok := id["process.pid"].(string)
		require.True(t, ok, "entity.id process.pid %#v is not a string", id["process.pid"])
		var err error
		e.pid, err = strconv.Atoi(pid)
		require.NoError(t, err)
	} else {
		e.pid = int(id["process.pid"].(int64))
	}
	e.creationTime = id["process.creation.time"].(string)
	require.NotEmpty(t, e.creationTime)
	e.recordAttrs = a
	return e
}

func eventsOf(events []event, pid int) []event {
	var out []event
	for _, e := range events {
		if e.pid == pid {
			out = append(out, e)
		}
	}
	return out
}

func testConfig() *Config {
	cfg := createDefaultConfig()
	cfg.ReportInterval = time.Hour
	return cfg
}

// testTrackerConfig scans the host often.
func testTrackerConfig() hostopen.Config {
	tc := hostopen.DefaultConfig()
	tc.CollectionInterval = 100 * time.Millisecond
	tc.RescanInterval = 500 * time.Millisecond
	return tc
}

// startTracker starts a tracker of the host's processes, as the
// process_context extension does, until the test ends.
func startTracker(tb testing.TB, tc hostopen.Config) *tracker.Tracker {
	tb.Helper()
	tr, err := hostopen.Open(tc, zap.NewNop())
	require.NoError(tb, err)
	tr.Start()
	tb.Cleanup(func() { require.NoError(tb, tr.Stop(context.Background())) })
	return tr
}

// newTestHost is a collector host with a process_context extension's
// tracker (the generated lifecycle tests start the receiver on it).
func newTestHost(t *testing.T) component.Host {
	return sharedtrackertest.Host(startTracker(t, hostopen.DefaultConfig()))
}

type running struct {
	sink *consumertest.LogsSink
	rcv  *processContextReceiver
	tel  *componenttest.Telemetry
	seen *scanCount
}

// scanCount adds up the scan summaries of a tracker, as the extension's
// telemetry does (the receiver's has only its entity events).
type scanCount struct {
	mu    sync.Mutex
	scans uint64
	reads [tracker.NumOutcomes]int64
}

func (c *scanCount) record(_ []tracker.Change, s *tracker.ScanStats) {
	if s == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scans++
	for i, n := range s.Reads {
		c.reads[i] += n
	}
}

func startReceiver(t *testing.T, cfg *Config) *running {
	t.Helper()
	sink := new(consumertest.LogsSink)
	r := startReceiverTo(t, cfg, receivertest.NewNopSettings(metadata.Type), sink)
	r.sink = sink
	return r
}

// startReceiverTo starts a receiver whose events go to next (the sink of
// the result is nil), on a tracker with testTrackerConfig.
func startReceiverTo(t *testing.T, cfg *Config, set receiver.Settings, next consumer.Logs) *running {
	t.Helper()
	return startReceiverOn(t, startTracker(t, testTrackerConfig()), cfg, set, next)
}

// startReceiverOn starts a receiver on tr whose events go to next.
func startReceiverOn(t *testing.T, tr *tracker.Tracker, cfg *Config, set receiver.Settings, next consumer.Logs) *running {
	t.Helper()
	tel := componenttest.NewTelemetry()
	set.MeterProvider = tel.NewTelemetrySettings().MeterProvider
	rcv, err := newReceiver(set, cfg, next)
	require.NoError(t, err)
	require.NoError(t, rcv.Start(context.Background(), sharedtrackertest.Host(tr)))
	t.Cleanup(func() {
		require.NoError(t, rcv.Shutdown(context.Background()))
		require.NoError(t, tel.Shutdown(context.Background()))
	})
	// Subscribed after the receiver: it is told of a scan once the
	// receiver's book was.
	seen := &scanCount{}
	unsubscribe, err := tr.Subscribe(context.Background(), seen.record)
	require.NoError(t, err)
	t.Cleanup(unsubscribe)
	return &running{rcv: rcv, tel: tel, seen: seen}
}

// waitEvents waits until pid has n events and returns them.
func (r *running) waitEvents(t *testing.T, pid, n int) []event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := eventsOf(decodeEvents(t, r.sink.AllLogs()), pid)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d: want %d events within 10s, have %d: %+v", pid, n, len(got), got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// scans returns how many scans the tracker has told the receiver of.
func (r *running) scans() uint64 {
	r.seen.mu.Lock()
	defer r.seen.mu.Unlock()
	return r.seen.scans
}

// waitScans waits until n more scans have been recorded and the receiver
// owes no event: what a scan would have reported is in the sink by then.
func (r *running) waitScans(t *testing.T, n uint64) {
	t.Helper()
	want := r.scans() + n
	require.Eventually(t, func() bool { return r.scans() >= want && r.rcv.book.owedEvents() == 0 },
		10*time.Second, 5*time.Millisecond, "%d scans", n)
}

// reads returns the tracker's reads by outcome (the extension's reads
// metric).
func (r *running) reads() map[string]int64 {
	r.seen.mu.Lock()
	defer r.seen.mu.Unlock()
	out := map[string]int64{}
	for _, o := range tracker.Outcomes {
		out[o.String()] = r.seen.reads[o]
	}
	return out
}

func context1() (pcommon.Map, pcommon.Map) {
	res := pcommon.NewMap()
	res.PutStr("service.name", "checkout")
	res.PutStr("service.instance.id", "i-1")
	res.PutStr("deployment.environment.name", "prod")
	res.PutInt("service.shard", 3)
	res.PutBool("canary", true)
	attrs := pcommon.NewMap()
	attrs.PutStr("threadlocal.schema_version", "tlsdesc_v1_dev")
	return res, attrs
}

func encode(t testing.TB, res, attrs pcommon.Map) []byte {
	t.Helper()
	b, err := otep.Encode(res, attrs)
	require.NoError(t, err)
	return b
}

// assertState checks a state event: the published attributes as they are,
// the host's view beside them, the thread-context attributes nowhere.
func assertState(t *testing.T, e event, p *pubtest.Proc, res, attrs pcommon.Map) {
	t.Helper()
	require.Equal(t, "state", e.kind)
	for k, v := range res.AsRaw() {
		assert.Equal(t, v, e.description[k], k)
	}
	assert.Equal(t, int64(p.Pid), e.description["process.pid"])
	assert.Equal(t, int64(os.Getpid()), e.description["process.parent_pid"])
	assert.Equal(t, string(p.Kind)+"-publisher", e.description["process.executable.name"])
	assert.Contains(t, e.description["process.executable.path"], string(p.Kind)+"-publisher")
	assert.Equal(t, currentUser(t), e.description["process.owner"])
	assert.Equal(t, e.creationTime, e.description["process.creation.time"])
	for k := range attrs.AsRaw() {
		assert.NotContains(t, e.description, k, "non-resource attribute in the entity attributes")
		assert.NotContains(t, e.recordAttrs, k, "non-resource attribute on the event")
	}
	assert.NotContains(t, e.recordAttrs, "process_context.attributes")
	assert.Equal(t, time.Hour.Milliseconds(), e.interval)
}

func currentUser(t *testing.T) string {
	t.Helper()
	u, err := user.Current()
	require.NoError(t, err)
	return u.Username
}

func TestEntityLifecycle(t *testing.T) {
	for _, kind := range pubtest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			r := startReceiver(t, testConfig())
			p := pubtest.Start(t, kind, pubtest.Options{})
			res, attrs := context1()
			p.Publish(encode(t, res, attrs))

			events := r.waitEvents(t, p.Pid, 1)
			assertState(t, events[0], p, res, attrs)

			// Update: exactly one new state event with the new attributes.
			res.PutStr("service.version", "2.0")
			res.Remove("canary")
			p.Update(encode(t, res, attrs))
			events = r.waitEvents(t, p.Pid, 2)
			assertState(t, events[1], p, res, attrs)
			assert.NotContains(t, events[1].description, "canary")
			assert.Equal(t, events[0].creationTime, events[1].creationTime, "same entity")

			// Nothing more while the context does not change.
			r.waitScans(t, 3)
			assert.Len(t, eventsOf(decodeEvents(t, r.sink.AllLogs()), p.Pid), 2)

			// Unpublish: one delete; publishing again: a new state.
			p.Unpublish()
			events = r.waitEvents(t, p.Pid, 3)
			assert.Equal(t, "delete", events[2].kind)
			assert.Equal(t, reasonUnpublished, events[2].reason)
			p.Publish(encode(t, res, attrs))
			events = r.waitEvents(t, p.Pid, 4)
			assertState(t, events[3], p, res, attrs)

			// Exit: one delete.
			p.Exit()
			events = r.waitEvents(t, p.Pid, 5)
			assert.Equal(t, "delete", events[4].kind)
			assert.Equal(t, reasonExited, events[4].reason)
			r.waitScans(t, 3)
			assert.Len(t, eventsOf(decodeEvents(t, r.sink.AllLogs()), p.Pid), 5, "no event twice")
		})
	}
}

func TestSpecFormat(t *testing.T) {
	cfg := testConfig()
	cfg.EntityEventFormat = FormatSpec
	r := startReceiver(t, cfg)
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	res, attrs := context1()
	p.Publish(encode(t, res, attrs))
	events := r.waitEvents(t, p.Pid, 1)
	require.Equal(t, "state", events[0].kind)
	assert.Equal(t, "checkout", events[0].description["service.name"])
	assert.Equal(t, int64(3600), events[0].interval, "seconds in the spec format")

	lr := findRecord(t, r.sink.AllLogs(), p.Pid)
	assert.Equal(t, specEventState, lr.EventName())
	_, legacy := lr.Attributes().Get(legacyEventType)
	assert.False(t, legacy)

	p.Exit()
	events = r.waitEvents(t, p.Pid, 2)
	assert.Equal(t, "delete", events[1].kind)
	assert.Equal(t, reasonExited, events[1].reason)
}

func findRecord(t *testing.T, logs []plog.Logs, pid int) plog.LogRecord {
	t.Helper()
	for _, l := range logs {
		for _, rl := range l.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					if entityTypeOf(lr) == "process" && decodeEvent(t, lr).pid == pid {
						return lr
					}
				}
			}
		}
	}
	t.Fatalf("no record for pid %d", pid)
	return plog.LogRecord{}
}

// A process that publishes after the receiver saw it without a context is
// found at a rescan (the schedule itself is tested on a fake clock in
// internal/tracker).
func TestLatePublisherFound(t *testing.T) {
	tc := testTrackerConfig()
	tc.RescanInterval = time.Second
	sink := new(consumertest.LogsSink)
	r := startReceiverOn(t, startTracker(t, tc), testConfig(), receivertest.NewNopSettings(metadata.Type), sink)
	r.sink = sink
	p := pubtest.Start(t, pubtest.C, pubtest.Options{Separate: true})
	r.waitScans(t, 2) // the receiver has seen the process without a context
	require.Empty(t, eventsOf(decodeEvents(t, r.sink.AllLogs()), p.Pid))

	p.Publish(otep.EncodeStrings(map[string]string{"service.name": "late"}))
	events := r.waitEvents(t, p.Pid, 1)
	assert.Equal(t, "late", events[0].description["service.name"])
}

func TestPeriodicReport(t *testing.T) {
	cfg := testConfig()
	cfg.ReportInterval = 300 * time.Millisecond
	r := startReceiver(t, cfg)
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	p.Publish(otep.EncodeStrings(map[string]string{"service.name": "periodic"}))
	events := r.waitEvents(t, p.Pid, 3)
	for _, e := range events[:3] {
		assert.Equal(t, "state", e.kind)
		assert.Equal(t, "periodic", e.description["service.name"])
	}
}

func TestHostilePublishersDoNotStopTheGoodOnes(t *testing.T) {
	good := otep.EncodeStrings(map[string]string{"service.name": "good"})
	var hostile []*pubtest.Proc
	for _, h := range []struct {
		sig     string
		version uint32
		size    uint32
		ts      uint64
		ptr     string
	}{
		{"OTEL_CTY", 2, uint32(len(good)), 1, "inline"},
		{"OTEL_CTX", 1, uint32(len(good)), 1, "inline"},
		{"OTEL_CTX", 2, 1 << 31, 1, "inline"},
		{"OTEL_CTX", 2, uint32(len(good)), 0, "inline"},
		{"OTEL_CTX", 2, uint32(len(good)), 1, "unmapped"},
	} {
		p := pubtest.Start(t, pubtest.C, pubtest.Options{})
		p.Publish(good)
		p.Header(h.sig, h.version, h.size, h.ts, h.ptr)
		hostile = append(hostile, p)
	}
	garbage := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	garbage.Publish([]byte("\xff\xff\xff\xff not protobuf"))
	hostile = append(hostile, garbage)
	// Started once every hostile context is in place: a scan between a
	// publish and its header overwrite would see a good context.
	r := startReceiver(t, testConfig())

	var goods []*pubtest.Proc
	for _, kind := range pubtest.Kinds {
		p := pubtest.Start(t, kind, pubtest.Options{})
		p.Publish(good)
		goods = append(goods, p)
	}
	for _, p := range goods {
		events := r.waitEvents(t, p.Pid, 1)
		assert.Equal(t, "good", events[0].description["service.name"])
	}
	// Every hostile context has been read (each kind is counted) and none
	// became an entity.
	require.Eventually(t, func() bool {
		reads := r.reads()
		return reads["invalid"] > 0 && reads["too_large"] > 0 && reads["torn"] > 0 && reads["ok"] > 0 && reads["no_context"] > 0
	}, 10*time.Second, 10*time.Millisecond, "outcomes counted")
	all := decodeEvents(t, r.sink.AllLogs())
	for _, p := range hostile {
		assert.Empty(t, eventsOf(all, p.Pid), "hostile publisher %d reported", p.Pid)
	}
	// A good publisher started after the hostile ones is still found.
	late := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	late.Publish(good)
	r.waitEvents(t, late.Pid, 1)
}

func TestShutdownWithoutStart(t *testing.T) {
	rcv, err := newReceiver(receivertest.NewNopSettings(metadata.Type), testConfig(), new(consumertest.LogsSink))
	require.NoError(t, err)
	require.NoError(t, rcv.Shutdown(context.Background()))
}

// Without the process_context extension the receiver does not start, and
// says what to add.
func TestStartFailsWithoutTheExtension(t *testing.T) {
	rcv, err := newReceiver(receivertest.NewNopSettings(metadata.Type), testConfig(), new(consumertest.LogsSink))
	require.NoError(t, err)
	err = rcv.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, "process_context receiver: no process_context extension")
	require.ErrorContains(t, err, "extensions:\n    process_context:\n  service:\n    extensions: [process_context]")
	require.NoError(t, rcv.Shutdown(context.Background()))
}

func TestShutdownDuringScans(t *testing.T) {
	// Start and stop repeatedly while scans run: no goroutine may be left
	// (goleak in TestMain) and Shutdown returns promptly.
	tc := testTrackerConfig()
	tc.CollectionInterval = 100 * time.Millisecond // the floor
	host := sharedtrackertest.Host(startTracker(t, tc))
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		wg.Go(func() {
			rcv, err := newReceiver(receivertest.NewNopSettings(metadata.Type), testConfig(), new(consumertest.LogsSink))
			if err != nil {
				errs <- err
				return
			}
			if err := rcv.Start(context.Background(), host); err != nil {
				errs <- err
				return
			}
			time.Sleep(150 * time.Millisecond) // let scans run
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			errs <- rcv.Shutdown(ctx)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}
