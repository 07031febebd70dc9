// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package procfs

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// OpenEnviron reads a real process's environment whole, however long,
// though it stops at the first short read.
func TestOpenEnviron(t *testing.T) {
	long := "LONG=" + strings.Repeat("x", 10_000)
	cmd := exec.Command("sleep", "60")
	cmd.Env = []string{"A=1", long, "B=2"}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	fs, err := NewFS("/")
	require.NoError(t, err)

	want := "A=1\x00" + long + "\x00B=2\x00"
	var got []byte
	// Right after exec the kernel may not have set the environment up yet.
	require.Eventually(t, func() bool {
		r, err := fs.OpenEnviron(cmd.Process.Pid)
		require.NoError(t, err)
		defer func() { _ = r.Close() }()
		got, err = io.ReadAll(r)
		require.NoError(t, err)
		return len(got) > 0
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, want, string(got))

	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	_, err = fs.OpenEnviron(cmd.Process.Pid)
	assert.True(t, errors.Is(err, ErrProcessGone), "%v", err)
	_, err = fs.OpenEnviron(os.Getpid())
	assert.NoError(t, err)
}
