// Package metadata holds the extension's identity, written by hand from
// metadata.yaml (mdatagen is not available here).
package metadata

import (
	"go.opentelemetry.io/collector/component"
)

var (
	// Type is the component type of the extension.
	Type = component.MustNewType("process_context")
	// ScopeName is the instrumentation scope of its telemetry.
	ScopeName = "github.com/processctx/otelcol-processctx/extension/processctxextension"
)

// ExtensionStability is the stability of the extension.
const ExtensionStability = component.StabilityLevelDevelopment
