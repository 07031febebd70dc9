package processctxprocessor

import (
	"context"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// processTraces enriches resources that carry a pid.
func (p *instance) processTraces(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	b := p.newBatch()
	if b == nil {
		return td, nil
	}
	defer b.finish()
	rss := td.ResourceSpans()
	b.enrichResources(ctx, rss.Len(), func(i int) (pcommon.Resource, int) {
		rs := rss.At(i)
		return rs.Resource(), spanCount(rs)
	})
	return td, nil
}

func spanCount(rs ptrace.ResourceSpans) int {
	n := 0
	sss := rs.ScopeSpans()
	for i := range sss.Len() {
		n += sss.At(i).Spans().Len()
	}
	return n
}
