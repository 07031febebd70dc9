// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

func TestHelpAndBadFlags(t *testing.T) {
	tests := []struct {
		args       []string
		err        error
		out, errOf string // parts of what is printed to stdout, stderr
	}{
		{args: []string{"-h"}, out: "lists the OpenTelemetry process contexts published on this host"},
		{args: []string{"-help"}, out: "CAP_SYS_PTRACE and\\nCAP_DAC_READ_SEARCH"},
		{args: []string{"--help"}, out: "-read-timeout duration"},
		{args: []string{"-json", "-h"}, out: "Usage: ctxdump"},
		{args: []string{"-bogus"}, err: errUsage, errOf: "flag provided but not defined: -bogus"},
		{args: []string{"-pid", "x"}, err: errUsage, errOf: `invalid value "x" for flag -pid`},
		{args: []string{"extra"}, err: errUsage, errOf: `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tt.args, &out, &errOut)
			require.ErrorIs(t, err, tt.err)
			if tt.err == nil {
				assert.Contains(t, out.String(), strings.ReplaceAll(tt.out, `\n`, "\n"))
				assert.Contains(t, out.String(), "-watch")
				assert.Empty(t, errOut.String())
				return
			}
			assert.Empty(t, out.String())
			assert.Contains(t, errOut.String(), tt.errOf)
			assert.Contains(t, errOut.String(), "-read-timeout duration", "the usage follows")
		})
	}
}

const mainArgsEnv = "CTXDUMP_MAIN_ARGS"

// TestMainHelper runs main with the arguments of mainArgsEnv, in a process
// that runMain started.
func TestMainHelper(t *testing.T) {
	args, ok := os.LookupEnv(mainArgsEnv)
	if !ok {
		t.Skip("only runs as a helper process")
	}
	os.Args = append([]string{"ctxdump"}, strings.Fields(args)...)
	main()
}

// runMain runs ctxdump's main in a new process, as uid unless it is 0,
// and returns its exit code and output.
func runMain(t *testing.T, uid int, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	exe := os.Args[0]
	cmd := exec.Command(exe, "-test.run=^TestMainHelper$")
	if uid != 0 {
		cmd.Path = pubtest.ExecutableCopy(t, exe, "ctxdump.test")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	cmd.Env = append(os.Environ(), mainArgsEnv+"="+strings.Join(args, " "))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), errOut.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errOut.String()
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		args string
		code int
	}{
		{"-h", 0},
		{"--help", 0},
		{"-bogus", 2},
		{"extra", 2},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			code, stdout, stderr := runMain(t, 0, tt.args)
			assert.Equal(t, tt.code, code, "stdout: %s\nstderr: %s", stdout, stderr)
			if tt.code == 0 {
				assert.Contains(t, stdout, "lists the OpenTelemetry process contexts")
			} else {
				assert.Contains(t, stderr, "Flags:")
			}
		})
	}
}

// A publisher whose context is not valid is listed, with why.
func TestListsUnreadable(t *testing.T) {
	p := pubtest.Start(t, pubtest.C, pubtest.Options{})
	payload := otep.EncodeStrings(map[string]string{"service.name": "x"})
	p.Publish(payload)
	p.Header("OTEL_CTZ", 2, uint32(len(payload)), 1, "inline")
	pid := strconv.Itoa(p.Pid)

	var out, errOut bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-pid", pid}, &out, &errOut))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2, "%s", out.String())
	assert.Regexp(t, `^PID\s+EXECUTABLE\s+OUTCOME\s+WHY$`, lines[0])
	assert.Regexp(t, `^`+pid+`\s+c-publisher\s+invalid\s+it publishes something that is not a valid context$`, lines[1])
	assert.NotContains(t, errOut.String(), "publishes no context", "listed: not said again")

	out.Reset()
	require.NoError(t, run(context.Background(), []string{"-json"}, &out, &errOut))
	assert.Contains(t, out.String(), `{"pid":`+pid+`,"process.executable.name":"c-publisher","outcome":"invalid","reason":"it publishes something that is not a valid context"}`)
}

// A process ctxdump may not read is listed with why, in ctxdump's terms;
// the tracker's warning speaks of ctxdump too, and not of its next one.
func TestListsDeniedAsAnotherUser(t *testing.T) {
	pubtest.RequireRoot(t)
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	p.Publish(otep.EncodeStrings(map[string]string{"service.name": "root-owned"}))

	code, stdout, stderr := runMain(t, 65534, "-pid", strconv.Itoa(p.Pid))
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Regexp(t, `(?m)^`+strconv.Itoa(p.Pid)+`\s+go-publisher\s+permission_denied\s+ctxdump runs as uid 65534 without CAP_SYS_PTRACE and the process belongs to uid 0: grant`, stdout)
	assert.Contains(t, stderr, "Cannot read the process context of some processes: permission denied")
	assert.Contains(t, stderr, "ctxdump runs as uid 65534 without CAP_SYS_PTRACE")
	for _, s := range []string{stdout, stderr} {
		assert.NotContains(t, s, "collector")
		assert.NotContains(t, s, "next_warning_in")
	}
}

// A process that no privilege lets ctxdump read (this development VM's
// init refuses even root) is listed with why; elsewhere there is nothing
// to check.
func TestListsWhatNoPrivilegeReads(t *testing.T) {
	pubtest.RequireRoot(t)
	if _, err := os.ReadFile("/proc/1/maps"); !errors.Is(err, os.ErrPermission) {
		t.Skipf("pid 1 is readable here (%v)", err)
	}
	var out, errOut bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-pid", "1"}, &out, &errOut))
	assert.Regexp(t, `(?m)^1\s+\S+\s+permission_denied\s+refused by the kernel although ctxdump \(uid 0\) has CAP_SYS_PTRACE.*no setting of ctxdump changes it`, out.String())
	assert.NotContains(t, errOut.String(), "permission denied", "said once, at info: no warning")
}
