// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package reader

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
)

// Via says how a process's memory is read.
type Via uint8

const (
	// ViaAuto uses process_vm_readv when the procfs pids are the reader's
	// own, and the mem file otherwise (or when the syscall is refused).
	ViaAuto Via = iota
	// ViaMemFile always uses pread on <root>/proc/<pid>/mem, which fails at
	// once on userfaultfd-registered pages where process_vm_readv waits.
	ViaMemFile
)

// Reader reads process contexts through one procfs. It is safe for
// concurrent use.
type Reader struct {
	fs    *procfs.FS
	otep  *otep.Reader
	maps  sync.Pool // *mapsScratch: finding a mapping costs no allocation
	mems  sync.Pool // *memory: a read costs no allocation
	stats readStats
	// vmReadvUnavailable: process_vm_readv returned ENOSYS once; use the
	// mem file from then on.
	vmReadvUnavailable atomic.Bool
	// procmapUnavailable: PROCMAP_QUERY was refused once; read maps text
	// to the end from then on.
	procmapUnavailable atomic.Bool
	// anonNaming: the kernel names anonymous VMAs, which PROCMAP_QUERY's
	// file-backed filter would skip: read maps text to the end.
	anonNaming bool
	textBudget int // maps text read before PROCMAP_QUERY takes over
	maxQueries int // PROCMAP_QUERY calls one walk may make
}

type readStats struct {
	mapsFiles, mapsBytes, mapsQueries, memoryReads, memoryBytes atomic.Uint64
}

// Stats counts what a Reader has read since it was created.
type Stats struct {
	MapsFiles   uint64 // maps files opened
	MapsBytes   uint64 // bytes read from maps files
	MapsQueries uint64 // PROCMAP_QUERY ioctls on maps files
	MemoryReads uint64 // reads of other processes' memory
	MemoryBytes uint64 // bytes requested from other processes' memory
}

// Stats returns the reader's counters.
func (r *Reader) Stats() Stats {
	return Stats{
		MapsFiles:   r.stats.mapsFiles.Load(),
		MapsBytes:   r.stats.mapsBytes.Load(),
		MapsQueries: r.stats.mapsQueries.Load(),
		MemoryReads: r.stats.memoryReads.Load(),
		MemoryBytes: r.stats.memoryBytes.Load(),
	}
}

// New returns a reader of the processes of fs, bound by limits.
func New(fs *procfs.FS, limits otep.Limits) (*Reader, error) {
	or, err := otep.NewReader(limits)
	if err != nil {
		return nil, err
	}
	return &Reader{
		fs:         fs,
		otep:       or,
		anonNaming: probeAnonNaming(),
		textBudget: defaultTextBudget,
		maxQueries: maxQueries(fs),
	}, nil
}

// FS returns the procfs the reader reads.
func (r *Reader) FS() *procfs.FS { return r.fs }

// Limits returns the reader's limits.
func (r *Reader) Limits() otep.Limits { return r.otep.Limits() }

// Read finds the context mapping of pid and reads its context.
func (r *Reader) Read(pid int) (otep.Context, otep.Mapping, error) {
	m, err := r.FindMapping(pid)
	if err != nil {
		return otep.Context{}, otep.Mapping{}, err
	}
	ctx, _, err := r.ReadContext(pid, m.Start, 0, ViaAuto)
	return ctx, m, err
}

// ReadContext reads the context whose header is at addr (a mapping's start,
// as FindMapping returned it) with the seqlock protocol. A caller holding
// the context published at lastPublishedAt gets changed == false after one
// 8-byte read while it is unchanged; 0 always reads.
func (r *Reader) ReadContext(pid int, addr, lastPublishedAt uint64, via Via) (ctx otep.Context, changed bool, err error) {
	mem, _ := r.mems.Get().(*memory)
	if mem == nil {
		mem = &memory{r: r}
	}
	mem.pid, mem.via, mem.fd = pid, via, -1
	defer func() {
		mem.close()
		r.mems.Put(mem)
	}()
	ctx, changed, err = r.otep.Read(mem, addr, lastPublishedAt)
	if err != nil {
		return otep.Context{}, false, fmt.Errorf("context of pid %d: %w", pid, err)
	}
	return ctx, changed, nil
}
