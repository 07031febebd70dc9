package processctxreceiver

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configretry"
)

// Entity event formats.
const (
	// FormatLibrary (the default, "") is what contrib's
	// pkg/experimentalmetricmetadata writes: FormatLegacy, or FormatSpec
	// under its feature gate pkg.experimentalmetricmetadata.useEntityEventsSpecification.
	// Contrib's consumers of entity events parse what that gate says.
	FormatLibrary = ""
	// FormatLegacy: otel.entity.* attributes.
	FormatLegacy = "legacy"
	// FormatSpec: EventName entity.state / entity.delete with entity.id,
	// entity.description and entity.report.interval (seconds).
	FormatSpec = "spec"
)

// Config is the receiver's configuration. How and when the host is read
// is the process_context extension's (its tracker's) configuration.
type Config struct {
	// Tracker names the process_context extension whose tracker to use;
	// when unset, the only one the collector has.
	Tracker *component.ID `mapstructure:"tracker"`
	// ReportInterval is how often every live entity is reported again.
	ReportInterval time.Duration `mapstructure:"report_interval"`
	// EntityEventFormat is FormatLibrary, FormatLegacy or FormatSpec.
	EntityEventFormat string `mapstructure:"entity_event_format"`
	// Include, when it has names, limits the entity events to the processes
	// whose executable matches.
	Include MatchConfig `mapstructure:"include"`
	// Exclude drops the entity events of processes whose executable matches.
	Exclude MatchConfig `mapstructure:"exclude"`
	// RetryOnFailure schedules the retries of entity events the next
	// consumer refused with a retryable error (memory_limiter, a full
	// queue). Events are retried until delivered, unless max_elapsed_time
	// (0 by default: no limit) gives up on older ones; disabled, refused
	// events are dropped and counted.
	RetryOnFailure configretry.BackOffConfig `mapstructure:"retry_on_failure"`
	// QueueSize bounds the entity events waiting for delivery; beyond it
	// the oldest state events are dropped first (each live entity is
	// stated again every report_interval), then the oldest deletes. A
	// delete waits at most report_interval.
	QueueSize int `mapstructure:"queue_size"`
}

// defaultRetry is the exporters' backoff, sooner at first (entity events
// are few and small) and without an end: the queue bounds what waits.
func defaultRetry() configretry.BackOffConfig {
	cfg := configretry.NewDefaultBackOffConfig()
	cfg.InitialInterval = time.Second
	cfg.MaxElapsedTime = 0
	return cfg
}

func createDefaultConfig() *Config {
	return &Config{
		ReportInterval: 5 * time.Minute,
		RetryOnFailure: defaultRetry(),
		QueueSize:      10000,
	}
}

// Validate implements confmap.Validator.
func (c *Config) Validate() error {
	// confmap validates RetryOnFailure.
	var errs []error
	if c.ReportInterval <= 0 {
		errs = append(errs, fmt.Errorf("report_interval must be positive, got %s", c.ReportInterval))
	}
	if c.QueueSize <= 0 {
		errs = append(errs, fmt.Errorf("queue_size must be positive, got %d", c.QueueSize))
	}
	switch c.EntityEventFormat {
	case FormatLibrary, FormatLegacy, FormatSpec:
	default:
		errs = append(errs, fmt.Errorf("entity_event_format must be unset, %q or %q, got %q", FormatLegacy, FormatSpec, c.EntityEventFormat))
	}
	errs = append(errs, c.Include.validate("include"), c.Exclude.validate("exclude"))
	return errors.Join(errs...)
}
