// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// processLogs enriches each resource by its pid, or regroups its records by
// their pids (journald-like logs: one resource, a pid per record).
func (p *instance) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	b := p.newBatch()
	if b == nil {
		return ld, nil
	}
	defer b.finish()
	rls := ld.ResourceLogs()
	var tree *logsTree // made for the first resource without a pid
	run(ctx, b, rls, logRecordCount, func(rl plog.ResourceLogs) itemTree {
		if tree == nil {
			tree = &logsTree{pids: p.pids, rls: rls}
		}
		tree.reset(rl)
		return tree
	})
	return ld, nil
}

func logRecordCount(rl plog.ResourceLogs) int {
	n := 0
	sls := rl.ScopeLogs()
	for i := range sls.Len() {
		n += sls.At(i).LogRecords().Len()
	}
	return n
}

// logsTree is a resource's log records for regroupResource: a leaf per
// scope.
type logsTree struct {
	pids    pidRanking
	rls     plog.ResourceLogsSlice
	rl      plog.ResourceLogs
	records []plog.LogRecordSlice // by leaf
	dst     []plog.ResourceLogs   // by group
	// open holds each group's copy of the leaf being moved.
	open          []plog.LogRecordSlice
	emptiedScopes marks
}

// reset makes the tree rl's.
func (t *logsTree) reset(rl plog.ResourceLogs) {
	t.rl = rl
	t.records, t.dst, t.open, t.emptiedScopes = t.records[:0], t.dst[:0], t.open[:0], t.emptiedScopes[:0]
	for _, sl := range rl.ScopeLogs().All() {
		t.records = append(t.records, sl.LogRecords())
	}
}

func (t *logsTree) leaves() int { return len(t.records) }

func (t *logsTree) items(leaf int) int { return t.records[leaf].Len() }

func (t *logsTree) pid(leaf, i int) int { return t.pids.pidOf(t.records[leaf].At(i).Attributes()) }

// noteKeys notes the pid-like keys of a record's attributes and, for a
// map body (journald's fields: _PID), of its body.
func (t *logsTree) noteKeys(leaf, i int, seen *missKeys) {
	lr := t.records[leaf].At(i)
	seen.noteMap(lr.Attributes())
	if body := lr.Body(); body.Type() == pcommon.ValueTypeMap {
		seen.noteMap(body.Map())
	}
}

func (t *logsTree) newResource(int) pcommon.Resource {
	nrl := t.rls.AppendEmpty()
	t.rl.Resource().CopyTo(nrl.Resource())
	nrl.SetSchemaUrl(t.rl.SchemaUrl())
	t.dst = append(t.dst, nrl)
	t.open = append(t.open, plog.LogRecordSlice{})
	return nrl.Resource()
}

func (t *logsTree) moveLeaf(leaf int, groups []int32, counts []int) {
	sl := t.rl.ScopeLogs().At(leaf)
	for g, n := range counts {
		if n > 0 {
			nsl := t.dst[g].ScopeLogs().AppendEmpty()
			sl.Scope().CopyTo(nsl.Scope())
			nsl.SetSchemaUrl(sl.SchemaUrl())
			nsl.LogRecords().EnsureCapacity(n)
			t.open[g] = nsl.LogRecords()
		}
	}
	moveItems[plog.LogRecord](t.records[leaf], groups, t.open)
	if t.records[leaf].Len() == 0 {
		t.emptiedScopes.set(leaf)
	}
}

func (t *logsTree) prune() {
	if len(t.emptiedScopes) > 0 {
		t.rl.ScopeLogs().RemoveIf(removeMarked[plog.ScopeLogs](t.emptiedScopes, 0))
	}
}
