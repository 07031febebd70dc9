// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

// Package fuzzseed keeps the committed seed corpus of Go fuzz targets in
// step with the seeds a test declares. Each target's seeds are files in
// testdata/fuzz/<FuzzName>/ of its package (Go's corpus format), which
// go test runs as regular tests and go test -fuzz starts from; the files
// are written from Go code so that they hold real encoder output rather
// than hand-made bytes, and a test fails while they and the code differ.
//
// Rewrite a package's corpus with
//
//	WRITE_FUZZ_CORPUS=1 go test -run TestSeedCorpus ./<package>
package fuzzseed

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// WriteEnv names the environment variable that makes Check rewrite the
// corpus instead of only comparing it.
const WriteEnv = "WRITE_FUZZ_CORPUS"

// Prefix starts the name of every seed file: .gitignore keeps only these
// in internal/*/testdata/fuzz, not the failing inputs the fuzzer writes
// there under hash names.
const Prefix = "seed-"

// Check compares testdata/fuzz/<target> (relative to the package under
// test) with seeds, name → the fuzz function's arguments in order, and
// fails for every file (Prefix + name) that is missing or differs. With
// WriteEnv set it first rewrites the seeds' files. Files of other names are
// left alone.
func Check(t testing.TB, target string, seeds map[string][]any) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	want := make(map[string][]byte, len(seeds))
	for name, args := range seeds {
		b, err := Encode(args...)
		if err != nil {
			t.Fatalf("seed %s of %s: %v", name, target, err)
		}
		want[Prefix+name] = b
	}
	if os.Getenv(WriteEnv) != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		got, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case err != nil:
			t.Errorf("seed %s of %s: %v (%s=1 writes it)", name, target, err, WriteEnv)
		case !bytes.Equal(got, want[name]):
			t.Errorf("seed %s of %s differs from the code (%s=1 rewrites it)", name, target, WriteEnv)
		}
	}
}

// Encode encodes the arguments of one fuzz input as a corpus file: "go
// test fuzz v1", then one Go literal per line, as go test reads them.
func Encode(args ...any) ([]byte, error) {
	b := []byte("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			b = fmt.Appendf(b, "[]byte(%q)\n", v)
		case string:
			b = fmt.Appendf(b, "string(%q)\n", v)
		case bool:
			b = fmt.Appendf(b, "bool(%v)\n", v)
		case byte:
			b = fmt.Appendf(b, "byte(%d)\n", v)
		case uint16:
			b = fmt.Appendf(b, "uint16(%d)\n", v)
		case uint32:
			b = fmt.Appendf(b, "uint32(%d)\n", v)
		case uint64:
			b = fmt.Appendf(b, "uint64(%d)\n", v)
		case int:
			b = fmt.Appendf(b, "int(%d)\n", v)
		case int64:
			b = fmt.Appendf(b, "int64(%d)\n", v)
		default:
			return nil, fmt.Errorf("fuzz arguments of type %T are not supported", a)
		}
	}
	return b, nil
}
