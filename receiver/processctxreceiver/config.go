// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"

	"github.com/processctx/otelcol-processctx/internal/configkeys"
	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
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

// What process.command_line (and an SDK's process.command_args) carries in
// the entity events: the command_line setting.
const (
	// CommandLineSanitized (the default): the command line with the values
	// of secret-named options and assignments and the credentials of URLs
	// replaced (internal/cmdline).
	CommandLineSanitized = "sanitized"
	// CommandLineFull: the command line as read.
	CommandLineFull = "full"
	// CommandLineNone: no command line.
	CommandLineNone = "none"
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
	// EntityTypes are the types of the entities the receiver states:
	// entitymodel.Process, ServiceInstance and Service, all by default.
	EntityTypes []string `mapstructure:"entity_types"`
	// CommandLine is CommandLineSanitized, CommandLineFull or
	// CommandLineNone: what the entity's process.command_line (and
	// process.command_args, when its SDK published them) says.
	CommandLine string `mapstructure:"command_line"`
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
	// Leftovers holds the keys of the configuration that are none of the
	// above (typos, the extension's keys) and the values of the wrong
	// type: Validate names them.
	configkeys.Leftovers `mapstructure:",squash"`
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
		EntityTypes:    []string{entitymodel.Process, entitymodel.ServiceInstance, entitymodel.Service},
		CommandLine:    CommandLineSanitized,
		RetryOnFailure: defaultRetry(),
		QueueSize:      10000,
	}
}

// Floors of the durations: below them a configuration is refused (YAML's
// "report_interval: 300" is 300ns).
const (
	// floorReportInterval: entity.report.interval is written in whole
	// seconds (spec format).
	floorReportInterval = time.Second
	// floorRetryInterval bounds retry_on_failure's initial_interval and
	// max_interval: a refusing consumer is not retried in a tight loop.
	floorRetryInterval = 10 * time.Millisecond
	// floorRetryMaxElapsed: max_elapsed_time gives up on events older than
	// it (0: never).
	floorRetryMaxElapsed = time.Second
)

// Unmarshal reads the component's section; a value of the wrong type is
// Validate's to say, by its key and the kind of value wanted.
func (c *Config) Unmarshal(conf *confmap.Conf) error { return configkeys.Decode(conf, c, &c.Leftovers) }

// Validate implements confmap.Validator.
func (c *Config) Validate() error {
	// confmap validates RetryOnFailure (non-negative values); the floors of
	// its durations are ours.
	errs := []error{c.Err(c, configkeys.Elsewhere{Name: "the process_context extension", Config: sharedtracker.Settings{}})}
	if c.ReportInterval <= 0 {
		errs = append(errs, fmt.Errorf("report_interval must be positive, got %s", c.ReportInterval))
	}
	errs = append(errs, configkeys.BelowFloor("report_interval", c.ReportInterval, floorReportInterval, 0),
		configkeys.BelowFloor("retry_on_failure.max_elapsed_time", c.RetryOnFailure.MaxElapsedTime, floorRetryMaxElapsed, 0))
	if r := c.RetryOnFailure; r.Enabled {
		errs = append(errs,
			configkeys.BelowFloor("retry_on_failure.initial_interval", r.InitialInterval, floorRetryInterval, 0),
			configkeys.BelowFloor("retry_on_failure.max_interval", r.MaxInterval, floorRetryInterval, 0))
		// 0 retries without a pause; a negative value confmap refuses.
		if r.InitialInterval == 0 {
			errs = append(errs, errors.New("retry_on_failure.initial_interval must be positive while retry_on_failure is enabled, got 0s"))
		}
		if r.MaxInterval == 0 {
			errs = append(errs, errors.New("retry_on_failure.max_interval must be positive while retry_on_failure is enabled, got 0s"))
		}
	}
	if c.QueueSize <= 0 {
		errs = append(errs, fmt.Errorf("queue_size must be positive, got %d", c.QueueSize))
	}
	switch c.EntityEventFormat {
	case FormatLibrary, FormatLegacy, FormatSpec:
	default:
		errs = append(errs, fmt.Errorf("entity_event_format must be unset, %q or %q, got %q", FormatLegacy, FormatSpec, c.EntityEventFormat))
	}
	switch c.CommandLine {
	case CommandLineSanitized, CommandLineFull, CommandLineNone:
	default:
		errs = append(errs, fmt.Errorf("command_line must be %q, %q or %q, got %q",
			CommandLineSanitized, CommandLineFull, CommandLineNone, c.CommandLine))
	}
	errs = append(errs, validateEntityTypes(c.EntityTypes),
		c.Include.validate("include"), c.Exclude.validate("exclude"))
	return errors.Join(errs...)
}

// entityTypes are the entity types the receiver states.
type entityTypes struct{ process, instance, service bool }

func newEntityTypes(names []string) entityTypes {
	return entityTypes{
		process:  slices.Contains(names, entitymodel.Process),
		instance: slices.Contains(names, entitymodel.ServiceInstance),
		service:  slices.Contains(names, entitymodel.Service),
	}
}

func validateEntityTypes(names []string) error {
	if len(names) == 0 {
		return fmt.Errorf("entity_types must name at least one of %q, %q and %q",
			entitymodel.Process, entitymodel.ServiceInstance, entitymodel.Service)
	}
	var errs []error
	for _, n := range names {
		switch n {
		case entitymodel.Process, entitymodel.ServiceInstance, entitymodel.Service:
		default:
			errs = append(errs, fmt.Errorf("entity_types: unknown entity type %q (known: %q, %q, %q)",
				n, entitymodel.Process, entitymodel.ServiceInstance, entitymodel.Service))
		}
	}
	return errors.Join(errs...)
}
