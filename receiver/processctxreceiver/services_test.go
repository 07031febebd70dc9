// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// serviceProcess is a process whose context names a service instance.
func serviceProcess(pid int, resource map[string]any) *tracker.Publication {
	res := pcommon.NewMap()
	if err := res.FromRaw(resource); err != nil {
		panic(err) // a fixture of unsupported types
	}
	return &tracker.Publication{
		Key:      tracker.Key{PID: pid, StartTicks: 1000},
		Identity: procfs.Identity{PID: pid, StartTicks: 1000, CreationTime: time.Unix(1_700_000_010, 0)},
		Context:  otep.Context{Resource: res, Attributes: pcommon.NewMap()},
	}
}

var cartResource = map[string]any{
	"service.name": "cart", "service.namespace": "shop", "service.version": "1.2.0",
	"service.instance.id": "cart-1", "deployment.environment.name": "prod",
}

// record is one entity event as a consumer sees it, in either shape.
type record struct {
	kind, typ     string
	id, desc      map[string]any
	relationships []any
	reason        string
}

func recordsOf(t *testing.T, logs plog.Logs) []record {
	t.Helper()
	var out []record
	for _, lr := range logs.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().All() {
		a := lr.Attributes().AsRaw()
		r := record{typ: entityTypeOf(lr)}
		if lr.EventName() != "" {
			r.kind = map[string]string{specEventState: "state", specEventDelete: "delete"}[lr.EventName()]
			r.id, _ = a[specEntityID].(map[string]any)
			r.desc, _ = a[specEntityDescription].(map[string]any)
			r.relationships, _ = a[specEntityRelationships].([]any)
			r.reason, _ = a[specDeleteReason].(string)
		} else {
			r.kind = map[string]string{legacyEventState: "state", legacyEventDelete: "delete"}[a[legacyEventType].(string)]
			r.id, _ = a[legacyEntityID].(map[string]any)
			r.desc, _ = a[legacyEntityAttrs].(map[string]any)
			r.reason, _ = a[legacyDeleteReason].(string)
		}
		out = append(out, r)
	}
	return out
}

func allTypesWriter(format string) *eventWriter {
	cfg := createDefaultConfig()
	cfg.EntityEventFormat = format
	cfg.ReportInterval = time.Minute
	w := newEventWriter(cfg)
	w.setHost(procfs.HostIdentity{ID: "host-1", Name: "node-a"})
	return w
}

// A process whose context names a service instance gives the states of
// the process, the service instance and the service; in the
// specification's shape the instance runs_on its processes and is part_of
// its service, and every id value is a string.
func TestServiceEntityStates(t *testing.T) {
	a, b := serviceProcess(10, cartResource), serviceProcess(11, cartResource)
	eachShape(t, func(t *testing.T, format string, wantSpec bool) {
		w := allTypesWriter(format)
		w.state(time.Unix(1, 0), a, []*tracker.Publication{a, b})
		got := recordsOf(t, w.take())
		require.Len(t, got, 3)
		assert.Equal(t, []string{"process", "service.instance", "service"}, []string{got[0].typ, got[1].typ, got[2].typ})
		instance, service := got[1], got[2]
		assert.Equal(t, map[string]any{"service.instance.id": "cart-1"}, instance.id)
		assert.Equal(t, map[string]any{"service.name": "cart", "service.namespace": "shop", "service.version": "1.2.0"}, instance.desc)
		assert.Equal(t, map[string]any{"service.name": "cart", "service.namespace": "shop"}, service.id)
		assert.Equal(t, map[string]any{"service.version": "1.2.0"}, service.desc)
		if !wantSpec {
			assert.Nil(t, instance.relationships, "the legacy shape has no field for them")
			return
		}
		created := a.Identity.CreationTimeString()
		assert.Equal(t, []any{
			map[string]any{"relationship.type": "runs_on", "entity.type": "process", "entity.id": map[string]any{"process.pid": "10", "process.creation.time": created}},
			map[string]any{"relationship.type": "runs_on", "entity.type": "process", "entity.id": map[string]any{"process.pid": "11", "process.creation.time": created}},
			map[string]any{"relationship.type": "part_of", "entity.type": "service", "entity.id": map[string]any{"service.name": "cart", "service.namespace": "shop"}},
		}, instance.relationships)
		assert.Nil(t, service.relationships)
		assert.Equal(t, map[string]any{"relationship.type": "runs_on", "entity.type": "host", "entity.id": map[string]any{"host.id": "host-1"}},
			got[0].relationships[0], "the process runs on the host")
	})
}

// Which entities a process's identity gives, by what it names and by
// entity_types.
func TestServiceEntitySelection(t *testing.T) {
	for _, tt := range []struct {
		name     string
		resource map[string]any
		types    []string
		want     []string // entity types of the state events, in order
	}{
		{name: "service instance", resource: cartResource, want: []string{"process", "service.instance", "service"}},
		{name: "no instance id: the service", resource: map[string]any{"service.name": "cart"}, want: []string{"process", "service"}},
		{name: "no service name: the process", resource: map[string]any{"service.instance.id": "x"}, want: []string{"process"}},
		{name: "a name that is no string", resource: map[string]any{"service.name": int64(5), "service.instance.id": "x"}, want: []string{"process"}},
		{name: "services only", resource: cartResource, types: []string{"service"}, want: []string{"service"}},
		{name: "processes only", resource: cartResource, types: []string{"process"}, want: []string{"process"}},
		{name: "instances only", resource: cartResource, types: []string{"service.instance"}, want: []string{"service.instance"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig()
			cfg.EntityEventFormat = FormatSpec
			if tt.types != nil {
				cfg.EntityTypes = tt.types
			}
			w := newEventWriter(cfg)
			p := serviceProcess(10, tt.resource)
			w.state(time.Unix(1, 0), p, []*tracker.Publication{p})
			var types []string
			for _, r := range recordsOf(t, w.take()) {
				types = append(types, r.typ)
			}
			assert.Equal(t, tt.want, types)
		})
	}
}

// Processes of one service in one batch state it once; a new batch states
// it again.
func TestServiceStatedOnceABatch(t *testing.T) {
	w := allTypesWriter(FormatSpec)
	a, b := serviceProcess(10, cartResource), serviceProcess(11, cartResource)
	w.state(time.Unix(1, 0), a, []*tracker.Publication{a, b})
	w.state(time.Unix(1, 0), b, []*tracker.Publication{a, b})
	assert.Equal(t, 4, w.len(), "two processes, one instance, one service")
	w.take()
	w.state(time.Unix(2, 0), b, []*tracker.Publication{b})
	assert.Equal(t, 3, w.len())
}

// A process's delete deletes its service instance when it was the
// instance's last live process; a service is never deleted.
func TestServiceInstanceDelete(t *testing.T) {
	eachShape(t, func(t *testing.T, format string, _ bool) {
		w := allTypesWriter(format)
		p := serviceProcess(10, cartResource)
		w.delete(time.Unix(1, 0), p, reasonExited, false)
		got := recordsOf(t, w.take())
		require.Len(t, got, 1, "another process runs the instance")
		assert.Equal(t, "process", got[0].typ)

		w.delete(time.Unix(2, 0), p, reasonUnpublished, true)
		got = recordsOf(t, w.take())
		require.Len(t, got, 2)
		assert.Equal(t, record{kind: "delete", typ: "service.instance", id: map[string]any{"service.instance.id": "cart-1"}, reason: reasonUnpublished}, got[1])
	})
}

// The book knows the live processes of each service instance: a state
// handed over runs_on all of them, and the delete of a process deletes
// the instance only when no other process of the host runs it.
func TestBookServiceInstances(t *testing.T) {
	a, b := serviceProcess(10, cartResource), serviceProcess(11, cartResource)
	other := serviceProcess(12, map[string]any{"service.name": "pay", "service.instance.id": "pay-1"})
	bk := newBook(createDefaultConfig())
	bk.record([]tracker.Change{{Kind: tracker.Published, Publication: a}, {Kind: tracker.Published, Publication: b}, {Kind: tracker.Published, Publication: other}}, nil)
	batch := bk.batch()
	require.Len(t, batch, 3)
	assert.Equal(t, []*tracker.Publication{a, b}, batch[0].peers)
	assert.Equal(t, []*tracker.Publication{a, b}, batch[1].peers)
	assert.Equal(t, []*tracker.Publication{other}, batch[2].peers)
	bk.settle(batch, accepted)

	bk.record([]tracker.Change{{Kind: tracker.Exited, Publication: a}}, nil)
	batch = bk.batch()
	require.Len(t, batch, 1)
	assert.False(t, batch[0].endsInstance, "b still runs cart-1")
	bk.settle(batch, accepted)

	bk.record([]tracker.Change{{Kind: tracker.Exited, Publication: b}}, nil)
	batch = bk.batch()
	require.Len(t, batch, 1)
	assert.True(t, batch[0].endsInstance, "b was the last process of cart-1")

	// A process of the instance that appears before the delete is handed
	// over keeps it alive.
	c := serviceProcess(13, cartResource)
	bk.record([]tracker.Change{{Kind: tracker.Published, Publication: c}}, nil)
	batch = bk.batch()
	require.Len(t, batch, 2)
	assert.Equal(t, []*tracker.Publication{c}, batch[0].peers)
	assert.False(t, batch[1].endsInstance)
}

// A process whose context changes its instance id leaves the old
// instance: a state of the old one no longer runs on it.
func TestBookInstanceIDChange(t *testing.T) {
	a := serviceProcess(10, cartResource)
	b := serviceProcess(11, cartResource)
	bk := newBook(createDefaultConfig())
	bk.record([]tracker.Change{{Kind: tracker.Published, Publication: a}, {Kind: tracker.Published, Publication: b}}, nil)
	bk.settle(bk.batch(), accepted)
	moved := serviceProcess(10, map[string]any{"service.name": "cart", "service.instance.id": "cart-2"})
	bk.record([]tracker.Change{{Kind: tracker.Updated, Publication: moved}}, nil)
	bk.restate(time.Now().Add(time.Hour))
	for _, o := range bk.batch() {
		if o.p.PID == 11 {
			assert.Equal(t, []*tracker.Publication{b}, o.peers)
		} else {
			assert.Equal(t, []*tracker.Publication{moved}, o.peers)
		}
	}
}

// Real publishers of one service instance (as a preforking server's
// workers inherit their parent's context): the instance is stated
// running on both, and deleted with the second's exit, not the first's;
// the service is stated and never deleted.
func TestServiceEntitiesOfPublishers(t *testing.T) {
	cfg := testConfig()
	cfg.EntityEventFormat = FormatSpec
	r := startReceiver(t, cfg)
	res := pcommon.NewMap()
	require.NoError(t, res.FromRaw(cartResource))
	first := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	second := pubtest.Start(t, pubtest.C, pubtest.Options{})
	first.Publish(encode(t, res, pcommon.NewMap()))
	second.Publish(encode(t, res, pcommon.NewMap()))
	r.waitEvents(t, first.Pid, 1)
	r.waitEvents(t, second.Pid, 1)

	// Each instance state lists the processes live when it was written:
	// the last one names both. (The host's other processes, other tests'
	// publishers among them, have their own entities.)
	cart := map[string]any{"service.instance.id": "cart-1"}
	require.Eventually(t, func() bool {
		instances := r.entityEvents(t, "service.instance", "state", cart)
		return len(instances) > 0 && len(instances[len(instances)-1].relationships) == 3
	}, 10*time.Second, 20*time.Millisecond, "an instance state running on both")
	require.NotEmpty(t, r.entityEvents(t, "service", "state", map[string]any{"service.name": "cart", "service.namespace": "shop"}))

	first.Exit()
	r.waitEvents(t, first.Pid, 2)
	second.Exit()
	events := r.waitEvents(t, second.Pid, 2)
	assert.Equal(t, "delete", events[1].kind)
	require.Eventually(t, func() bool { return len(r.entityEvents(t, "service.instance", "delete", cart)) > 0 },
		10*time.Second, 20*time.Millisecond, "the instance's delete")
	deletes := r.entityEvents(t, "service.instance", "delete", cart)
	require.Len(t, deletes, 1, "deleted once, with its last process")
	assert.Equal(t, reasonExited, deletes[0].reason)
	assert.Empty(t, r.entityEvents(t, "service", "delete", nil), "a service is never deleted")
}

// entityEvents are the events of one entity type and kind (and id, when
// not nil) the receiver delivered so far.
func (r *running) entityEvents(t *testing.T, typ, kind string, id map[string]any) []record {
	var out []record
	for _, logs := range r.sink.AllLogs() {
		for _, rec := range recordsOf(t, logs) {
			if rec.typ == typ && rec.kind == kind && (id == nil || assert.ObjectsAreEqual(id, rec.id)) {
				out = append(out, rec)
			}
		}
	}
	return out
}
