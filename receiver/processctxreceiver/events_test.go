// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/experimentalmetricmetadata"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/featuregate"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

const specGate = "pkg.experimentalmetricmetadata.useEntityEventsSpecification"

// setSpecGate sets contrib's entity events gate for the test.
func setSpecGate(t *testing.T, on bool) {
	t.Helper()
	reg := featuregate.GlobalRegistry()
	var was bool
	reg.VisitAll(func(g *featuregate.Gate) {
		if g.ID() == specGate {
			was = g.IsEnabled()
		}
	})
	require.NoError(t, reg.Set(specGate, on))
	t.Cleanup(func() { require.NoError(t, reg.Set(specGate, was)) })
}

func testProcess() *tracker.Publication {
	res := pcommon.NewMap()
	res.PutStr("service.name", "checkout")
	attrs := pcommon.NewMap()
	attrs.PutStr("threadlocal.schema_version", "tlsdesc_v1_dev")
	return &tracker.Publication{
		Identity: procfs.Identity{PID: 4242, StartTicks: 1000, CreationTime: time.Unix(1_700_000_010, 0), ExecutableName: "java", NSpid: []int{4242, 7}},
		Context:  otep.Context{Resource: res, Attributes: attrs},
	}
}

// eachShape runs fn in a subtest for each entity_event_format with the
// library's feature gate off and on (the library writes the gate's shape,
// turned into the format's when they differ); wantSpec says whether the
// events come out in the specification's shape.
func eachShape(t *testing.T, fn func(t *testing.T, format string, wantSpec bool)) {
	for _, s := range []struct {
		format   string
		gate     bool
		wantSpec bool
	}{
		{FormatLibrary, false, false},
		{FormatLibrary, true, true},
		{FormatLegacy, false, false},
		{FormatLegacy, true, false},
		{FormatSpec, false, true},
		{FormatSpec, true, true},
	} {
		name := s.format
		if name == "" {
			name = "library"
		}
		t.Run(name+map[bool]string{false: "/gate_off", true: "/gate_on"}[s.gate], func(t *testing.T) {
			setSpecGate(t, s.gate)
			fn(t, s.format, s.wantSpec)
		})
	}
}

// The events are what contrib's experimentalmetricmetadata parses, in the
// shape its gate selects (the default format) or the shape asked for, and
// the scope carries the receiver's name and the event-as-log marker.
func TestEventShapes(t *testing.T) {
	eachShape(t, func(t *testing.T, format string, wantSpec bool) {
		w := testWriter(format, 90*time.Second, CommandLineSanitized)
		p := testProcess()
		now := time.Unix(1_800_000_000, 0)
		w.state(now, p, nil)
		w.delete(now, p, reasonExited, true)
		logs := w.take()
		assert.Zero(t, w.len(), "take starts a new batch")

		sl := logs.ResourceLogs().At(0).ScopeLogs().At(0)
		marker, _ := sl.Scope().Attributes().Get(experimentalmetricmetadata.SemconvOtelEntityEventAsScope)
		assert.True(t, marker.Bool())
		records := sl.LogRecords()
		require.Equal(t, 2, records.Len())
		for _, lr := range records.All() {
			assert.Equal(t, wantSpec, lr.EventName() != "", "spec shape")
			assert.Equal(t, pcommon.NewTimestampFromTime(now), lr.ObservedTimestamp())
		}
		// ProcessContext.attributes go nowhere.
		b, err := (&plog.JSONMarshaler{}).MarshalLogs(logs)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "threadlocal")
		assert.NotContains(t, string(b), "process_context.attributes")

		// Parse as a consumer would, with the gate of the shape.
		setSpecGate(t, wantSpec)
		events := experimentalmetricmetadata.NewEntityEventsSliceFromLogs(records)
		state := events.At(0)
		require.Equal(t, experimentalmetricmetadata.EventTypeState, state.EventType())
		assert.Equal(t, pcommon.NewTimestampFromTime(now), state.Timestamp())
		// The specification's ids are strings, the legacy shape's
		// contrib's types.
		var pid any = int64(4242)
		if wantSpec {
			pid = "4242"
		}
		assert.Equal(t, map[string]any{"process.pid": pid, "process.creation.time": p.Identity.CreationTimeString()}, state.ID().AsRaw())
		details := state.EntityStateDetails()
		assert.Equal(t, "process", details.EntityType())
		assert.Equal(t, 90*time.Second, details.Interval())
		desc := details.Attributes().AsRaw()
		assert.Equal(t, "checkout", desc["service.name"])
		assert.Equal(t, "java", desc["process.executable.name"])
		assert.Equal(t, int64(7), desc["process.vpid"])

		del := events.At(1)
		require.Equal(t, experimentalmetricmetadata.EventTypeDelete, del.EventType())
		assert.Equal(t, "process", del.EntityDeleteDetails().EntityType())
		assert.Equal(t, state.ID().AsRaw(), del.ID().AsRaw())
		if wantSpec {
			assert.Equal(t, reasonExited, del.EntityDeleteDetails().DeletionReason())
		} else {
			v, _ := records.At(1).Attributes().Get(legacyDeleteReason)
			assert.Equal(t, reasonExited, v.Str())
		}
	})
}

// toSpec and toLegacy undo each other.
func TestShapeRoundTrip(t *testing.T) {
	setSpecGate(t, false)
	w := testWriter(FormatLegacy, time.Minute, CommandLineSanitized)
	w.state(time.Unix(1, 0), testProcess(), nil)
	w.delete(time.Unix(2, 0), testProcess(), reasonInvalid, true)
	records := w.take().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	for _, lr := range records.All() {
		legacy := plog.NewLogRecord()
		lr.CopyTo(legacy)
		toSpec(lr)
		_, ok := lr.Attributes().Get(legacyEntityID)
		assert.False(t, ok)
		toLegacy(lr)
		assert.Equal(t, legacy.Attributes().AsRaw(), lr.Attributes().AsRaw())
		assert.Empty(t, lr.EventName())
	}
}

// envProcess is a process identified by its SDK environment: its resource
// is what OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say, it has no
// context attributes and no address.
func envProcess() *tracker.Publication {
	res := pcommon.NewMap()
	res.PutStr("service.name", "cart")
	res.PutStr("deployment.environment.name", "prod")
	return &tracker.Publication{
		Identity: procfs.Identity{PID: 5150, StartTicks: 2000, CreationTime: time.Unix(1_700_000_020, 0), ExecutableName: "python3"},
		Source:   tracker.SourceEnvironment,
		Context:  otep.Context{Resource: res, Attributes: pcommon.NewMap()},
	}
}

// stateRecord writes one state event of p in format and returns its record.
func stateRecord(t *testing.T, format string, p *tracker.Publication) plog.LogRecord {
	t.Helper()
	w := testWriter(format, time.Minute, CommandLineSanitized)
	w.state(time.Unix(1_800_000_000, 0), p, nil)
	records := w.take().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	require.Equal(t, 1, records.Len())
	return records.At(0)
}

// descriptionOf returns the entity's description in either shape.
func descriptionOf(t *testing.T, lr plog.LogRecord) map[string]any {
	t.Helper()
	key := legacyEntityAttrs
	if lr.EventName() != "" {
		key = specEntityDescription
	}
	v, ok := lr.Attributes().Get(key)
	require.True(t, ok, "no %s in %v", key, lr.Attributes().AsRaw())
	return v.Map().AsRaw()
}

// Every state event says where the identity comes from, in its
// description (otel.entity.attributes in the legacy shape), over whatever
// the resource claims.
func TestStateDescriptionSource(t *testing.T) {
	forged := testProcess()
	forged.Context.Resource.PutStr(sourceKey, "environment")
	tests := []struct {
		name        string
		process     *tracker.Publication
		wantSource  string
		wantService string
	}{
		{"context", testProcess(), "context", "checkout"},
		{"environment", envProcess(), "environment", "cart"},
		{"a resource cannot claim another source", forged, "context", "checkout"},
	}
	for _, tt := range tests {
		for _, format := range []string{FormatLegacy, FormatSpec} {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				lr := stateRecord(t, format, tt.process)
				desc := descriptionOf(t, lr)
				assert.Equal(t, tt.wantSource, desc[sourceKey])
				assert.Equal(t, tt.wantService, desc["service.name"])
			})
		}
	}
}

// The specification's state events relate the process to the container
// and the pod its cgroup names, in the specification's structure; the
// legacy shape has no field for them, and no delete carries any.
func TestRelationshipsByShape(t *testing.T) {
	const (
		containerID = "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"
		podUID      = "0d3a4c5e-6f70-4182-93a4-b5c6d7e8f901"
	)
	toContainer := map[string]any{
		"relationship.type": "runs_on",
		"entity.type":       "container",
		"entity.id":         map[string]any{"container.id": containerID},
	}
	toPod := map[string]any{
		"relationship.type": "runs_on",
		"entity.type":       "k8s.pod",
		"entity.id":         map[string]any{"k8s.pod.uid": podUID},
	}
	toHost := map[string]any{
		"relationship.type": "runs_on",
		"entity.type":       "host",
		"entity.id":         map[string]any{"host.id": "4c4c4544004b4e10804bb7c04f4e3532"},
	}
	facts := []struct {
		name        string
		containerID string
		podUID      string
		hostID      string
		want        []any // in the specification's shape; nil: no attribute
	}{
		{"neither", "", "", "", nil},
		{"container", containerID, "", "", []any{toContainer}},
		{"pod", "", podUID, "", []any{toPod}},
		{"container in a pod", containerID, podUID, "", []any{toContainer, toPod}},
		{"host", "", "", "4c4c4544004b4e10804bb7c04f4e3532", []any{toHost}},
		{"container in a pod on a host", containerID, podUID, "4c4c4544004b4e10804bb7c04f4e3532", []any{toContainer, toPod, toHost}},
	}
	for _, f := range facts {
		t.Run(f.name, func(t *testing.T) {
			eachShape(t, func(t *testing.T, format string, wantSpec bool) {
				p := testProcess()
				p.Identity.ContainerID, p.Identity.PodUID = f.containerID, f.podUID
				w := testWriter(format, time.Minute, CommandLineSanitized)
				if f.hostID != "" {
					w.setHost(procfs.HostIdentity{ID: f.hostID, Name: "node-1"})
				}
				w.state(time.Unix(1, 0), p, nil)
				w.delete(time.Unix(2, 0), p, reasonExited, true)
				records := w.take().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
				require.Equal(t, 2, records.Len())
				state, del := records.At(0), records.At(1)
				require.Equal(t, wantSpec, state.EventName() == specEventState, "shape")

				rels, ok := state.Attributes().Get(specEntityRelationships)
				if wantSpec && f.want != nil {
					require.True(t, ok, "relationships in %v", state.Attributes().AsRaw())
					require.Equal(t, pcommon.ValueTypeSlice, rels.Type())
					assert.Equal(t, f.want, rels.Slice().AsRaw())
				} else {
					assert.False(t, ok, "no relationships in %v", state.Attributes().AsRaw())
				}
				assert.Equal(t, "context", descriptionOf(t, state)[sourceKey], "the source in every shape")
				assert.NotContains(t, del.Attributes().AsRaw(), specEntityRelationships, "a delete implicitly deletes them")
			})
		})
	}
}

// Every value of every entity.id of the specification's shape is a string,
// in states, deletes and relationships, whichever way the shape was
// reached; the legacy shape keeps process.pid an int; descriptions keep
// it an int in both, as on telemetry's resources.
func TestSpecEntityIDsAreStrings(t *testing.T) {
	eachShape(t, func(t *testing.T, format string, wantSpec bool) {
		p := testProcess()
		p.Identity.ContainerID = "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"
		p.Identity.PodUID = "0d3a4c5e-6f70-4182-93a4-b5c6d7e8f901"
		w := testWriter(format, time.Minute, CommandLineSanitized)
		w.state(time.Unix(1, 0), p, nil)
		w.delete(time.Unix(2, 0), p, reasonExited, true)
		records := w.take().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		require.Equal(t, 2, records.Len())
		idKey := legacyEntityID
		if wantSpec {
			idKey = specEntityID
		}
		for _, lr := range records.All() {
			require.Equal(t, wantSpec, lr.EventName() != "", "shape")
			id, ok := lr.Attributes().Get(idKey)
			require.True(t, ok, "%s in %v", idKey, lr.Attributes().AsRaw())
			if !wantSpec {
				assert.Equal(t, int64(4242), id.Map().AsRaw()["process.pid"], "legacy: contrib's types")
				continue
			}
			assert.Equal(t, map[string]any{"process.pid": "4242", "process.creation.time": p.Identity.CreationTimeString()}, id.Map().AsRaw())
			assertStringIDs(t, lr.Attributes())
		}
		assert.Equal(t, int64(4242), descriptionOf(t, records.At(0))["process.pid"], "the description keeps the resource's type")
	})
}

// assertStringIDs fails unless every value of the event's entity.id and
// of its relationships' is a string.
func assertStringIDs(t *testing.T, attrs pcommon.Map) {
	t.Helper()
	ids := []pcommon.Value{}
	if id, ok := attrs.Get(specEntityID); ok {
		ids = append(ids, id)
	}
	if rels, ok := attrs.Get(specEntityRelationships); ok {
		for _, rel := range rels.Slice().All() {
			id, ok := rel.Map().Get(specEntityID)
			require.True(t, ok, "a relationship without entity.id: %v", rel.AsRaw())
			ids = append(ids, id)
		}
	}
	require.NotEmpty(t, ids)
	for _, id := range ids {
		require.Equal(t, pcommon.ValueTypeMap, id.Type())
		for k, v := range id.Map().All() {
			assert.Equal(t, pcommon.ValueTypeStr, v.Type(), "entity.id %s = %s", k, v.AsString())
		}
	}
}

func TestStringValues(t *testing.T) {
	m := pcommon.NewMap()
	m.PutInt("process.pid", 4242)
	m.PutStr("process.creation.time", "2023-11-14T22:13:30Z")
	m.PutBool("b", true)
	m.PutDouble("d", 1.5)
	stringValues(m)
	assert.Equal(t, map[string]any{"process.pid": "4242", "process.creation.time": "2023-11-14T22:13:30Z", "b": "true", "d": "1.5"}, m.AsRaw())
}

// The command_line setting: the host's command line sanitized from its
// arguments by default, as read with full, absent with none, in both
// shapes; what an SDK published (observed family) is never copied.
func TestCommandLineSetting(t *testing.T) {
	args := []string{"java", "-Dspring.datasource.password=S3cret", "-jar", "app.jar", "--api-key", "sk-123", "--port", "8080"}
	const (
		full      = "java -Dspring.datasource.password=S3cret -jar app.jar --api-key sk-123 --port 8080"
		sanitized = "java -Dspring.datasource.password=**** -jar app.jar --api-key **** --port 8080"
	)
	host := func(p *tracker.Publication) {
		p.Identity.Args = args
		p.Identity.CommandLine = full
	}
	lineOnly := func(p *tracker.Publication) { p.Identity.CommandLine = full } // no arguments: split at spaces
	published := func(p *tracker.Publication) {
		p.Context.Resource.PutStr("process.command_line", full)
		s := p.Context.Resource.PutEmptySlice("process.command_args")
		for _, a := range args {
			s.AppendEmpty().SetStr(a)
		}
	}
	both := func(p *tracker.Publication) { host(p); published(p) }
	tests := []struct {
		name     string
		setting  string
		set      func(*tracker.Publication)
		wantLine any // nil: absent
		wantArgs any // nil: absent
	}{
		{"sanitized/host", CommandLineSanitized, host, sanitized, nil},
		{"sanitized/host line only", CommandLineSanitized, lineOnly, sanitized, nil},
		{"sanitized/published", CommandLineSanitized, published, nil, nil},
		{"sanitized/host wins", CommandLineSanitized, both, sanitized, nil},
		{"sanitized/none known", CommandLineSanitized, func(*tracker.Publication) {}, nil, nil},
		{"unset is sanitized", "", host, sanitized, nil},
		{"full/host", CommandLineFull, host, full, nil},
		{"full/published", CommandLineFull, published, nil, nil},
		{"full/host wins", CommandLineFull, both, full, nil},
		{"none/host", CommandLineNone, host, nil, nil},
		{"none/published", CommandLineNone, both, nil, nil},
	}
	for _, tt := range tests {
		for _, format := range []string{FormatLegacy, FormatSpec} {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				p := testProcess()
				tt.set(p)
				w := testWriter(format, time.Minute, tt.setting)
				w.state(time.Unix(1, 0), p, nil)
				records := w.take().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
				desc := descriptionOf(t, records.At(0))
				assert.Equal(t, tt.wantLine, desc["process.command_line"])
				assert.Equal(t, tt.wantArgs, desc["process.command_args"])
				assert.Equal(t, "checkout", desc["service.name"], "the rest stays")
				if tt.setting != CommandLineFull {
					b, err := (&plog.JSONMarshaler{}).MarshalLogs(w.logs)
					require.NoError(t, err)
					assert.NotContains(t, string(b), "S3cret")
				}
			})
		}
	}
}

// The events' resource names the host the processes run on, in every
// shape, as contrib's resourcedetection system detector would.
func TestEventsResourceNamesTheHost(t *testing.T) {
	for _, format := range []string{FormatSpec, FormatLegacy} {
		w := testWriter(format, time.Minute, CommandLineSanitized)
		w.setHost(procfs.HostIdentity{ID: "abc123", Name: "node-1"})
		w.state(time.Unix(1, 0), testProcess(), nil)
		res := w.take().ResourceLogs().At(0).Resource().Attributes().AsRaw()
		assert.Equal(t, map[string]any{"host.id": "abc123", "host.name": "node-1"}, res, format)
		// Not known: not said.
		w.setHost(procfs.HostIdentity{})
		w.state(time.Unix(1, 0), testProcess(), nil)
		assert.Empty(t, w.take().ResourceLogs().At(0).Resource().Attributes().AsRaw(), format)
	}
}

// testWriter is an event writer of the receiver's defaults but these, of
// process entities only.
func testWriter(format string, interval time.Duration, commandLine string) *eventWriter {
	cfg := createDefaultConfig()
	cfg.EntityEventFormat, cfg.ReportInterval, cfg.CommandLine = format, interval, commandLine
	cfg.EntityTypes = []string{"process"}
	return newEventWriter(cfg)
}

// A process's and a service instance's descriptions come from the policy
// of internal/attrpolicy at its defaults: the identity and vendor keys a
// process publishes; never a published host.*, container.*, k8s.* or
// process.* (the host's view is their one source), an empty value, or
// threadlocal.*; and nothing of ProcessContext.attributes. The events'
// resource is the one host they describe.
func TestDescriptionPolicy(t *testing.T) {
	published := map[string]any{
		"service.name": "checkout", "service.instance.id": "checkout-1", "service.version": "",
		"telemetry.sdk.name": "dd-trace-go", "datadog.x": "dd", "vendor.empty": "",
		"host.name": "127.0.0.1", "host.arch": "amd64", "os.type": "linux", "cloud.region": "moon-1",
		"container.id": "published-container", "k8s.pod.uid": "published-pod",
		"process.executable.name": "forged", "process.command_line": "app --token abc",
		"threadlocal.schema_version": "tlsdesc_v1_dev",
	}
	for _, tt := range []struct {
		name        string
		containerID string // the cgroup's
	}{
		{"in no container", ""},
		{"in a container", "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"},
	} {
		for _, format := range []string{FormatLegacy, FormatSpec} {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				p := testProcess()
				require.NoError(t, p.Context.Resource.FromRaw(published))
				p.Identity.ContainerID = tt.containerID
				cfg := createDefaultConfig()
				cfg.EntityEventFormat = format
				w := newEventWriter(cfg)
				w.setHost(procfs.HostIdentity{ID: "abc123", Name: "node-1"})
				w.state(time.Unix(1, 0), p, []*tracker.Publication{p})
				logs := w.take()
				records := logs.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
				require.Equal(t, 3, records.Len(), "process, service instance, service")

				desc := descriptionOf(t, records.At(0))
				for _, k := range []string{"service.name", "service.instance.id", "telemetry.sdk.name", "datadog.x"} {
					assert.Equal(t, published[k], desc[k], k)
				}
				for _, k := range []string{"service.version", "vendor.empty", "host.name", "host.arch", "os.type", "cloud.region",
					"k8s.pod.uid", "process.command_line", "threadlocal.schema_version"} {
					assert.NotContains(t, desc, k)
				}
				assert.Equal(t, "java", desc["process.executable.name"], "the host's")
				if tt.containerID == "" {
					assert.NotContains(t, desc, "container.id", "the cgroup names no container")
				} else {
					assert.Equal(t, tt.containerID, desc["container.id"], "the cgroup's")
				}
				assert.Equal(t, map[string]any{"service.name": "checkout"}, descriptionOf(t, records.At(1)), "no empty service.version")
				assert.Equal(t, map[string]any{"host.id": "abc123", "host.name": "node-1"},
					logs.ResourceLogs().At(0).Resource().Attributes().AsRaw())
				b, err := (&plog.JSONMarshaler{}).MarshalLogs(logs)
				require.NoError(t, err)
				for _, never := range []string{"127.0.0.1", "published-container", "published-pod", "forged", "threadlocal", "tlsdesc"} {
					assert.NotContains(t, string(b), never)
				}
			})
		}
	}
}
