// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep

import (
	"encoding/binary"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/processctx/otelcol-processctx/internal/fuzzseed"
)

// TestSeedCorpus keeps the committed seed corpora of this package's fuzz
// targets (testdata/fuzz/<FuzzName>) in step with the seeds below, on top
// of the f.Add seeds of each target (see internal/fuzzseed).
func TestSeedCorpus(t *testing.T) {
	t.Run("FuzzParseMapsLine", func(t *testing.T) {
		seeds := map[string][]any{}
		for name, line := range seedMapsLines() {
			seeds[name] = []any{[]byte(line)}
		}
		fuzzseed.Check(t, "FuzzParseMapsLine", seeds)
	})
	t.Run("FuzzParseHeader", func(t *testing.T) {
		seeds := map[string][]any{}
		for name, h := range seedHeaders(t) {
			seeds[name] = []any{h, uint32(64 << 10)}
		}
		seeds["tiny-limit"] = []any{seedHeader(Signature, Version, 80, 1, 0x2000), uint32(79)}
		seeds["limit-exact"] = []any{seedHeader(Signature, Version, 80, 1, 0x2000), uint32(80)}
		fuzzseed.Check(t, "FuzzParseHeader", seeds)
	})
	t.Run("FuzzDecodePayload", func(t *testing.T) {
		seeds := map[string][]any{}
		for name, p := range seedPayloads(t) {
			seeds[name] = []any{p, false}
			seeds[name+"-small-limits"] = []any{p, true}
		}
		fuzzseed.Check(t, "FuzzDecodePayload", seeds)
	})
}

// seedMapsLines are maps lines as kernels print them (the path padded to
// column 73), every context name, and near misses.
func seedMapsLines() map[string]string {
	line := func(start, end, perms, inode, path string) string {
		s := start + "-" + end + " " + perms + " 00000000 00:01 " + inode
		return s + strings.Repeat(" ", max(72-len(s), 0)) + " " + path
	}
	const lo, hi = "7f2b4c7d1000", "7f2b4c7d3000"
	return map[string]string{
		"memfd-deleted":      line(lo, hi, "rw-p", "2053", "/memfd:OTEL_CTX (deleted)"),
		"memfd":              line(lo, hi, "rw-p", "2053", "/memfd:OTEL_CTX"),
		"memfd-shared":       line(lo, hi, "rw-s", "2053", "/memfd:OTEL_CTX (deleted)"),
		"anon-shmem":         line(lo, hi, "rw-s", "2053", "[anon_shmem:OTEL_CTX]"),
		"anon":               line(lo, hi, "rw-p", "0", "[anon:OTEL_CTX]"),
		"read-only":          line(lo, hi, "r--p", "0", "[anon:OTEL_CTX]"),
		"executable":         line(lo, hi, "r-xp", "0", "[anon:OTEL_CTX]"),
		"unreadable":         line(lo, hi, "---p", "0", "[anon:OTEL_CTX]"),
		"name-longer":        line(lo, hi, "rw-p", "0", "[anon:OTEL_CTX2]"),
		"memfd-other":        line(lo, hi, "rw-p", "2053", "/memfd:OTEL_CTX_OTHER (deleted)"),
		"name-in-path":       line(lo, hi, "rw-p", "0", "/tmp/OTEL_CTX/[anon:OTEL_CTX]"),
		"trailing-space":     line(lo, hi, "rw-p", "0", "[anon:OTEL_CTX] "),
		"crlf":               line(lo, hi, "rw-p", "0", "[anon:OTEL_CTX]\r"),
		"no-padding":         lo + "-" + hi + " rw-p 00000000 00:01 2053 /memfd:OTEL_CTX (deleted)",
		"uppercase-hex":      "7F2B4C7D1000-7F2B4C7D3000 rw-p 00000000 00:01 2053 [anon:OTEL_CTX]",
		"high-addresses":     line("ffffffffff600000", "ffffffffff601000", "r--p", "0", "[anon:OTEL_CTX]"),
		"17-digit-address":   line("0"+lo, "0"+hi, "rw-p", "0", "[anon:OTEL_CTX]"),
		"end-before-start":   line(hi, lo, "rw-p", "0", "[anon:OTEL_CTX]"),
		"empty-range":        line(lo, lo, "rw-p", "0", "[anon:OTEL_CTX]"),
		"missing-fields":     lo + "-" + hi + " rw-p [anon:OTEL_CTX]",
		"long-path":          line(lo, hi, "r--p", "1315070", "/"+strings.Repeat("very-long-directory/", 200)+"OTEL_CTX.so"),
		"heap":               line("55d0c0a4e000", "55d0c0a6f000", "rw-p", "0", "[heap]"),
		"libc":               line("7f2b4c428000", "7f2b4c5bd000", "r-xp", "1315070", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
		"two-lines":          line("55d0c0a4e000", "55d0c0a6f000", "rw-p", "0", "[heap]") + "\n" + line(lo, hi, "rw-p", "2053", "/memfd:OTEL_CTX (deleted)") + "\n",
		"path-with-newline":  line(lo, hi, "rw-p", "2053", "/tmp/x\n"+lo+"-"+hi+" rw-p 00000000 00:01 2053 [anon:OTEL_CTX]"),
		"deleted-twice":      line(lo, hi, "rw-p", "2053", "/memfd:OTEL_CTX (deleted) (deleted)"),
		"only-the-signature": "OTEL_CTX",
	}
}

func seedHeader(sig string, version, size uint32, ts, payload uint64) []byte {
	b := make([]byte, HeaderSize)
	copy(b, sig)
	binary.LittleEndian.PutUint32(b[OffsetVersion:], version)
	binary.LittleEndian.PutUint32(b[OffsetPayloadSize:], size)
	binary.LittleEndian.PutUint64(b[OffsetPublishedAt:], ts)
	binary.LittleEndian.PutUint64(b[OffsetPayloadAddress:], payload)
	return b
}

// seedHeaders are the spec's test vector, headers as publishers write them
// (inline payload, payload on the heap, being updated), and hostile ones.
func seedHeaders(t testing.TB) map[string][]byte {
	return map[string][]byte{
		"spec-vector":      mustHex(t, headerVector),
		"inline":           seedHeader(Signature, Version, 223, 1_234_567_890_123, 0x7f2b4c7d1000+HeaderSize),
		"heap":             seedHeader(Signature, Version, 4096, 98_765_432_100, 0x55d0c0a4e2a0),
		"being-updated":    seedHeader(Signature, Version, 223, 0, 0x7f2b4c7d1000+HeaderSize),
		"version-1":        seedHeader(Signature, 1, 223, 1, 0x2000),
		"version-3":        seedHeader(Signature, 3, 223, 1, 0x2000),
		"size-0":           seedHeader(Signature, Version, 0, 1, 0x2000),
		"size-over-limit":  seedHeader(Signature, Version, 64<<10+1, 1, 0x2000),
		"size-4GiB":        seedHeader(Signature, Version, 1<<32-1, 1, 0x2000),
		"signature-nul":    seedHeader("OTEL_CT\x00", Version, 80, 1, 0x2000),
		"signature-lower":  seedHeader("otel_ctx", Version, 80, 1, 0x2000),
		"big-endian":       {'O', 'T', 'E', 'L', '_', 'C', 'T', 'X', 0, 0, 0, 2, 0, 0, 0, 80, 0, 0, 0, 0, 7, 0x5b, 0xcd, 0x15, 0, 0, 0, 0, 0, 0, 0x20, 0},
		"truncated":        mustHex(t, headerVector)[:HeaderSize-1],
		"trailing-bytes":   append(mustHex(t, headerVector), "payload follows"...),
		"pointer-max":      seedHeader(Signature, Version, 80, 1<<64-1, 1<<64-1),
		"zeros":            make([]byte, HeaderSize),
		"signature-only":   []byte(Signature),
		"empty":            {},
		"kernel-pointer":   seedHeader(Signature, Version, 80, 1, 0xffffffffff600000),
		"timestamp-max":    seedHeader(Signature, Version, 80, 1<<64-1, 0x2000),
		"size-limit-exact": seedHeader(Signature, Version, 64<<10, 1, 0x2000),
	}
}

// seedPayloads are encoder output (every value kind, the attributes of
// OTEP 4947), the spec's vector, and malformed or over-limit protobuf.
func seedPayloads(t testing.TB) map[string][]byte {
	enc := func(fill func(res, attrs pcommon.Map)) []byte {
		res, attrs := pcommon.NewMap(), pcommon.NewMap()
		fill(res, attrs)
		b, err := Encode(res, attrs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	spec := mustHex(t, "0a1e0a1c0a0c736572766963652e6e616d65120c0a0a6d792d73657276696365122e0a1a7468726561646c6f63616c2e736368656d615f76657273696f6e12100a0e746c73646573635f76315f646576")
	allKinds := enc(func(res, attrs pcommon.Map) {
		res.PutStr("service.name", "checkout")
		res.PutStr("service.instance.id", "627cc493-f310-47de-96bd-71410b7dec09")
		res.PutStr("deployment.environment.name", "prod")
		res.PutInt("process.pid", 4242)
		res.PutBool("debug", true)
		res.PutDouble("ratio", 0.25)
		res.PutEmptyBytes("blob").FromRaw([]byte{0, 1, 2, 0xff})
		s := res.PutEmptySlice("list")
		s.AppendEmpty().SetStr("a")
		s.AppendEmpty().SetInt(1)
		m := res.PutEmptyMap("nested")
		m.PutStr("k", "v")
		m.PutEmptySlice("empty")
		attrs.PutStr("threadlocal.schema_version", "tlsdesc_v1_dev")
		keys := attrs.PutEmptySlice("threadlocal.attribute_key_map")
		for _, k := range []string{"http.route", "user.id", "tenant"} {
			keys.AppendEmpty().SetStr(k)
		}
	})
	bytesField := func(num protowire.Number, b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	kv := func(key string, value []byte) []byte {
		return append(bytesField(1, []byte(key)), bytesField(2, value)...)
	}
	deep := bytesField(1, []byte("x"))
	for range 12 {
		deep = bytesField(5, bytesField(1, deep)) // AnyValue{array_value{values: deep}}
	}
	var many []byte
	for range 40 {
		many = append(many, bytesField(2, kv("k", bytesField(1, []byte("v"))))...)
	}
	return map[string][]byte{
		"spec-vector":        spec,
		"all-kinds":          allKinds,
		"empty-resource":     enc(func(pcommon.Map, pcommon.Map) {}),
		"service-only":       EncodeStrings(map[string]string{"service.name": "demo-checkout"}),
		"empty":              {},
		"truncated":          allKinds[:len(allKinds)/2],
		"trailing-garbage":   append(append([]byte{}, spec...), 0xff),
		"length-past-end":    {0x0a, 0x7f, 0x0a},
		"field-0":            {0x00},
		"reserved-wire-type": {0x0f},
		"wrong-wire-type":    {0x08, 0x01},
		"unknown-fields":     append(protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 7), spec...),
		"deep-12":            bytesField(1, bytesField(1, kv("deep", deep))),
		"many-attributes":    many,
		"long-key":           bytesField(2, kv(strings.Repeat("k", 300), bytesField(1, []byte("v")))),
		"long-value":         bytesField(2, kv("k", bytesField(1, []byte(strings.Repeat("v", 17<<10))))),
		"invalid-utf8-key":   bytesField(2, kv("k\xff", bytesField(1, nil))),
		"duplicate-keys":     append(bytesField(2, kv("k", bytesField(1, []byte("1")))), bytesField(2, kv("k", bytesField(1, []byte("2"))))...),
		"varint-overflow":    {0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"group":              {0x0b, 0x0c},
	}
}
