// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/entitymodel"
)

// Telemetry from an SDK inside a container carries its container's pids
// (often 1), which name unrelated processes on the host. With container.id
// beside the pid the pair is resolved to the host process; without it, the
// pid is taken for a host pid only when nothing contradicts that.

// stampPids makes an enriched resource carry the host pid as process.pid,
// and the pid inside its namespace as process.vpid where they differ.
// telemetryPid is the pid the telemetry named. It reports whether it
// stamped process.vpid: a key added, which describes the process.
func stampPids(attrs pcommon.Map, e *enrichment, telemetryPid, hostPid int) bool {
	if hostPid != telemetryPid {
		attrs.PutInt(entitymodel.ProcessPIDKey, int64(hostPid))
		attrs.PutInt(entitymodel.ProcessVPIDKey, int64(telemetryPid))
		return true
	}
	if _, ok := attrs.Get(entitymodel.ProcessPIDKey); !ok {
		attrs.PutInt(entitymodel.ProcessPIDKey, int64(hostPid))
	}
	if e.vpid != 0 && e.vpid != hostPid {
		if _, ok := attrs.Get(entitymodel.ProcessVPIDKey); !ok {
			attrs.PutInt(entitymodel.ProcessVPIDKey, int64(e.vpid))
			return true
		}
	}
	return false
}
