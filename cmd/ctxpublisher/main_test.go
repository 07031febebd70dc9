// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const mainArgsEnv = "CTXPUBLISHER_TEST_ARGS"

func TestMainHelper(t *testing.T) {
	args, ok := os.LookupEnv(mainArgsEnv)
	if !ok {
		t.Skip("only runs as a helper process")
	}
	os.Args = append([]string{"ctxpublisher"}, strings.Fields(args)...)
	main()
}

// -h says what ctxpublisher is for before its flags, and exits 0.
func TestHelp(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainHelper$")
	cmd.Env = append(os.Environ(), mainArgsEnv+"=-h")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.True(t, strings.HasPrefix(string(out), "ctxpublisher publishes an OpenTelemetry process context (OTEP 4719)"), "%s", out)
	assert.Contains(t, string(out), "Usage: ctxpublisher [-service-name NAME]")
	assert.Contains(t, string(out), "-service-name string")
}
