package processctxprocessor

import (
	"context"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// processTraces enriches resources that carry a pid.
func (p *instance) processTraces(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	b := p.core.newBatch(&p.batches)
	if b == nil {
		return td, nil
	}
	defer b.finish(p.tel, &p.batches)
	rss := td.ResourceSpans()
	resource := func(i int) bool {
		rs := rss.At(i)
		attrs := rs.Resource().Attributes()
		facts := p.core.factsOf(attrs)
		return facts.pid == 0 || b.enrichResource(attrs, &facts, spanCount(rs))
	}
	for i := range rss.Len() {
		if !resource(i) {
			b.deferred = append(b.deferred, i)
		}
	}
	if b.wait(ctx) {
		for _, i := range b.deferred {
			resource(i)
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
