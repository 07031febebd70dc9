package processctxreceiver

import (
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/experimentalmetricmetadata"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/processctx/otelcol-processctx/internal/cmdline"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/tracker"
	"github.com/processctx/otelcol-processctx/receiver/processctxreceiver/internal/metadata"
)

// The two shapes of an entity event. contrib's experimentalmetricmetadata
// writes one of them, as its feature gate
// pkg.experimentalmetricmetadata.useEntityEventsSpecification says; the
// names are here to turn one into the other when entity_event_format asks
// for the shape the gate does not.
const (
	entityTypeProcess = "process"

	legacyEventType      = "otel.entity.event.type"
	legacyEventState     = "entity_state"
	legacyEventDelete    = "entity_delete"
	legacyEntityType     = "otel.entity.type"
	legacyEntityID       = "otel.entity.id"
	legacyEntityAttrs    = "otel.entity.attributes"
	legacyEntityInterval = "otel.entity.interval" // milliseconds
	// legacyDeleteReason is ours: the legacy shape has no reason.
	legacyDeleteReason = "otel.entity.delete.reason"

	specEventState        = "entity.state"
	specEventDelete       = "entity.delete"
	specEntityType        = "entity.type"
	specEntityID          = "entity.id"
	specEntityDescription = "entity.description"
	specEntityInterval    = "entity.report.interval" // seconds
	specDeleteReason      = "entity.delete.reason"
	// specEntityRelationships is written by us on spec-shaped state events:
	// experimentalmetricmetadata v0.165.1 has no API for it, and the
	// legacy shape no field.
	specEntityRelationships = "entity.relationships"
	specRelationshipType    = "relationship.type"

	// relationshipRunsOn relates the process to what it executes in. The
	// semantic conventions define no relationship types yet (their
	// docs/how-to-write-conventions/resource-and-entities.md: "Declaring
	// Entity relationships is not yet supported"; no model/*/entities.yaml
	// declares one), so this is the entity events specification's example
	// for a process and where it executes (process -> runs_on -> host);
	// its part_of (container -> part_of -> k8s.pod) relates a workload's
	// parts, not a process to its sandbox.
	relationshipRunsOn  = "runs_on"
	entityTypeContainer = "container"
	entityTypePod       = "k8s.pod"
	entityTypeHost      = "host"

	// contextAttributesKey holds ProcessContext.attributes (threadlocal.*):
	// facts about the process that are not resource attributes, kept apart.
	contextAttributesKey = "process_context.attributes"
	// sourceKey, in the description, says where the identity comes from
	// (tracker.Source: "context" or "environment"): an environment's
	// attributes are what an SDK would read at start, not what a running
	// SDK published, and a consumer may weigh them apart.
	sourceKey = "process_context.source"

	commandLineKey = "process.command_line"
	// commandArgsKey is not ours (the host's view is process.command_line)
	// but an SDK may publish it: the command_line setting applies to it.
	commandArgsKey = "process.command_args"
)

// eventWriter accumulates entity events into plog.Logs, built with contrib's
// experimentalmetricmetadata so that its consumers parse them.
type eventWriter struct {
	format      string // FormatLegacy, FormatSpec, or "" for the library's
	interval    time.Duration
	commandLine string // CommandLineSanitized ("" too), CommandLineFull or CommandLineNone
	// host is the host the processes run on: the events' resource
	// (host.id, host.name), and in the specification's shape the target of
	// each process's runs_on.
	host    procfs.HostIdentity
	logs    plog.Logs
	records plog.LogRecordSlice
	events  experimentalmetricmetadata.EntityEventsSlice
}

func newEventWriter(format string, interval time.Duration, commandLine string) *eventWriter {
	w := &eventWriter{format: format, interval: interval, commandLine: commandLine}
	w.reset()
	return w
}

// setHost makes host the events' host, from the next batch on.
func (w *eventWriter) setHost(host procfs.HostIdentity) {
	w.host = host
	w.reset()
}

func (w *eventWriter) reset() {
	w.logs = plog.NewLogs()
	rl := w.logs.ResourceLogs().AppendEmpty()
	putNonEmpty(rl.Resource().Attributes(), "host.id", w.host.ID)
	putNonEmpty(rl.Resource().Attributes(), "host.name", w.host.Name)
	scope := rl.ScopeLogs().AppendEmpty()
	scope.Scope().SetName(metadata.ScopeName)
	scope.Scope().Attributes().PutBool(experimentalmetricmetadata.SemconvOtelEntityEventAsScope, true)
	w.records = scope.LogRecords()
	w.events = experimentalmetricmetadata.NewEntityEventsSliceFromLogs(w.records)
}

// take returns the accumulated events and starts a new batch.
func (w *eventWriter) take() plog.Logs {
	logs := w.logs
	w.reset()
	return logs
}

func (w *eventWriter) len() int { return w.records.Len() }

// event appends an event for the process, with its ID; the log record is
// returned for what the library does not set.
func (w *eventWriter) event(now time.Time, id procfs.Identity) (experimentalmetricmetadata.EntityEvent, plog.LogRecord) {
	e := w.events.AppendEmpty()
	lr := w.records.At(w.records.Len() - 1)
	ts := pcommon.NewTimestampFromTime(now)
	e.SetTimestamp(ts)
	lr.SetObservedTimestamp(ts)
	eid := e.ID()
	eid.PutInt("process.pid", int64(id.PID))
	eid.PutStr("process.creation.time", id.CreationTimeString())
	return e, lr
}

// state appends an entity state event: the published resource attributes,
// then the host's view of the process (which wins for the keys it sets:
// an SDK in a container reports its own namespace's pids) and the source
// of the identity; in the specification's shape, the entities the process
// runs in.
func (w *eventWriter) state(now time.Time, p *tracker.Process) {
	e, lr := w.event(now, p.Identity)
	st := e.SetEntityState()
	st.SetEntityType(entityTypeProcess)
	st.SetInterval(w.interval)
	desc := st.Attributes()
	p.Context.Resource.CopyTo(desc)
	putHostView(desc, p.Identity)
	putCommandLine(desc, p.Identity, w.commandLine)
	desc.PutStr(sourceKey, p.Source.String()) // after the resource: no process claims another source
	if p.Context.Attributes.Len() > 0 {
		p.Context.Attributes.CopyTo(lr.Attributes().PutEmptyMap(contextAttributesKey))
	}
	w.shape(lr)
	if lr.EventName() == specEventState { // once shaped: the legacy shape has no field for them
		putRelationships(lr.Attributes(), p.Identity, w.host.ID)
		stringIDs(lr.Attributes())
	}
}

// putRelationships adds entity.relationships for the entities the host
// says the process runs in, when it knows of any: its container and its
// pod, from its cgroup, and the host (hostID, its host.id). They go on the
// process, the shorter-lived entity, as the specification's placement rule
// asks (its own example: process runs_on host); a delete carries none,
// since deleting the process implicitly deletes them.
func putRelationships(attrs pcommon.Map, id procfs.Identity, hostID string) {
	if id.ContainerID == "" && id.PodUID == "" && hostID == "" {
		return // absent means none: no empty array
	}
	rels := attrs.PutEmptySlice(specEntityRelationships)
	appendRunsOn(rels, entityTypeContainer, "container.id", id.ContainerID)
	appendRunsOn(rels, entityTypePod, "k8s.pod.uid", id.PodUID)
	appendRunsOn(rels, entityTypeHost, "host.id", hostID)
}

// appendRunsOn appends process -> runs_on -> the target entity whose
// identifying attribute idKey is idValue, unless idValue is unknown ("").
func appendRunsOn(rels pcommon.Slice, entityType, idKey, idValue string) {
	if idValue == "" {
		return
	}
	rel := rels.AppendEmpty().SetEmptyMap()
	rel.PutStr(specRelationshipType, relationshipRunsOn)
	rel.PutStr(specEntityType, entityType)
	rel.PutEmptyMap(specEntityID).PutStr(idKey, idValue)
}

// delete appends an entity delete event.
func (w *eventWriter) delete(now time.Time, p *tracker.Process, reason string) {
	e, lr := w.event(now, p.Identity)
	d := e.SetEntityDelete()
	d.SetEntityType(entityTypeProcess)
	d.SetDeletionReason(reason) // spec shape only
	if lr.EventName() == "" {
		lr.Attributes().PutStr(legacyDeleteReason, reason)
	}
	w.shape(lr)
	if lr.EventName() == specEventDelete {
		stringIDs(lr.Attributes())
	}
}

// stringIDs turns every value of the entity.id of a specification-shaped
// event, and of the entity.id of each of its relationships, into a string
// ("Keys and values MUST be strings"): process.pid in decimal. The legacy
// shape keeps contrib's types (process.pid an int), and so do the
// entity's description and telemetry's resources: a consumer joins the
// two through the pid's decimal string.
func stringIDs(attrs pcommon.Map) {
	if id, ok := attrs.Get(specEntityID); ok && id.Type() == pcommon.ValueTypeMap {
		stringValues(id.Map())
	}
	rels, ok := attrs.Get(specEntityRelationships)
	if !ok || rels.Type() != pcommon.ValueTypeSlice {
		return
	}
	for _, rel := range rels.Slice().All() {
		if rel.Type() != pcommon.ValueTypeMap {
			continue
		}
		if id, ok := rel.Map().Get(specEntityID); ok && id.Type() == pcommon.ValueTypeMap {
			stringValues(id.Map())
		}
	}
}

// stringValues replaces every value of m that is not a string with its
// string form (an int in decimal).
func stringValues(m pcommon.Map) {
	for _, v := range m.All() {
		if v.Type() != pcommon.ValueTypeStr {
			v.SetStr(v.AsString())
		}
	}
}

// shape turns the record into the configured shape when the library wrote
// the other one.
func (w *eventWriter) shape(lr plog.LogRecord) {
	librarySpec := lr.EventName() != ""
	switch {
	case w.format == FormatSpec && !librarySpec:
		toSpec(lr)
	case w.format == FormatLegacy && librarySpec:
		toLegacy(lr)
	}
}

// toSpec turns a legacy-shaped record into the specification's shape.
func toSpec(lr plog.LogRecord) {
	attrs := lr.Attributes()
	if v, ok := attrs.Get(legacyEventType); ok {
		switch v.Str() {
		case legacyEventState:
			lr.SetEventName(specEventState)
		case legacyEventDelete:
			lr.SetEventName(specEventDelete)
		}
		attrs.Remove(legacyEventType)
	}
	if v, ok := attrs.Get(legacyEntityInterval); ok {
		attrs.PutInt(specEntityInterval, v.Int()/1000)
		attrs.Remove(legacyEntityInterval)
	}
	rename(attrs, legacyEntityType, specEntityType)
	rename(attrs, legacyEntityID, specEntityID)
	rename(attrs, legacyEntityAttrs, specEntityDescription)
	rename(attrs, legacyDeleteReason, specDeleteReason)
}

// toLegacy turns a specification-shaped record into the legacy shape.
func toLegacy(lr plog.LogRecord) {
	attrs := lr.Attributes()
	switch lr.EventName() {
	case specEventState:
		attrs.PutStr(legacyEventType, legacyEventState)
	case specEventDelete:
		attrs.PutStr(legacyEventType, legacyEventDelete)
	}
	lr.SetEventName("")
	if v, ok := attrs.Get(specEntityInterval); ok {
		attrs.PutInt(legacyEntityInterval, v.Int()*1000)
		attrs.Remove(specEntityInterval)
	}
	rename(attrs, specEntityType, legacyEntityType)
	rename(attrs, specEntityID, legacyEntityID)
	rename(attrs, specEntityDescription, legacyEntityAttrs)
	rename(attrs, specDeleteReason, legacyDeleteReason)
}

// rename moves the value of key from to key to.
func rename(attrs pcommon.Map, from, to string) {
	v, ok := attrs.Get(from)
	if !ok {
		return
	}
	moved := pcommon.NewValueEmpty()
	v.MoveTo(moved) // before PutEmpty, which may move v
	attrs.Remove(from)
	moved.MoveTo(attrs.PutEmpty(to))
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
	putNonEmpty(m, "process.owner", id.Owner)
	putNonEmpty(m, "container.id", id.ContainerID)
	putNonEmpty(m, "k8s.pod.uid", id.PodUID)
	if vpid := id.VPID(); vpid != id.PID {
		m.PutInt("process.vpid", int64(vpid))
	}
}

// putCommandLine sets process.command_line as the command_line setting
// says: the host's, sanitized from its arguments by default, or as read;
// none at all. What the SDK published is treated alike (its
// process.command_line, which stays where the host has none, and its
// process.command_args): the setting says what leaves the host, wherever
// it was read.
func putCommandLine(m pcommon.Map, id procfs.Identity, setting string) {
	switch setting {
	case CommandLineNone:
		m.Remove(commandLineKey)
		m.Remove(commandArgsKey)
		return
	case CommandLineFull:
		putNonEmpty(m, commandLineKey, id.CommandLine)
		return
	}
	switch {
	case len(id.Args) > 0:
		m.PutStr(commandLineKey, cmdline.Sanitize(id.Args))
	case id.CommandLine != "":
		m.PutStr(commandLineKey, cmdline.SanitizeLine(id.CommandLine))
	default:
		if v, ok := m.Get(commandLineKey); ok {
			v.SetStr(cmdline.SanitizeLine(v.AsString()))
		}
	}
	if v, ok := m.Get(commandArgsKey); ok {
		sanitizeArgsValue(v)
	}
}

// sanitizeArgsValue sanitizes a published process.command_args: an array
// of arguments, or anything else as a line.
func sanitizeArgsValue(v pcommon.Value) {
	if v.Type() != pcommon.ValueTypeSlice {
		v.SetStr(cmdline.SanitizeLine(v.AsString()))
		return
	}
	s := v.Slice()
	args := make([]string, s.Len())
	for i, a := range s.All() {
		args[i] = a.AsString()
	}
	for i, a := range cmdline.SanitizeArgs(args) {
		s.At(i).SetStr(a)
	}
}

func putNonEmpty(m pcommon.Map, k, v string) {
	if v != "" {
		m.PutStr(k, v)
	}
}
