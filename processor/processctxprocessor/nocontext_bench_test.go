// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// startIdle starts n real processes that publish nothing, stopped when the
// benchmark ends.
func startIdle(b *testing.B, n int) []int {
	pids := make([]int, n)
	for i := range pids {
		cmd := exec.Command("sleep", "3600")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		pids[i] = cmd.Process.Pid
	}
	return pids
}

// BenchmarkLogsNoContextPids: batches of 10,000 records under 100
// resources naming 100 real processes without a context, the same pids
// every batch, through the extension's default settings (recheck_interval
// 5 s, real clock). The first batch (untimed) reads them; after it, a
// batch waits only when a pid's re-read falls due, once per
// recheck_interval. ms-held/batch is the longest a batch was held.
func BenchmarkLogsNoContextPids(b *testing.B) {
	pids := startIdle(b, benchPids)
	cfg := testConfig()
	cfg.LookupTimeout = defaultLookupTimeout
	h := newHarness(b, cfg)
	// Nothing is enriched: the batch is not changed, and is reused.
	ld := warmUp(b, h, benchLogsOf(pids))
	ctx := context.Background()
	b.ReportAllocs()
	var worst time.Duration
	for b.Loop() {
		began := time.Now()
		if _, err := h.direct.processLogs(ctx, ld); err != nil {
			b.Fatal(err)
		}
		worst = max(worst, time.Since(began))
	}
	if got := ld.ResourceLogs().At(0).Resource().Attributes().Len(); got != 2 {
		b.Fatalf("a resource has %d attributes: enriched, or changed", got)
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "ms-held/batch")
}
