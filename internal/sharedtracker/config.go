// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package sharedtracker

// This file checks a resolved configuration for what FindLookup and FindFeed would refuse at
// start; converter/processctxconverter calls it, so that `validate` fails
// where start would.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/component"
)

// componentType is the type of the process_context extension, receiver and
// processor.
const componentType = "process_context"

// CheckConfig fails, with the errors the receiver and the processor would
// fail to start with, when a pipeline of cfg (a resolved configuration, as
// confmap.Conf.ToStringMap returns it) uses a process_context receiver or
// processor whose tracker is not among service::extensions: none there,
// the one its tracker key names missing or of another type, several and no
// tracker key. Components no pipeline uses are not started, so not
// checked; what the collector itself refuses (an unknown ID) is left to it.
func CheckConfig(cfg map[string]any) error {
	service, _ := cfg["service"].(map[string]any)
	exts := map[component.ID]bool{}
	list, _ := service["extensions"].([]any)
	for _, v := range list {
		if id, ok := parseID(v); ok {
			exts[id] = id.Type().String() == componentType
		}
	}
	// The components that fail, by the error they fail with.
	failing := map[string][]string{}
	checked := map[string]bool{}
	pipelines, _ := service["pipelines"].(map[string]any)
	for _, p := range pipelines {
		pipeline, _ := p.(map[string]any)
		for _, kind := range []string{"receivers", "processors"} {
			ids, _ := pipeline[kind].([]any)
			for _, v := range ids {
				id, ok := parseID(v)
				if !ok || id.Type().String() != componentType || checked[kind+"::"+id.String()] {
					continue
				}
				checked[kind+"::"+id.String()] = true
				section, _ := cfg[kind].(map[string]any)
				settings, _ := section[id.String()].(map[string]any)
				var trackerID *component.ID
				if named, ok := parseID(settings["tracker"]); ok {
					trackerID = &named
				}
				if _, err := pick(exts, trackerID); err != nil {
					what := componentType + " " + strings.TrimSuffix(kind, "s")
					if id.Name() != "" {
						what += " " + id.String()
					}
					failing[err.Error()] = append(failing[err.Error()], what)
				}
			}
		}
	}
	msgs := make([]string, 0, len(failing))
	for msg := range failing {
		msgs = append(msgs, msg)
	}
	slices.Sort(msgs)
	errs := make([]error, 0, len(msgs))
	for _, msg := range msgs {
		what := failing[msg]
		slices.Sort(what)
		errs = append(errs, fmt.Errorf("%s: %s", strings.Join(what, ", "), msg))
	}
	return errors.Join(errs...)
}

// parseID returns the component ID a configuration value names.
func parseID(v any) (component.ID, bool) {
	s, ok := v.(string)
	if !ok || s == "" {
		return component.ID{}, false
	}
	var id component.ID
	if err := id.UnmarshalText([]byte(s)); err != nil {
		return component.ID{}, false
	}
	return id, true
}
