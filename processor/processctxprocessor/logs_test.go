// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// pidValue sets a pid attribute: an int, or a string for a string pid.
func putPID(m pcommon.Map, pid any) {
	switch v := pid.(type) {
	case int:
		m.PutInt("process.pid", int64(v))
	case string:
		m.PutStr("process.pid", v)
	case nil:
	default:
		panic("bad pid type")
	}
}

// addRecord appends a record with body and (if not nil) a process.pid.
func addRecord(sl plog.ScopeLogs, body string, pid any) {
	lr := sl.LogRecords().AppendEmpty()
	lr.Body().SetStr(body)
	lr.Attributes().PutStr("log.iostream", "stdout")
	putPID(lr.Attributes(), pid)
}

func TestLogsResourcePid(t *testing.T) {
	for _, kind := range pubtest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			pub := startPublisher(t, kind, "checkout")
			h := newHarness(t, testConfig())

			ld := plog.NewLogs()
			for _, pid := range []any{pub.Pid, strconv.Itoa(pub.Pid), nil} {
				rl := ld.ResourceLogs().AppendEmpty()
				rl.SetSchemaUrl("https://opentelemetry.io/schemas/1.30.0")
				rl.Resource().Attributes().PutStr("host.name", "node-1")
				putPID(rl.Resource().Attributes(), pid)
				sl := rl.ScopeLogs().AppendEmpty()
				for i := range 3 {
					addRecord(sl, "line "+strconv.Itoa(i), nil)
				}
			}
			in := plog.NewLogs()
			ld.CopyTo(in)

			out := h.consumeLogs(ld)
			require.Equal(t, 3, out.ResourceLogs().Len())
			assert.Equal(t, in.LogRecordCount(), out.LogRecordCount())
			for i, pid := range []any{pub.Pid, strconv.Itoa(pub.Pid)} {
				rl := out.ResourceLogs().At(i)
				want := withAttrs(pub.published(), map[string]any{"host.name": "node-1", "process.pid": pidRaw(pid)})
				assert.Equal(t, want, rl.Resource().Attributes().AsRaw(), "resource %d", i)
				assert.Equal(t, "https://opentelemetry.io/schemas/1.30.0", rl.SchemaUrl())
				// Records are untouched.
				assert.Equal(t, in.ResourceLogs().At(i).ScopeLogs().At(0).LogRecords().At(0).Body().Str(),
					rl.ScopeLogs().At(0).LogRecords().At(0).Body().Str())
				assertNoThreadlocal(t, rl.Resource().Attributes())
			}
			// No pid: unchanged.
			assert.Equal(t, in.ResourceLogs().At(2).Resource().Attributes().AsRaw(),
				out.ResourceLogs().At(2).Resource().Attributes().AsRaw())
		})
	}
}

func pidRaw(pid any) any {
	if i, ok := pid.(int); ok {
		return int64(i)
	}
	return pid
}

func assertNoThreadlocal(t *testing.T, attrs pcommon.Map) {
	t.Helper()
	for k := range attrs.All() {
		assert.NotContains(t, k, "threadlocal", "a non-resource ProcessContext attribute landed on a resource")
	}
}

// logsByService indexes the output's resources by service.name ("" for
// those without).
func logsByService(t *testing.T, ld plog.Logs) map[string]plog.ResourceLogs {
	t.Helper()
	out := map[string]plog.ResourceLogs{}
	for _, rl := range ld.ResourceLogs().All() {
		name := ""
		if v, ok := rl.Resource().Attributes().Get("service.name"); ok {
			name = v.Str()
		}
		_, dup := out[name]
		require.False(t, dup, "two resources for service %q", name)
		out[name] = rl
	}
	return out
}

// bodies returns the record bodies of rl per scope name.
func bodies(rl plog.ResourceLogs) map[string][]string {
	out := map[string][]string{}
	for _, sl := range rl.ScopeLogs().All() {
		for _, lr := range sl.LogRecords().All() {
			out[sl.Scope().Name()] = append(out[sl.Scope().Name()], lr.Body().Str())
		}
	}
	return out
}

func TestLogsRecordPidsSplit(t *testing.T) {
	a := startPublisher(t, pubtest.Go, "cart")
	b := startPublisher(t, pubtest.C, "payment")
	gone := unusedPID(t)
	h := newHarness(t, testConfig())

	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.SetSchemaUrl("schema-r")
	rl.Resource().Attributes().PutStr("host.name", "node-1")
	rl.Resource().Attributes().PutStr("service.name", "journald") // wins without override
	rl.Resource().SetDroppedAttributesCount(3)
	s1 := rl.ScopeLogs().AppendEmpty()
	s1.Scope().SetName("s1")
	s1.Scope().SetVersion("1.0")
	s1.SetSchemaUrl("schema-s1")
	addRecord(s1, "a1", a.Pid)
	addRecord(s1, "b1", strconv.Itoa(b.Pid))
	addRecord(s1, "none", nil)
	addRecord(s1, "a2", a.Pid)
	addRecord(s1, "gone", gone)
	addRecord(s1, "garbage", "12ab")
	addRecord(s1, "self", noContextPID())
	s2 := rl.ScopeLogs().AppendEmpty()
	s2.Scope().SetName("s2")
	addRecord(s2, "b2", b.Pid)
	addRecord(s2, "b3", b.Pid)
	empty := rl.ScopeLogs().AppendEmpty() // an empty scope stays as it came
	empty.Scope().SetName("empty")

	out := h.consumeLogs(ld)
	assert.Equal(t, 9, out.LogRecordCount(), "no record lost or duplicated")
	require.Equal(t, 3, out.ResourceLogs().Len())

	// The original keeps the records without a context, and loses the
	// scope all of whose records moved.
	orig := out.ResourceLogs().At(0)
	assert.Equal(t, map[string]any{"host.name": "node-1", "service.name": "journald"}, orig.Resource().Attributes().AsRaw())
	assert.Equal(t, map[string][]string{"s1": {"none", "gone", "garbage", "self"}}, bodies(orig))
	require.Equal(t, 2, orig.ScopeLogs().Len())
	assert.Equal(t, "empty", orig.ScopeLogs().At(1).Scope().Name())

	for _, tc := range []struct {
		pub    *publishing
		bodies map[string][]string
	}{
		{a, map[string][]string{"s1": {"a1", "a2"}}},
		{b, map[string][]string{"s1": {"b1"}, "s2": {"b2", "b3"}}},
	} {
		var got plog.ResourceLogs
		found := false
		for _, r := range out.ResourceLogs().All() {
			if v, ok := r.Resource().Attributes().Get("service.instance.id"); ok && v.Str() == tc.pub.resource["service.instance.id"] {
				got, found = r, true
			}
		}
		require.True(t, found, "no resource for %s", tc.pub.resource["service.name"])
		// The original attributes (service.name "journald" wins) plus the context.
		// The original attributes, the context, and the host pid of the process.
		want := withAttrs(tc.pub.published(), map[string]any{"host.name": "node-1", "service.name": "journald", "process.pid": int64(tc.pub.Pid)})
		assert.Equal(t, want, got.Resource().Attributes().AsRaw())
		assert.Equal(t, uint32(3), got.Resource().DroppedAttributesCount())
		assert.Equal(t, "schema-r", got.SchemaUrl())
		assert.Equal(t, tc.bodies, bodies(got))
		sl := got.ScopeLogs().At(0)
		assert.Equal(t, "s1", sl.Scope().Name())
		assert.Equal(t, "1.0", sl.Scope().Version())
		assert.Equal(t, "schema-s1", sl.SchemaUrl())
		// Moved records keep their attributes, pid included.
		assert.Equal(t, int64(2), int64(sl.LogRecords().At(0).Attributes().Len()))
		assertNoThreadlocal(t, got.Resource().Attributes())
	}
}

func TestLogsRecordPidsOneProcess(t *testing.T) {
	a := startPublisher(t, pubtest.Go, "cart")
	b := startPublisher(t, pubtest.C, "payment")
	h := newHarness(t, testConfig())

	t.Run("every record of one process: enriched in place", func(t *testing.T) {
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		sl := rl.ScopeLogs().AppendEmpty()
		for i := range 5 {
			addRecord(sl, strconv.Itoa(i), a.Pid)
		}
		out := h.consumeLogs(ld)
		require.Equal(t, 1, out.ResourceLogs().Len())
		assert.Equal(t, withAttrs(a.published(), map[string]any{"process.pid": int64(a.Pid)}), out.ResourceLogs().At(0).Resource().Attributes().AsRaw())
		assert.Equal(t, 5, out.LogRecordCount())
	})

	t.Run("every record resolved, two processes: the original goes", func(t *testing.T) {
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		sl := rl.ScopeLogs().AppendEmpty()
		addRecord(sl, "a", a.Pid)
		addRecord(sl, "b", b.Pid)
		out := h.consumeLogs(ld)
		require.Equal(t, 2, out.ResourceLogs().Len())
		byService := logsByService(t, out)
		assert.Equal(t, map[string][]string{"": {"a"}}, bodies(byService["cart"]))
		assert.Equal(t, map[string][]string{"": {"b"}}, bodies(byService["payment"]))
	})

	t.Run("records of one process and records without a context", func(t *testing.T) {
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		sl := rl.ScopeLogs().AppendEmpty()
		addRecord(sl, "a", a.Pid)
		addRecord(sl, "none", nil)
		out := h.consumeLogs(ld)
		require.Equal(t, 2, out.ResourceLogs().Len())
		byService := logsByService(t, out)
		assert.Equal(t, map[string][]string{"": {"none"}}, bodies(byService[""]))
		assert.Equal(t, map[string][]string{"": {"a"}}, bodies(byService["cart"]))
	})

	t.Run("a resource pid wins over record pids", func(t *testing.T) {
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutInt("process.pid", int64(a.Pid))
		sl := rl.ScopeLogs().AppendEmpty()
		addRecord(sl, "b", b.Pid)
		out := h.consumeLogs(ld)
		require.Equal(t, 1, out.ResourceLogs().Len())
		v, _ := out.ResourceLogs().At(0).Resource().Attributes().Get("service.name")
		assert.Equal(t, "cart", v.Str())
	})
}

// TestLogsManyProcessesUnderOneResource regroups records of 20 processes
// and as many pids without a context: more than the batch's first pid
// index holds (it grows).
func TestLogsManyProcessesUnderOneResource(t *testing.T) {
	var pubs []*publishing
	for i := range 20 {
		pubs = append(pubs, startPublisher(t, pubtest.Kinds[i%2], "svc-"+strconv.Itoa(i)))
	}
	h := newHarness(t, testConfig())
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	gone := unusedPID(t)
	for round := range 3 {
		for i, p := range pubs {
			addRecord(sl, strconv.Itoa(round)+"/"+strconv.Itoa(i), p.Pid)
			addRecord(sl, "none", gone-i) // unused pids near an unused one
		}
	}
	out := h.consumeLogs(ld)
	assert.Equal(t, 3*2*len(pubs), out.LogRecordCount())
	require.Equal(t, len(pubs)+1, out.ResourceLogs().Len())
	byService := logsByService(t, out)
	assert.Len(t, bodies(byService[""])[""], 3*len(pubs))
	for i, p := range pubs {
		rl := byService[p.resource["service.name"].(string)]
		want := []string{"0/" + strconv.Itoa(i), "1/" + strconv.Itoa(i), "2/" + strconv.Itoa(i)}
		assert.Equal(t, map[string][]string{"": want}, bodies(rl))
	}
}
