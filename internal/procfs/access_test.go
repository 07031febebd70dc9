// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	ptraceMask = 1 << capSysPtrace
	dacMask    = 1 << capDACReadSearch
)

func TestParseCredentials(t *testing.T) {
	status := "Name:\tjava\nUid:\t1000\t1001\t1001\t1001\nCapPrm:\t0000000000080000\nCapEff:\t0000000000080004\nCapBnd:\t000001ffffffffff\nSeccomp:\t2\n"
	c := parseCredentials(strings.NewReader(status))
	assert.Equal(t, credentials{uid: 1000, euid: 1001, capEff: ptraceMask | dacMask, capPrm: ptraceMask, capBnd: 0x1ffffffffff, seccomp: 2, ok: true}, c)
}

func TestCheckAccess(t *testing.T) {
	tests := []struct {
		name string
		self credentials
		yama int
		want string // a part of the problem; "" for none
	}{
		{name: "both capabilities", self: credentials{euid: 998, capEff: ptraceMask | dacMask, ok: true}, yama: 1},
		{name: "root with every capability", self: credentials{capEff: 0x1ffffffffff, ok: true}, yama: 2},
		{name: "no ptrace", self: credentials{euid: 998, ok: true}, yama: 1, want: "lacks CAP_SYS_PTRACE"},
		{name: "no dac_read_search", self: credentials{euid: 998, capEff: ptraceMask, ok: true}, yama: 0, want: "lacks CAP_DAC_READ_SEARCH"},
		{name: "yama 3", self: credentials{capEff: 0x1ffffffffff, ok: true}, yama: 3, want: "ptrace_scope is 3"},
		{name: "own status unreadable", self: credentials{}, yama: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkAccess("the collector", tt.self, tt.yama)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tt.want)
		})
	}
}

func TestExplainDenied(t *testing.T) {
	full := credentials{capEff: 0x1ffffffffff, capBnd: 0x1ffffffffff, ok: true}
	tests := []struct {
		name         string
		self, target credentials
		yama         int
		want         string
		unchangeable bool
	}{
		{name: "yama 3", self: full, yama: 3, want: "ptrace_scope is 3"},
		{name: "yama 2 without ptrace", self: credentials{euid: 998, ok: true}, yama: 2, want: "only CAP_SYS_PTRACE"},
		{name: "other user", self: credentials{euid: 998, ok: true}, target: credentials{uid: 1000, ok: true}, yama: 1, want: "belongs to uid 1000"},
		{name: "more capabilities", self: credentials{euid: 998, ok: true}, target: credentials{uid: 998, capPrm: 1 << 21, ok: true}, yama: 1, want: "cap_sys_admin"},
		{name: "dac for another user's mem", self: credentials{euid: 998, capEff: ptraceMask, ok: true}, target: credentials{uid: 0, ok: true}, yama: 1, want: "not CAP_DAC_READ_SEARCH"},
		{name: "nothing the collector can change", self: full, target: credentials{uid: 0, ok: true}, yama: 1, want: "no setting of the collector changes it", unchangeable: true},
		{name: "capabilities outside the bounding set", self: credentials{capEff: 0x1fffeffffff, capBnd: 0x1fffeffffff, ok: true},
			target: credentials{uid: 0, capPrm: 0x1ffffffffff, ok: true}, yama: -1, want: "outside the collector's bounding set (cap_sys_resource)", unchangeable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := explainDenied("the collector", tt.self, tt.target, tt.yama)
			assert.Contains(t, got, tt.want)
			assert.Equal(t, tt.unchangeable, Unchangeable(got), "%s", got)
		})
	}
}

// The explanations name the reader they are given, never the collector
// for another reader.
func TestExplanationsNameTheReader(t *testing.T) {
	full := credentials{capEff: 0x1ffffffffff, capBnd: 0x1ffffffffff, ok: true}
	none := credentials{euid: 1000, ok: true}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"access without ptrace", checkAccess("ctxdump", none, 1), "ctxdump (uid 1000) lacks CAP_SYS_PTRACE"},
		{"access without dac", checkAccess("ctxdump", credentials{euid: 1000, capEff: ptraceMask, ok: true}, 1), "ctxdump (uid 1000) lacks CAP_DAC_READ_SEARCH"},
		{"yama 2", explainDenied("ctxdump", none, credentials{}, 2), "ctxdump (uid 1000) lacks it"},
		{"other user", explainDenied("ctxdump", none, credentials{uid: 0, ok: true}, 1), "ctxdump runs as uid 1000 without CAP_SYS_PTRACE"},
		{"more capabilities", explainDenied("ctxdump", none, credentials{uid: 1000, capPrm: 1 << 21, ok: true}, 1), "grant ctxdump CAP_SYS_PTRACE"},
		{"non-dumpable", explainDenied("ctxdump", none, credentials{uid: 1000, ok: true}, 1), "ctxdump lacks CAP_SYS_PTRACE"},
		{"dac", explainDenied("ctxdump", credentials{euid: 1000, capEff: ptraceMask, ok: true}, credentials{uid: 0, ok: true}, 1), "ctxdump has CAP_SYS_PTRACE but not"},
		{"unchangeable", explainDenied("ctxdump", full, credentials{uid: 0, ok: true}, -1), "no setting of ctxdump changes it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Contains(t, tt.got, tt.want)
			assert.NotContains(t, tt.got, "collector")
		})
	}
}

// This process's own privileges, as CheckAccess reads them.
func TestCheckAccessOfThisProcess(t *testing.T) {
	fs, err := NewFS("/")
	require.NoError(t, err)
	err = fs.CheckAccess()
	if os.Geteuid() == 0 && checkAccess("the collector", readCredentials("/proc/self/status"), -1) == "" {
		// root with its capabilities: only Yama 3 would stop it
		if err != nil {
			assert.Contains(t, err.Error(), "ptrace_scope is 3")
		}
		return
	}
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrPermissionDenied))
}

// A reader with every privilege that could help is told that no setting
// changes a denial: on a VM whose init refuses even root (this
// development VM's pid 1) the real explanation says so; elsewhere there is
// nothing to check.
func TestDeniedDespiteEveryPrivilege(t *testing.T) {
	fs, err := NewFS("/", WithReaderName("ctxdump"))
	require.NoError(t, err)
	if fs.CheckAccess() != nil {
		t.Skip("this process lacks privileges: its denials can be fixed")
	}
	_, err = os.ReadFile(fs.Path(1, "maps"))
	if !errors.Is(err, os.ErrPermission) {
		t.Skipf("pid 1 is readable here (%v)", err)
	}
	why := fs.ExplainDenied(1)
	assert.True(t, Unchangeable(why), "%s", why)
	assert.Contains(t, why, "refused by the kernel although ctxdump (uid ")
	assert.NotContains(t, why, "collector")
}
