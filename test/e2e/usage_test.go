// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// usage is what a process has spent, as the benchmarks measure it: each
// thread's CPU time (the first field of /proc/<pid>/task/<tid>/schedstat,
// in nanoseconds) and context switches (voluntary and involuntary, of its
// status: each a sleep and a wake-up, or a preemption), and the process's
// CPU ticks (utime+stime of /proc/<pid>/stat: 10 ms each, the exited
// threads' included).
type usage struct {
	threads map[int]threadUsage
	ticks   uint64
}

type threadUsage struct {
	cpu      time.Duration
	switches uint64
}

// readUsage reads pid's usage. A thread that exits while it is read is
// left out.
func readUsage(pid int) (usage, error) {
	ticks, err := cpuTicks(pid)
	if err != nil {
		return usage{}, err
	}
	dir := fmt.Sprintf("/proc/%d/task", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return usage{}, fmt.Errorf("threads of pid %d: %w", pid, err)
	}
	u := usage{threads: make(map[int]threadUsage, len(entries)), ticks: ticks}
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if t, err := readThreadUsage(filepath.Join(dir, e.Name())); err == nil {
			u.threads[tid] = t
		}
	}
	return u, nil
}

// readThreadUsage reads the CPU time and context switches of the thread
// of dir (/proc/<pid>/task/<tid>).
func readThreadUsage(dir string) (threadUsage, error) {
	var t threadUsage
	b, err := os.ReadFile(filepath.Join(dir, "schedstat"))
	if err != nil {
		return t, err
	}
	f := bytes.Fields(b)
	if len(f) < 1 {
		return t, fmt.Errorf("%s/schedstat: %q", dir, b)
	}
	ns, err := strconv.ParseUint(string(f[0]), 10, 64)
	if err != nil {
		return t, fmt.Errorf("%s/schedstat: %w", dir, err)
	}
	t.cpu = time.Duration(ns)
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return t, err
	}
	for line := range bytes.SplitSeq(status, []byte("\n")) {
		for _, key := range [][]byte{[]byte("voluntary_ctxt_switches:"), []byte("nonvoluntary_ctxt_switches:")} {
			if v, ok := bytes.CutPrefix(line, key); ok {
				n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
				if err != nil {
					return t, fmt.Errorf("%s/status: %s: %w", dir, line, err)
				}
				t.switches += n
			}
		}
	}
	return t, nil
}

// since returns the CPU time and the context switches from u0 to u: the
// sums of the threads' when every thread of u0 is still there (exact to
// the nanosecond); else (a thread that exited took its figures with it)
// the CPU ticks' (exact to the tick) and the switches of the threads left,
// and precise false.
func (u usage) since(u0 usage) (cpu time.Duration, switches uint64, precise bool) {
	precise = true
	for tid, t0 := range u0.threads {
		t, ok := u.threads[tid]
		if !ok {
			precise = false
			continue
		}
		cpu += t.cpu - t0.cpu
		switches += t.switches - t0.switches
	}
	for tid, t := range u.threads {
		if _, ok := u0.threads[tid]; !ok {
			cpu += t.cpu
			switches += t.switches
		}
	}
	if !precise {
		cpu = time.Duration(u.ticks-u0.ticks) * tick
	}
	return cpu, switches, precise
}
