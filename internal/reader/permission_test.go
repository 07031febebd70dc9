// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package reader

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

const (
	helperPidEnv  = "PROCMEM_TEST_READ_PID"
	helperAddrEnv = "PROCMEM_TEST_READ_ADDR"
	nobody        = 65534
)

// TestReadAsHelper is the body of a helper process started by
// TestPermissionDenied under another uid: it reads one pid and prints the
// error kinds it met.
func TestReadAsHelper(t *testing.T) {
	pid, err := strconv.Atoi(os.Getenv(helperPidEnv))
	if err != nil {
		t.Skip("only runs as a helper process")
	}
	addr, _ := strconv.ParseUint(os.Getenv(helperAddrEnv), 10, 64)
	r := newTestReader(t)
	_, findErr := r.FindMapping(pid)
	_, readErr := r.ReadContext(pid, addr)
	_, startErr := r.FS().StartTime(pid)
	fmt.Printf("find=%s read=%s start=%s\n", kindOf(findErr), kindOf(readErr), kindOf(startErr))
}

func kindOf(err error) string {
	for name, kind := range map[string]error{
		"none": nil, "no-context": otep.ErrNoContext, "gone": procfs.ErrProcessGone, "permission": procfs.ErrPermissionDenied,
		"torn": otep.ErrTorn, "invalid": otep.ErrInvalid, "too-large": otep.ErrTooLarge,
	} {
		if (err == nil && kind == nil) || (kind != nil && errors.Is(err, kind)) {
			return name
		}
	}
	return "other:" + err.Error()
}

func TestPermissionDenied(t *testing.T) {
	pubtest.RequireRoot(t)
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	addr := p.Publish(serviceContext(t, "root-owned"))

	// The test binary must be executable by the other uid.
	self := pubtest.ExecutableCopy(t, os.Args[0], "procmem.test")

	cmd := exec.Command(self, "-test.run=^TestReadAsHelper$", "-test.v")
	cmd.Env = append(os.Environ(), helperPidEnv+"="+strconv.Itoa(p.Pid), helperAddrEnv+"="+strconv.FormatUint(addr, 10))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "find=permission read=permission start=none", "%s", out)
}
