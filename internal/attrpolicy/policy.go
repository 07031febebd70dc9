// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package attrpolicy

// policy.go owns the families of keys (the table FamilyOf reads) and the
// Policy that decides, key by key, what a published value becomes. Callers:
// the processor, once per publication; the receiver, once per entity event.

import (
	"strings"

	"go.opentelemetry.io/collector/filter"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Family is what a key describes, which decides whom to trust for it.
type Family uint8

const (
	// Other is every key no prefix of the table names: vendor namespaces
	// (datadog.*), unknown ones.
	Other Family = iota
	// Identity is what the process declares about itself.
	Identity
	// Observed is what the machine and the runtime are: facts the
	// collector reads itself.
	Observed
	// ThreadContext is OTEP 4947's coordination keys, never copied.
	ThreadContext
)

// String names the family as docs/configuration.md does.
func (f Family) String() string {
	switch f {
	case Identity:
		return "identity"
	case Observed:
		return "observed"
	case ThreadContext:
		return "thread context"
	}
	return "other"
}

// prefix is one row of the family table: keys that start with prefix.
type prefix struct {
	prefix string
	family Family
}

// families is the table of families, by key prefix; the longest prefix
// that a key starts with decides (process.runtime. before process.).
// docs/configuration.md lists the same rows (TestDocumentedTable).
var families = [...]prefix{
	// What the SDK owns and the process declares (the semantic
	// conventions' service, deployment and telemetry resources, and the
	// process runtime an SDK's detector describes).
	{"service.", Identity},
	{"deployment.", Identity},
	{"telemetry.sdk.", Identity},
	{"telemetry.distro.", Identity},
	{"process.runtime.", Identity},
	// What the machine and the runtime are.
	{"host.", Observed},
	{"os.", Observed},
	{"cloud.", Observed},
	{"container.", Observed},
	{"k8s.", Observed},
	{"process.", Observed},
	// OTEP 4947: "not expected to appear in OTLP exports".
	{"threadlocal.", ThreadContext},
}

// FamilyOf returns the family of key: that of the longest prefix of the
// table the key starts with, Other for none.
func FamilyOf(key string) Family {
	best, family := 0, Other
	for _, p := range families {
		if len(p.prefix) > best && strings.HasPrefix(key, p.prefix) {
			best, family = len(p.prefix), p.family
		}
	}
	return family
}

// Action is what becomes of a published value.
type Action uint8

const (
	// Skip: the value is not copied.
	Skip Action = iota
	// AddMissing: copied where the destination has no value for the key.
	AddMissing
	// Replace: copied, replacing the destination's value.
	Replace
)

// String says what the action does, as docs/configuration.md's table says
// it of a family's default.
func (a Action) String() string {
	switch a {
	case AddMissing:
		return "added where missing"
	case Replace:
		return "replaces"
	}
	return "never copied"
}

// Policy decides what the values of a published resource become. It is
// read-only once made: safe for concurrent use.
type Policy struct {
	identityOverride bool
	observedCopy     bool
	otherCopy        bool
	otherOverride    bool
	// include is nil when every key may be added.
	include filter.Filter
	exclude filter.Filter
	// never are keys the caller never copies from a publication whatever
	// their family (the processor's pid_attributes).
	never map[string]struct{}
}

// New returns the policy cfg configures (cfg must have passed Validate);
// the keys of never are never copied from a publication.
func New(cfg Config, never ...string) *Policy {
	p := &Policy{
		identityOverride: cfg.Identity.Override,
		observedCopy:     cfg.Observed.Copy,
		otherCopy:        cfg.Other.Copy,
		otherOverride:    cfg.Other.Override,
		exclude:          filter.CreateFilter(cfg.Exclude),
	}
	if len(cfg.Include) > 0 {
		p.include = filter.CreateFilter(cfg.Include)
	}
	if len(never) > 0 {
		p.never = make(map[string]struct{}, len(never))
		for _, k := range never {
			p.never[k] = struct{}{}
		}
	}
	return p
}

// Default returns the policy of the defaults: what the receiver applies.
func Default() *Policy { return New(DefaultConfig()) }

// Admits reports whether key may be added at all: include and exclude.
// It is what decides for the collector's own observations (process
// creation time, pod uid, container id), which no family setting turns
// off.
func (p *Policy) Admits(key string) bool {
	if p.exclude.Matches(key) {
		return false
	}
	return p.include == nil || p.include.Matches(key)
}

// Published decides what becomes of the published value v of key.
func (p *Policy) Published(key string, v pcommon.Value) Action {
	if Empty(v) || !p.Admits(key) {
		return Skip
	}
	if _, never := p.never[key]; never {
		return Skip
	}
	switch FamilyOf(key) {
	case Identity:
		if p.identityOverride {
			return Replace
		}
		return AddMissing
	case Observed:
		if p.observedCopy {
			return AddMissing
		}
		return Skip
	case ThreadContext:
		return Skip
	}
	switch {
	case !p.otherCopy:
		return Skip
	case p.otherOverride:
		return Replace
	}
	return AddMissing
}

// Empty reports whether v says nothing: no value, or an empty string,
// bytes, array or map. A zero number or false says something.
func Empty(v pcommon.Value) bool {
	switch v.Type() {
	case pcommon.ValueTypeEmpty:
		return true
	case pcommon.ValueTypeStr:
		return v.Str() == ""
	case pcommon.ValueTypeBytes:
		return v.Bytes().Len() == 0
	case pcommon.ValueTypeSlice:
		return v.Slice().Len() == 0
	case pcommon.ValueTypeMap:
		return v.Map().Len() == 0
	}
	return false
}
