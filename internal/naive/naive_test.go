// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package naive_test

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/naive"
	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// A scan reads the context of each publisher of its set, and nothing of
// a process without one or outside the set; every scan reads it all again.
func TestScan(t *testing.T) {
	pub := pubtest.Start(t, pubtest.C, pubtest.Options{})
	pub.Publish(otep.EncodeStrings(map[string]string{"service.name": "naive"}))
	idle := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	outside := pubtest.Start(t, pubtest.C, pubtest.Options{})
	outside.Publish(otep.EncodeStrings(map[string]string{"service.name": "not asked"}))

	n, err := naive.New(map[int]bool{pub.Pid: true, idle.Pid: true})
	require.NoError(t, err)
	for range 2 {
		before := n.Stats()
		got, err := n.Scan()
		require.NoError(t, err)
		assert.Equal(t, naive.Result{Contexts: 1}, got)
		after := n.Stats()
		assert.Equal(t, uint64(2), after.MapsFiles-before.MapsFiles, "both maps files, whole")
		assert.NotZero(t, after.MemoryReads-before.MemoryReads, "the publisher's header and payload")
	}
}

// Serve answers its line protocol: the set, scans, and errors for what it
// does not understand.
func TestServe(t *testing.T) {
	pub := pubtest.Start(t, pubtest.C, pubtest.Options{})
	pub.Publish(otep.EncodeStrings(map[string]string{"service.name": "served"}))

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- naive.Serve(inR, outW); _ = outW.Close() }()
	out := bufio.NewReader(outR)
	ask := func(line string) string {
		t.Helper()
		_, err := fmt.Fprintln(inW, line)
		require.NoError(t, err)
		reply, err := out.ReadString('\n')
		require.NoError(t, err)
		return strings.TrimSpace(reply)
	}
	assert.Equal(t, "ok 0 0", ask("scan"), "no set yet")
	assert.Equal(t, "ok 1", ask(fmt.Sprintf("pids %d", pub.Pid)))
	assert.Equal(t, "ok 1 0", ask("scan"))
	assert.True(t, strings.HasPrefix(ask("pids 12x"), "err bad pid"))
	assert.True(t, strings.HasPrefix(ask("rescan"), "err unknown command"))
	require.NoError(t, inW.Close())
	require.NoError(t, <-done)
}
