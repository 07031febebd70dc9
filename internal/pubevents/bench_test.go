// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package pubevents

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchMechanisms runs f detached (nothing loaded) and with each mechanism
// this kernel accepts attached.
func benchMechanisms(b *testing.B, f func(b *testing.B, w *Watcher)) {
	b.Run("detached", func(b *testing.B) { f(b, nil) })
	for _, m := range mechanisms {
		b.Run(m.String(), func(b *testing.B) { f(b, mustLoad(b, Options{Mechanism: m})) })
	}
}

// noMapping is page aligned whatever the page size and below
// vm.mmap_min_addr: nothing is ever mapped there, so munmap of it takes
// the whole munmap path, finds no mapping and succeeds, and the program
// runs its tracked-map lookup.
const noMapping = 0

// BenchmarkMunmapUntracked is the cost of one munmap of a process the
// watcher does not track.
func BenchmarkMunmapUntracked(b *testing.B) {
	benchMechanisms(b, func(b *testing.B, _ *Watcher) {
		for b.Loop() {
			if err := munmap(noMapping, page); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMunmapTrackedElsewhere: the process is tracked, the unmapped
// range is not its context (lookup hit, no overlap).
func BenchmarkMunmapTrackedElsewhere(b *testing.B) {
	benchMechanisms(b, func(b *testing.B, w *Watcher) {
		if w != nil {
			if err := w.Track(os.Getpid(), 0x7f0000000000, page); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			if err := munmap(noMapping, page); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkOtherSyscall is what any unrelated syscall pays: nothing with
// fexit, the traced syscall path with the tracepoint.
func BenchmarkOtherSyscall(b *testing.B) {
	benchMechanisms(b, func(b *testing.B, _ *Watcher) {
		for b.Loop() {
			unix.Getppid()
		}
	})
}

// BenchmarkEvent is one prctl naming OTEL_CTX and reading its event.
func BenchmarkEvent(b *testing.B) {
	for _, m := range mechanisms {
		b.Run(m.String(), func(b *testing.B) {
			w := mustLoad(b, Options{Mechanism: m})
			self := os.Getpid()
			ctx := cstr("OTEL_CTX")
			w.SetDeadline(time.Now().Add(eventTimeout))
			b.ReportAllocs()
			var ev Event
			for b.Loop() {
				prctlName(unix.PR_SET_VMA, unix.PR_SET_VMA_ANON_NAME, 0x1000, 0x2000, ctx)
				for {
					if err := w.Read(&ev); err != nil {
						b.Fatal(err)
					}
					if ev.PID == self {
						break
					}
				}
			}
		})
	}
}
