package processctxprocessor

import (
	"reflect"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Regrouping moves log records and profile samples from one container to
// another. pdata moves an element only into a newly allocated one
// (MoveTo(AppendEmpty())): one allocation per item, the better part of the
// cost of regrouping 100,000 samples. Its slices are a pointer to a slice
// of element pointers (struct{ orig *[]*T; state *State }), so the
// regrouping moves the element pointers themselves: no allocation per
// item, no copy, and each element stays in exactly one slice.
// pointerSlicesOK checks that layout once; without it, records and samples
// are not regrouped (resource pids still are enriched).

// itemPointers returns the element pointers behind a pdata slice value.
func itemPointers[S plog.LogRecordSlice | pprofile.SampleSlice](s S) *[]unsafe.Pointer {
	return *(**[]unsafe.Pointer)(unsafe.Pointer(&s))
}

// pointerSlicesOK reports whether plog.LogRecordSlice and
// pprofile.SampleSlice have the layout itemPointers relies on, and that
// moving a pointer moves the element.
func pointerSlicesOK() bool {
	for _, t := range []reflect.Type{reflect.TypeFor[plog.LogRecordSlice](), reflect.TypeFor[pprofile.SampleSlice]()} {
		if t.Kind() != reflect.Struct || t.NumField() != 2 || t.Size() != 2*unsafe.Sizeof(uintptr(0)) {
			return false
		}
		orig := t.Field(0).Type
		if t.Field(0).Offset != 0 || orig.Kind() != reflect.Pointer || orig.Elem().Kind() != reflect.Slice ||
			orig.Elem().Elem().Kind() != reflect.Pointer {
			return false
		}
	}
	logs := plog.NewLogRecordSlice()
	logs.AppendEmpty().Body().SetStr("a")
	logs.AppendEmpty().Body().SetStr("b")
	raw := itemPointers(logs)
	(*raw)[0], (*raw)[1] = (*raw)[1], (*raw)[0]
	if logs.At(0).Body().Str() != "b" || logs.At(1).Body().Str() != "a" {
		return false
	}
	samples := pprofile.NewSampleSlice()
	samples.AppendEmpty().SetStackIndex(1)
	samples.AppendEmpty().SetStackIndex(2)
	rawSamples := itemPointers(samples)
	(*rawSamples)[0], (*rawSamples)[1] = (*rawSamples)[1], (*rawSamples)[0]
	return samples.At(0).StackIndex() == 2 && samples.At(1).StackIndex() == 1
}
