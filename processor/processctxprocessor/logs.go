package processctxprocessor

import (
	"context"

	"go.opentelemetry.io/collector/pdata/plog"
)

// processLogs enriches each resource by its pid, or regroups its records by
// their pids.
func (p *instance) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	b := p.newBatch()
	if b == nil {
		return ld, nil
	}
	defer b.finish(ctx)
	rls := ld.ResourceLogs()
	n := rls.Len() // resources appended by regrouping are complete already
	for i := range n {
		rl := rls.At(i)
		attrs := rl.Resource().Attributes()
		if pid, ok := p.core.pidOf(attrs); ok {
			b.enrichResource(attrs, pid, logRecordCount(rl))
			continue
		}
		if b.splitLogs(rls, rl) {
			b.emptiedResources.set(i)
		}
	}
	if len(b.emptiedResources) > 0 {
		rls.RemoveIf(removeMarked[plog.ResourceLogs](b.emptiedResources))
	}
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

// splitLogs looks at the pids of the records of a resource without one. When
// they all belong to one process the resource is enriched in place;
// otherwise each process's records move to a new resource (the original
// resource's attributes plus the context) with copies of their scopes, and
// records without a context stay. It reports whether rl lost every record.
func (b *batch) splitLogs(rls plog.ResourceLogsSlice, rl plog.ResourceLogs) bool {
	core := b.p.core
	resAttrs := rl.Resource().Attributes()
	b.resetGroups()
	b.decisions = b.decisions[:0]
	resolvedItems := 0
	sls := rl.ScopeLogs()
	for i := range sls.Len() {
		lrs := sls.At(i).LogRecords()
		for j := range lrs.Len() {
			g := int32(-1)
			if pid, ok := core.pidOf(lrs.At(j).Attributes()); ok {
				g = b.groupOf(resAttrs, pid)
			}
			if g >= 0 {
				resolvedItems++
			}
			b.decisions = append(b.decisions, g)
		}
	}
	inPlace, split := b.regroup(resolvedItems, len(b.decisions))
	if inPlace != nil {
		b.enrichGroup(rl.Resource().Attributes(), inPlace)
	}
	if !split {
		return false
	}

	dst := make([]plog.ResourceLogs, len(b.groups))
	for g := range b.groups {
		nrl := rls.AppendEmpty()
		rl.Resource().CopyTo(nrl.Resource())
		nrl.SetSchemaUrl(rl.SchemaUrl())
		b.enrichGroup(nrl.Resource().Attributes(), &b.groups[g])
		dst[g] = nrl
	}
	scopes := make([]plog.ScopeLogs, len(b.groups))
	b.emptiedScopes.reset()
	k := 0
	for i := range sls.Len() {
		sl := sls.At(i)
		lrs := sl.LogRecords()
		first, moved := k, 0
		for j := range lrs.Len() {
			g := b.decisions[k]
			k++
			if g < 0 {
				continue
			}
			grp := &b.groups[g]
			if grp.scopeIdx != i {
				scopes[g] = dst[g].ScopeLogs().AppendEmpty()
				sl.Scope().CopyTo(scopes[g].Scope())
				scopes[g].SetSchemaUrl(sl.SchemaUrl())
				grp.scopeIdx = i
			}
			lrs.At(j).MoveTo(scopes[g].LogRecords().AppendEmpty())
			moved++
		}
		if moved == 0 {
			continue
		}
		if moved == lrs.Len() {
			b.emptiedScopes.set(i)
		}
		decisions := b.decisions[first:k]
		lrs.RemoveIf(func(plog.LogRecord) bool {
			moved := decisions[0] >= 0
			decisions = decisions[1:]
			return moved
		})
	}
	if resolvedItems == len(b.decisions) {
		return true
	}
	if len(b.emptiedScopes) > 0 {
		sls.RemoveIf(removeMarked[plog.ScopeLogs](b.emptiedScopes))
	}
	return false
}
