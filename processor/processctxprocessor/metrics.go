// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// processMetrics enriches resources that carry a pid, as the hostmetrics
// process scraper's do (one resource per process).
func (p *instance) processMetrics(ctx context.Context, md pmetric.Metrics) (pmetric.Metrics, error) {
	b := p.newBatch()
	if b == nil {
		return md, nil
	}
	defer b.finish()
	run(ctx, b, md.ResourceMetrics(), dataPointCount, nil)
	return md, nil
}

func dataPointCount(rm pmetric.ResourceMetrics) int {
	n := 0
	sms := rm.ScopeMetrics()
	for i := range sms.Len() {
		ms := sms.At(i).Metrics()
		for j := range ms.Len() {
			m := ms.At(j)
			switch m.Type() {
			case pmetric.MetricTypeGauge:
				n += m.Gauge().DataPoints().Len()
			case pmetric.MetricTypeSum:
				n += m.Sum().DataPoints().Len()
			case pmetric.MetricTypeHistogram:
				n += m.Histogram().DataPoints().Len()
			case pmetric.MetricTypeExponentialHistogram:
				n += m.ExponentialHistogram().DataPoints().Len()
			case pmetric.MetricTypeSummary:
				n += m.Summary().DataPoints().Len()
			}
		}
	}
	return n
}
