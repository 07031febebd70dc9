package processctxreceiver

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

// Entity event vocabulary. The legacy names are those of contrib's
// pkg/experimentalmetricmetadata; the spec names those of the entity events
// specification.
const (
	entityTypeProcess = "process"
	scopeEventAsLog   = "otel.entity.event_as_log"

	legacyEventType       = "otel.entity.event.type"
	legacyEventState      = "entity_state"
	legacyEventDelete     = "entity_delete"
	legacyEntityType      = "otel.entity.type"
	legacyEntityID        = "otel.entity.id"
	legacyEntityAttrs     = "otel.entity.attributes"
	legacyEntityInterval  = "otel.entity.interval" // milliseconds
	legacyDeleteReason    = "otel.entity.delete.reason"
	specEventState        = "entity.state"
	specEventDelete       = "entity.delete"
	specEntityType        = "entity.type"
	specEntityID          = "entity.id"
	specEntityDescription = "entity.description"
	specEntityInterval    = "entity.report.interval" // seconds
	specDeleteReason      = "entity.delete.reason"

	// contextAttributesKey holds ProcessContext.attributes (threadlocal.*):
	// facts about the process that are not resource attributes, kept apart.
	contextAttributesKey = "process_context.attributes"
)

// eventWriter accumulates the entity events of one scan into plog.Logs.
type eventWriter struct {
	spec     bool
	interval time.Duration
	logs     plog.Logs
	records  plog.LogRecordSlice
}

func newEventWriter(format string, interval time.Duration) *eventWriter {
	w := &eventWriter{spec: format == FormatSpec, interval: interval}
	w.reset()
	return w
}

func (w *eventWriter) reset() {
	w.logs = plog.NewLogs()
	scope := w.logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	scope.Scope().SetName(metadata.ScopeName)
	scope.Scope().Attributes().PutBool(scopeEventAsLog, true)
	w.records = scope.LogRecords()
}

// take returns the accumulated events and starts a new batch.
func (w *eventWriter) take() plog.Logs {
	logs := w.logs
	w.reset()
	return logs
}

func (w *eventWriter) len() int { return w.records.Len() }

func (w *eventWriter) record(now time.Time, pid int, creationTime string) plog.LogRecord {
	lr := w.records.AppendEmpty()
	ts := pcommon.NewTimestampFromTime(now)
	lr.SetTimestamp(ts)
	lr.SetObservedTimestamp(ts)
	idKey := legacyEntityID
	typeKey := legacyEntityType
	if w.spec {
		idKey, typeKey = specEntityID, specEntityType
	}
	lr.Attributes().PutStr(typeKey, entityTypeProcess)
	id := lr.Attributes().PutEmptyMap(idKey)
	id.PutInt("process.pid", int64(pid))
	id.PutStr("process.creation.time", creationTime)
	return lr
}

// state appends an entity_state event: the published resource attributes,
// then the host's view of the process (which wins for the keys it sets:
// an SDK in a container reports its own namespace's pids).
func (w *eventWriter) state(now time.Time, p *tracker.Process) {
	id, ctx := p.Identity, p.Context
	lr := w.record(now, id.PID, id.CreationTimeString())
	attrs := lr.Attributes()
	var desc pcommon.Map
	if w.spec {
		lr.SetEventName(specEventState)
		desc = attrs.PutEmptyMap(specEntityDescription)
		attrs.PutInt(specEntityInterval, int64(w.interval.Seconds()))
	} else {
		attrs.PutStr(legacyEventType, legacyEventState)
		desc = attrs.PutEmptyMap(legacyEntityAttrs)
		attrs.PutInt(legacyEntityInterval, w.interval.Milliseconds())
	}
	ctx.Resource.CopyTo(desc)
	putHostView(desc, id)
	if ctx.Attributes.Len() > 0 {
		ctx.Attributes.CopyTo(attrs.PutEmptyMap(contextAttributesKey))
	}
}

// delete appends an entity_delete event.
func (w *eventWriter) delete(now time.Time, p *tracker.Process, reason string) {
	lr := w.record(now, p.Identity.PID, p.Identity.CreationTimeString())
	if w.spec {
		lr.SetEventName(specEventDelete)
		lr.Attributes().PutStr(specDeleteReason, reason)
	} else {
		lr.Attributes().PutStr(legacyEventType, legacyEventDelete)
		lr.Attributes().PutStr(legacyDeleteReason, reason)
	}
}

// putHostView adds what the host knows of the process.
func putHostView(m pcommon.Map, id procfs.Identity) {
	m.PutInt("process.pid", int64(id.PID))
	m.PutStr("process.creation.time", id.CreationTimeString())
	if id.ParentPID > 0 {
		m.PutInt("process.parent_pid", int64(id.ParentPID))
	}
	putNonEmpty(m, "process.executable.name", id.ExecutableName)
	putNonEmpty(m, "process.executable.path", id.ExecutablePath)
	putNonEmpty(m, "process.command_line", id.CommandLine)
	putNonEmpty(m, "process.owner", id.Owner)
	putNonEmpty(m, "container.id", id.ContainerID)
	if vpid := id.VPID(); vpid != id.PID {
		m.PutInt("process.vpid", int64(vpid))
	}
}

func putNonEmpty(m pcommon.Map, k, v string) {
	if v != "" {
		m.PutStr(k, v)
	}
}
