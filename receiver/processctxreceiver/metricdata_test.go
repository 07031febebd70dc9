package processctxreceiver

import (
	"bytes"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

type metricdataSum = metricdata.Sum[int64]

type plogLogs = plog.Logs

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
