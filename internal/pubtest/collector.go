// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pubtest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Output collects a process's output; it may be read while the process
// writes.
type Output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// Collector is a collector process StartCollector started.
type Collector struct {
	Cmd    *exec.Cmd
	Output *Output
	// Done is closed once the process exited; Err is then what Wait said.
	Done chan struct{}
	Err  error
}

// StartCollector runs args (a collector binary and its flags, possibly
// after a wrapper such as setpriv or unshare) with env added to this
// process's, waits until it says it is ready, and kills it at the end of
// the test, logging its output if the test failed.
func StartCollector(t testing.TB, args []string, env ...string) *Collector {
	t.Helper()
	c := &Collector{Cmd: exec.Command(args[0], args[1:]...), Output: &Output{}, Done: make(chan struct{})}
	c.Cmd.Stdout, c.Cmd.Stderr = c.Output, c.Output
	c.Cmd.Env = append(os.Environ(), env...)
	// A wrapper killed before its child would otherwise leave Wait waiting
	// for the child to close the output pipe.
	c.Cmd.WaitDelay = 5 * time.Second
	if err := c.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.Err = c.Cmd.Wait(); close(c.Done) }()
	t.Cleanup(func() {
		_ = c.Cmd.Process.Kill()
		<-c.Done
		if t.Failed() {
			t.Logf("collector output:\n%s", c.Output.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(c.Output.String(), "Everything is ready") {
		select {
		case <-c.Done:
			t.Fatalf("collector exited: %v\n%s", c.Err, c.Output.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("collector not ready after 30s:\n%s", c.Output.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c
}

// Stop sends SIGTERM and returns how long the collector took to exit.
func (c *Collector) Stop(t testing.TB) time.Duration {
	t.Helper()
	start := time.Now()
	if err := c.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done:
	case <-time.After(30 * time.Second):
		t.Fatal("collector did not exit 30s after SIGTERM")
	}
	switch {
	case c.termBeforeHandled():
		t.Logf("collector exit: %v, before it handled SIGTERM (it logs that it is ready, then installs its handler)", c.Err)
	case c.Err != nil:
		t.Errorf("collector exit: %v", c.Err)
	}
	return time.Since(start)
}

// termBeforeHandled reports whether the collector died of SIGTERM without
// having received it: otelcol's Collector.Run logs "Everything is ready"
// and only then installs its SIGTERM handler, a moment an emulated guest
// makes long enough for a test's Stop to fall into. It stopped, as asked.
func (c *Collector) termBeforeHandled() bool {
	var exit *exec.ExitError
	if !errors.As(c.Err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM &&
		!strings.Contains(c.Output.String(), "Received signal from OS")
}
