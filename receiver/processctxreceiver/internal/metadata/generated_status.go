// Package metadata holds the receiver's identity and its internal telemetry,
// written by hand from metadata.yaml (mdatagen is not available here).
package metadata

import (
	"go.opentelemetry.io/collector/component"
)

var (
	// Type is the component type of the receiver.
	Type = component.MustNewType("process_context")
	// ScopeName is the instrumentation scope of its telemetry and events.
	ScopeName = "github.com/processctx/otelcol-processctx/receiver/processctxreceiver"
)

// LogsStability is the stability of the logs signal (entity events).
const LogsStability = component.StabilityLevelDevelopment
