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
