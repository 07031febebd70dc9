// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

func decode(t *testing.T, out []byte) map[int]entry {
	t.Helper()
	found := map[int]entry{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var e entry
		require.NoError(t, dec.Decode(&e))
		found[e.PID] = e
	}
	return found
}

func TestListsPublishers(t *testing.T) {
	goPub := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	goPub.Publish(otep.EncodeStrings(map[string]string{"service.name": "dump-go"}))
	cPub := pubtest.Start(t, pubtest.C, pubtest.Options{Separate: true})
	cPub.Publish(otep.EncodeStrings(map[string]string{"service.name": "dump-c"}))

	var out, errOut bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-json"}, &out, &errOut))
	found := decode(t, out.Bytes())
	require.Contains(t, found, goPub.Pid)
	require.Contains(t, found, cPub.Pid)
	assert.Equal(t, "dump-go", found[goPub.Pid].Resource["service.name"])
	assert.Equal(t, "dump-c", found[cPub.Pid].Resource["service.name"])
	assert.Equal(t, "go-publisher", found[goPub.Pid].Executable)
	assert.NotEmpty(t, found[cPub.Pid].CreationTime)

	// The table, for people.
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"-pid", strconv.Itoa(goPub.Pid)}, &out, &errOut))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2, "%s", out.String())
	assert.Regexp(t, `^PID\s+EXECUTABLE\s+SERVICE\s+SOURCE\s+CONTAINER`, lines[0])
	assert.Regexp(t, `^`+strconv.Itoa(goPub.Pid)+`\s+go-publisher\s+dump-go\s+context\s+-`, lines[1])
}

// syncWriter lets the test read what run writes meanwhile.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *syncWriter) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(w.buf.Bytes()))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func TestWatchPrintsChanges(t *testing.T) {
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	p.Publish(otep.EncodeStrings(map[string]string{"service.name": "watched"}))
	ctx, cancel := context.WithCancel(context.Background())
	var out syncWriter
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-json", "-watch", "-pid", strconv.Itoa(p.Pid)}, &out, io.Discard) }()
	require.Eventually(t, func() bool { return len(out.lines()) == 1 }, 10*time.Second, 10*time.Millisecond)

	p.Update(otep.EncodeStrings(map[string]string{"service.name": "watched-2"}))
	require.Eventually(t, func() bool { return len(out.lines()) == 2 }, 10*time.Second, 10*time.Millisecond)
	var e entry
	require.NoError(t, json.Unmarshal([]byte(out.lines()[1]), &e))
	assert.Equal(t, "updated", e.Event)
	assert.Equal(t, "watched-2", e.Resource["service.name"])
	assert.False(t, e.Time.IsZero(), "a change says when it was seen")

	p.Exit()
	require.Eventually(t, func() bool { return len(out.lines()) == 3 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, json.Unmarshal([]byte(out.lines()[2]), &e))
	assert.Equal(t, "ended", e.Event)
	cancel()
	require.NoError(t, <-done)
}

// In a table, every change line starts with its time, and its columns
// line up with the header above it.
func TestWatchTableLinesUp(t *testing.T) {
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	p.Publish(otep.EncodeStrings(map[string]string{"service.name": "watched"}))
	ctx, cancel := context.WithCancel(context.Background())
	var out syncWriter
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-watch", "-pid", strconv.Itoa(p.Pid)}, &out, io.Discard) }()
	require.Eventually(t, func() bool { return len(out.lines()) == 2 }, 10*time.Second, 10*time.Millisecond)

	p.Update(otep.EncodeStrings(map[string]string{"service.name": "a-service-name-wider-than-its-column", "k": "v"}))
	require.Eventually(t, func() bool { return len(out.lines()) == 4 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	header, row := out.lines()[2], out.lines()[3]
	assert.Regexp(t, `^\d\d:\d\d:\d\d\.\d{3}  updated\s+`+strconv.Itoa(p.Pid)+`\s+go-publisher\s+a-service-name-wider-than-its-column\s+context\s+-\s+k=v$`, row)
	for column, value := range map[string]string{"EVENT": "updated", "PID": strconv.Itoa(p.Pid), "EXECUTABLE": "go-publisher",
		"SERVICE": "a-service-name-wider-than-its-column", "RESOURCE ATTRIBUTES": "k=v"} {
		assert.Equal(t, strings.Index(header, column), strings.Index(row, value), "%s\n%s", header, row)
	}
}

// -pid of a process that publishes nothing says so of that process, not
// of the host.
func TestPidWithoutContext(t *testing.T) {
	var out, errOut bytes.Buffer
	self := strconv.Itoa(os.Getpid())
	require.NoError(t, run(context.Background(), []string{"-pid", self}, &out, &errOut))
	assert.Empty(t, out.String())
	assert.Equal(t, "ctxdump: pid "+self+" publishes no context and names no service in its environment\n", errOut.String())

	out.Reset()
	errOut.Reset()
	require.NoError(t, run(context.Background(), []string{"-json", "-pid", self}, &out, &errOut))
	assert.Empty(t, out.String())
	assert.Contains(t, errOut.String(), "publishes no context and names no service in its environment")
}

// -pid of no process fails, saying so, and exits 1.
func TestNoSuchPid(t *testing.T) {
	raw, err := os.ReadFile("/proc/sys/kernel/pid_max")
	require.NoError(t, err)
	pidMax, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	missing := strconv.Itoa(pidMax + 1) // never a pid
	for _, args := range [][]string{{"-pid", missing}, {"-json", "-pid", missing}} {
		code, stdout, stderr := runMain(t, 0, args...)
		assert.Equal(t, 1, code)
		assert.Empty(t, stdout)
		assert.Equal(t, "ctxdump: pid "+missing+": no such process\n", stderr)
	}
}

func TestWatchTable(t *testing.T) {
	const header = "TIME          EVENT      PID      EXECUTABLE       SERVICE          SOURCE       CONTAINER     RESOURCE ATTRIBUTES"
	tests := []struct {
		name string
		rows [][]string
		want []string
	}{
		{
			name: "header once while values fit",
			rows: [][]string{
				{"15:04:05.000", "published", "42", "java", "api", "context", "-", "a=b"},
				{"15:04:06.000", "ended", "4194303", "executable-name", "ünïcödé", "environment", "0123456789ab", ""},
			},
			want: []string{
				header,
				"15:04:05.000  published  42       java             api              context      -             a=b",
				"15:04:06.000  ended      4194303  executable-name  ünïcödé          environment  0123456789ab",
			},
		},
		{
			name: "a wider value widens its column under a new header",
			rows: [][]string{
				{"15:04:05.000", "published", "42", "java", "api", "context", "-", "a=b"},
				{"15:04:06.000", "updated", "42", "java", "a-much-longer-service", "context", "-", "a=c"},
				{"15:04:07.000", "ended", "42", "java", "api", "context", "-", ""},
			},
			want: []string{
				header,
				"15:04:05.000  published  42       java             api              context      -             a=b",
				"TIME          EVENT      PID      EXECUTABLE       SERVICE                SOURCE       CONTAINER     RESOURCE ATTRIBUTES",
				"15:04:06.000  updated    42       java             a-much-longer-service  context      -             a=c",
				"15:04:07.000  ended      42       java             api                    context      -",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			table := watchTable{out: &out}
			for _, r := range tt.rows {
				require.NoError(t, table.row(r))
			}
			assert.Equal(t, strings.Join(tt.want, "\n")+"\n", out.String())
		})
	}
}

// A process that publishes no context but sets the SDK variables is
// listed with its source; nothing else of its environment is printed.
func TestListsEnvironmentIdentities(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.Env = []string{"OTEL_SERVICE_NAME=dump-env", "OTEL_RESOURCE_ATTRIBUTES=team=a%20b", "API_TOKEN=s3cr3t-token"}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	var out, errOut bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-json", "-pid", strconv.Itoa(cmd.Process.Pid)}, &out, &errOut))
	found := decode(t, out.Bytes())
	require.Contains(t, found, cmd.Process.Pid, "%s%s", out.String(), errOut.String())
	e := found[cmd.Process.Pid]
	assert.Equal(t, "environment", e.Source)
	assert.Equal(t, map[string]any{"service.name": "dump-env", "team": "a b"}, e.Resource)

	out.Reset()
	require.NoError(t, run(context.Background(), []string{"-pid", strconv.Itoa(cmd.Process.Pid)}, &out, &errOut))
	assert.Regexp(t, strconv.Itoa(cmd.Process.Pid)+`\s+sleep\s+dump-env\s+environment\s+-\s+team=a b`, out.String())
	assert.NotContains(t, out.String()+errOut.String(), "s3cr3t")
}
