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

func testProcess() *tracker.Process {
	res := pcommon.NewMap()
	res.PutStr("service.name", "checkout")
	attrs := pcommon.NewMap()
	attrs.PutStr("threadlocal.schema_version", "tlsdesc_v1_dev")
	return &tracker.Process{
		Identity: procfs.Identity{PID: 4242, StartTicks: 1000, CreationTime: time.Unix(1_700_000_010, 0), ExecutableName: "java", NSpid: []int{4242, 7}},
		Context:  otep.Context{Resource: res, Attributes: attrs},
	}
}

// The events are what contrib's experimentalmetricmetadata parses, in the
// shape its gate selects (the default format) or the shape asked for, and
// the scope carries the receiver's name and the event-as-log marker.
func TestEventShapes(t *testing.T) {
	tests := []struct {
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
	}
	for _, tt := range tests {
		name := tt.format
		if name == "" {
			name = "library"
		}
		t.Run(name+map[bool]string{false: "/gate_off", true: "/gate_on"}[tt.gate], func(t *testing.T) {
			setSpecGate(t, tt.gate)
			w := newEventWriter(tt.format, 90*time.Second)
			p := testProcess()
			now := time.Unix(1_800_000_000, 0)
			w.state(now, p)
			w.delete(now, p, reasonExited)
			logs := w.take()
			assert.Zero(t, w.len(), "take starts a new batch")

			sl := logs.ResourceLogs().At(0).ScopeLogs().At(0)
			marker, _ := sl.Scope().Attributes().Get(experimentalmetricmetadata.SemconvOtelEntityEventAsScope)
			assert.True(t, marker.Bool())
			records := sl.LogRecords()
			require.Equal(t, 2, records.Len())
			for _, lr := range records.All() {
				assert.Equal(t, tt.wantSpec, lr.EventName() != "", "spec shape")
				assert.Equal(t, pcommon.NewTimestampFromTime(now), lr.ObservedTimestamp())
			}
			ctxAttrs, ok := records.At(0).Attributes().Get(contextAttributesKey)
			require.True(t, ok)
			assert.Equal(t, "tlsdesc_v1_dev", ctxAttrs.Map().AsRaw()["threadlocal.schema_version"])

			// Parse as a consumer would, with the gate of the shape.
			setSpecGate(t, tt.wantSpec)
			events := experimentalmetricmetadata.NewEntityEventsSliceFromLogs(records)
			state := events.At(0)
			require.Equal(t, experimentalmetricmetadata.EventTypeState, state.EventType())
			assert.Equal(t, pcommon.NewTimestampFromTime(now), state.Timestamp())
			assert.Equal(t, map[string]any{"process.pid": int64(4242), "process.creation.time": p.Identity.CreationTimeString()}, state.ID().AsRaw())
			details := state.EntityStateDetails()
			assert.Equal(t, entityTypeProcess, details.EntityType())
			assert.Equal(t, 90*time.Second, details.Interval())
			desc := details.Attributes().AsRaw()
			assert.Equal(t, "checkout", desc["service.name"])
			assert.Equal(t, "java", desc["process.executable.name"])
			assert.Equal(t, int64(7), desc["process.vpid"])

			del := events.At(1)
			require.Equal(t, experimentalmetricmetadata.EventTypeDelete, del.EventType())
			assert.Equal(t, entityTypeProcess, del.EntityDeleteDetails().EntityType())
			assert.Equal(t, state.ID().AsRaw(), del.ID().AsRaw())
			if tt.wantSpec {
				assert.Equal(t, reasonExited, del.EntityDeleteDetails().DeletionReason())
			} else {
				v, _ := records.At(1).Attributes().Get(legacyDeleteReason)
				assert.Equal(t, reasonExited, v.Str())
			}
		})
	}
}

// toSpec and toLegacy undo each other.
func TestShapeRoundTrip(t *testing.T) {
	setSpecGate(t, false)
	w := newEventWriter(FormatLegacy, time.Minute)
	w.state(time.Unix(1, 0), testProcess())
	w.delete(time.Unix(2, 0), testProcess(), reasonInvalid)
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
func envProcess() *tracker.Process {
	res := pcommon.NewMap()
	res.PutStr("service.name", "cart")
	res.PutStr("deployment.environment.name", "prod")
	return &tracker.Process{
		Identity: procfs.Identity{PID: 5150, StartTicks: 2000, CreationTime: time.Unix(1_700_000_020, 0), ExecutableName: "python3"},
		Source:   tracker.SourceEnvironment,
		Context:  otep.Context{Resource: res, Attributes: pcommon.NewMap()},
	}
}

// stateRecord writes one state event of p in format and returns its record.
func stateRecord(t *testing.T, format string, p *tracker.Process) plog.LogRecord {
	t.Helper()
	w := newEventWriter(format, time.Minute)
	w.state(time.Unix(1_800_000_000, 0), p)
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
// the resource claims; an environment identity has no context attributes.
func TestStateDescriptionSource(t *testing.T) {
	forged := testProcess()
	forged.Context.Resource.PutStr(sourceKey, "environment")
	tests := []struct {
		name        string
		process     *tracker.Process
		wantSource  string
		wantService string
		wantCtxAttr bool
	}{
		{"context", testProcess(), "context", "checkout", true},
		{"environment", envProcess(), "environment", "cart", false},
		{"a resource cannot claim another source", forged, "context", "checkout", true},
	}
	for _, tt := range tests {
		for _, format := range []string{FormatLegacy, FormatSpec} {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				lr := stateRecord(t, format, tt.process)
				desc := descriptionOf(t, lr)
				assert.Equal(t, tt.wantSource, desc[sourceKey])
				assert.Equal(t, tt.wantService, desc["service.name"])
				_, ctxAttrs := lr.Attributes().Get(contextAttributesKey)
				assert.Equal(t, tt.wantCtxAttr, ctxAttrs, contextAttributesKey)
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
	facts := []struct {
		name        string
		containerID string
		podUID      string
		want        []any // in the specification's shape; nil: no attribute
	}{
		{"neither", "", "", nil},
		{"container", containerID, "", []any{toContainer}},
		{"pod", "", podUID, []any{toPod}},
		{"container in a pod", containerID, podUID, []any{toContainer, toPod}},
	}
	shapes := []struct {
		format   string
		gate     bool // the library's shape, turned into format's when they differ
		wantSpec bool
	}{
		{FormatSpec, false, true},
		{FormatSpec, true, true},
		{FormatLibrary, true, true},
		{FormatLegacy, false, false},
		{FormatLegacy, true, false},
		{FormatLibrary, false, false},
	}
	for _, f := range facts {
		for _, s := range shapes {
			name := s.format
			if name == "" {
				name = "library"
			}
			t.Run(f.name+"/"+name+map[bool]string{false: "/gate_off", true: "/gate_on"}[s.gate], func(t *testing.T) {
				setSpecGate(t, s.gate)
				p := testProcess()
				p.Identity.ContainerID, p.Identity.PodUID = f.containerID, f.podUID
				w := newEventWriter(s.format, time.Minute)
				w.state(time.Unix(1, 0), p)
				w.delete(time.Unix(2, 0), p, reasonExited)
				records := w.take().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
				require.Equal(t, 2, records.Len())
				state, del := records.At(0), records.At(1)
				require.Equal(t, s.wantSpec, state.EventName() == specEventState, "shape")

				rels, ok := state.Attributes().Get(specEntityRelationships)
				if s.wantSpec && f.want != nil {
					require.True(t, ok, "relationships in %v", state.Attributes().AsRaw())
					require.Equal(t, pcommon.ValueTypeSlice, rels.Type())
					assert.Equal(t, f.want, rels.Slice().AsRaw())
				} else {
					assert.False(t, ok, "no relationships in %v", state.Attributes().AsRaw())
				}
				assert.Equal(t, "context", descriptionOf(t, state)[sourceKey], "the source in every shape")
				assert.NotContains(t, del.Attributes().AsRaw(), specEntityRelationships, "a delete implicitly deletes them")
			})
		}
	}
}
