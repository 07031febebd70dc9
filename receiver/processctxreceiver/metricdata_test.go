package processctxreceiver

import "go.opentelemetry.io/otel/sdk/metric/metricdata"

type metricdataSum = metricdata.Sum[int64]
