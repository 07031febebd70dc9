// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux && (amd64 || arm64)

package pubevents

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// A kernel's BTF can hold more than one FUNC of a syscall entry point's
// name: Debian 12's cloud kernel (6.1) has two __x64_sys_memfd_create, the
// definition of mm/memfd.c and the weak stub kernel/sys_ni.c declares for
// kernels without memfd_create (COND_SYSCALL), which the linker drops.
// cilium/ebpf refuses to load a program whose AttachTo names more than one
// FUNC (cilium/ebpf#894), and offers no way to name the BTF type instead.
// The kernel needs the type only for the function's prototype and finds
// the address by the name (kallsyms): the entry points are global
// symbols, there is one of each name, so when every candidate has the
// same prototype (parameter names aside) any of them attaches the program
// to the same function. Such programs are loaded here, with the first
// candidate's id, as libbpf would choose; the library still loads the
// maps and the other programs, and attaches them all.

// fexitTargetIDs returns, by program name, the BTF type ids (in vmlinux)
// of the fexit programs of spec whose target's name is ambiguous in the
// kernel's BTF; all, when every is set (tests load every program that way
// where the names are unique). A name whose candidates differ is an error
// naming the program.
func fexitTargetIDs(spec *ebpf.CollectionSpec, kernel *btf.Spec, every bool) (map[string]btf.TypeID, error) {
	ids := map[string]btf.TypeID{}
	for name, ps := range spec.Programs {
		if ps.Type != ebpf.Tracing || ps.AttachType != ebpf.AttachTraceFExit {
			continue
		}
		funcs, err := funcsNamed(kernel, ps.AttachTo)
		if err != nil {
			return nil, fmt.Errorf("program %s: %w", name, err)
		}
		if len(funcs) == 0 || len(funcs) == 1 && !every {
			// Not in vmlinux (the library says so, or finds it in a
			// module), or unique: the library resolves it.
			continue
		}
		for _, f := range funcs[1:] {
			if !sameSignature(f, funcs[0]) {
				return nil, fmt.Errorf("program %s: attach to %s: the kernel's BTF has %d functions of that name with different prototypes: %w",
					name, ps.AttachTo, len(funcs), btf.ErrMultipleMatches)
			}
		}
		id, err := kernel.TypeID(funcs[0])
		if err != nil {
			return nil, fmt.Errorf("program %s: %w", name, err)
		}
		ids[name] = id
	}
	return ids, nil
}

// funcsNamed returns the FUNCs of kernel named name, by increasing type id.
func funcsNamed(kernel *btf.Spec, name string) ([]*btf.Func, error) {
	types, err := kernel.AnyTypesByName(name)
	if errors.Is(err, btf.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var funcs []*btf.Func
	for _, t := range types {
		if f, ok := t.(*btf.Func); ok {
			funcs = append(funcs, f)
		}
	}
	slices.SortFunc(funcs, func(a, b *btf.Func) int {
		ia, _ := kernel.TypeID(a)
		ib, _ := kernel.TypeID(b)
		return int(ia) - int(ib)
	})
	return funcs, nil
}

// sameSignature reports whether a and b take and return the same types;
// the names of their parameters do not matter. Types of one spec are
// deduplicated: the same type is the same value.
func sameSignature(a, b *btf.Func) bool {
	pa, ok1 := a.Type.(*btf.FuncProto)
	pb, ok2 := b.Type.(*btf.FuncProto)
	if !ok1 || !ok2 || pa.Return != pb.Return || len(pa.Params) != len(pb.Params) {
		return false
	}
	for i := range pa.Params {
		if pa.Params[i].Type != pb.Params[i].Type {
			return false
		}
	}
	return true
}

// loadTracingByID loads ps, a tracing program, to attach to the function
// of BTF type id target in vmlinux, with the maps it refers to: what
// ebpf.NewProgram does but for the target's lookup by name (CO-RE
// relocations against kernel, map references, the verifier's log on
// failure). ps's programs calls no other function, loads no kfunc, no
// .kconfig or .ksyms: those are refused, not half done.
func loadTracingByID(ps *ebpf.ProgramSpec, maps map[string]*ebpf.Map, kernel *btf.Spec, target btf.TypeID) (*ebpf.Program, error) {
	insns := slices.Clone(ps.Instructions)
	var (
		relos []*btf.CORERelocation
		at    []int
	)
	for i := range insns {
		ins := &insns[i]
		if relo := btf.CORERelocationMetadata(ins); relo != nil {
			relos = append(relos, relo)
			at = append(at, i)
		}
		if ins.IsFunctionReference() || ins.IsKfuncCall() {
			return nil, fmt.Errorf("instruction %d: calls %s: not supported when the target is chosen by its BTF type", i, ins.Reference())
		}
	}
	if len(relos) > 0 {
		localID := func(t btf.Type) (btf.TypeID, error) {
			return 0, fmt.Errorf("CO-RE relocation to the local type id of %s: not supported when the target is chosen by its BTF type", t)
		}
		fixups, err := btf.CORERelocate(relos, []*btf.Spec{kernel}, ps.ByteOrder, localID)
		if err != nil {
			return nil, fmt.Errorf("apply CO-RE relocations: %w", err)
		}
		for i, f := range fixups {
			if err := f.Apply(&insns[at[i]]); err != nil {
				return nil, fmt.Errorf("apply CO-RE relocation %s: %w", &f, err)
			}
		}
	}
	for i := range insns {
		ins := &insns[i]
		ref := ins.Reference()
		if ref == "" || !ins.IsLoadFromMap() {
			continue
		}
		m := maps[ref]
		if m == nil {
			return nil, fmt.Errorf("instruction %d: no map %s: %w", i, ref, asm.ErrUnsatisfiedMapReference)
		}
		if err := ins.AssociateMap(m); err != nil {
			return nil, fmt.Errorf("instruction %d: %w", i, err)
		}
	}
	var code bytes.Buffer
	if err := insns.Marshal(&code, ps.ByteOrder); err != nil {
		return nil, fmt.Errorf("marshal instructions: %w", err)
	}

	license := append([]byte(ps.License), 0)
	attr := progLoadAttr{
		progType:           uint32(ebpf.Tracing),
		insnCnt:            uint32(code.Len() / asm.InstructionSize),
		insns:              unsafe.Pointer(&code.Bytes()[0]),
		license:            unsafe.Pointer(&license[0]),
		expectedAttachType: uint32(ps.AttachType),
		attachBTFID:        uint32(target),
	}
	copy(attr.progName[:len(attr.progName)-1], ps.Name)
	fd, err := progLoad(&attr)
	if err != nil {
		// Again with the verifier's log, to say why.
		log := make([]byte, 1<<20)
		attr.logLevel, attr.logSize, attr.logBuf = 1, uint32(len(log)), unsafe.Pointer(&log[0])
		if _, err2 := progLoad(&attr); err2 != nil {
			err = err2
		}
		runtime.KeepAlive(log)
		if tail := verifierTail(log); tail != "" {
			return nil, fmt.Errorf("load program: %w: %s", err, tail)
		}
		return nil, fmt.Errorf("load program: %w", err)
	}
	runtime.KeepAlive(&code)
	runtime.KeepAlive(license)
	prog, err := ebpf.NewProgramFromFD(fd)
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return prog, nil
}

// progLoadAttr is union bpf_attr's part for BPF_PROG_LOAD, up to
// attach_btf_obj_fd (Linux 5.11); the kernel takes the fields a shorter
// attr leaves out as zero.
type progLoadAttr struct {
	progType           uint32
	insnCnt            uint32
	insns              unsafe.Pointer
	license            unsafe.Pointer
	logLevel           uint32
	logSize            uint32
	logBuf             unsafe.Pointer
	kernVersion        uint32
	progFlags          uint32
	progName           [unix.BPF_OBJ_NAME_LEN]byte
	progIfindex        uint32
	expectedAttachType uint32
	progBTFFD          uint32
	funcInfoRecSize    uint32
	funcInfo           unsafe.Pointer
	funcInfoCnt        uint32
	lineInfoRecSize    uint32
	lineInfo           unsafe.Pointer
	lineInfoCnt        uint32
	attachBTFID        uint32
	attachBTFObjFD     uint32
}

// progLoad issues BPF_PROG_LOAD, again when a signal interrupted the
// verifier (EAGAIN), and returns the program's file descriptor.
func progLoad(attr *progLoadAttr) (int, error) {
	for tries := 0; ; tries++ {
		fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(attr)), unsafe.Sizeof(*attr))
		runtime.KeepAlive(attr)
		if errno == unix.EAGAIN && tries < 100 {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(fd), nil
	}
}

// verifierTail returns the last lines of a verifier log, where it says
// why it refused.
func verifierTail(log []byte) string {
	if end := bytes.IndexByte(log, 0); end >= 0 {
		log = log[:end]
	}
	log = bytes.TrimSpace(log)
	if len(log) > 512 {
		log = log[len(log)-512:]
		if nl := bytes.IndexByte(log, '\n'); nl >= 0 {
			log = log[nl+1:]
		}
	}
	return string(log)
}
