// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pubtest

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// MakeVar returns the value the repository's Makefile gives a variable by
// default (make print-NAME), as make itself computes it: IMAGE is
// REGISTRY/otelcol-processctx:VERSION, VERSION builder-config.yaml's. The
// environment make sees is the Go toolchain's and little else, so that a
// VERSION or MAKEFLAGS of the caller's does not change the answer.
func MakeVar(t testing.TB, name string) string {
	t.Helper()
	cmd := exec.Command("make", "-s", "--no-print-directory", "-C", RepoRoot(), "print-"+name)
	cmd.Env = nil
	for _, kv := range os.Environ() {
		key, _, _ := strings.Cut(kv, "=")
		if key == "PATH" || key == "HOME" || key == "TMPDIR" || strings.HasPrefix(key, "GO") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.Output()
	var stderr string
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		stderr = string(exitErr.Stderr)
	}
	if err != nil {
		t.Fatalf("make print-%s: %v: %s", name, err, stderr)
	}
	return strings.TrimSpace(string(out))
}
