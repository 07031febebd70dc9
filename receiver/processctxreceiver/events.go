// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/experimentalmetricmetadata"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/processctx/otelcol-processctx/internal/attrpolicy"
	"github.com/processctx/otelcol-processctx/internal/cmdline"
	"github.com/processctx/otelcol-processctx/internal/entitymodel"
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
	relationshipRunsOn = "runs_on"
	// relationshipPartOf relates a service instance to its service (the
	// specification's example: container -> part_of -> k8s.pod).
	relationshipPartOf = "part_of"

	// sourceKey, in the description, says where the identity comes from
	// (tracker.Source: "context" or "environment"): an environment's
	// attributes are what an SDK would read at start, not what a running
	// SDK published, and a consumer may weigh them apart.
	sourceKey = "process_context.source"

	commandLineKey = entitymodel.ProcessCommandLineKey
)

// eventWriter accumulates entity events into plog.Logs, built with contrib's
// experimentalmetricmetadata so that its consumers parse them.
type eventWriter struct {
	format      string // FormatLegacy, FormatSpec, or "" for the library's
	interval    time.Duration
	commandLine string // CommandLineSanitized ("" too), CommandLineFull or CommandLineNone
	types       entityTypes
	// policy decides what of a published resource the entities'
	// descriptions carry: attrpolicy's defaults (the receiver has no
	// setting of its own), the same the processor applies to telemetry.
	policy *attrpolicy.Policy
	// host is the host the processes run on: the events' resource
	// (host.id, host.name), and in the specification's shape the target of
	// each process's runs_on.
	host    procfs.HostIdentity
	logs    plog.Logs
	records plog.LogRecordSlice
	events  experimentalmetricmetadata.EntityEventsSlice
	// written are the service and service instance events of this batch:
	// the processes of one service state it once a batch.
	written map[serviceKey]bool
}

// serviceKey names a service or service instance event of a batch.
type serviceKey struct {
	typ, id, namespace string
	delete             bool
}

func newEventWriter(cfg *Config) *eventWriter {
	w := &eventWriter{format: cfg.EntityEventFormat, interval: cfg.ReportInterval,
		commandLine: cfg.CommandLine, types: newEntityTypes(cfg.EntityTypes), policy: attrpolicy.Default()}
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
	putNonEmpty(rl.Resource().Attributes(), entitymodel.HostIDKey, w.host.ID)
	putNonEmpty(rl.Resource().Attributes(), entitymodel.HostNameKey, w.host.Name)
	scope := rl.ScopeLogs().AppendEmpty()
	scope.Scope().SetName(metadata.ScopeName)
	scope.Scope().Attributes().PutBool(experimentalmetricmetadata.SemconvOtelEntityEventAsScope, true)
	w.records = scope.LogRecords()
	w.events = experimentalmetricmetadata.NewEntityEventsSliceFromLogs(w.records)
	w.written = map[serviceKey]bool{}
}

// take returns the accumulated events and starts a new batch.
func (w *eventWriter) take() plog.Logs {
	logs := w.logs
	w.reset()
	return logs
}

func (w *eventWriter) len() int { return w.records.Len() }

// event appends an event; the log record is returned for what the
// library does not set.
func (w *eventWriter) event(now time.Time) (experimentalmetricmetadata.EntityEvent, plog.LogRecord) {
	e := w.events.AppendEmpty()
	lr := w.records.At(w.records.Len() - 1)
	ts := pcommon.NewTimestampFromTime(now)
	e.SetTimestamp(ts)
	lr.SetObservedTimestamp(ts)
	return e, lr
}

// putProcessID puts the process entity's id into m.
func putProcessID(m pcommon.Map, id procfs.Identity) {
	m.PutInt(entitymodel.ProcessPIDKey, int64(id.PID))
	m.PutStr(entitymodel.ProcessCreationTimeKey, id.CreationTimeString())
}

// state appends the state events of a process's entities, as the
// entity_types setting selects: the process, then the service instance
// and the service its identity names (see service). peers are the live
// processes of its service instance, itself included.
func (w *eventWriter) state(now time.Time, p *tracker.Publication, peers []*tracker.Publication) {
	if w.types.process {
		w.processState(now, p)
	}
	w.service(now, p.Context.Resource, peers)
}

// processState appends a process's state event: the published resource
// attributes the policy lets through (the identity, vendor keys; never a
// published host.*, container.*, process.* ..., nor an empty value, nor
// threadlocal.*), then the host's view of the process, the one source of
// the observed keys (an SDK in a container reports its own namespace's
// pids, a tracer the host name of its agent), and the source of the
// identity; in the specification's shape, the entities the process runs
// in. ProcessContext.attributes go nowhere.
func (w *eventWriter) processState(now time.Time, p *tracker.Publication) {
	e, lr := w.event(now)
	putProcessID(e.ID(), p.Identity)
	st := e.SetEntityState()
	st.SetEntityType(entitymodel.Process)
	st.SetInterval(w.interval)
	desc := st.Attributes()
	desc.EnsureCapacity(p.Context.Resource.Len() + hostViewKeys)
	for k, v := range p.Context.Resource.All() {
		if w.policy.Published(k, v) != attrpolicy.Skip {
			v.CopyTo(desc.PutEmpty(k))
		}
	}
	putHostView(desc, p.Identity)
	putCommandLine(desc, p.Identity, w.commandLine)
	desc.PutStr(sourceKey, p.Source.String()) // after the resource: no process claims another source
	w.shape(lr)
	if lr.EventName() == specEventState { // once shaped: the legacy shape has no field for them
		putRelationships(lr.Attributes(), p.Identity, w.host.ID)
		stringIDs(lr.Attributes())
	}
}

// service appends the states of the service instance and of the service
// that a process's resource names, once a batch each: the service
// (service.name, with service.namespace when set; described by
// service.version and service.criticality) and, where service.instance.id
// is set, the instance (described by its service's keys), which in the
// specification's shape runs_on each of peers and is part_of the
// service. An SDK is the authority on these entities; for one that only
// publishes its context, or a process named by its environment, the
// receiver speaks for it.
func (w *eventWriter) service(now time.Time, res pcommon.Map, peers []*tracker.Publication) {
	svc := entitymodel.Services()[0]
	name, namespace := strAttr(res, entitymodel.ServiceNameKey), strAttr(res, entitymodel.ServiceNamespaceKey)
	if name == "" {
		return
	}
	if instance := strAttr(res, entitymodel.ServiceInstanceIDKey); instance != "" && w.types.instance &&
		w.once(serviceKey{typ: entitymodel.ServiceInstance, id: instance, namespace: namespace + "\x00" + name}) {
		e, lr := w.event(now)
		e.ID().PutStr(entitymodel.ServiceInstanceIDKey, instance)
		st := e.SetEntityState()
		st.SetEntityType(entitymodel.ServiceInstance)
		st.SetInterval(w.interval)
		w.copyKeys(st.Attributes(), res, svc.ID, svc.Optional, svc.Description)
		w.shape(lr)
		if lr.EventName() == specEventState {
			rels := lr.Attributes().PutEmptySlice(specEntityRelationships)
			for _, peer := range peers {
				putProcessID(appendRelationship(rels, relationshipRunsOn, entitymodel.Process), peer.Identity)
			}
			w.copyKeys(appendRelationship(rels, relationshipPartOf, entitymodel.Service), res, svc.ID, svc.Optional)
			stringIDs(lr.Attributes())
		}
	}
	if w.types.service && w.once(serviceKey{typ: entitymodel.Service, id: name, namespace: namespace}) {
		e, lr := w.event(now)
		w.copyKeys(e.ID(), res, svc.ID, svc.Optional)
		st := e.SetEntityState()
		st.SetEntityType(entitymodel.Service)
		st.SetInterval(w.interval)
		w.copyKeys(st.Attributes(), res, svc.Description)
		w.shape(lr)
	}
}

// once says whether the event k is not in the batch yet, and notes it.
func (w *eventWriter) once(k serviceKey) bool {
	if w.written[k] {
		return false
	}
	w.written[k] = true
	return true
}

// strAttr is the value of key in m when it is a non-empty string.
func strAttr(m pcommon.Map, key string) string {
	if v, ok := m.Get(key); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

// copyKeys copies the values of the keys of each list that src has and
// the policy lets through (an empty service.version is none).
func (w *eventWriter) copyKeys(dst, src pcommon.Map, lists ...[]string) {
	for _, keys := range lists {
		for _, k := range keys {
			if v, ok := src.Get(k); ok && w.policy.Published(k, v) != attrpolicy.Skip {
				v.CopyTo(dst.PutEmpty(k))
			}
		}
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
	for _, target := range [...]struct{ typ, key, value string }{
		{entitymodel.Container, entitymodel.ContainerIDKey, id.ContainerID},
		{entitymodel.Pod, entitymodel.PodUIDKey, id.PodUID},
		{entitymodel.Host, entitymodel.HostIDKey, hostID},
	} {
		if target.value != "" {
			appendRelationship(rels, relationshipRunsOn, target.typ).PutStr(target.key, target.value)
		}
	}
}

// appendRelationship appends a relationship of type rel to an entity of
// type entityType, and returns the map of its id to fill.
func appendRelationship(rels pcommon.Slice, rel, entityType string) pcommon.Map {
	m := rels.AppendEmpty().SetEmptyMap()
	m.PutStr(specRelationshipType, rel)
	m.PutStr(specEntityType, entityType)
	return m.PutEmptyMap(specEntityID)
}

// delete appends the delete events of a process's entities: the
// process's, and its service instance's when endsInstance (no live
// process of this host publishes that instance any more). A service is
// never deleted: other hosts may run it; it expires by its report
// interval.
func (w *eventWriter) delete(now time.Time, p *tracker.Publication, reason string, endsInstance bool) {
	if w.types.process {
		e, lr := w.event(now)
		putProcessID(e.ID(), p.Identity)
		w.deleted(e, lr, entitymodel.Process, reason)
	}
	res := p.Context.Resource
	instance := strAttr(res, entitymodel.ServiceInstanceIDKey)
	if !endsInstance || instance == "" || strAttr(res, entitymodel.ServiceNameKey) == "" || !w.types.instance {
		return
	}
	key := serviceKey{typ: entitymodel.ServiceInstance, id: instance, delete: true,
		namespace: strAttr(res, entitymodel.ServiceNamespaceKey) + "\x00" + strAttr(res, entitymodel.ServiceNameKey)}
	if w.once(key) {
		e, lr := w.event(now)
		e.ID().PutStr(entitymodel.ServiceInstanceIDKey, instance)
		w.deleted(e, lr, entitymodel.ServiceInstance, reason)
	}
}

// deleted makes e a delete of an entity of type typ, for reason.
func (w *eventWriter) deleted(e experimentalmetricmetadata.EntityEvent, lr plog.LogRecord, typ, reason string) {
	d := e.SetEntityDelete()
	d.SetEntityType(typ)
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

// hostViewKeys is how many keys putHostView, putCommandLine and the
// source put at most.
const hostViewKeys = 11

// putHostView adds what the host knows of the process.
func putHostView(m pcommon.Map, id procfs.Identity) {
	putProcessID(m, id)
	if id.ParentPID > 0 {
		m.PutInt("process.parent_pid", int64(id.ParentPID))
	}
	putNonEmpty(m, "process.executable.name", id.ExecutableName)
	putNonEmpty(m, "process.executable.path", id.ExecutablePath)
	putNonEmpty(m, "process.owner", id.Owner)
	putNonEmpty(m, entitymodel.ContainerIDKey, id.ContainerID)
	putNonEmpty(m, entitymodel.PodUIDKey, id.PodUID)
	if vpid := id.VPID(); vpid != id.PID {
		m.PutInt(entitymodel.ProcessVPIDKey, int64(vpid))
	}
}

// putCommandLine sets process.command_line as the command_line setting
// says: the host's, sanitized from its arguments by default, or as read;
// none at all. A published one never gets here (the policy's observed
// family).
func putCommandLine(m pcommon.Map, id procfs.Identity, setting string) {
	switch {
	case setting == CommandLineNone:
	case setting == CommandLineFull:
		putNonEmpty(m, commandLineKey, id.CommandLine)
	case len(id.Args) > 0:
		m.PutStr(commandLineKey, cmdline.Sanitize(id.Args))
	case id.CommandLine != "":
		m.PutStr(commandLineKey, cmdline.SanitizeLine(id.CommandLine))
	}
}

func putNonEmpty(m pcommon.Map, k, v string) {
	if v != "" {
		m.PutStr(k, v)
	}
}
