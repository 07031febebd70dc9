package processctxprocessor

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// maxPID is PID_MAX_LIMIT on 64-bit Linux: no pid is larger.
const maxPID = 1 << 22

// pidFromValue reads a pid from an int attribute or a string of decimal
// digits. Anything else (zero, negative, too large, other characters,
// other types) is not a pid.
func pidFromValue(v pcommon.Value) (int, bool) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		n := v.Int()
		if n <= 0 || n > maxPID {
			return 0, false
		}
		return int(n), true
	case pcommon.ValueTypeStr:
		return parsePID(v.Str())
	}
	return 0, false
}

// parsePID parses a string of decimal digits without allocating.
func parsePID(s string) (int, bool) {
	if s == "" || len(s) > 10 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n <= 0 || n > maxPID {
		return 0, false
	}
	return n, true
}

// pidOf returns the first valid pid found under the configured keys, in
// their order.
func (c *core) pidOf(attrs pcommon.Map) (int, bool) {
	for _, k := range c.pidKeys {
		if v, ok := attrs.Get(k); ok {
			if pid, ok := pidFromValue(v); ok {
				return pid, true
			}
		}
	}
	return 0, false
}
