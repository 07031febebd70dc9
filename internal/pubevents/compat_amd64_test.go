// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package pubevents

import (
	"os/exec"
	"testing"
)

// TestCompatSyscallsAreIgnored: a 32-bit syscall whose number is prctl's in
// the 64-bit table, with prctl's arguments in the 64-bit registers, is not
// taken for a prctl.
func TestCompatSyscallsAreIgnored(t *testing.T) {
	bin := buildHelper(t, "compat")
	forEachMechanism(t, func(t *testing.T, opts Options) {
		w := mustLoad(t, opts)
		cmd := exec.Command(bin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Skipf("int $0x80 unavailable (32-bit emulation off?): %v: %s", err, out)
		}
		pid := cmd.ProcessState.Pid()
		expect(t, w, Event{Kind: Publish, PID: pid, Addr: 0x3000, Len: 0x4000}, pid)
	})
}
