// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package pubevents

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// page is this kernel's page size: 4 KiB, 16 KiB or 64 KiB (arm64).
var page = uint64(os.Getpagesize())

// mappingAt returns the length of pid's mapping starting at addr, from its
// maps file (an anonymous context mapping has no name on kernels that
// cannot name mappings, so otep.FindMapping would not find it).
func mappingAt(t testing.TB, pid int, addr uint64) uint64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		bounds, _, _ := strings.Cut(sc.Text(), " ")
		lo, hi, _ := strings.Cut(bounds, "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && start == addr {
			return end - start
		}
	}
	t.Fatalf("pid %d has no mapping at %#x", pid, addr)
	return 0
}

func munmap(addr, length uint64) error {
	_, _, errno := unix.Syscall(unix.SYS_MUNMAP, uintptr(addr), uintptr(length), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func TestPublishUpdateUnpublish(t *testing.T) {
	forEachMechanism(t, func(t *testing.T, opts Options) {
		w := mustLoad(t, opts)
		for _, kind := range pubtest.Kinds {
			for _, anon := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/anonymous=%v", kind, anon), func(t *testing.T) {
					p := pubtest.Start(t, kind, pubtest.Options{Anonymous: anon})
					pid := p.HostPid()
					addr := p.Publish(payload("checkout"))
					if !anon {
						expect(t, w, Event{Kind: Memfd, PID: pid}, pid)
					}
					length := mappingAt(t, pid, addr)
					expect(t, w, Event{Kind: Publish, PID: pid, Addr: addr, Len: length}, pid)

					if got := p.Update(payload("checkout-v2")); got != addr {
						t.Fatalf("update moved the context from %#x to %#x", addr, got)
					}
					expect(t, w, Event{Kind: Publish, PID: pid, Addr: addr, Len: length}, pid)

					if err := w.Track(pid, addr, length); err != nil {
						t.Fatal(err)
					}
					p.Unpublish()
					if opts.Mechanism.ReportsUnmaps() {
						expect(t, w, Event{Kind: Unmap, PID: pid, Addr: addr, Len: length}, pid)
					} else {
						// No unmap: the next event of the process is its
						// publication again.
						again := p.Publish(payload("checkout-again"))
						if !anon {
							expect(t, w, Event{Kind: Memfd, PID: pid}, pid)
						}
						expect(t, w, Event{Kind: Publish, PID: pid, Addr: again, Len: mappingAt(t, pid, again)}, pid)
					}
					if err := w.Untrack(pid); err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	})
}

// TestUnrelatedMunmapsAreSilent: munmaps of untracked processes, of ranges
// beside the tracked one and failed munmaps report nothing; the proof is
// that the first event of any process involved is the marker's, published
// afterwards.
func TestUnrelatedMunmapsAreSilent(t *testing.T) {
	forEachMechanism(t, func(t *testing.T, opts Options) {
		w := mustLoad(t, opts)
		self := os.Getpid()
		pids := []int{self}
		type pub struct {
			p            *pubtest.Proc
			addr, length uint64
		}
		start := func() pub {
			p := pubtest.Start(t, pubtest.C, pubtest.Options{})
			pid := p.HostPid()
			pids = append(pids, pid)
			addr := p.Publish(payload("quiet"))
			length := mappingAt(t, pid, addr)
			expect(t, w, Event{Kind: Memfd, PID: pid}, pid)
			expect(t, w, Event{Kind: Publish, PID: pid, Addr: addr, Len: length}, pid)
			return pub{p, addr, length}
		}
		untracked, below, above, dropped := start(), start(), start(), start()
		track := func(pid int, addr, length uint64) {
			t.Helper()
			if err := w.Track(pid, addr, length); err != nil {
				t.Fatal(err)
			}
		}
		track(below.p.HostPid(), below.addr-page, page)
		track(above.p.HostPid(), above.addr+above.length, page)
		track(dropped.p.HostPid(), dropped.addr, dropped.length)
		if err := w.Untrack(dropped.p.HostPid()); err != nil {
			t.Fatal(err)
		}
		for _, p := range []pub{untracked, below, above, dropped} {
			p.p.Unpublish()
		}

		// In this process: pages 1-2 of 4 tracked; pages 0 and 3 unmapped,
		// and a munmap that fails (unaligned) over the tracked range.
		mem, err := unix.Mmap(-1, 0, 4*int(page), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			t.Fatal(err)
		}
		base := uint64(uintptr(unsafe.Pointer(&mem[0])))
		t.Cleanup(func() { _ = munmap(base, 4*page) })
		track(self, base+page, 2*page)
		for _, r := range [][2]uint64{{base, page}, {base + 3*page, page}} {
			if err := munmap(r[0], r[1]); err != nil {
				t.Fatal(err)
			}
		}
		if err := munmap(base+page+1, page); !errors.Is(err, unix.EINVAL) {
			t.Fatalf("unaligned munmap: %v, want EINVAL", err)
		}

		marker := pubtest.Start(t, pubtest.C, pubtest.Options{})
		pids = append(pids, marker.HostPid())
		marker.Publish(payload("marker"))
		expect(t, w, Event{Kind: Memfd, PID: marker.HostPid()}, pids...)

		// The tracked range still reports, partial overlaps included (but
		// by a mechanism that reports no unmaps: a second marker comes
		// first).
		for _, r := range [][2]uint64{{base + page, page}, {base + 2*page, 2 * page}} {
			if err := munmap(r[0], r[1]); err != nil {
				t.Fatal(err)
			}
			if opts.Mechanism.ReportsUnmaps() {
				expect(t, w, Event{Kind: Unmap, PID: self, Addr: r[0], Len: r[1]}, self)
			}
		}
		if !opts.Mechanism.ReportsUnmaps() {
			second := pubtest.Start(t, pubtest.C, pubtest.Options{})
			second.Publish(payload("marker"))
			expect(t, w, Event{Kind: Memfd, PID: second.HostPid()}, self, second.HostPid())
		}
	})
}

// TestOtherNamesAreSilent: prctl and memfd_create with other names, other
// options or that fail report nothing; this process's own calls, so the
// events would carry its pid.
func TestOtherNamesAreSilent(t *testing.T) {
	forEachMechanism(t, func(t *testing.T, opts Options) {
		w := mustLoad(t, opts)
		self := os.Getpid()
		for _, name := range []string{"OTEL_CTX2", "OTEL_CT", "otel_ctx", "", "XOTEL_CTX", "OTEL_CTX ", "OTEL_CTX_AND_A_LONG_TAIL"} {
			prctlName(unix.PR_SET_VMA, unix.PR_SET_VMA_ANON_NAME, 0x1000, 0x2000, cstr(name))
			if err := memfdCreate(cstr(name), unix.MFD_CLOEXEC); err != nil {
				t.Fatalf("memfd_create(%q): %v", name, err)
			}
		}
		ctx := cstr("OTEL_CTX")
		prctlName(unix.PR_SET_VMA, 1, 0x1000, 0x2000, ctx)                         // another PR_SET_VMA operation
		prctlName(0x7fff0001, unix.PR_SET_VMA_ANON_NAME, 0x1000, 0x2000, ctx)      // no such option
		prctlName(unix.PR_SET_VMA, unix.PR_SET_VMA_ANON_NAME, 0x1000, 0x2000, nil) // unreadable name
		if err := memfdCreate(ctx, 0xffff0000); !errors.Is(err, unix.EINVAL) {
			t.Fatalf("memfd_create with bad flags: %v, want EINVAL", err)
		}
		if err := memfdCreate(nil, unix.MFD_CLOEXEC); !errors.Is(err, unix.EFAULT) {
			t.Fatalf("memfd_create(NULL): %v, want EFAULT", err)
		}

		if err := memfdCreate(ctx, unix.MFD_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		expect(t, w, Event{Kind: Memfd, PID: self}, self)
		prctlName(unix.PR_SET_VMA, unix.PR_SET_VMA_ANON_NAME, 0x5000, 0x6000, ctx)
		expect(t, w, Event{Kind: Publish, PID: self, Addr: 0x5000, Len: 0x6000}, self)
	})
}

// TestMemfdNameNotResident: the name is read after the syscall, when the
// kernel has faulted it in: a program at syscall entry could not read a
// name in a page this process never touched.
func TestMemfdNameNotResident(t *testing.T) {
	forEachMechanism(t, func(t *testing.T, opts Options) {
		w := mustLoad(t, opts)
		f, err := os.CreateTemp(t.TempDir(), "name")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString("OTEL_CTX\x00"); err != nil {
			t.Fatal(err)
		}
		mem, err := unix.Mmap(int(f.Fd()), 0, int(page), unix.PROT_READ, unix.MAP_PRIVATE)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = unix.Munmap(mem) }()
		if err := memfdCreate(&mem[0], unix.MFD_CLOEXEC); err != nil { // &mem[0] reads nothing
			t.Fatal(err)
		}
		expect(t, w, Event{Kind: Memfd, PID: os.Getpid()}, os.Getpid())
	})
}

func TestLost(t *testing.T) {
	forEachMechanism(t, func(t *testing.T, opts Options) {
		opts.RingSize = int(page)
		w := mustLoad(t, opts)
		if n := w.Lost(); n != 0 {
			t.Fatalf("Lost() = %d before anything happened", n)
		}
		// Nothing reads during the burst: the ring (a page of records of
		// 32 bytes with their headers: 128 in 4 KiB) overflows whatever
		// the speed.
		const burst = 5000
		capacity := page / 32
		ctx := cstr("OTEL_CTX")
		for range burst {
			prctlName(unix.PR_SET_VMA, unix.PR_SET_VMA_ANON_NAME, 0x1000, 0x2000, ctx)
		}
		lost := w.Lost()
		if lost < burst-capacity {
			t.Fatalf("Lost() = %d after %d events into a ring of %d, want at least %d", lost, burst, capacity, burst-capacity)
		}
		t.Logf("lost %d of %d", lost, burst)

		// Delivery resumes once the ring is read.
		drain(t, w)
		self := os.Getpid()
		prctlName(unix.PR_SET_VMA, unix.PR_SET_VMA_ANON_NAME, 0x7000, 0x1000, ctx)
		for ev := next(t, w, self); ev.Addr != 0x7000; ev = next(t, w, self) {
		}
		before := w.Lost()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if after := w.Lost(); after != before {
			t.Fatalf("Lost() after Close = %d, want %d", after, before)
		}
	})
}

func TestTrack(t *testing.T) {
	w := loadCheapest(t, Options{MaxTracked: 2})
	if err := w.Track(1, 0x1000, page); err != nil {
		t.Fatal(err)
	}
	if err := w.Track(2, 0x1000, page); err != nil {
		t.Fatal(err)
	}
	if err := w.Track(3, 0x1000, page); !errors.Is(err, ErrTrackFull) {
		t.Fatalf("Track into a full map: %v, want ErrTrackFull", err)
	}
	if err := w.Track(1, 0x2000, page); err != nil { // replacing an entry needs no room
		t.Fatalf("replace: %v", err)
	}
	if err := w.Untrack(2); err != nil {
		t.Fatal(err)
	}
	if err := w.Untrack(2); err != nil {
		t.Fatalf("untrack twice: %v", err)
	}
	if err := w.Track(3, 0x1000, page); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		pid          int
		addr, length uint64
	}{{0, 0x1000, page}, {-1, 0x1000, page}, {1 << 31, 0x1000, page}, {1, 0x1000, 0}, {1, ^uint64(0) - page + 2, page}} {
		if err := w.Track(bad.pid, bad.addr, bad.length); err == nil || errors.Is(err, ErrTrackFull) {
			t.Errorf("Track(%d, %#x, %#x) = %v, want an argument error", bad.pid, bad.addr, bad.length, err)
		}
	}
	if err := w.Untrack(0); err == nil {
		t.Error("Untrack(0) succeeded")
	}
}

func TestCloseUnblocksRead(t *testing.T) {
	w := loadCheapest(t, Options{})
	done := make(chan error, 1)
	go func() {
		var ev Event
		for {
			if err := w.Read(&ev); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond) // most likely blocked by now; either way must work
	start := time.Now()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Read after Close: %v, want ErrClosed", err)
		}
		t.Logf("Read returned %v after Close", time.Since(start))
	case <-time.After(eventTimeout):
		t.Fatal("Read still blocked after Close")
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	var ev Event
	if err := w.Read(&ev); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read on a closed watcher: %v", err)
	}
	if err := w.Track(1, 0x1000, page); !errors.Is(err, ErrClosed) {
		t.Fatalf("Track on a closed watcher: %v", err)
	}
	if err := w.Untrack(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Untrack on a closed watcher: %v", err)
	}
}

// drain reads what the ring holds now: a deadline in the past makes Read
// return the buffered events, then os.ErrDeadlineExceeded.
func drain(t testing.TB, w *Watcher) {
	t.Helper()
	w.SetDeadline(time.Now().Add(-time.Second))
	defer w.SetDeadline(time.Time{})
	var ev Event
	for {
		if err := w.Read(&ev); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("Read past the deadline: %v", err)
			}
			return
		}
	}
}

func TestDeadline(t *testing.T) {
	w := loadCheapest(t, Options{})
	drain(t, w)
	ctx := cstr("OTEL_CTX")
	prctlName(unix.PR_SET_VMA, unix.PR_SET_VMA_ANON_NAME, 0x1000, 0x2000, ctx)
	expect(t, w, Event{Kind: Publish, PID: os.Getpid(), Addr: 0x1000, Len: 0x2000}, os.Getpid())
}

// TestNoAllocationPerEvent: Read does not allocate in the steady state.
func TestNoAllocationPerEvent(t *testing.T) {
	forEachMechanism(t, func(t *testing.T, opts Options) {
		w := mustLoad(t, opts)
		self := os.Getpid()
		ctx := cstr("OTEL_CTX")
		w.SetDeadline(time.Now().Add(eventTimeout))
		var ev Event
		var readErr error
		roundTrip := func() {
			prctlName(unix.PR_SET_VMA, unix.PR_SET_VMA_ANON_NAME, 0x1000, 0x2000, ctx)
			for readErr == nil {
				if readErr = w.Read(&ev); ev.PID == self {
					return
				}
			}
		}
		roundTrip()
		allocs := testing.AllocsPerRun(200, roundTrip)
		if readErr != nil {
			t.Fatal(readErr)
		}
		if allocs != 0 {
			t.Fatalf("%v allocations per event", allocs)
		}
	})
}
