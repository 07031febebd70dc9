// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/processctx/otelcol-processctx/internal/otep"
)

// The SPEC.md test vector: resource{service.name="my-service"} +
// attributes{threadlocal.schema_version="tlsdesc_v1_dev"}.
const decSpecVectorHex = "0a 1e 0a 1c 0a 0c 73 65 72 76 69 63 65 2e 6e 61 6d 65 12 0c 0a 0a 6d 79 2d 73 65 72 76 69 63 65 12 2e 0a 1a 74 68 72 65 61 64 6c 6f 63 61 6c 2e 73 63 68 65 6d 61 5f 76 65 72 73 69 6f 6e 12 10 0a 0e 74 6c 73 64 65 73 63 5f 76 31 5f 64 65 76"

func decSpecVector(t testing.TB) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(decSpecVectorHex, " ", ""))
	require.NoError(t, err)
	return b
}

// --- independent encoding with the generated OTLP types ---

func decStr(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

func decBool(b bool) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}
}

func decInt(i int64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}
}

func decDouble(f float64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
}

func decBytes(b []byte) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: b}}
}

func decArray(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
}

func decKvlist(kvs ...*commonpb.KeyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: kvs}}}
}

func decKV(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}

// decEncode builds a ProcessContext payload: field 1 around the marshaled
// Resource (omitted if nil), field 2 around each marshaled KeyValue.
func decEncode(t testing.TB, res *resourcepb.Resource, attrs ...*commonpb.KeyValue) []byte {
	t.Helper()
	var out []byte
	if res != nil {
		b, err := proto.Marshal(res)
		require.NoError(t, err)
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, b)
	}
	for _, kv := range attrs {
		b, err := proto.Marshal(kv)
		require.NoError(t, err)
		out = protowire.AppendTag(out, 2, protowire.BytesType)
		out = protowire.AppendBytes(out, b)
	}
	return out
}

// --- raw protobuf building blocks ---

func decLen(num protowire.Number, parts ...[]byte) []byte {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendBytes(b, bytes.Join(parts, nil))
}

func decVarint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func decFixed64(num protowire.Number, v uint64) []byte {
	return protowire.AppendFixed64(protowire.AppendTag(nil, num, protowire.Fixed64Type), v)
}

func decCat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// decUnknown is an unknown field 99 of each wire type (including a group).
func decUnknown() []byte {
	b := decVarint(99, 12345)
	b = append(b, decFixed64(99, 7)...)
	b = protowire.AppendFixed32(protowire.AppendTag(b, 99, protowire.Fixed32Type), 7)
	b = append(b, decLen(99, []byte("ignored"))...)
	b = protowire.AppendTag(b, 99, protowire.StartGroupType)
	b = append(b, decVarint(1, 1)...)
	b = protowire.AppendTag(b, 99, protowire.EndGroupType)
	return b
}

// --- comparison: ordered, doubles compared bitwise ---

func decDiffMap(want, got pcommon.Map, path string) string {
	if want.Len() != got.Len() {
		return fmt.Sprintf("%s: %d entries, want %d (got %v, want %v)", path, got.Len(), want.Len(), got.AsRaw(), want.AsRaw())
	}
	var wk, gk []string
	var wv, gv []pcommon.Value
	for k, v := range want.All() {
		wk, wv = append(wk, k), append(wv, v)
	}
	for k, v := range got.All() {
		gk, gv = append(gk, k), append(gv, v)
	}
	for i := range wk {
		if wk[i] != gk[i] {
			return fmt.Sprintf("%s: key #%d is %q, want %q", path, i, gk[i], wk[i])
		}
		if d := decDiffValue(wv[i], gv[i], path+"."+wk[i]); d != "" {
			return d
		}
	}
	return ""
}

func decDiffValue(want, got pcommon.Value, path string) string {
	if want.Type() != got.Type() {
		return fmt.Sprintf("%s: type %v, want %v", path, got.Type(), want.Type())
	}
	switch want.Type() {
	case pcommon.ValueTypeStr:
		if want.Str() != got.Str() {
			return fmt.Sprintf("%s: %q, want %q", path, got.Str(), want.Str())
		}
	case pcommon.ValueTypeBool:
		if want.Bool() != got.Bool() {
			return fmt.Sprintf("%s: %v, want %v", path, got.Bool(), want.Bool())
		}
	case pcommon.ValueTypeInt:
		if want.Int() != got.Int() {
			return fmt.Sprintf("%s: %d, want %d", path, got.Int(), want.Int())
		}
	case pcommon.ValueTypeDouble:
		if math.Float64bits(want.Double()) != math.Float64bits(got.Double()) {
			return fmt.Sprintf("%s: %v, want %v", path, got.Double(), want.Double())
		}
	case pcommon.ValueTypeBytes:
		if !bytes.Equal(want.Bytes().AsRaw(), got.Bytes().AsRaw()) {
			return fmt.Sprintf("%s: %x, want %x", path, got.Bytes().AsRaw(), want.Bytes().AsRaw())
		}
	case pcommon.ValueTypeSlice:
		ws, gs := want.Slice(), got.Slice()
		if ws.Len() != gs.Len() {
			return fmt.Sprintf("%s: %d elements, want %d", path, gs.Len(), ws.Len())
		}
		for i := range ws.Len() {
			if d := decDiffValue(ws.At(i), gs.At(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
	case pcommon.ValueTypeMap:
		return decDiffMap(want.Map(), got.Map(), path)
	}
	return ""
}

func decRequireSame(t *testing.T, want, got pcommon.Map, what string) {
	t.Helper()
	if d := decDiffMap(want, got, what); d != "" {
		t.Fatalf("%s\n got: %v\nwant: %v", d, got.AsRaw(), want.AsRaw())
	}
}

func decDecode(t *testing.T, payload []byte, limits otep.Limits) (pcommon.Map, pcommon.Map) {
	t.Helper()
	res, attrs := pcommon.NewMap(), pcommon.NewMap()
	require.NoError(t, otep.DecodePayload(payload, limits, res, attrs))
	return res, attrs
}

func TestDecodePayloadSpecVector(t *testing.T) {
	payload := decSpecVector(t)
	require.Len(t, payload, 80)

	res, attrs := pcommon.NewMap(), pcommon.NewMap()
	// Stale contents must go.
	res.PutStr("stale", "x")
	attrs.PutStr("stale", "x")
	require.NoError(t, otep.DecodePayload(payload, otep.DefaultLimits(), res, attrs))

	assert.Equal(t, map[string]any{"service.name": "my-service"}, res.AsRaw())
	assert.Equal(t, map[string]any{"threadlocal.schema_version": "tlsdesc_v1_dev"}, attrs.AsRaw())
	_, ok := res.Get("threadlocal.schema_version")
	assert.False(t, ok, "threadlocal.schema_version must not be a resource attribute")

	// The independent encoder produces the same bytes.
	again := decEncode(t, &resourcepb.Resource{Attributes: []*commonpb.KeyValue{decKV("service.name", decStr("my-service"))}},
		decKV("threadlocal.schema_version", decStr("tlsdesc_v1_dev")))
	assert.Equal(t, payload, again)
}

// decRoundTrip returns the payload covering every AnyValue kind and the maps
// it must decode to.
func decRoundTrip(t testing.TB) (payload []byte, wantRes, wantAttrs pcommon.Map) {
	t.Helper()
	res := &resourcepb.Resource{
		Attributes: []*commonpb.KeyValue{
			decKV("service.name", decStr("my-service")),
			decKV("str.empty", decStr("")),
			decKV("str.utf8", decStr("héllo, 世界")),
			decKV("bool.true", decBool(true)),
			decKV("bool.false", decBool(false)),
			decKV("int.zero", decInt(0)),
			decKV("int.neg", decInt(-42)),
			decKV("int.max", decInt(math.MaxInt64)),
			decKV("int.min", decInt(math.MinInt64)),
			decKV("double", decDouble(3.25)),
			decKV("double.neg", decDouble(-0.5)),
			decKV("double.inf", decDouble(math.Inf(-1))),
			decKV("bytes", decBytes([]byte{0, 1, 2, 0xff})),
			decKV("bytes.empty", decBytes(nil)),
			decKV("empty.novalue", nil),
			decKV("empty.anyvalue", &commonpb.AnyValue{}),
			decKV("array", decArray(
				decStr("a"), decBool(true), decInt(-7), decDouble(1.5), decBytes([]byte("xy")),
				&commonpb.AnyValue{}, decArray(decInt(1), decInt(2)), decKvlist(decKV("k", decStr("v"))),
			)),
			decKV("array.empty", decArray()),
			decKV("kvlist", decKvlist(
				decKV("l1", decKvlist(
					decKV("l2", decKvlist(
						decKV("l3", decStr("deep")),
						decKV("n", decInt(3)),
					)),
				)),
				decKV("x", decDouble(1)),
			)),
			decKV("kvlist.empty", decKvlist()),
			decKV("", decStr("empty key")),
		},
		DroppedAttributesCount: 3,
	}
	keyMap := make([]*commonpb.AnyValue, 0, 4)
	for _, k := range []string{"trace_id", "span_id", "http.route", "user.id"} {
		keyMap = append(keyMap, decStr(k))
	}
	payload = decEncode(t, res,
		decKV("threadlocal.schema_version", decStr("tlsdesc_v1_dev")),
		decKV("threadlocal.attribute_key_map", decArray(keyMap...)),
		decKV("pid", decInt(4242)),
	)

	wantRes = pcommon.NewMap()
	wantRes.PutStr("service.name", "my-service")
	wantRes.PutStr("str.empty", "")
	wantRes.PutStr("str.utf8", "héllo, 世界")
	wantRes.PutBool("bool.true", true)
	wantRes.PutBool("bool.false", false)
	wantRes.PutInt("int.zero", 0)
	wantRes.PutInt("int.neg", -42)
	wantRes.PutInt("int.max", math.MaxInt64)
	wantRes.PutInt("int.min", math.MinInt64)
	wantRes.PutDouble("double", 3.25)
	wantRes.PutDouble("double.neg", -0.5)
	wantRes.PutDouble("double.inf", math.Inf(-1))
	wantRes.PutEmptyBytes("bytes").FromRaw([]byte{0, 1, 2, 0xff})
	wantRes.PutEmptyBytes("bytes.empty")
	wantRes.PutEmpty("empty.novalue")
	wantRes.PutEmpty("empty.anyvalue")
	arr := wantRes.PutEmptySlice("array")
	arr.AppendEmpty().SetStr("a")
	arr.AppendEmpty().SetBool(true)
	arr.AppendEmpty().SetInt(-7)
	arr.AppendEmpty().SetDouble(1.5)
	arr.AppendEmpty().SetEmptyBytes().FromRaw([]byte("xy"))
	arr.AppendEmpty()
	inner := arr.AppendEmpty().SetEmptySlice()
	inner.AppendEmpty().SetInt(1)
	inner.AppendEmpty().SetInt(2)
	arr.AppendEmpty().SetEmptyMap().PutStr("k", "v")
	wantRes.PutEmptySlice("array.empty")
	kvl := wantRes.PutEmptyMap("kvlist")
	l2 := kvl.PutEmptyMap("l1").PutEmptyMap("l2")
	l2.PutStr("l3", "deep")
	l2.PutInt("n", 3)
	kvl.PutDouble("x", 1)
	wantRes.PutEmptyMap("kvlist.empty")
	wantRes.PutStr("", "empty key")

	wantAttrs = pcommon.NewMap()
	wantAttrs.PutStr("threadlocal.schema_version", "tlsdesc_v1_dev")
	km := wantAttrs.PutEmptySlice("threadlocal.attribute_key_map")
	for _, k := range []string{"trace_id", "span_id", "http.route", "user.id"} {
		km.AppendEmpty().SetStr(k)
	}
	wantAttrs.PutInt("pid", 4242)
	return payload, wantRes, wantAttrs
}

func TestDecodePayloadRoundTrip(t *testing.T) {
	payload, wantRes, wantAttrs := decRoundTrip(t)
	res, attrs := decDecode(t, payload, otep.DefaultLimits())
	decRequireSame(t, wantRes, res, "resource")
	decRequireSame(t, wantAttrs, attrs, "attributes")
	assert.True(t, wantRes.Equal(res))
	assert.True(t, wantAttrs.Equal(attrs))

	// The payload buffer is reused by callers: nothing may alias it.
	for i := range payload {
		payload[i] = 0xAA
	}
	decRequireSame(t, wantRes, res, "resource after the payload was overwritten")
	decRequireSame(t, wantAttrs, attrs, "attributes after the payload was overwritten")
}

func TestDecodePayloadSemantics(t *testing.T) {
	// kv builds a raw KeyValue message body.
	kv := func(k string, value ...[]byte) []byte {
		b := decLen(1, []byte(k))
		for _, v := range value {
			b = append(b, decLen(2, v)...)
		}
		return b
	}
	sv := func(s string) []byte { return decLen(1, []byte(s)) } // AnyValue{string_value}
	iv := func(i int64) []byte { return decVarint(3, uint64(i)) }

	type want struct {
		res, attrs map[string]any
	}
	tests := []struct {
		name    string
		payload []byte
		want    want
	}{
		{
			name:    "empty payload",
			payload: nil,
			want:    want{map[string]any{}, map[string]any{}},
		},
		{
			name:    "empty resource",
			payload: decLen(1),
			want:    want{map[string]any{}, map[string]any{}},
		},
		{
			name: "duplicate resource key: last wins",
			payload: decLen(1,
				decLen(1, kv("a", sv("1"))), decLen(1, kv("b", sv("2"))), decLen(1, kv("a", iv(3)))),
			want: want{map[string]any{"a": int64(3), "b": "2"}, map[string]any{}},
		},
		{
			name:    "duplicate attribute key: last wins",
			payload: decCat(decLen(2, kv("a", sv("1"))), decLen(2, kv("a", sv("2")))),
			want:    want{map[string]any{}, map[string]any{"a": "2"}},
		},
		{
			name: "duplicate kvlist key: last wins",
			payload: decLen(2, kv("m", decLen(6,
				decLen(1, kv("k", sv("first"))), decLen(1, kv("j", sv("x"))), decLen(1, kv("k", sv("last")))))),
			want: want{map[string]any{}, map[string]any{"m": map[string]any{"k": "last", "j": "x"}}},
		},
		{
			name:    "same key in resource and attributes stays apart",
			payload: decCat(decLen(2, kv("k", sv("attr"))), decLen(1, decLen(1, kv("k", sv("res"))))),
			want:    want{map[string]any{"k": "res"}, map[string]any{"k": "attr"}},
		},
		{
			name: "multiple resources are merged",
			payload: decCat(
				decLen(1, decLen(1, kv("a", sv("1")))),
				decLen(2, kv("x", sv("attr"))),
				decLen(1, decLen(1, kv("b", sv("2"))), decLen(1, kv("a", sv("3"))))),
			want: want{map[string]any{"a": "3", "b": "2"}, map[string]any{"x": "attr"}},
		},
		{
			name:    "key after value",
			payload: decLen(2, decCat(decLen(2, sv("v")), decLen(1, []byte("k")))),
			want:    want{map[string]any{}, map[string]any{"k": "v"}},
		},
		{
			name:    "last key of a KeyValue wins",
			payload: decLen(2, decCat(decLen(1, []byte("k1")), decLen(2, sv("v")), decLen(1, []byte("k2")))),
			want:    want{map[string]any{}, map[string]any{"k2": "v"}},
		},
		{
			name:    "KeyValue without key or value",
			payload: decLen(2),
			want:    want{map[string]any{}, map[string]any{"": nil}},
		},
		{
			name:    "oneof: last field wins",
			payload: decLen(2, kv("k", decCat(sv("s"), iv(5), decVarint(2, 1)))),
			want:    want{map[string]any{}, map[string]any{"k": true}},
		},
		{
			name:    "oneof: array then string then array",
			payload: decLen(2, kv("k", decCat(decLen(5, decLen(1, iv(1))), sv("s"), decLen(5, decLen(1, iv(2)))))),
			want:    want{map[string]any{}, map[string]any{"k": []any{int64(2)}}},
		},
		{
			name:    "oneof: repeated array_value fields merge",
			payload: decLen(2, kv("k", decCat(decLen(5, decLen(1, iv(1))), decLen(5, decLen(1, iv(2)))))),
			want:    want{map[string]any{}, map[string]any{"k": []any{int64(1), int64(2)}}},
		},
		{
			name: "oneof: repeated kvlist_value fields merge",
			payload: decLen(2, kv("k", decCat(
				decLen(6, decLen(1, kv("a", iv(1)))), decLen(6, decLen(1, kv("b", iv(2))), decLen(1, kv("a", iv(3))))))),
			want: want{map[string]any{}, map[string]any{"k": map[string]any{"a": int64(3), "b": int64(2)}}},
		},
		{
			name:    "repeated value fields of a KeyValue merge",
			payload: decLen(2, kv("k", decLen(5, decLen(1, iv(1))), decLen(5, decLen(1, iv(2))))),
			want:    want{map[string]any{}, map[string]any{"k": []any{int64(1), int64(2)}}},
		},
		{
			name:    "repeated value fields of a KeyValue: scalar replaces",
			payload: decLen(2, kv("k", sv("a"), iv(9))),
			want:    want{map[string]any{}, map[string]any{"k": int64(9)}},
		},
		{
			name:    "bool from any non-zero varint",
			payload: decLen(2, kv("k", decVarint(2, 300))),
			want:    want{map[string]any{}, map[string]any{"k": true}},
		},
		{
			name: "dropped_attributes_count and entity_refs ignored",
			payload: decLen(1, decVarint(2, 7), decLen(3, decLen(1, []byte("service"))),
				decLen(1, kv("a", sv("1")))),
			want: want{map[string]any{"a": "1"}, map[string]any{}},
		},
		{
			name:    "invalid UTF-8 accepted as is",
			payload: decLen(2, kv("k\xff", sv("v\xfe"))),
			want:    want{map[string]any{}, map[string]any{"k\xff": "v\xfe"}},
		},
		{
			name: "unknown fields at every level are skipped",
			payload: decCat(
				decUnknown(),
				decLen(1, decUnknown(), decLen(1, decUnknown(), kv("a", decCat(decUnknown(), sv("1")))), decUnknown()),
				decLen(2, decCat(decUnknown(), kv("arr", decCat(
					decLen(5, decUnknown(), decLen(1, decUnknown(), iv(1)), decUnknown()),
					decUnknown())), decUnknown())),
				decLen(2, kv("m", decLen(6, decUnknown(), decLen(1, kv("x", sv("y")), decUnknown()), decUnknown()))),
				decUnknown(),
			),
			want: want{map[string]any{"a": "1"}, map[string]any{"arr": []any{int64(1)}, "m": map[string]any{"x": "y"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, attrs := decDecode(t, tt.payload, otep.DefaultLimits())
			assert.Equal(t, tt.want.res, res.AsRaw(), "resource")
			assert.Equal(t, tt.want.attrs, attrs.AsRaw(), "attributes")
		})
	}
}

// TestDecodePayloadUnknownFieldsGenerated adds an unknown field 99 to every
// message of the round-trip payload through the generated types.
func TestDecodePayloadUnknownFieldsGenerated(t *testing.T) {
	unknown := decUnknown()
	var addAny func(v *commonpb.AnyValue)
	addKV := func(kv *commonpb.KeyValue) {
		kv.ProtoReflect().SetUnknown(unknown)
		if kv.Value != nil {
			addAny(kv.Value)
		}
	}
	addAny = func(v *commonpb.AnyValue) {
		v.ProtoReflect().SetUnknown(unknown)
		switch x := v.Value.(type) {
		case *commonpb.AnyValue_ArrayValue:
			x.ArrayValue.ProtoReflect().SetUnknown(unknown)
			for _, e := range x.ArrayValue.Values {
				addAny(e)
			}
		case *commonpb.AnyValue_KvlistValue:
			x.KvlistValue.ProtoReflect().SetUnknown(unknown)
			for _, e := range x.KvlistValue.Values {
				addKV(e)
			}
		}
	}
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		decKV("a", decArray(decStr("x"), decKvlist(decKV("b", decKvlist(decKV("c", decInt(1))))))),
		decKV("d", nil),
	}}
	res.ProtoReflect().SetUnknown(unknown)
	for _, kv := range res.Attributes {
		addKV(kv)
	}
	attr := decKV("e", decArray(decArray(decBool(true))))
	addKV(attr)
	payload := decCat(unknown, decEncode(t, res, attr), unknown)
	require.Greater(t, bytes.Count(payload, []byte("ignored")), 10)

	got, gotAttrs := decDecode(t, payload, otep.DefaultLimits())
	assert.Equal(t, map[string]any{
		"a": []any{"x", map[string]any{"b": map[string]any{"c": int64(1)}}},
		"d": nil,
	}, got.AsRaw())
	assert.Equal(t, map[string]any{"e": []any{[]any{true}}}, gotAttrs.AsRaw())
}

func TestDecodePayloadLimits(t *testing.T) {
	limits := otep.Limits{
		MaxPayloadSize: 1 << 20,
		MaxAttributes:  10,
		MaxDepth:       3,
		MaxKeyLength:   8,
		MaxValueLength: 16,
	}
	kv := func(k string, v *commonpb.AnyValue) []byte { return decEncode(t, nil, decKV(k, v)) }
	nkv := func(n int) []byte {
		var b []byte
		for i := range n {
			b = append(b, kv(fmt.Sprint("k", i), decInt(int64(i)))...)
		}
		return b
	}
	nested := func(depth int) *commonpb.AnyValue { // depth levels of values
		v := decStr("leaf")
		for range depth - 1 {
			v = decArray(v)
		}
		return v
	}
	nestedKvlist := func(depth int) *commonpb.AnyValue {
		v := decStr("leaf")
		for range depth - 1 {
			v = decKvlist(decKV("k", v))
		}
		return v
	}
	tests := []struct {
		name    string
		payload []byte
		tooBig  bool
	}{
		{"attributes at the limit", nkv(10), false},
		{"attributes over the limit", nkv(11), true},
		{"attributes counted over resource and attributes",
			decCat(decEncode(t, &resourcepb.Resource{Attributes: []*commonpb.KeyValue{decKV("r", decInt(1))}}), nkv(10)), true},
		{"array elements count", kv("a", decArray(decInt(1), decInt(2), decInt(3), decInt(4), decInt(5),
			decInt(6), decInt(7), decInt(8), decInt(9))), false},
		{"array elements over the limit", kv("a", decArray(decInt(1), decInt(2), decInt(3), decInt(4), decInt(5),
			decInt(6), decInt(7), decInt(8), decInt(9), decInt(10))), true},
		{"kvlist entries count", kv("a", decKvlist(decKV("1", nil), decKV("2", nil), decKV("3", nil),
			decKV("4", nil), decKV("5", nil), decKV("6", nil), decKV("7", nil), decKV("8", nil), decKV("9", nil))), false},
		{"kvlist entries over the limit", kv("a", decKvlist(decKV("1", nil), decKV("2", nil), decKV("3", nil),
			decKV("4", nil), decKV("5", nil), decKV("6", nil), decKV("7", nil), decKV("8", nil), decKV("9", nil),
			decKV("10", nil))), true},
		{"duplicates count", decCat(nkv(5), nkv(6)), true},
		{"depth at the limit (array)", kv("a", nested(3)), false},
		{"depth over the limit (array)", kv("a", nested(4)), true},
		{"depth at the limit (kvlist)", kv("a", nestedKvlist(3)), false},
		{"depth over the limit (kvlist)", kv("a", nestedKvlist(4)), true},
		{"empty element over the depth limit", kv("a", decArray(decArray(decArray(&commonpb.AnyValue{})))), true},
		{"kvlist entry without value over the depth limit", kv("a", decArray(decArray(decKvlist(decKV("k", nil))))), true},
		{"empty array at the depth limit", kv("a", decArray(decArray(decArray()))), false},
		{"key at the limit", kv("12345678", nil), false},
		{"key over the limit", kv("123456789", nil), true},
		{"nested key over the limit", kv("a", decKvlist(decKV("123456789", nil))), true},
		{"resource key over the limit", decEncode(t, &resourcepb.Resource{Attributes: []*commonpb.KeyValue{decKV("123456789", nil)}}), true},
		{"string at the limit", kv("a", decStr(strings.Repeat("x", 16))), false},
		{"string over the limit", kv("a", decStr(strings.Repeat("x", 17))), true},
		{"bytes at the limit", kv("a", decBytes(make([]byte, 16))), false},
		{"bytes over the limit", kv("a", decBytes(make([]byte, 17))), true},
		{"nested string over the limit", kv("a", decArray(decStr(strings.Repeat("x", 17)))), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, attrs := pcommon.NewMap(), pcommon.NewMap()
			err := otep.DecodePayload(tt.payload, limits, res, attrs)
			if !tt.tooBig {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, otep.ErrTooLarge)
			assert.NotErrorIs(t, err, otep.ErrInvalid)
			assert.Zero(t, res.Len(), "resource must be empty on error")
			assert.Zero(t, attrs.Len(), "attributes must be empty on error")
		})
	}
}

// decDeepArray returns a payload with one attribute whose value is an array
// nested depth levels deep, built outside-in without quadratic copying.
func decDeepArray(depth int) []byte {
	// sizes[i]: size of the AnyValue at level i (0 = outermost).
	sizes := make([]int, depth)
	sizes[depth-1] = 0 // innermost: empty AnyValue
	for i := depth - 2; i >= 0; i-- {
		arr := protowire.SizeTag(1) + protowire.SizeBytes(sizes[i+1]) // ArrayValue{values: [inner]}
		sizes[i] = protowire.SizeTag(5) + protowire.SizeBytes(arr)    // AnyValue{array_value}
	}
	kv := protowire.SizeTag(1) + protowire.SizeBytes(1) + protowire.SizeTag(2) + protowire.SizeBytes(sizes[0])
	b := protowire.AppendTag(nil, 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(kv))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte("k"))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(sizes[0]))
	for i := 0; i < depth-1; i++ {
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(protowire.SizeTag(1)+protowire.SizeBytes(sizes[i+1])))
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizes[i+1]))
	}
	return b
}

func TestDecodePayloadErrors(t *testing.T) {
	big := otep.DefaultLimits()
	big.MaxPayloadSize = 16 << 20

	manyAttrs := func(n int) []byte {
		var b []byte
		for i := range n {
			b = append(b, decLen(2, decLen(1, []byte(fmt.Sprint("k", i))))...)
		}
		return b
	}
	valid := decSpecVector(t)
	kv := func(k string, value []byte) []byte { return decCat(decLen(1, []byte(k)), decLen(2, value)) }

	tests := []struct {
		name    string
		payload []byte
		limits  otep.Limits
		want    error
	}{
		{"garbage", []byte("this is not a protobuf payload at all \xff\xff\xff"), otep.DefaultLimits(), otep.ErrInvalid},
		{"all 0xff", bytes.Repeat([]byte{0xff}, 64), otep.DefaultLimits(), otep.ErrInvalid},
		{"field number 0", []byte{0x00, 0x00}, otep.DefaultLimits(), otep.ErrInvalid},
		{"field number too large", protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3), otep.DefaultLimits(), otep.ErrInvalid},
		{"reserved wire type 6", []byte{0x0e}, otep.DefaultLimits(), otep.ErrInvalid},
		{"reserved wire type 7", []byte{0x0f}, otep.DefaultLimits(), otep.ErrInvalid},
		{"lone end group", protowire.AppendTag(nil, 9, protowire.EndGroupType), otep.DefaultLimits(), otep.ErrInvalid},
		{"unterminated group", protowire.AppendTag(nil, 9, protowire.StartGroupType), otep.DefaultLimits(), otep.ErrInvalid},
		{"mismatched end group", decCat(protowire.AppendTag(nil, 9, protowire.StartGroupType),
			protowire.AppendTag(nil, 8, protowire.EndGroupType)), otep.DefaultLimits(), otep.ErrInvalid},
		{"truncated varint", []byte{0x08, 0x80}, otep.DefaultLimits(), otep.ErrInvalid},
		{"varint overflow", decCat([]byte{0x08}, bytes.Repeat([]byte{0xff}, 10), []byte{0x01}), otep.DefaultLimits(), otep.ErrInvalid},
		{"length past the end", []byte{0x0a, 0x05, 0x0a}, otep.DefaultLimits(), otep.ErrInvalid},
		{"huge length", protowire.AppendVarint([]byte{0x12}, math.MaxUint64>>1), otep.DefaultLimits(), otep.ErrInvalid},
		{"nested length past its message", decLen(2, []byte{0x0a, 0x7f, 'k'}), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: ProcessContext.resource", decVarint(1, 1), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: ProcessContext.attributes", decFixed64(2, 1), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: Resource.attributes", decLen(1, decVarint(1, 1)), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: Resource.dropped_attributes_count", decLen(1, decLen(2)), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: Resource.entity_refs", decLen(1, decVarint(3, 0)), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: KeyValue.key", decLen(2, decVarint(1, 1)), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: KeyValue.value", decLen(2, decVarint(2, 1)), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: string_value", decLen(2, kv("k", decVarint(1, 1))), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: bool_value", decLen(2, kv("k", decLen(2))), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: int_value", decLen(2, kv("k", decFixed64(3, 1))), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: double_value", decLen(2, kv("k", decVarint(4, 1))), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: array_value", decLen(2, kv("k", decVarint(5, 1))), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: kvlist_value", decLen(2, kv("k", decVarint(6, 1))), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: bytes_value", decLen(2, kv("k", decVarint(7, 1))), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: ArrayValue.values", decLen(2, kv("k", decLen(5, decVarint(1, 1)))), otep.DefaultLimits(), otep.ErrInvalid},
		{"wrong wire type: KeyValueList.values", decLen(2, kv("k", decLen(6, decVarint(1, 1)))), otep.DefaultLimits(), otep.ErrInvalid},
		{"malformed deep inside", decLen(1, decLen(1, kv("k", decLen(6, decLen(1, kv("j", decLen(5, []byte{0x0a, 0x09}))))))), otep.DefaultLimits(), otep.ErrInvalid},
		{"valid then garbage", decCat(valid, []byte{0xff}), otep.DefaultLimits(), otep.ErrInvalid},
		{"unknown groups nested 100,000 deep", decCat(
			bytes.Repeat(protowire.AppendTag(nil, 9, protowire.StartGroupType), 100_000),
			bytes.Repeat(protowire.AppendTag(nil, 9, protowire.EndGroupType), 100_000)), big, otep.ErrInvalid},
		{"nesting 10,000 deep", decDeepArray(10_000), big, otep.ErrTooLarge},
		{"100,000 attributes", manyAttrs(100_000), big, otep.ErrTooLarge},
		{"key of 1 MiB", decLen(2, decLen(1, bytes.Repeat([]byte("k"), 1<<20))), big, otep.ErrTooLarge},
		{"string value of 1 MiB", decLen(2, kv("k", decLen(1, bytes.Repeat([]byte("v"), 1<<20)))), big, otep.ErrTooLarge},
		{"bytes value of 1 MiB", decLen(2, kv("k", decLen(7, make([]byte, 1<<20)))), big, otep.ErrTooLarge},
		{"payload over MaxPayloadSize", decLen(2, kv("k", decLen(1, make([]byte, 64<<10)))), otep.DefaultLimits(), otep.ErrTooLarge},
		{"valid payload over a small MaxPayloadSize", valid, otep.Limits{MaxPayloadSize: 79, MaxAttributes: 10,
			MaxDepth: 1, MaxKeyLength: 100, MaxValueLength: 100}, otep.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, attrs := pcommon.NewMap(), pcommon.NewMap()
			err := otep.DecodePayload(tt.payload, tt.limits, res, attrs)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tt.want), "error %q does not wrap %q", err, tt.want)
			other := otep.ErrInvalid
			if errors.Is(tt.want, otep.ErrInvalid) {
				other = otep.ErrTooLarge
			}
			assert.False(t, errors.Is(err, other), "error %q also wraps %q", err, other)
			assert.Less(t, len(err.Error()), 1024, "error messages stay short")
			assert.Zero(t, res.Len(), "resource must be empty on error")
			assert.Zero(t, attrs.Len(), "attributes must be empty on error")
			t.Log(err)
		})
	}
}

func TestDecodePayloadErrorMessage(t *testing.T) {
	kv := func(k string, value []byte) []byte { return decCat(decLen(1, []byte(k)), decLen(2, value)) }
	payload := decCat(
		decLen(1, decLen(1, kv("ok", decLen(1, []byte("v"))))),
		decLen(2, kv("first", decLen(1, []byte("v")))),
		decLen(2, kv("arr", decLen(5, decLen(1, decLen(1, []byte("x"))), decLen(1, []byte{0x08, 0x80})))),
	)
	res, attrs := pcommon.NewMap(), pcommon.NewMap()
	err := otep.DecodePayload(payload, otep.DefaultLimits(), res, attrs)
	require.ErrorIs(t, err, otep.ErrInvalid)
	msg := err.Error()
	assert.True(t, strings.HasPrefix(msg, otep.ErrInvalid.Error()+": "), msg)
	assert.Contains(t, msg, `attribute 1: "arr": [1]: AnyValue: field 1`)
	// The truncated varint is the last byte of the payload.
	assert.Contains(t, msg, fmt.Sprintf("at byte %d", len(payload)-2))
}

// TestDecodePayloadTruncated cuts valid payloads at every byte offset: every
// prefix decodes or fails with ErrInvalid, and never panics.
func TestDecodePayloadTruncated(t *testing.T) {
	roundTrip, _, _ := decRoundTrip(t)
	for name, payload := range map[string][]byte{
		"spec vector": decSpecVector(t),
		"round trip":  roundTrip,
		"unknown":     decCat(decUnknown(), decLen(1, decUnknown(), decLen(1, decLen(1, []byte("k")), decUnknown()))),
	} {
		t.Run(name, func(t *testing.T) {
			ok := 0
			for n := range len(payload) + 1 {
				prefix := bytes.Clone(payload[:n]) // exact capacity: reads past n fault under -race too
				res, attrs := pcommon.NewMap(), pcommon.NewMap()
				err := otep.DecodePayload(prefix, otep.DefaultLimits(), res, attrs)
				if err == nil {
					ok++
					continue
				}
				require.ErrorIs(t, err, otep.ErrInvalid, "prefix of %d bytes", n)
				require.NotErrorIs(t, err, otep.ErrTooLarge, "prefix of %d bytes", n)
				require.Zero(t, res.Len()+attrs.Len(), "prefix of %d bytes", n)
			}
			assert.Greater(t, ok, 1, "the empty prefix and the whole payload decode")
		})
	}
}

// decBenchPayload is a realistic context: a 15-attribute resource and two
// extra attributes, one an array of 20 strings.
func decBenchPayload(b testing.TB) []byte {
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		decKV("service.name", decStr("checkout-service")),
		decKV("service.namespace", decStr("shop")),
		decKV("service.version", decStr("2.14.3")),
		decKV("service.instance.id", decStr("627cc493-f310-47de-96bd-71410b7dec09")),
		decKV("deployment.environment.name", decStr("production")),
		decKV("telemetry.sdk.name", decStr("opentelemetry")),
		decKV("telemetry.sdk.language", decStr("go")),
		decKV("telemetry.sdk.version", decStr("1.38.0")),
		decKV("host.name", decStr("ip-10-0-12-34.eu-west-1.compute.internal")),
		decKV("host.arch", decStr("amd64")),
		decKV("os.type", decStr("linux")),
		decKV("process.pid", decInt(48213)),
		decKV("process.runtime.name", decStr("go")),
		decKV("process.runtime.version", decStr("go1.26.0")),
		decKV("process.executable.name", decStr("checkout")),
	}}
	keys := make([]*commonpb.AnyValue, 20)
	for i := range keys {
		keys[i] = decStr(fmt.Sprintf("app.attribute.key_%02d", i))
	}
	return decEncode(b, res,
		decKV("threadlocal.schema_version", decStr("tlsdesc_v1_dev")),
		decKV("threadlocal.attribute_key_map", decArray(keys...)),
	)
}

func BenchmarkDecodePayload(b *testing.B) {
	payload := decBenchPayload(b)
	limits := otep.DefaultLimits()
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		res, attrs := pcommon.NewMap(), pcommon.NewMap()
		if err := otep.DecodePayload(payload, limits, res, attrs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodePayloadViaGeneratedTypes is the baseline: proto.Unmarshal
// into the generated OTLP types, then a conversion to pcommon.
func BenchmarkDecodePayloadViaGeneratedTypes(b *testing.B) {
	payload := decBenchPayload(b)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := decOracle(payload); err != nil {
			b.Fatal(err)
		}
	}
}
