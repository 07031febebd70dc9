// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package reader

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/fuzzseed"
	"github.com/processctx/otelcol-processctx/internal/otep"
)

// TestSeedCorpus keeps testdata/fuzz/FuzzReadPath, FuzzReadPath's seed
// corpus, in step with rpSeeds (see internal/fuzzseed).
func TestSeedCorpus(t *testing.T) {
	seeds := map[string][]any{}
	for _, s := range rpSeeds(t) {
		seeds[s.name] = []any{s.maps, s.header, s.payload, s.payloadB, s.payloadAt, s.ts, s.last, s.sched, s.flags}
	}
	fuzzseed.Check(t, "FuzzReadPath", seeds)
}

type rpSeed struct {
	name                            string
	maps, header, payload, payloadB []byte
	payloadAt, ts, last             uint64
	sched                           uint32
	flags                           uint16
}

// rpLine formats a maps line as the kernel does (show_map_vma): the path
// padded to column 73.
func rpLine(start, end uint64, perms string, inode int, path string) string {
	s := fmt.Sprintf("%08x-%08x %s %08x %s %d", start, end, perms, 0, "00:01", inode)
	if path == "" {
		return s + "\n"
	}
	if len(s) < 72 {
		s += strings.Repeat(" ", 72-len(s))
	}
	return s + " " + path + "\n"
}

// rpProcessMaps is the maps text of a small process with a context mapping
// at ctxStart named name.
func rpProcessMaps(ctxStart uint64, name string) []byte {
	return []byte(rpLine(0x55d0c8a00000, 0x55d0c8a02000, "r--p", 1311, "/usr/bin/publisher") +
		rpLine(0x55d0c8a02000, 0x55d0c8a07000, "r-xp", 1311, "/usr/bin/publisher") +
		rpLine(0x55d0c9c4e000, 0x55d0c9c6f000, "rw-p", 0, "[heap]") +
		rpLine(ctxStart, ctxStart+0x2000, "rw-p", 2049, name) +
		rpLine(0x7f3a1c200000, 0x7f3a1c228000, "r--p", 2886, "/usr/lib/x86_64-linux-gnu/libc.so.6") +
		rpLine(0x7f3a1c228000, 0x7f3a1c3bd000, "r-xp", 2886, "/usr/lib/x86_64-linux-gnu/libc.so.6") +
		rpLine(0x7ffc4d1e0000, 0x7ffc4d201000, "rw-p", 0, "[stack]") +
		rpLine(0x7ffc4d3f5000, 0x7ffc4d3f9000, "r--p", 0, "[vvar]") +
		rpLine(0xffffffffff600000, 0xffffffffff601000, "--xp", 0, "[vsyscall]"))
}

// rpHeader is a header as a publisher writes it (SPEC.md).
func rpHeader(sig string, version, size uint32, ts, payload uint64) []byte {
	b := make([]byte, otep.HeaderSize)
	copy(b, sig)
	binary.LittleEndian.PutUint32(b[otep.OffsetVersion:], version)
	binary.LittleEndian.PutUint32(b[otep.OffsetPayloadSize:], size)
	binary.LittleEndian.PutUint64(b[otep.OffsetPublishedAt:], ts)
	binary.LittleEndian.PutUint64(b[otep.OffsetPayloadAddress:], payload)
	return b
}

func rpSeeds(tb testing.TB) []rpSeed {
	tb.Helper()
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	// SPEC.md's test vectors: a header with the payload at 0x2000.
	specHeader := unhex("4f 54 45 4c 5f 43 54 58 02 00 00 00 50 00 00 00 15 cd 5b 07 00 00 00 00 00 20 00 00 00 00 00 00")
	specPayload := unhex("0a 1e 0a 1c 0a 0c 73 65 72 76 69 63 65 2e 6e 61 6d 65 12 0c 0a 0a 6d 79 2d 73 65 72 76 69 63 65 " +
		"12 2e 0a 1a 74 68 72 65 61 64 6c 6f 63 61 6c 2e 73 63 68 65 6d 61 5f 76 65 72 73 69 6f 6e 12 10 0a 0e " +
		"74 6c 73 64 65 73 63 5f 76 31 5f 64 65 76")
	res, attrs := pcommon.NewMap(), pcommon.NewMap()
	res.PutStr("service.name", "checkout")
	res.PutStr("service.instance.id", "627cc493-f310-47de-96bd-71410b7dec09")
	res.PutInt("process.pid", 4242)
	attrs.PutStr("threadlocal.schema_version", "tlsdesc_v1_dev")
	keys := attrs.PutEmptySlice("threadlocal.attribute_key_map")
	keys.AppendEmpty().SetStr("http.route")
	keys.AppendEmpty().SetStr("user.id")
	payload, err := otep.Encode(res, attrs)
	if err != nil {
		tb.Fatal(err)
	}
	updated := otep.EncodeStrings(map[string]string{"service.name": "checkout", "service.version": "2.0"})
	n := uint32(len(payload))

	const ctx = 0x7f3a1c000000
	memfd := rpProcessMaps(ctx, "/memfd:OTEL_CTX (deleted)")
	inline := rpHeader("OTEL_CTX", 2, n, 1000, ctx+otep.HeaderSize)
	raw := func(name string, header []byte) rpSeed {
		return rpSeed{name: name, maps: memfd, header: header, payload: payload, payloadB: updated, payloadAt: ctx + otep.HeaderSize}
	}
	withMaps := func(name string, maps string) rpSeed {
		s := raw(name, inline)
		s.maps = []byte(maps)
		return s
	}
	ctxLine := rpLine(ctx, ctx+0x1000, "rw-p", 7, "[anon:OTEL_CTX]")
	// An honest publisher's attributes: key, value pairs (NUL separated),
	// the value's length picking its kind (see rpAttributes).
	honestAttrs := []byte("deployment.environment.name\x00prod\x00pid\x001\x00on\x00xx\x00blob\x00\x01\x02\x03\x00list\x00a,bc\x00" +
		"threadlocal.schema_version\x00tlsdesc_v1_dev\x00")
	var manyAttrs []byte
	for i := range 20 {
		manyAttrs = fmt.Appendf(manyAttrs, "k%d\x00v\x00", i)
	}
	honest := func(name string, flags uint16) rpSeed {
		return rpSeed{name: name, maps: memfd, payload: honestAttrs, payloadB: []byte("version\x00two\x00"),
			payloadAt: 0x7f3a1c000000, ts: 1000, flags: rpFlagHonest | flags}
	}

	seeds := []rpSeed{
		{name: "spec-vector", maps: []byte(rpLine(0x1000, 0x3000, "rw-p", 7, "/memfd:OTEL_CTX (deleted)")),
			header: specHeader, payload: specPayload, payloadAt: 0x2000},
		raw("inline-memfd", inline),
		func() rpSeed {
			s := raw("heap-anon-shmem", rpHeader("OTEL_CTX", 2, n, 1000, 0x55d0c9c4e010))
			s.maps, s.payloadAt = rpProcessMaps(ctx, "[anon_shmem:OTEL_CTX]"), 0x55d0c9c4e010
			return s
		}(),
		func() rpSeed { s := raw("unchanged", inline); s.last = 1000; return s }(),
		func() rpSeed { s := raw("changed", inline); s.last = 999; return s }(),
		func() rpSeed { s := raw("torn-then-published", inline); s.sched = 1 | 2<<2; return s }(),
		func() rpSeed { s := raw("torn-forever", inline); s.sched = 1; return s }(),
		func() rpSeed { s := raw("changed-during-payload", inline); s.sched = 2 << 2; return s }(),
		func() rpSeed { s := raw("updated-during-payload", inline); s.sched = 3 << 2; return s }(),
		raw("signature-wrong", rpHeader("OTEL_CTZ", 2, n, 1000, ctx+otep.HeaderSize)),
		raw("version-1", rpHeader("OTEL_CTX", 1, n, 1000, ctx+otep.HeaderSize)),
		raw("version-999", rpHeader("OTEL_CTX", 999, n, 1000, ctx+otep.HeaderSize)),
		raw("size-0", rpHeader("OTEL_CTX", 2, 0, 1000, ctx+otep.HeaderSize)),
		raw("size-over-limit", rpHeader("OTEL_CTX", 2, 64<<10+1, 1000, ctx+otep.HeaderSize)),
		raw("size-4GiB", rpHeader("OTEL_CTX", 2, 1<<32-1, 1000, ctx+otep.HeaderSize)),
		raw("size-past-mapping", rpHeader("OTEL_CTX", 2, 0x2000, 1000, ctx+otep.HeaderSize)),
		raw("timestamp-0", rpHeader("OTEL_CTX", 2, n, 0, ctx+otep.HeaderSize)),
		raw("pointer-unmapped", rpHeader("OTEL_CTX", 2, n, 1000, 0x1000)),
		raw("pointer-null", rpHeader("OTEL_CTX", 2, n, 1000, 0)),
		raw("pointer-kernel", rpHeader("OTEL_CTX", 2, n, 1000, 0xffffffffffff0000)),
		raw("pointer-wraps", rpHeader("OTEL_CTX", 2, 100, 1000, 0xfffffffffffffff0)),
		raw("pointer-into-code", rpHeader("OTEL_CTX", 2, n, 1000, 0x55d0c8a02000)),
		raw("header-truncated", []byte("OTEL_CTX\x02\x00\x00\x00")),
		func() rpSeed {
			s := raw("payload-garbage", rpHeader("OTEL_CTX", 2, 200, 1000, ctx+otep.HeaderSize))
			s.payload = bytes.Repeat([]byte{0xff}, 200)
			return s
		}(),
		func() rpSeed {
			s := raw("payload-truncated", rpHeader("OTEL_CTX", 2, n-3, 1000, ctx+otep.HeaderSize))
			s.payload = payload[:n-3]
			return s
		}(),
		func() rpSeed {
			deep := payloadOf(keyValue("deep", deepArray(12)))
			s := raw("payload-deep", rpHeader("OTEL_CTX", 2, uint32(len(deep)), 1000, ctx+otep.HeaderSize))
			s.payload = deep
			return s
		}(),
		func() rpSeed {
			s := raw("header-at-mapping-end", inline)
			s.maps = []byte(rpLine(ctx, ctx+16, "rw-p", 7, "[anon:OTEL_CTX]"))
			return s
		}(),
		withMaps("maps-name-longer", rpLine(ctx, ctx+0x1000, "rw-p", 7, "[anon:OTEL_CTX2]")),
		withMaps("maps-name-trailing-space", rpLine(ctx, ctx+0x1000, "rw-p", 7, "[anon:OTEL_CTX] ")),
		withMaps("maps-name-in-path", rpLine(ctx, ctx+0x1000, "rw-p", 7, "/tmp/[anon:OTEL_CTX]")),
		withMaps("maps-executable", rpLine(ctx, ctx+0x1000, "r-xp", 7, "[anon:OTEL_CTX]")),
		withMaps("maps-unreadable", rpLine(ctx, ctx+0x1000, "---p", 7, "[anon:OTEL_CTX]")),
		withMaps("maps-uppercase-hex", fmt.Sprintf("%X-%X rw-p 00000000 00:01 7 [anon:OTEL_CTX]\n", ctx, ctx+0x1000)),
		withMaps("maps-17-digits", fmt.Sprintf("%017x-%017x rw-p 00000000 00:01 7 [anon:OTEL_CTX]\n", ctx, ctx+0x1000)),
		withMaps("maps-end-before-start", fmt.Sprintf("%x-%x rw-p 00000000 00:01 7 [anon:OTEL_CTX]\n", ctx+0x1000, ctx)),
		withMaps("maps-no-newline", strings.TrimSuffix(ctxLine, "\n")),
		withMaps("maps-crlf", strings.TrimSuffix(ctxLine, "\n")+"\r\n"),
		withMaps("maps-double-space", fmt.Sprintf("%x-%x rw-p 00000000  00:01 7 [anon:OTEL_CTX]\n", ctx, ctx+0x1000)),
		withMaps("maps-long-path", rpLine(0x1000, 0x2000, "r--p", 9, "/"+strings.Repeat("long/", 800)+"OTEL_CTX")+ctxLine),
		withMaps("maps-first-wins", rpLine(ctx, ctx+0x1000, "rw-p", 7, "/memfd:OTEL_CTX")+rpLine(ctx+0x10000, ctx+0x11000, "rw-p", 8, "[anon:OTEL_CTX]")),
		withMaps("maps-empty", ""),
		func() rpSeed { s := raw("maps-missing", inline); s.flags = rpFlagMapsMissing; return s }(),
		func() rpSeed { s := raw("maps-directory", inline); s.flags = rpFlagMapsDir; return s }(),
		func() rpSeed {
			s := raw("maps-over-budget", inline)
			s.flags = 6<<rpFillerShift | 2<<rpBudgetShift
			return s
		}(),

		honest("honest-inline-memfd", 0),
		func() rpSeed { s := honest("honest-heap-anon", rpFlagHeap); s.payloadAt |= 3; return s }(),
		func() rpSeed {
			s := honest("honest-after-hostile-line", rpFlagHonestLast)
			s.maps = []byte(ctxLine)
			return s
		}(),
		func() rpSeed {
			s := honest("honest-after-text", rpFlagHonestLast|rpFlagHeap)
			s.payloadAt |= 2
			return s
		}(),
		func() rpSeed {
			s := honest("honest-over-budget", rpFlagHonestLast)
			s.flags |= 5<<rpFillerShift | 1<<rpBudgetShift
			return s
		}(),
		honest("honest-anon-naming", rpFlagAnonNaming|3<<rpFillerShift),
		func() rpSeed { s := honest("honest-unchanged", 0); s.last = s.ts; return s }(),
		func() rpSeed { s := honest("honest-updated-mid-read", rpFlagHeap); s.sched = 1 | 3<<2; return s }(),
		func() rpSeed { s := honest("honest-updated-during-payload", 0); s.sched = 3 << 2; return s }(),
		func() rpSeed {
			s := honest("honest-too-many-attributes", rpFlagSmallLimits)
			s.payload = manyAttrs
			return s
		}(),
		func() rpSeed {
			s := honest("honest-too-large", rpFlagSmallLimits)
			s.payload = []byte("big\x00" + strings.Repeat("v", 600) + "\x00")
			return s
		}(),
		func() rpSeed { s := honest("honest-timestamp-max", 0); s.ts = 1<<64 - 1; s.sched = 2; return s }(),
	}
	return seeds
}
