// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package pubevents

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

const (
	helperEnv = "PUBEVENTS_TEST_HELPER"
	nobody    = 65534
)

// TestLoadAsHelper is the body of a helper process started by
// TestPermissionDenied under another uid: it loads and prints the error
// kind it met.
func TestLoadAsHelper(t *testing.T) {
	if os.Getenv(helperEnv) != "load" {
		t.Skip("only runs as a helper process")
	}
	for _, m := range mechanisms {
		w, err := Load(Options{Mechanism: m})
		if err == nil {
			_ = w.Close()
		}
		fmt.Printf("load %s=%s\n", m, errorKind(err))
		if err != nil {
			t.Log(err)
		}
	}
}

func errorKind(err error) string {
	switch {
	case err == nil:
		return "none"
	case errors.Is(err, ErrPermission):
		return "permission"
	case errors.Is(err, ErrUnsupported):
		return "unsupported"
	}
	return "other:" + err.Error()
}

func TestPermissionDenied(t *testing.T) {
	requireHost(t)
	// The test binary must be executable by the other uid.
	self := pubtest.ExecutableCopy(t, os.Args[0], "pubevents.test")
	cmd := exec.Command(self, "-test.run=^TestLoadAsHelper$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"=load")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	for _, m := range mechanisms {
		if strings.Contains(string(out), "load "+m.String()+"=permission\n") {
			continue
		}
		// A kernel without what the mechanism needs (kprobes) says so to
		// anyone: capabilities would not help.
		if w, rootErr := Load(Options{Mechanism: m}); rootErr == nil {
			_ = w.Close()
		} else if errors.Is(rootErr, ErrUnsupported) && strings.Contains(string(out), "load "+m.String()+"=unsupported\n") {
			continue
		}
		t.Errorf("Load of %s as uid %d without capabilities, want ErrPermission (or ErrUnsupported where root's Load says so):\n%s", m, nobody, out)
	}
}
