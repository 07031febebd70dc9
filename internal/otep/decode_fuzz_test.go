// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/processctx/otelcol-processctx/internal/otep"
)

// decFuzzSmallLimits are tight enough for the fuzzer to reach every limit.
var decFuzzSmallLimits = otep.Limits{
	MaxPayloadSize: 64 << 10,
	MaxAttributes:  16,
	MaxDepth:       3,
	MaxKeyLength:   8,
	MaxValueLength: 8,
}

func FuzzDecodePayload(f *testing.F) {
	spec := decSpecVector(f)
	roundTrip, _, _ := decRoundTrip(f)
	kv := func(k string, value []byte) []byte { return decCat(decLen(1, []byte(k)), decLen(2, value)) }
	seeds := [][]byte{
		nil,
		spec,
		roundTrip,
		decBenchPayload(f),
		decCat(decUnknown(), decLen(1, decUnknown(), decLen(1, kv("k", decCat(decUnknown(), decLen(1, []byte("v"))))))),
		decLen(2, kv("k", decCat(decLen(5, decLen(1, decVarint(3, 1))), decLen(5, decLen(1, decVarint(3, 2)))))),
		decLen(2, kv("k", decCat(decLen(6, decLen(1, kv("a", decVarint(2, 1)))), decLen(1, []byte("s"))))),
		decDeepArray(12),
		spec[:len(spec)-1],                     // truncated
		decCat(spec, []byte{0xff}),             // trailing garbage
		{0x0a, 0x05, 0x0a},                     // length past the end
		{0x00},                                 // field number 0
		{0x0f},                                 // reserved wire type
		decVarint(1, 1),                        // wrong wire type
		decLen(2, kv("k", decVarint(4, 1))),    // wrong wire type in AnyValue
		decLen(2, kv("k\xff", decLen(1, nil))), // invalid UTF-8
	}
	for _, s := range seeds {
		f.Add(s, false)
		f.Add(s, true)
	}

	f.Fuzz(func(t *testing.T, payload []byte, small bool) {
		limits := otep.DefaultLimits()
		if small {
			limits = decFuzzSmallLimits
		}
		res, attrs := pcommon.NewMap(), pcommon.NewMap()
		res.PutStr("stale", "x")
		err := otep.DecodePayload(payload, limits, res, attrs)
		if err != nil {
			invalid, tooLarge := errors.Is(err, otep.ErrInvalid), errors.Is(err, otep.ErrTooLarge)
			if invalid == tooLarge {
				t.Fatalf("error %q must wrap exactly one of ErrInvalid, ErrTooLarge", err)
			}
			if res.Len() != 0 || attrs.Len() != 0 {
				t.Fatalf("maps not empty after error %q", err)
			}
			return
		}

		// Well formed and within the limits.
		count := 0
		decCheckMap(t, res, limits, 1, &count)
		decCheckMap(t, attrs, limits, 1, &count)
		if count > limits.MaxAttributes {
			t.Fatalf("%d attributes and elements decoded, limit %d", count, limits.MaxAttributes)
		}

		// Same result as the generated protobuf code, with pcommon's
		// last-wins for duplicate keys.
		wantRes, wantAttrs, oracleErr := decOracle(payload)
		if oracleErr != nil {
			// The generated code is stricter only about UTF-8.
			if !strings.Contains(oracleErr.Error(), "UTF-8") {
				t.Fatalf("decoded, but the generated code rejects the payload: %v", oracleErr)
			}
		} else {
			if d := decDiffMap(wantRes, res, "resource"); d != "" {
				t.Fatalf("differs from the generated code: %s", d)
			}
			if d := decDiffMap(wantAttrs, attrs, "attributes"); d != "" {
				t.Fatalf("differs from the generated code: %s", d)
			}
		}

		// Nothing aliases the payload.
		snapRes, snapAttrs := pcommon.NewMap(), pcommon.NewMap()
		res.CopyTo(snapRes)
		attrs.CopyTo(snapAttrs)
		for i := range payload {
			payload[i] ^= 0x55
		}
		if d := decDiffMap(snapRes, res, "resource"); d != "" {
			t.Fatalf("resource aliases the payload: %s", d)
		}
		if d := decDiffMap(snapAttrs, attrs, "attributes"); d != "" {
			t.Fatalf("attributes alias the payload: %s", d)
		}
	})
}

// decCheckMap checks that the values of m (at depth) respect the limits and
// that its keys are unique, adding its entries and elements to count.
func decCheckMap(t *testing.T, m pcommon.Map, limits otep.Limits, depth int, count *int) {
	t.Helper()
	seen := make(map[string]bool, m.Len())
	for k, v := range m.All() {
		*count++
		if seen[k] {
			t.Fatalf("duplicate key %q", k)
		}
		seen[k] = true
		if len(k) > limits.MaxKeyLength {
			t.Fatalf("key of %d bytes, limit %d", len(k), limits.MaxKeyLength)
		}
		decCheckValue(t, v, limits, depth, count)
	}
}

func decCheckValue(t *testing.T, v pcommon.Value, limits otep.Limits, depth int, count *int) {
	t.Helper()
	if depth > limits.MaxDepth {
		t.Fatalf("value at depth %d, limit %d", depth, limits.MaxDepth)
	}
	switch v.Type() {
	case pcommon.ValueTypeStr:
		if len(v.Str()) > limits.MaxValueLength {
			t.Fatalf("string of %d bytes, limit %d", len(v.Str()), limits.MaxValueLength)
		}
	case pcommon.ValueTypeBytes:
		if v.Bytes().Len() > limits.MaxValueLength {
			t.Fatalf("bytes of %d bytes, limit %d", v.Bytes().Len(), limits.MaxValueLength)
		}
	case pcommon.ValueTypeSlice:
		for _, e := range v.Slice().All() {
			*count++
			decCheckValue(t, e, limits, depth+1, count)
		}
	case pcommon.ValueTypeMap:
		decCheckMap(t, v.Map(), limits, depth+1, count)
	case pcommon.ValueTypeEmpty, pcommon.ValueTypeBool, pcommon.ValueTypeInt, pcommon.ValueTypeDouble:
	default:
		t.Fatalf("unexpected value type %v", v.Type())
	}
}

// decOracle decodes payload with the generated OTLP types: the top-level
// fields are split with protowire, field 1 is merged into one Resource, each
// field 2 is a KeyValue.
func decOracle(payload []byte) (pcommon.Map, pcommon.Map, error) {
	res := &resourcepb.Resource{}
	var attrs []*commonpb.KeyValue
	for b := payload; len(b) > 0; {
		num, typ, n := protowire.ConsumeField(b)
		if n < 0 {
			return pcommon.Map{}, pcommon.Map{}, protowire.ParseError(n)
		}
		if num == 1 || num == 2 {
			if typ != protowire.BytesType {
				return pcommon.Map{}, pcommon.Map{}, fmt.Errorf("field %d has wire type %d", num, typ)
			}
			_, _, tn := protowire.ConsumeTag(b)
			v, _ := protowire.ConsumeBytes(b[tn:])
			if num == 1 {
				if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(v, res); err != nil {
					return pcommon.Map{}, pcommon.Map{}, err
				}
			} else {
				kv := &commonpb.KeyValue{}
				if err := proto.Unmarshal(v, kv); err != nil {
					return pcommon.Map{}, pcommon.Map{}, err
				}
				attrs = append(attrs, kv)
			}
		}
		b = b[n:]
	}
	wantRes, wantAttrs := pcommon.NewMap(), pcommon.NewMap()
	for _, kv := range res.Attributes {
		decOraclePut(wantRes.PutEmpty(kv.Key), kv.Value)
	}
	for _, kv := range attrs {
		decOraclePut(wantAttrs.PutEmpty(kv.Key), kv.Value)
	}
	return wantRes, wantAttrs, nil
}

func decOraclePut(dst pcommon.Value, av *commonpb.AnyValue) {
	switch x := av.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		dst.SetStr(x.StringValue)
	case *commonpb.AnyValue_BoolValue:
		dst.SetBool(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		dst.SetInt(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		dst.SetDouble(x.DoubleValue)
	case *commonpb.AnyValue_BytesValue:
		dst.SetEmptyBytes().FromRaw(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		s := dst.SetEmptySlice()
		for _, e := range x.ArrayValue.GetValues() {
			decOraclePut(s.AppendEmpty(), e)
		}
	case *commonpb.AnyValue_KvlistValue:
		m := dst.SetEmptyMap()
		for _, kv := range x.KvlistValue.GetValues() {
			decOraclePut(m.PutEmpty(kv.Key), kv.Value)
		}
	}
}
