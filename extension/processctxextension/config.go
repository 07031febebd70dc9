package processctxextension

import (
	"go.opentelemetry.io/collector/component"

	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Config is the extension's configuration: its tracker's, one key per
// setting (tracker.Config documents each; README.md lists them).
type Config = tracker.Config

func createDefaultConfig() component.Config {
	cfg := tracker.DefaultConfig()
	return &cfg
}
