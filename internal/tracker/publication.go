// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"fmt"
	"time"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
)

// Key identifies a process: pids are reused, (pid, start time) are not.
type Key struct {
	PID        int
	StartTicks uint64
}

// Publication is the identity of one process, as the tracker last read it: a
// context it publishes or, for a process that publishes none, what its SDK
// environment variables say (Source). A Publication is never modified once
// published: a change makes a new one. Its maps are shared by every reader
// and must be treated as read-only.
type Publication struct {
	// views holds the value of each View at the index of its id. First:
	// the processor's hot path reads it with Key, in one cache line.
	views []any

	Key
	Identity procfs.Identity // what the host knows of the process, read with the context
	Source   Source          // where the identity comes from
	// Context is the published context; from the environment, Resource
	// holds what OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say, and
	// PublishedAt is 0.
	Context otep.Context
	// Addr is the address of the context's header in the process; 0 from
	// the environment.
	Addr uint64
	// EndedAt is when the publication ended (the process exited,
	// unpublished, or published something unreadable); zero while it is
	// live. An ended publication stays in snapshots for Config.GracePeriod.
	EndedAt time.Time
}

// Source says where a process's identity comes from.
type Source uint8

const (
	// SourceContext: the process publishes a context (OTEP 4719).
	SourceContext Source = iota
	// SourceEnvironment: the process publishes no context; its identity
	// is what the OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES variables
	// of its environment say, as its SDK would read them.
	SourceEnvironment
)

// String names the source as configurations and reports do.
func (s Source) String() string {
	if s == SourceEnvironment {
		return "environment"
	}
	return "context"
}

// UnmarshalText reads a source's name, for the configuration.
func (s *Source) UnmarshalText(text []byte) error {
	switch string(text) {
	case "context":
		*s = SourceContext
	case "environment":
		*s = SourceEnvironment
	default:
		return fmt.Errorf("unknown source %q: use %q or %q", text, SourceContext, SourceEnvironment)
	}
	return nil
}

// MarshalText names the source.
func (s Source) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Live reports whether the publication has not ended.
func (p *Publication) Live() bool { return p.EndedAt.IsZero() }

// ContainerPid is a pid as a container sees it: the container's id and the
// pid in its innermost pid namespace.
type ContainerPid struct {
	ContainerID string
	VPID        int
}

// View computes, once per publication, data a consumer derives from it
// (e.g. the processor's filtered attributes), so that its hot path reads it
// without computing or locking. Views are added with Tracker.AddView.
type View struct {
	id int
}

// Of returns the view's value for p, or nil when p predates the view (it
// never does in a snapshot taken after AddView returned).
func (v View) Of(p *Publication) any {
	if v.id < len(p.views) {
		return p.views[v.id]
	}
	return nil
}
