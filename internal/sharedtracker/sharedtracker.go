// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package sharedtracker is how the process_context receiver and processor
// find the one process tracker of a collector, which the extension runs
// (component.Host.GetExtensions, the way contrib components find a storage
// extension), and the small interfaces they see it through; a component
// that finds none fails to start, with the configuration to add. Settings
// are the extension's keys, which all three components know.
package sharedtracker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Lookup is what the process_context processor uses of the tracker: it
// looks pids up in snapshots carrying its view, asks for the unknown ones
// to be read, and reports the tracker's health as its status.
type Lookup interface {
	Snapshot() *tracker.Snapshot
	Probe(pids []int, within time.Duration) <-chan struct{}
	ScanSoon() <-chan struct{}
	AddView(ctx context.Context, key any, fn func(*tracker.Publication) any) (tracker.View, error)
	RemoveView(ctx context.Context, v tracker.View) error
	Health() (<-chan struct{}, error)
}

// Feed is what the process_context receiver uses of the tracker: its
// changes, the host it reads and its health.
type Feed interface {
	Subscribe(ctx context.Context, fn tracker.Subscriber) (unsubscribe func(), err error)
	HostIdentity() procfs.HostIdentity
	Health() (<-chan struct{}, error)
}

// Tracker is what the process_context extension shares: a started
// tracker, which the extension alone starts and stops.
type Tracker interface {
	Lookup
	Feed
}

// Runner is what the extension does with the tracker it opens: it starts
// and stops it, shares it and reads its counts for its telemetry.
type Runner interface {
	Tracker
	Start()
	Stop(ctx context.Context) error
	Events() tracker.EventStats
	DeniedProcesses() int
}

var _ Runner = (*tracker.Tracker)(nil)

// Provider is what the process_context extension implements.
type Provider interface {
	// ProcessTracker returns the extension's started tracker, nil before
	// Start.
	ProcessTracker() Tracker
}

// missing is the end of the error without an extension: the lines to add.
const missing = `the process_context extension runs the collector's process tracker: add it to the configuration
  extensions:
    process_context:
  service:
    extensions: [process_context]`

// FindLookup returns what the processor uses of the tracker find finds.
func FindLookup(host component.Host, id *component.ID) (Lookup, component.ID, error) {
	return find(host, id)
}

// FindFeed returns what the receiver uses of the tracker find finds.
func FindFeed(host component.Host, id *component.ID) (Feed, component.ID, error) {
	return find(host, id)
}

// find returns the tracker of the extension id names or, when id is nil,
// of the only process_context extension of the collector, and that
// extension's ID. It fails when there is none, when id names another kind
// of extension, and when id is nil and there are several.
func find(host component.Host, id *component.ID) (Tracker, component.ID, error) {
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
// only process_context extension. find (at start) and CheckConfig (when
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
