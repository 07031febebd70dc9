// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package configkeys

import (
	"fmt"
	"time"
)

// BelowFloor refuses a positive duration d of the setting key below least,
// and says what a number without a unit means: a value below a
// millisecond is one, most likely, and the same number of seconds (or
// milliseconds) what was meant when that is at least least and at most
// most (0: no bound). Zero and negative values are left to the checks of
// each key.
func BelowFloor(key string, d, least, most time.Duration) error {
	if d <= 0 || d >= least {
		return nil
	}
	hint := ""
	if d < time.Millisecond {
		hint = "; a duration without a unit is in nanoseconds"
		usable := func(v time.Duration) bool { return v >= least && (most == 0 || v <= most) }
		switch {
		case usable(d * time.Second):
			hint += fmt.Sprintf(": write %ds", int64(d))
		case usable(d * time.Millisecond):
			hint += fmt.Sprintf(": write %dms", int64(d))
		}
	}
	return fmt.Errorf("%s: %s is below the floor of %s%s", key, d, least, hint)
}
