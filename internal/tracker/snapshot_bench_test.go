// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/procfs"
)

// BenchmarkSnapshotRebuild measures the snapshot a change costs on a host
// of 1,000 or 5,000 processes, one in 50 named by a context.
func BenchmarkSnapshotRebuild(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("procs=%d", n), func(b *testing.B) {
			trk, err := New(nil, DefaultConfig(), zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			t := trk.loop
			for pid := 1; pid <= n; pid++ {
				p := t.newProc(pid)
				p.start = uint64(pid)
				if pid%50 == 0 {
					t.publish(pid, p, &result{identity: &procfs.Identity{ContainerID: "c"}, source: SourceContext, addr: 1})
				}
			}
			t.out.touched = t.out.touched[:0]
			for b.Loop() {
				t.out.dirty = true
				t.out.publish(t.reg.publications, t.reg.identities(), nil)
			}
		})
	}
}
