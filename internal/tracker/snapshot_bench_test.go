// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"fmt"
	"strconv"
	"testing"

	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
)

// BenchmarkSnapshotChange measures the snapshot a change of one
// publication costs on a host of 1,000 to 30,000 processes, one in 50
// named by a context, half of those in one of 20 containers: what each
// publisher's start and exit pay, which must not grow with the host.
func BenchmarkSnapshotChange(b *testing.B) {
	for _, n := range []int{1000, 5000, 30000} {
		b.Run(fmt.Sprintf("procs=%d", n), func(b *testing.B) {
			trk, err := New(nil, DefaultConfig(), zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			t := trk.loop
			var pubs []int
			for pid := 1; pid <= n; pid++ {
				p := t.newProc(pid)
				p.start = uint64(pid)
				if pid%50 == 0 {
					id := &procfs.Identity{PID: pid}
					if pid%100 == 0 {
						id.ContainerID, id.NSpid = "c"+strconv.Itoa(pid%20), []int{pid, pid / 100}
					}
					t.publish(pid, p, &result{identity: id, source: SourceContext, addr: 1})
					pubs = append(pubs, pid)
				}
			}
			t.out.touched = t.out.touched[:0]
			t.out.publish(t.reg.publication, nil)
			t.out.changes = nil
			i := 0
			for b.Loop() {
				pid := pubs[i%len(pubs)]
				i++
				// A new context read: the publication replaced.
				t.publish(pid, t.reg.get(pid), &result{identity: &t.reg.get(pid).identity.Identity,
					source: SourceContext, addr: 1, ctx: otep.Context{PublishedAt: uint64(i)}})
				t.out.publish(t.reg.publication, nil)
				t.out.changes = t.out.changes[:0]
			}
		})
	}
}
