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
			got := checkAccess(tt.self, tt.yama)
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
	}{
		{name: "yama 3", self: full, yama: 3, want: "ptrace_scope is 3"},
		{name: "yama 2 without ptrace", self: credentials{euid: 998, ok: true}, yama: 2, want: "only CAP_SYS_PTRACE"},
		{name: "other user", self: credentials{euid: 998, ok: true}, target: credentials{uid: 1000, ok: true}, yama: 1, want: "belongs to uid 1000"},
		{name: "more capabilities", self: credentials{euid: 998, ok: true}, target: credentials{uid: 998, capPrm: 1 << 21, ok: true}, yama: 1, want: "cap_sys_admin"},
		{name: "dac for another user's mem", self: credentials{euid: 998, capEff: ptraceMask, ok: true}, target: credentials{uid: 0, ok: true}, yama: 1, want: "not CAP_DAC_READ_SEARCH"},
		{name: "nothing the collector can change", self: full, target: credentials{uid: 0, ok: true}, yama: 1, want: "no collector setting changes it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Contains(t, explainDenied(tt.self, tt.target, tt.yama), tt.want)
		})
	}
}

// This process's own privileges, as CheckAccess reads them.
func TestCheckAccessOfThisProcess(t *testing.T) {
	fs, err := NewFS("/")
	require.NoError(t, err)
	err = fs.CheckAccess()
	if os.Geteuid() == 0 && checkAccess(readCredentials("/proc/self/status"), -1) == "" {
		// root with its capabilities: only Yama 3 would stop it
		if err != nil {
			assert.Contains(t, err.Error(), "ptrace_scope is 3")
		}
		return
	}
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrPermissionDenied))
}
