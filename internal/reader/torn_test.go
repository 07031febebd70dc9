// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package reader

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// checkSpinPayload verifies the self-check of a spin payload: seq, filler
// and check must all describe the same update n.
func checkSpinPayload(res pcommon.Map) error {
	raw := res.AsRaw()
	seq, _ := raw["seq"].(string)
	check, _ := raw["check"].(string)
	filler, _ := raw["filler"].(string)
	n, err := strconv.Atoi(seq)
	if err != nil || res.Len() != 3 || check != seq {
		return errors.New("torn: " + strconv.Quote(seq) + "/" + strconv.Quote(check))
	}
	if want := strings.Repeat(string(rune('a'+n%26)), n%300); filler != want {
		return errors.New("torn filler for seq " + seq)
	}
	return nil
}

func TestTornReads(t *testing.T) {
	const reads = 100_000
	for _, v := range variants() {
		t.Run(v.String(), func(t *testing.T) {
			r := newTestReader(t)
			p := pubtest.Start(t, v.kind, v.opts)
			addr := p.Publish(serviceContext(t, "spin"))
			p.Spin(time.Millisecond) // from here on every payload is self-checking

			var ok, torn, total int
			seen := map[string]bool{}
			for total < reads {
				before, err := r.ReadContext(p.Pid, addr)
				require.NoError(t, err)
				var spinning sync.WaitGroup
				done := make(chan struct{})
				spinning.Go(func() {
					t.Logf("spin: %d updates", p.Spin(time.Second))
					close(done)
				})
				// Count only reads made while the publisher is updating.
				for started := false; !started; {
					_, changed, err := r.ReadIfChanged(p.Pid, addr, before.PublishedAt)
					started = changed || errors.Is(err, otep.ErrTorn)
				}
			reading:
				for total < reads {
					select {
					case <-done:
						break reading
					default:
					}
					total++
					ctx, err := r.ReadContext(p.Pid, addr)
					switch {
					case err == nil:
						if err := checkSpinPayload(ctx.Resource); err != nil {
							t.Fatalf("read %d: %v: %v", total, err, ctx.Resource.AsRaw())
						}
						ok++
						seen[ctx.Resource.AsRaw()["seq"].(string)] = true
					case errors.Is(err, otep.ErrTorn):
						torn++
					default:
						t.Fatalf("read %d: %v", total, err)
					}
				}
				spinning.Wait()
			}
			t.Logf("%d reads during updates: %d consistent (%d distinct updates), %d torn (retry later), 0 inconsistent",
				total, ok, len(seen), torn)
			// Successful reads cluster where the publisher is descheduled; a handful
			// of distinct updates shows the reads did overlap the update loop.
			require.GreaterOrEqual(t, len(seen), 10, "too few distinct updates read to mean anything")
			require.GreaterOrEqual(t, ok, 1000, "too few consistent reads to mean anything")
		})
	}
}
