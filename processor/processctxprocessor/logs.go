package processctxprocessor

import (
	"context"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// processLogs enriches each resource by its pid, or regroups its records by
// their pids.
func (p *instance) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	b := p.core.newBatch(&p.batches)
	if b == nil {
		return ld, nil
	}
	defer b.finish(p.tel, &p.batches)
	rls := ld.ResourceLogs()
	var emptied marks
	n := rls.Len() // resources appended by regrouping are complete already
	for i := range n {
		if !p.logsResource(b, rls, i, &emptied) {
			b.deferred = append(b.deferred, i)
		}
	}
	if b.wait(ctx) {
		for _, i := range b.deferred {
			p.logsResource(b, rls, i, &emptied)
		}
	}
	if len(emptied) > 0 {
		rls.RemoveIf(removeMarked[plog.ResourceLogs](emptied))
	}
	return ld, nil
}

// logsResource enriches or regroups resource i; false: it names a pid
// being read.
func (p *instance) logsResource(b *batch, rls plog.ResourceLogsSlice, i int, emptied *marks) bool {
	rl := rls.At(i)
	attrs := rl.Resource().Attributes()
	facts := p.core.factsOf(attrs)
	if facts.pid != 0 {
		return b.enrichResource(attrs, &facts, logRecordCount(rl))
	}
	if !p.regroup {
		return true
	}
	t := logsTree{c: p.core, rls: rls, rl: rl, scopes: rl.ScopeLogs(), cur: -1}
	deferred, all := b.regroupResource(attrs, &t)
	if all {
		emptied.set(i)
	}
	return !deferred
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
	c      *core
	rls    plog.ResourceLogsSlice
	rl     plog.ResourceLogs
	scopes plog.ScopeLogsSlice
	// cur is the leaf whose records curRecords holds.
	cur           int
	curRecords    plog.LogRecordSlice
	dst           []plog.ResourceLogs // by group
	emptiedScopes marks
}

func (t *logsTree) leaves() int { return t.scopes.Len() }

func (t *logsTree) records(leaf int) plog.LogRecordSlice {
	if leaf != t.cur {
		t.cur, t.curRecords = leaf, t.scopes.At(leaf).LogRecords()
	}
	return t.curRecords
}

func (t *logsTree) items(leaf int) *[]unsafe.Pointer { return itemPointers(t.records(leaf)) }

func (t *logsTree) pid(leaf, i int) int {
	pid, _ := t.c.pidOf(t.records(leaf).At(i).Attributes())
	return pid
}

func (t *logsTree) newResource(_, _ int) pcommon.Map {
	nrl := t.rls.AppendEmpty()
	t.rl.Resource().CopyTo(nrl.Resource())
	nrl.SetSchemaUrl(t.rl.SchemaUrl())
	t.dst = append(t.dst, nrl)
	return nrl.Resource().Attributes()
}

func (t *logsTree) openLeaf(g, leaf, n int) *[]unsafe.Pointer {
	sl := t.scopes.At(leaf)
	nsl := t.dst[g].ScopeLogs().AppendEmpty()
	sl.Scope().CopyTo(nsl.Scope())
	nsl.SetSchemaUrl(sl.SchemaUrl())
	nsl.LogRecords().EnsureCapacity(n)
	return itemPointers(nsl.LogRecords())
}

func (t *logsTree) emptied(leaf, _ int) { t.emptiedScopes.set(leaf) }

func (t *logsTree) prune() {
	if len(t.emptiedScopes) > 0 {
		t.scopes.RemoveIf(removeMarked[plog.ScopeLogs](t.emptiedScopes))
	}
}
