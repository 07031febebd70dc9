// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package pubevents

import (
	"errors"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// fexitSpec returns the programs' spec with the fexit targets Load sets.
func fexitSpec(t *testing.T) *ebpf.CollectionSpec {
	t.Helper()
	spec, err := loadPubevents()
	if err != nil {
		t.Fatal(err)
	}
	for _, prog := range programs(Fexit) {
		spec.Programs[prog].AttachTo = syscallPrefix + syscallOf[prog]
	}
	return spec
}

// kernelBTF builds a kernel's BTF holding funcs, in their order.
func kernelBTF(t *testing.T, funcs ...*btf.Func) *btf.Spec {
	t.Helper()
	var b btf.Builder
	for _, f := range funcs {
		if _, err := b.Add(f); err != nil {
			t.Fatal(err)
		}
	}
	spec, err := b.Spec()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestFexitTargetIDs: a syscall entry point whose name has several FUNCs
// of one prototype in the kernel's BTF (Debian 12's cloud kernel: the
// definition and the weak stub of kernel/sys_ni.c) is loaded by the first
// one's type id; unique names are left to the library, also for a name
// the BTF lacks; several FUNCs of different prototypes are an error that
// is ErrUnsupported and names the program.
func TestFexitTargetIDs(t *testing.T) {
	long := &btf.Int{Name: "long int", Size: 8, Encoding: btf.Signed}
	integer := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	regs := &btf.Pointer{Target: &btf.Const{Type: &btf.Struct{Name: "pt_regs", Size: 168}}}
	fn := func(name, param string, ret btf.Type) *btf.Func {
		return &btf.Func{Name: name, Linkage: btf.StaticFunc, Type: &btf.FuncProto{
			Return: ret, Params: []btf.FuncParam{{Name: param, Type: regs}},
		}}
	}
	spec := fexitSpec(t)

	kernel := kernelBTF(t,
		fn(syscallPrefix+"prctl", "regs", long),
		fn(syscallPrefix+"memfd_create", "regs", long),
		fn(syscallPrefix+"memfd_create", "__unused", long),
	)
	ids, err := fexitTargetIDs(spec, kernel, false)
	if err != nil {
		t.Fatal(err)
	}
	funcs, err := funcsNamed(kernel, syscallPrefix+"memfd_create")
	if err != nil || len(funcs) != 2 {
		t.Fatalf("funcsNamed = %v, %v", funcs, err)
	}
	first, _ := kernel.TypeID(funcs[0])
	second, _ := kernel.TypeID(funcs[1])
	if first >= second || funcs[0].Type.(*btf.FuncProto).Params[0].Name != "regs" {
		t.Fatalf("funcsNamed not by increasing type id: %d, %d", first, second)
	}
	if want := map[string]btf.TypeID{pubeventsProgOnMemfdCreate: first}; len(ids) != 1 || ids[pubeventsProgOnMemfdCreate] != first {
		t.Fatalf("fexitTargetIDs = %v, want %v", ids, want)
	}

	ids, err = fexitTargetIDs(spec, kernel, true)
	if err != nil {
		t.Fatal(err)
	}
	prctl, _ := kernel.AnyTypeByName(syscallPrefix + "prctl")
	prctlID, _ := kernel.TypeID(prctl)
	if len(ids) != 2 || ids[pubeventsProgOnMemfdCreate] != first || ids[pubeventsProgOnPrctl] != prctlID {
		t.Fatalf("fexitTargetIDs(every) = %v, want memfd_create %d and prctl %d (munmap is not in this BTF)", ids, first, prctlID)
	}

	kernel = kernelBTF(t,
		fn(syscallPrefix+"memfd_create", "regs", long),
		fn(syscallPrefix+"memfd_create", "regs", integer),
	)
	_, err = fexitTargetIDs(spec, kernel, false)
	if !errors.Is(err, btf.ErrMultipleMatches) {
		t.Fatalf("fexitTargetIDs with two prototypes: %v, want btf.ErrMultipleMatches", err)
	}
	err = classify(Fexit, "load BPF programs", err)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), pubeventsProgOnMemfdCreate) || !strings.Contains(err.Error(), "different prototypes") {
		t.Fatalf("classified: %v, want ErrUnsupported naming %s and why", err, pubeventsProgOnMemfdCreate)
	}
}

// TestFexitByTypeID loads every fexit program by its target's type id, as
// Load does for an ambiguous name, and checks each reports: this process's
// memfd_create, prctl and munmap of a tracked range.
func TestFexitByTypeID(t *testing.T) {
	requireHost(t)
	w, err := load(fexitSpec(t), Fexit, true)
	if err != nil {
		if errors.Is(err, ErrUnsupported) || errors.Is(err, ErrPermission) {
			t.Skipf("fexit unavailable here: %v", err)
		}
		t.Fatalf("load: %+v", err)
	}
	defer func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	}()
	self := os.Getpid()

	if err := memfdCreate(cstr("OTEL_CTX"), unix.MFD_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	expect(t, w, Event{Kind: Memfd, PID: self}, self)

	mem, err := unix.Mmap(-1, 0, 2*int(page), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	addr := uint64(uintptr(unsafe.Pointer(&mem[0])))
	prctlName(unix.PR_SET_VMA, unix.PR_SET_VMA_ANON_NAME, addr, 2*page, cstr("OTEL_CTX"))
	expect(t, w, Event{Kind: Publish, PID: self, Addr: addr, Len: 2 * page}, self)

	if err := w.Track(self, addr, 2*page); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Untrack(self) }()
	if err := munmap(addr+page, page); err != nil {
		t.Fatal(err)
	}
	expect(t, w, Event{Kind: Unmap, PID: self, Addr: addr + page, Len: page}, self)
	if err := munmap(addr, page); err != nil {
		t.Fatal(err)
	}
	expect(t, w, Event{Kind: Unmap, PID: self, Addr: addr, Len: page}, self)
}
