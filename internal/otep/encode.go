// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package otep

import (
	"fmt"
	"maps"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Encode encodes a ProcessContext payload, as publishers do: the resource
// attributes in field 1 (a Resource, marshaled with the official OTLP
// types) and the non-resource attributes (e.g. threadlocal.*) as repeated
// KeyValues in field 2. It is the payload DecodePayload reads back.
func Encode(resource, attributes pcommon.Map) ([]byte, error) {
	res, err := proto.Marshal(&resourcepb.Resource{Attributes: keyValues(resource)})
	if err != nil {
		return nil, fmt.Errorf("encode resource: %w", err)
	}
	out := protowire.AppendTag(nil, pbFieldProcessContextResource, protowire.BytesType)
	out = protowire.AppendBytes(out, res)
	for _, kv := range keyValues(attributes) {
		b, err := proto.Marshal(kv)
		if err != nil {
			return nil, fmt.Errorf("encode attribute %q: %w", kv.Key, err)
		}
		out = protowire.AppendTag(out, pbFieldProcessContextAttributes, protowire.BytesType)
		out = protowire.AppendBytes(out, b)
	}
	return out, nil
}

// EncodeStrings encodes a context whose resource attributes are all strings,
// in the order of their keys, so that one map always gives the same bytes.
// Strings always marshal, so there is no error.
func EncodeStrings(resource map[string]string) []byte {
	m := pcommon.NewMap()
	for _, k := range slices.Sorted(maps.Keys(resource)) {
		m.PutStr(k, resource[k])
	}
	b, err := Encode(m, pcommon.NewMap())
	if err != nil {
		return nil
	}
	return b
}

func keyValues(m pcommon.Map) []*commonpb.KeyValue {
	kvs := make([]*commonpb.KeyValue, 0, m.Len())
	for k, v := range m.All() {
		kvs = append(kvs, &commonpb.KeyValue{Key: k, Value: anyValue(v)})
	}
	return kvs
}

func anyValue(v pcommon.Value) *commonpb.AnyValue {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.Str()}}
	case pcommon.ValueTypeBool:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.Bool()}}
	case pcommon.ValueTypeInt:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.Int()}}
	case pcommon.ValueTypeDouble:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.Double()}}
	case pcommon.ValueTypeBytes:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.Bytes().AsRaw()}}
	case pcommon.ValueTypeSlice:
		arr := &commonpb.ArrayValue{}
		for _, e := range v.Slice().All() {
			arr.Values = append(arr.Values, anyValue(e))
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
	case pcommon.ValueTypeMap:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{
			KvlistValue: &commonpb.KeyValueList{Values: keyValues(v.Map())},
		}}
	}
	return &commonpb.AnyValue{}
}
