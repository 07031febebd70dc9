// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package license

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

const (
	holder = "Copyright The otelcol-processctx Authors"
	spdx   = "SPDX-License-Identifier: Apache-2.0"
)

// script is tools/spdx.sh of this repository.
func script() string {
	return filepath.Join(pubtest.RepoRoot(), "tools", "spdx.sh")
}

// run runs tools/spdx.sh in dir and returns its exit status and output.
func run(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{script()}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode(), string(out)
	}
	require.NoError(t, err, "running tools/spdx.sh: %s", out)
	return 0, string(out)
}

// gitRepo makes a git repository in a new directory holding files (path →
// content; mode 0755 for those whose content starts with #!).
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput()
	require.NoError(t, err, "git init: %s", out)
	for name, content := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		mode := os.FileMode(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		require.NoError(t, os.WriteFile(path, []byte(content), mode))
	}
	return dir
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return string(data)
}

// The repository's own LICENSE is the Apache License 2.0, as its source
// files' headers say.
func TestLicenseFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(pubtest.RepoRoot(), "LICENSE"))
	require.NoError(t, err, "the repository has no LICENSE")
	text := string(data)
	assert.Contains(t, text, "Apache License\n                           Version 2.0, January 2004")
	assert.Contains(t, text, "END OF TERMS AND CONDITIONS", "LICENSE is not the full text")
}

// Every source file of the repository carries the header (or, the eBPF
// program, an SPDX line of its own license): what make lint checks.
func TestEverySourceFileHasTheHeader(t *testing.T) {
	status, out := run(t, pubtest.RepoRoot(), "check")
	assert.Zero(t, status, "tools/spdx.sh check failed (run make spdx):\n%s", out)
	assert.Contains(t, out, "under a license of its own: internal/pubevents/bpf/pubevents.c: (GPL-2.0-only OR BSD-2-Clause)")
	t.Log(strings.TrimSpace(out))
}

// A source file of each kind without the header fails the check, which
// names it; add gives each the header in its own comment syntax, after a
// #! line, keeping the mode; then the check passes, and add again changes
// nothing.
func TestCheckAndAddEachKind(t *testing.T) {
	files := map[string]string{
		"pkg/a.go":          "// Package a does a.\npackage a\n",
		"pkg/b_linux.go":    "//go:build linux\n\npackage a\n",
		"c/prog.c":          "/*\n * A program.\n */\nint main(void) { return 0; }\n",
		"c/prog.h":          "#define X 1\n",
		"tools/run.sh":      "#!/bin/sh\n# Runs.\nexit 0\n",
		"tools/ci":          "#!/usr/bin/env bash\nset -e\n",
		"Makefile":          "all:\n\ttrue\n",
		"sub/rules.mk":      "\nx := 1\n",
		"notes.txt":         "not a source file\n",
		"tools/data":        "no #! line: data\n",
		"tools/py":          "#!/usr/bin/env python3\nprint(1)\n",
		"config.yaml":       "a: 1\n",
		"pkg/testdata/t.go": "package t\n",
	}
	dir := gitRepo(t, files)
	want := []string{"pkg/a.go", "pkg/b_linux.go", "c/prog.c", "c/prog.h", "tools/run.sh", "tools/ci", "Makefile", "sub/rules.mk", "pkg/testdata/t.go"}

	status, out := run(t, dir, "check")
	assert.Equal(t, 1, status, out)
	for _, name := range want {
		assert.Contains(t, out, "  "+name+"\n", "the check does not name %s", name)
	}
	for _, name := range []string{"notes.txt", "tools/data", "tools/py", "config.yaml"} {
		assert.NotContains(t, out, name, "%s is not a source file of the kinds checked", name)
	}
	assert.Contains(t, out, "0 of 9 source files carry a license header")

	status, out = run(t, dir, "add")
	require.Zero(t, status, out)
	assert.Contains(t, out, "added the header to 9 of 9 source files")

	go2 := "// " + holder + "\n// " + spdx + "\n\n"
	sh2 := "# " + holder + "\n# " + spdx + "\n"
	for name, want := range map[string]string{
		"pkg/a.go":          go2 + "// Package a does a.\npackage a\n",
		"pkg/b_linux.go":    go2 + "//go:build linux\n\npackage a\n",
		"c/prog.c":          go2 + "/*\n * A program.\n */\nint main(void) { return 0; }\n",
		"c/prog.h":          go2 + "#define X 1\n",
		"tools/run.sh":      "#!/bin/sh\n" + sh2 + "\n# Runs.\nexit 0\n",
		"tools/ci":          "#!/usr/bin/env bash\n" + sh2 + "\nset -e\n",
		"Makefile":          sh2 + "\nall:\n\ttrue\n",
		"sub/rules.mk":      sh2 + "\nx := 1\n", // the blank line it had is the one after the header
		"pkg/testdata/t.go": go2 + "package t\n",
		"notes.txt":         files["notes.txt"],
		"tools/py":          files["tools/py"],
	} {
		assert.Equal(t, want, read(t, dir, name), name)
	}
	info, err := os.Stat(filepath.Join(dir, "tools/run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm(), "add keeps an executable executable")

	status, out = run(t, dir, "check")
	assert.Zero(t, status, out)
	assert.Contains(t, out, "9 of 9 source files carry a license header")

	before := map[string]string{}
	for _, name := range want {
		before[name] = read(t, dir, name)
	}
	status, out = run(t, dir, "add")
	require.Zero(t, status, out)
	assert.Contains(t, out, "added the header to 0 of 9")
	for _, name := range want {
		assert.Equal(t, before[name], read(t, dir, name), "add changed %s a second time", name)
	}
}

// Generated Go files (Go's rule: "// Code generated ... DO NOT EDIT."
// before the package clause) and tools/mdatagen-src are neither checked
// nor changed; a file with an SPDX line of another license passes and is
// listed; a header that is not the file's first lines fails, and add does
// not add a second one.
func TestWhatIsNotChecked(t *testing.T) {
	files := map[string]string{
		"gen/generated_status.go":        "// Code generated by mdatagen. DO NOT EDIT.\n\npackage gen\n",
		"gen/x_bpfel.go":                 "// Code generated by bpf2go; DO NOT EDIT.\n//go:build linux\n\npackage gen\n",
		"gen/late.go":                    "package gen\n\n// Code generated by nothing. DO NOT EDIT.\n",
		"tools/mdatagen-src/main.go":     "// Copyright The OpenTelemetry Authors\n// SPDX-License-Identifier: Apache-2.0\n\npackage main\n",
		"tools/mdatagen-src/internal.go": "package main\n",
		"bpf/prog.c":                     "// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)\nint x;\n",
		"pkg/below.go":                   "//go:build linux\n\n// " + holder + "\n// " + spdx + "\n\npackage pkg\n",
		"pkg/other.go":                   "// Copyright Someone Else\n// " + spdx + "\n\npackage pkg\n",
	}
	dir := gitRepo(t, files)
	status, out := run(t, dir, "check")
	assert.Equal(t, 1, status, out)
	assert.Contains(t, out, "under a license of its own: bpf/prog.c: (GPL-2.0-only OR BSD-2-Clause)")
	assert.Contains(t, out, "2 generated ones not checked")
	assert.Contains(t, out, "  gen/late.go\n", "a Code generated line after the package clause does not make a file generated")
	assert.Contains(t, out, "but not as the header")
	assert.Contains(t, out, "  pkg/below.go\n")
	assert.Contains(t, out, "  pkg/other.go\n")
	assert.NotContains(t, out, "mdatagen-src")

	status, out = run(t, dir, "add")
	assert.Equal(t, 1, status, "add still fails for the misplaced headers: %s", out)
	assert.Contains(t, out, "added the header to 1 of 4", "only gen/late.go lacked an SPDX line")
	for _, name := range []string{"gen/generated_status.go", "gen/x_bpfel.go", "tools/mdatagen-src/internal.go", "bpf/prog.c", "pkg/below.go", "pkg/other.go"} {
		assert.Equal(t, files[name], read(t, dir, name), "add changed %s", name)
	}
}
