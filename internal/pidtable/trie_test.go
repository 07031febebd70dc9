// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pidtable

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTrieAgainstMap adds, replaces and removes pids (dense, sparse, at
// the bounds) and checks every version against a map, the versions made
// before included: a change never alters a trie already made.
func TestTrieAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type version struct {
		trie Trie[int]
		want map[int]int
	}
	var versions []version
	var tr Trie[int]
	want := map[int]int{}
	pick := func() int {
		switch rng.IntN(4) {
		case 0:
			return 1 + rng.IntN(300) // dense: many in one leaf
		case 1:
			return []int{1, 63, 64, 4095, 4096, 1 << 22, MaxTriePID}[rng.IntN(7)]
		default:
			return 1 + rng.IntN(MaxTriePID)
		}
	}
	for step := range 20000 {
		pid := pick()
		if rng.IntN(3) == 0 {
			tr = tr.Without(pid)
			delete(want, pid)
		} else {
			tr = tr.With(pid, step)
			want[pid] = step
		}
		if step%500 == 0 {
			versions = append(versions, version{tr, maps.Clone(want)})
		}
	}
	versions = append(versions, version{tr, want})
	for vi, v := range versions {
		if v.trie.Len() != len(v.want) {
			t.Fatalf("version %d: Len %d, want %d", vi, v.trie.Len(), len(v.want))
		}
		for pid, val := range v.want {
			if got, ok := v.trie.Get(pid); !ok || got != val {
				t.Fatalf("version %d: Get(%d) = %d, %v; want %d", vi, pid, got, ok, val)
			}
		}
		var pids []int
		for pid, val := range v.trie.All() {
			if v.want[pid] != val {
				t.Fatalf("version %d: All gave %d=%d, want %d", vi, pid, val, v.want[pid])
			}
			pids = append(pids, pid)
		}
		if !slices.IsSorted(pids) || len(pids) != len(v.want) {
			t.Fatalf("version %d: All gave %d pids (sorted: %v), want %d", vi, len(pids), slices.IsSorted(pids), len(v.want))
		}
		for range 1000 {
			pid := pick()
			if _, in := v.want[pid]; !in {
				if _, ok := v.trie.Get(pid); ok {
					t.Fatalf("version %d: Get(%d) found a pid not added", vi, pid)
				}
			}
		}
	}
}

func TestTrieBounds(t *testing.T) {
	var tr Trie[string]
	for _, pid := range []int{0, -1, MaxTriePID + 1} {
		if tr.With(pid, "x").Len() != 0 {
			t.Fatalf("With(%d) added a pid out of range", pid)
		}
		if _, ok := tr.With(pid, "x").Get(pid); ok {
			t.Fatalf("Get(%d) found a pid out of range", pid)
		}
	}
	tr = tr.With(MaxTriePID, "max")
	if v, ok := tr.Get(MaxTriePID); !ok || v != "max" {
		t.Fatalf("Get(MaxTriePID) = %q, %v", v, ok)
	}
	if tr.Without(7).Len() != 1 || tr.Without(MaxTriePID).Len() != 0 {
		t.Fatal("Without miscounted")
	}
	if tr.Without(MaxTriePID).root != nil {
		t.Fatal("an emptied trie keeps nodes")
	}
	for range tr.All() {
		break // stopping early is allowed
	}
}

func BenchmarkTrieGet(b *testing.B) {
	var tr Trie[*int]
	pids := make([]int, 600)
	for i := range pids {
		pids[i] = 1000 + i*6151 // spread over the pid space
		tr = tr.With(pids[i], new(int))
	}
	i := 0
	for b.Loop() {
		if _, ok := tr.Get(pids[i%len(pids)]); !ok {
			b.Fatal("missed")
		}
		i++
	}
}
