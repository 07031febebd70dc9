// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package pidtable

import "testing"

func TestNibbles(t *testing.T) {
	var tab Nibbles
	set := func(pid int, v uint8) {
		w := NewNibbleWriter(tab)
		w.Set(pid, v)
		tab = w.Table()
	}
	want := func(tab Nibbles, pid int, v uint8) {
		t.Helper()
		if got := tab.Get(pid); got != v {
			t.Fatalf("Get(%d) = %d, want %d", pid, got, v)
		}
	}
	for _, pid := range []int{1, 15, 16, 4095, 4096, 1<<22 - 1} {
		want(tab, pid, 0)
		set(pid, 4)
		want(tab, pid, 4)
	}
	want(tab, 2, 0) // neighbours untouched
	want(tab, 17, 0)
	set(15, 3)
	want(tab, 15, 3)
	want(tab, 16, 4)
	set(15, 0)
	want(tab, 15, 0)
	for _, pid := range []int{0, -1, 1 << 22, 1 << 40} {
		set(pid, 1)
		want(tab, pid, 0)
	}
}

// A table, once read, never changes: the next one copies what it changes.
func TestNibblesNeverChangedInPlace(t *testing.T) {
	w := NibbleWriter{}
	w.Set(10, 3)
	w.Set(5000, 9)
	first := w.Table()

	w = NewNibbleWriter(first)
	w.Set(10, 0)
	w.Set(11, 8)
	w.Set(1<<20, 5)
	second := w.Table()

	for _, c := range []struct {
		tab  Nibbles
		pid  int
		want uint8
	}{{first, 10, 3}, {first, 11, 0}, {first, 1 << 20, 0}, {second, 10, 0}, {second, 11, 8}, {second, 1 << 20, 5}} {
		if got := c.tab.Get(c.pid); got != c.want {
			t.Errorf("Get(%d) = %d, want %d", c.pid, got, c.want)
		}
	}
	if first.chunks[1] != second.chunks[1] {
		t.Error("a chunk without changes is shared")
	}
}
