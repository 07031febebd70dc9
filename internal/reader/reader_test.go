// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package reader

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/otep"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/publisher"
	"github.com/processctx/otelcol-processctx/internal/pubtest"
)

// allKinds is a context with every AnyValue kind, plus thread-context
// attributes that must stay out of the resource.
func allKinds() (resource, attributes pcommon.Map) {
	resource = pcommon.NewMap()
	resource.PutStr("service.name", "checkout")
	resource.PutStr("service.instance.id", "6f1c2d8e-1f0b-4c4e-9d38-5b5a3c1e8a11")
	resource.PutStr("deployment.environment.name", "prod")
	resource.PutBool("feature.enabled", true)
	resource.PutInt("service.shard", -42)
	resource.PutInt("max", 1<<63-1)
	resource.PutDouble("sample.ratio", 0.25)
	resource.PutEmptyBytes("build.id").FromRaw([]byte{0, 1, 2, 0xff})
	arr := resource.PutEmptySlice("host.ips")
	arr.AppendEmpty().SetStr("10.0.0.1")
	arr.AppendEmpty().SetInt(7)
	arr.AppendEmpty().SetBool(false)
	kv := resource.PutEmptyMap("k8s.labels")
	kv.PutStr("app", "checkout")
	kv.PutEmptyMap("nested").PutEmptySlice("deeper").AppendEmpty().SetDouble(1.5)
	resource.PutStr("unicode", "héllo 世界")
	resource.PutStr("empty", "")

	attributes = pcommon.NewMap()
	attributes.PutStr("threadlocal.schema_version", "tlsdesc_v1_dev")
	keys := attributes.PutEmptySlice("threadlocal.attribute_key_map")
	for _, k := range []string{"http.route", "user.id", "tenant"} {
		keys.AppendEmpty().SetStr(k)
	}
	return resource, attributes
}

type variant struct {
	kind pubtest.Kind
	opts pubtest.Options
}

func (v variant) String() string {
	placement := "inline"
	if v.opts.Separate {
		placement = "separate"
	}
	return string(v.kind) + "/" + placement
}

func variants() []variant {
	var vs []variant
	for _, k := range pubtest.Kinds {
		vs = append(vs, variant{k, pubtest.Options{}}, variant{k, pubtest.Options{Separate: true}})
	}
	return vs
}

func TestReadRealPublishers(t *testing.T) {
	for _, v := range variants() {
		for _, through := range []string{"process_vm_readv", "mem file"} {
			t.Run(v.String()+"/"+through, func(t *testing.T) {
				r := newTestReader(t)
				if through == "mem file" {
					r = memFileReader(t)
				}
				p := pubtest.Start(t, v.kind, v.opts)
				resource, attributes := allKinds()
				addr := p.Publish(encode(t, resource, attributes))

				ctx, m, err := r.Read(p.Pid)
				require.NoError(t, err)
				assert.Equal(t, addr, m.Start)
				assert.Contains(t, []string{otep.MappingMemfd, otep.MappingMemfdNamed}, m.Name)
				assert.NotZero(t, ctx.PublishedAt)
				assert.Equal(t, resource.AsRaw(), ctx.Resource.AsRaw())
				assert.Equal(t, attributes.AsRaw(), ctx.Attributes.AsRaw())
				_, leaked := ctx.Resource.Get("threadlocal.schema_version")
				assert.False(t, leaked, "thread-context attribute in the resource")

				// Unchanged: one timestamp read says so.
				_, changed, err := r.ReadIfChanged(p.Pid, addr, ctx.PublishedAt)
				require.NoError(t, err)
				assert.False(t, changed)

				// Update in place: same address, new context, larger timestamp.
				resource.PutStr("service.version", "2.0.0")
				resource.Remove("host.ips")
				assert.Equal(t, addr, p.Update(encode(t, resource, attributes)))
				updated, changed, err := r.ReadIfChanged(p.Pid, addr, ctx.PublishedAt)
				require.NoError(t, err)
				require.True(t, changed)
				assert.Greater(t, updated.PublishedAt, ctx.PublishedAt)
				assert.Equal(t, resource.AsRaw(), updated.Resource.AsRaw())

				// Unpublish: the mapping is gone. At the old address, nothing
				// (no context), or another mapping the process made since,
				// whose zeros read as an update in progress (the kernel may
				// give the address out again at once: seen with the Go
				// publisher on arm64's 16 KiB pages); the tracker looks in
				// the maps after either.
				p.Unpublish()
				_, err = r.FindMapping(p.Pid)
				require.ErrorIs(t, err, otep.ErrNoContext)
				_, _, err = r.ReadIfChanged(p.Pid, addr, updated.PublishedAt)
				if !errors.Is(err, otep.ErrTorn) {
					require.ErrorIs(t, err, otep.ErrNoContext)
				}

				// Publish again after unpublish, then exit: the process is gone.
				again := p.Publish(serviceContext(t, "again"))
				ctx, _, err = r.Read(p.Pid)
				require.NoError(t, err)
				assert.Equal(t, map[string]any{"service.name": "again"}, ctx.Resource.AsRaw())
				p.Exit()
				_, err = r.FindMapping(p.Pid)
				require.ErrorIs(t, err, procfs.ErrProcessGone)
				_, err = r.ReadContext(p.Pid, again)
				require.ErrorIs(t, err, procfs.ErrProcessGone)
			})
		}
	}
}

func TestReadSpecVectorFromC(t *testing.T) {
	// SPEC.md's payload vector, published by the independent C publisher.
	vector, err := hex.DecodeString(payloadVectorHex)
	require.NoError(t, err)
	p := pubtest.Start(t, pubtest.C, pubtest.Options{})
	p.Publish(vector)
	ctx, _, err := newTestReader(t).Read(p.Pid)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"service.name": "my-service"}, ctx.Resource.AsRaw())
	assert.Equal(t, map[string]any{"threadlocal.schema_version": "tlsdesc_v1_dev"}, ctx.Attributes.AsRaw())
	assert.Equal(t, uint32(80), ctx.PayloadSize)
}

const payloadVectorHex = "0a1e0a1c0a0c736572766963652e6e616d65120c0a0a6d792d73657276696365122e0a1a7468726561646c6f63616c2e736368656d615f76657273696f6e12100a0e746c73646573635f76315f646576"

func TestAnonymousMapping(t *testing.T) {
	// Without memfd the mapping is only findable when PR_SET_VMA_ANON_NAME
	// works; this workplace's kernels lack it, others have it.
	for _, kind := range pubtest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			r := newTestReader(t)
			p := pubtest.Start(t, kind, pubtest.Options{Anonymous: true})
			addr := p.Publish(serviceContext(t, "anon"))
			maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", p.Pid))
			require.NoError(t, err)
			named := strings.Contains(string(maps), "[anon:OTEL_CTX]")

			m, err := r.FindMapping(p.Pid)
			if !named {
				require.ErrorIs(t, err, otep.ErrNoContext)
			} else {
				require.NoError(t, err)
				assert.Equal(t, otep.MappingAnonNamed, m.Name)
			}
			// The header is readable at its address either way.
			ctx, err := r.ReadContext(p.Pid, addr)
			require.NoError(t, err)
			assert.Equal(t, map[string]any{"service.name": "anon"}, ctx.Resource.AsRaw())
		})
	}
}

func TestProcessesWithoutContext(t *testing.T) {
	r := newTestReader(t)
	sleep := exec.Command("sleep", "30")
	require.NoError(t, sleep.Start())
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })

	_, err := r.FindMapping(sleep.Process.Pid)
	require.ErrorIs(t, err, otep.ErrNoContext)
	_, err = r.FindMapping(os.Getpid())
	require.ErrorIs(t, err, otep.ErrNoContext)
	_, err = r.FindMapping(2) // kthreadd: an empty maps file
	require.ErrorIs(t, err, otep.ErrNoContext)
	_, err = r.FindMapping(1 << 30)
	require.ErrorIs(t, err, procfs.ErrProcessGone)

	// A forked child must not inherit the parent's context (MADV_DONTFORK).
	// The Go publisher's mapping is marked so (VmFlags "dc"); the C
	// publisher forks a child, which has none. (Not a child of exec.Command:
	// it is a vfork, whose child shows the parent's memory until its exec,
	// which a Linux 6.1 guest lets Start return before.)
	pub, err := publisher.Publish(serviceContext(t, "parent"), publisher.Options{})
	require.NoError(t, err)
	defer func() { _ = pub.Unpublish() }()
	ctx, m, err := r.Read(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, "parent", ctx.Resource.AsRaw()["service.name"])
	assert.Contains(t, vmFlags(t, os.Getpid(), m.Start), " dc", "the Go publisher's mapping is not marked MADV_DONTFORK")
	p := pubtest.Start(t, pubtest.C, pubtest.Options{})
	p.Publish(serviceContext(t, "parent"))
	child := p.Fork()
	_, err = r.FindMapping(p.Pid)
	require.NoError(t, err)
	_, err = r.FindMapping(child)
	require.ErrorIs(t, err, otep.ErrNoContext)
}

// vmFlags returns the VmFlags line of pid's mapping that starts at start,
// from its smaps.
func vmFlags(t *testing.T, pid int, start uint64) string {
	t.Helper()
	smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	require.NoError(t, err)
	in := false
	for line := range strings.Lines(string(smaps)) {
		if dash := strings.IndexByte(line, '-'); dash > 0 && !strings.Contains(line[:dash], ":") {
			if addr, err := strconv.ParseUint(line[:dash], 16, 64); err == nil {
				in = addr == start
				continue
			}
		}
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return rest
		}
	}
	t.Fatalf("pid %d has no mapping at %#x in its smaps", pid, start)
	return ""
}

func TestZombie(t *testing.T) {
	r := newTestReader(t)
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{})
	addr := p.Publish(serviceContext(t, "zombie"))
	// Kill without reaping: cmd.Wait runs in pubtest's goroutine, so race a
	// read against the exit; every outcome must be a named kind.
	_ = p.HostPid()
	go p.Kill()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		_, err := r.ReadContext(p.Pid, addr)
		if err == nil {
			continue
		}
		require.True(t, errorIsAny(err, procfs.ErrProcessGone, otep.ErrNoContext), "%v", err)
		if errors.Is(err, procfs.ErrProcessGone) {
			return
		}
	}
	t.Fatal("process never reported gone")
}

func TestUnchangedCostsOneTimestampRead(t *testing.T) {
	r := newTestReader(t)
	p := pubtest.Start(t, pubtest.Go, pubtest.Options{Separate: true})
	resource, attributes := allKinds()
	addr := p.Publish(encode(t, resource, attributes))
	ctx, err := r.ReadContext(p.Pid, addr)
	require.NoError(t, err)

	before := r.Stats()
	for range 100 {
		_, changed, err := r.ReadIfChanged(p.Pid, addr, ctx.PublishedAt)
		require.NoError(t, err)
		require.False(t, changed)
	}
	after := r.Stats()
	assert.Equal(t, Stats{MapsFiles: before.MapsFiles, MapsBytes: before.MapsBytes, MapsQueries: before.MapsQueries,
		MemoryReads: before.MemoryReads + 100, MemoryBytes: before.MemoryBytes + 8*100}, after)

	// A changed context costs header + payload + timestamp: three reads.
	p.Update(serviceContext(t, "changed"))
	_, changed, err := r.ReadIfChanged(p.Pid, addr, ctx.PublishedAt)
	require.NoError(t, err)
	require.True(t, changed)
	assert.Equal(t, after.MemoryReads+4, r.Stats().MemoryReads, "timestamp, header, payload, timestamp")
}
