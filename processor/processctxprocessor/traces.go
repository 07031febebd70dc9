package processctxprocessor

import (
	"context"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// processTraces enriches resources that carry a pid.
func (p *instance) processTraces(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	b := p.newBatch()
	if b == nil {
		return td, nil
	}
	defer b.finish(ctx)
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		attrs := rs.Resource().Attributes()
		if pid, ok := p.core.pidOf(attrs); ok {
			b.enrichResource(attrs, pid, spanCount(rs))
		}
	}
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
