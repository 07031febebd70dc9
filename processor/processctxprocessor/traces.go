// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

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
	defer b.finish()
	run(ctx, b, td.ResourceSpans(), spanCount, nil)
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
