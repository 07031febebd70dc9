// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pidtable

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestZeroTable(t *testing.T) {
	var tb Table[string]
	if v, ok := tb.Get(1); ok || v != "" {
		t.Fatalf("Get(1) on the zero table = %q, %v", v, ok)
	}
	if tb.Len() != 0 {
		t.Fatalf("Len = %d", tb.Len())
	}
	tb.Reset()
	tb.Add(7, "seven")
	if v, ok := tb.Get(7); !ok || v != "seven" {
		t.Fatalf("Get(7) = %q, %v", v, ok)
	}
}

// TestAgainstMap adds pids, dense, sparse, negative and colliding (equal
// modulo the table's size), and checks every lookup against a map, through
// growth and resets.
func TestAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tb Table[int32]
	for round := range 3 {
		want := map[int]int32{}
		add := func(pid int) {
			if _, dup := want[pid]; dup || pid == 0 {
				return
			}
			want[pid] = int32(len(want))
			tb.Add(pid, want[pid])
		}
		for pid := 1; pid <= 300; pid++ {
			add(pid)
		}
		for range 2000 {
			add(rng.IntN(1 << 22))
		}
		for i := range 64 {
			add(i << 20) // same low bits
		}
		add(-1)
		add(1<<62 + round)
		if tb.Len() != len(want) {
			t.Fatalf("round %d: Len = %d, want %d", round, tb.Len(), len(want))
		}
		for pid, v := range want {
			if got, ok := tb.Get(pid); !ok || got != v {
				t.Fatalf("round %d: Get(%d) = %d, %v; want %d", round, pid, got, ok, v)
			}
		}
		for range 2000 {
			pid := rng.IntN(1<<23) - 1<<22
			if _, in := want[pid]; in {
				continue
			}
			if got, ok := tb.Get(pid); ok {
				t.Fatalf("round %d: Get(%d) = %d of a pid never added", round, pid, got)
			}
		}
		if _, ok := tb.Get(0); ok {
			t.Fatalf("round %d: pid 0 found", round)
		}
		if 2*tb.Len() > len(tb.slots) {
			t.Fatalf("round %d: %d pids in %d slots: more than half full", round, tb.Len(), len(tb.slots))
		}
		tb.Reset()
		if _, ok := tb.Get(1); ok || tb.Len() != 0 {
			t.Fatalf("round %d: a pid survived Reset", round)
		}
	}
}

func TestNewHasRoom(t *testing.T) {
	for _, n := range []int{0, 1, 4, 5, 100, 4096} {
		tb := New[*int](n)
		size := len(tb.slots)
		for pid := 1; pid <= n; pid++ {
			tb.Add(pid, &pid)
		}
		if len(tb.slots) != size {
			t.Errorf("New(%d) grew from %d to %d slots", n, size, len(tb.slots))
		}
		if size > max(minSlots, 4*n) {
			t.Errorf("New(%d) has %d slots", n, size)
		}
	}
}

func BenchmarkGet(b *testing.B) {
	for _, n := range []int{100, 4096} {
		tb := New[*int](n)
		pids := make([]int, n)
		for i := range pids {
			pids[i] = 1000 + 7*i
			tb.Add(pids[i], &pids[i])
		}
		b.Run("hit/"+strconv.Itoa(n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, ok := tb.Get(pids[i%n]); !ok {
					b.Fatal("missing")
				}
			}
		})
		b.Run("miss/"+strconv.Itoa(n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, ok := tb.Get(pids[i%n] + 1); ok {
					b.Fatal("found")
				}
			}
		})
	}
}

// TestSharedLowBits: pids that share their low bits are told apart, and
// gone after a reset.
func TestSharedLowBits(t *testing.T) {
	var tb Table[int32]
	for round := range 2 {
		for i := range 100 {
			pid := 1000 + 4096*i
			if _, ok := tb.Get(pid); ok {
				t.Fatalf("round %d: %d found before it was added", round, pid)
			}
			tb.Add(pid, int32(i))
		}
		for i := range 100 {
			if v, ok := tb.Get(1000 + 4096*i); !ok || v != int32(i) {
				t.Fatalf("round %d: Get(%d) = %d, %v; want %d", round, 1000+4096*i, v, ok, i)
			}
		}
		tb.Reset()
		if _, ok := tb.Get(1000); ok {
			t.Fatalf("round %d: found after Reset", round)
		}
	}
}
