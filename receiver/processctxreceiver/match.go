package processctxreceiver

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

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
	// Executables is the earlier form: names or shell patterns
	// (filepath.Match). Deprecated: it means what newForm says, and fails
	// validation under the receiver.processcontext.disallowExecutablesGlob
	// feature gate.
	Executables []string `mapstructure:"executables"`
}

// validate reports what is unusable, naming the keys under key.
func (m MatchConfig) validate(key string, disallowGlob bool) error {
	if len(m.Executables) > 0 {
		switch {
		case len(m.Names) > 0:
			return fmt.Errorf("%s: executables and names cannot be used together; executables is deprecated: %s", key, m.suggestion(key))
		case disallowGlob:
			return fmt.Errorf("%s.executables is no longer accepted (feature gate receiver.processcontext.disallowExecutablesGlob): use %s", key, m.suggestion(key))
		}
		_, err := m.effective()
		if err != nil {
			return fmt.Errorf("%s.executables: %w", key, err)
		}
		return nil
	}
	if len(m.Names) == 0 {
		return nil
	}
	switch m.MatchType {
	case MatchTypeStrict:
	case MatchTypeRegexp:
		var errs []error
		for i, n := range m.Names {
			if _, err := regexp.Compile(n); err != nil {
				errs = append(errs, fmt.Errorf("%s.names[%d]: %w", key, i, err))
			}
		}
		return errors.Join(errs...)
	default:
		return fmt.Errorf("%s.match_type must be %q or %q, got %q", key, MatchTypeStrict, MatchTypeRegexp, m.MatchType)
	}
	return nil
}

// effective returns the names and match type the MatchConfig means: its
// own, or those its deprecated executables translate to.
func (m MatchConfig) effective() (MatchConfig, error) {
	if len(m.Executables) == 0 {
		return m, nil
	}
	out := MatchConfig{MatchType: MatchTypeStrict}
	for _, p := range m.Executables {
		if _, err := filepath.Match(p, ""); err != nil || p == "" {
			return MatchConfig{}, fmt.Errorf("bad pattern %q", p)
		}
		out.Names = append(out.Names, p)
		if isGlob(p) {
			out.MatchType = MatchTypeRegexp
		}
	}
	if out.MatchType == MatchTypeRegexp {
		for i, p := range out.Names {
			out.Names[i] = globToRegexp(p) // a literal name too: anchored, quoted
		}
	}
	return out, nil
}

// suggestion shows the new form of a deprecated executables list.
func (m MatchConfig) suggestion(key string) string {
	e, err := m.effective()
	if err != nil {
		return fmt.Sprintf("%s: {match_type: regexp, names: [...]}", key)
	}
	quoted := make([]string, len(e.Names))
	for i, n := range e.Names {
		quoted[i] = strconv.Quote(n)
	}
	return fmt.Sprintf("%s: {match_type: %s, names: [%s]}", key, e.MatchType, strings.Join(quoted, ", "))
}

// newFilter returns a filter of the names the MatchConfig means, nil for
// none. The MatchConfig must have passed validate.
func (m MatchConfig) newFilter() filter.Filter {
	e, err := m.effective()
	if err != nil || len(e.Names) == 0 {
		return nil
	}
	cfgs := make([]filter.Config, len(e.Names))
	for i, n := range e.Names {
		if e.MatchType == MatchTypeRegexp {
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

func isGlob(p string) bool { return strings.ContainsAny(p, `*?[\`) }

// globToRegexp translates a valid filepath.Match pattern into an anchored
// regular expression matching the same names.
func globToRegexp(p string) string {
	var b strings.Builder
	b.WriteString("^")
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			i++
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		case inClass:
			if c == ']' {
				inClass = false
			}
			b.WriteByte(c)
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			inClass = true
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	b.WriteString("$")
	return b.String()
}
