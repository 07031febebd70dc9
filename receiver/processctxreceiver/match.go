// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"errors"
	"fmt"
	"regexp"

	"go.opentelemetry.io/collector/filter"
)

// Match types of MatchConfig, as the hostmetrics process scraper's.
const (
	MatchTypeStrict = "strict"
	MatchTypeRegexp = "regexp"
)

// MatchConfig selects processes by process.executable.name, with the keys
// of the hostmetrics process scraper's include / exclude.
type MatchConfig struct {
	// Names are executable names (strict) or regular expressions, matched
	// anywhere in the name unless anchored (regexp).
	Names []string `mapstructure:"names"`
	// MatchType is "strict" or "regexp".
	MatchType string `mapstructure:"match_type"`
}

// validate reports what is unusable, naming the keys under key.
func (m MatchConfig) validate(key string) error {
	if len(m.Names) == 0 {
		return nil
	}
	switch m.MatchType {
	case MatchTypeStrict:
		return nil
	case MatchTypeRegexp:
		var errs []error
		for i, n := range m.Names {
			if _, err := regexp.Compile(n); err != nil {
				errs = append(errs, fmt.Errorf("%s.names[%d]: %w", key, i, err))
			}
		}
		return errors.Join(errs...)
	case "":
		return fmt.Errorf("%s.match_type is required with %s.names: %q or %q", key, key, MatchTypeStrict, MatchTypeRegexp)
	}
	return fmt.Errorf("%s.match_type must be %q or %q, got %q", key, MatchTypeStrict, MatchTypeRegexp, m.MatchType)
}

// newFilter returns a filter of the names, nil for none. The MatchConfig
// must have passed validate.
func (m MatchConfig) newFilter() filter.Filter {
	if len(m.Names) == 0 {
		return nil
	}
	cfgs := make([]filter.Config, len(m.Names))
	for i, n := range m.Names {
		if m.MatchType == MatchTypeRegexp {
			cfgs[i] = filter.Config{Regex: n}
		} else {
			cfgs[i] = filter.Config{Strict: n}
		}
	}
	return filter.CreateFilter(cfgs)
}

// executableFilter says which processes get entity events.
type executableFilter struct {
	include, exclude filter.Filter
}

func newExecutableFilter(include, exclude MatchConfig) executableFilter {
	return executableFilter{include: include.newFilter(), exclude: exclude.newFilter()}
}

// selects reports whether a process with this executable name is watched.
func (f executableFilter) selects(executable string) bool {
	if f.include != nil && !f.include.Matches(executable) {
		return false
	}
	return f.exclude == nil || !f.exclude.Matches(executable)
}
