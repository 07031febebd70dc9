// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package sharedtracker is how the process_context receiver and processor
// find the one process tracker of a collector: the process_context
// extension runs it, and they find it through the collector's host
// (component.Host.GetExtensions), the way contrib components find a storage
// extension or an observer. A component that finds none fails to start,
// with the configuration to add.
package sharedtracker

import (
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/component"

	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Provider is what the process_context extension implements.
type Provider interface {
	// ProcessTracker returns the extension's started tracker.
	ProcessTracker() *tracker.Tracker
}

// missing is the end of the error without an extension: the lines to add.
const missing = `the process_context extension runs the collector's process tracker: add it to the configuration
  extensions:
    process_context:
  service:
    extensions: [process_context]`

// Find returns the tracker of the extension id names or, when id is nil,
// of the only process_context extension of the collector, and that
// extension's ID. It fails when there is none, when id names another kind
// of extension, and when id is nil and there are several.
func Find(host component.Host, id *component.ID) (*tracker.Tracker, component.ID, error) {
	exts := map[component.ID]Provider{}
	isProvider := map[component.ID]bool{}
	for extID, ext := range host.GetExtensions() {
		p, ok := ext.(Provider)
		exts[extID], isProvider[extID] = p, ok
	}
	found, err := pick(isProvider, id)
	if err != nil {
		return nil, found, err
	}
	tr := exts[found].ProcessTracker()
	if tr == nil {
		return nil, found, fmt.Errorf("tracker: extension %s is not started", found)
	}
	return tr, found, nil
}

// pick chooses among the collector's extensions (each with whether it is a
// process_context extension) the one id names or, when id is nil, the
// only process_context extension. Find (at start) and CheckConfig (when
// the configuration is resolved, in validate too) say the same.
func pick(exts map[component.ID]bool, id *component.ID) (component.ID, error) {
	if id != nil {
		isProvider, ok := exts[*id]
		switch {
		case !ok:
			return *id, fmt.Errorf("tracker: extension %s is not in service::extensions; %s", id, missing)
		case !isProvider:
			return *id, fmt.Errorf("tracker: extension %s is not a process_context extension", id)
		}
		return *id, nil
	}
	var found []component.ID
	for extID, isProvider := range exts {
		if isProvider {
			found = append(found, extID)
		}
	}
	switch len(found) {
	case 0:
		return component.ID{}, fmt.Errorf("no process_context extension; %s", missing)
	case 1:
		return found[0], nil
	}
	slices.SortFunc(found, func(a, b component.ID) int { return strings.Compare(a.String(), b.String()) })
	return component.ID{}, fmt.Errorf("the collector has several process_context extensions (%v): say which with the tracker key", found)
}
