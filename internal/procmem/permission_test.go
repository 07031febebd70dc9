package procmem

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
		"none": nil, "no-context": ErrNoContext, "gone": ErrProcessGone, "permission": ErrPermissionDenied,
		"torn": ErrTorn, "invalid": ErrInvalid, "too-large": ErrTooLarge,
	} {
		if (err == nil && kind == nil) || (kind != nil && errors.Is(err, kind)) {
			return name
		}
	}
	return "other:" + err.Error()
}

func TestPermissionDenied(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a reader as another uid")
	}
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	addr := p.Publish(serviceContext(t, "root-owned"))

	// The test binary must be executable by the other uid.
	dir, err := os.MkdirTemp("", "procmem-nobody-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	self := filepath.Join(dir, "procmem.test")
	copyFile(t, os.Args[0], self)

	cmd := exec.Command(self, "-test.run=^TestReadAsHelper$", "-test.v")
	cmd.Env = append(os.Environ(), helperPidEnv+"="+strconv.Itoa(p.Pid), helperAddrEnv+"="+strconv.FormatUint(addr, 10))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "find=permission read=permission start=none", "%s", out)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
}
