// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package configkeys makes the errors of a component's configuration name
// its keys, never a Go type, and say them through the component's
// Validate, which the collector prefixes with the component's path. A
// component's Config embeds Leftovers (`mapstructure:",squash"`), its
// Unmarshal calls Decode, and its Validate returns Leftovers.Err: keys
// that are no setting (extensions::process_context: unknown key
// "collection_intervl" (did you mean "collection_interval"?)), where
// mapstructure would name the Go type that did not take them
// ('tracker.Config' has invalid keys), and values of the wrong type
// (extensions::process_context: collection_interval: expected a duration
// such as 5s, got "fast"), where mapstructure would say it under three
// lines of "decoding failed".
package configkeys

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Elsewhere is another component whose keys are often written on this
// one: an unknown key that is one of Config's is said to be Name's.
type Elsewhere struct {
	Name   string // e.g. "the process_context extension"
	Config any
}

// Unknown returns an error for each key of unknown, with the setting of
// cfg (a struct or a pointer to one, with mapstructure tags) that it is
// most likely a misspelling of, or the component of others it belongs to;
// nil when unknown is empty.
func Unknown(cfg any, unknown map[string]any, others ...Elsewhere) error {
	if len(unknown) == 0 {
		return nil
	}
	known := Keys(cfg)
	keys := make([]string, 0, len(unknown))
	for k := range unknown {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	errs := make([]error, 0, len(keys))
	for _, k := range keys {
		if owner := slices.IndexFunc(others, func(o Elsewhere) bool { return slices.Contains(Keys(o.Config), k) }); owner >= 0 {
			errs = append(errs, fmt.Errorf("unknown key %q: it is a key of %s", k, others[owner].Name))
			continue
		}
		errs = append(errs, UnknownKey(k, known))
	}
	return errors.Join(errs...)
}

// UnknownKey is the error of key, which is none of known: the one it most
// likely misspells, or else the valid keys.
func UnknownKey(key string, known []string) error {
	if meant := closest(key, known); meant != "" {
		return fmt.Errorf("unknown key %q (did you mean %q?)", key, meant)
	}
	sorted := slices.Sorted(slices.Values(known))
	return fmt.Errorf("unknown key %q (valid keys: %s)", key, strings.Join(sorted, ", "))
}

// Keys returns the keys the struct cfg (or the struct it points to) takes:
// its fields' mapstructure names, through squashed fields.
func Keys(cfg any) []string {
	t := reflect.TypeOf(cfg)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		switch {
		case name == "-":
		case slices.Contains(strings.Split(opts, ","), "squash"):
			keys = append(keys, Keys(reflect.New(f.Type).Interface())...)
		case slices.Contains(strings.Split(opts, ","), "remain"):
		case name != "":
			keys = append(keys, name)
		default:
			keys = append(keys, strings.ToLower(f.Name))
		}
	}
	return keys
}

// closest returns the key of known that key most likely misspells: the
// nearest by edit distance, within a third of its length (at least 2).
func closest(key string, known []string) string {
	best, bestDist := "", max(2, len(key)/3)+1
	for _, k := range known {
		if d := distance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
