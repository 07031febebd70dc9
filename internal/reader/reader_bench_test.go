// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package reader

import (
	"testing"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

func benchPublisher(b *testing.B) (*testReader, *pubtest.Proc, uint64) {
	r := newTestReader(b)
	p := pubtest.Start(b, pubtest.Go, pubtest.Options{Separate: true})
	resource, attributes := allKinds()
	addr := p.Publish(encode(b, resource, attributes))
	return r, p, addr
}

// The steady state of a scan: a known publisher whose context did not change.
func BenchmarkReadIfChangedUnchanged(b *testing.B) {
	r, p, addr := benchPublisher(b)
	ctx, err := r.ReadContext(p.Pid, addr)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, changed, err := r.ReadIfChanged(p.Pid, addr, ctx.PublishedAt); err != nil || changed {
			b.Fatal(changed, err)
		}
	}
}

// A full seqlock read and decode of a realistic context.
func BenchmarkReadContext(b *testing.B) {
	r, p, addr := benchPublisher(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadContext(p.Pid, addr); err != nil {
			b.Fatal(err)
		}
	}
}

// Finding the mapping in a real (small) maps file.
func BenchmarkFindMapping(b *testing.B) {
	r, p, _ := benchPublisher(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.FindMapping(p.Pid); err != nil {
			b.Fatal(err)
		}
	}
}
