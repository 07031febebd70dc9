// Package metadata holds the processor's identity and its internal
// telemetry, written by hand from metadata.yaml (mdatagen is not available
// to this build).
package metadata

import (
	"go.opentelemetry.io/collector/component"
)

var (
	// Type is the component type of the processor.
	Type = component.MustNewType("process_context")
	// ScopeName is the instrumentation scope of the processor's telemetry.
	ScopeName = "github.com/processctx/otelcol-processctx/processor/processctxprocessor"
)

// Stability of each signal.
const (
	LogsStability     = component.StabilityLevelDevelopment
	ProfilesStability = component.StabilityLevelDevelopment
	MetricsStability  = component.StabilityLevelDevelopment
	TracesStability   = component.StabilityLevelDevelopment
)
