// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Kinds of attribute value FuzzPidAttribute builds (the first argument,
// modulo numFuzzKinds).
const (
	fuzzInt = iota
	fuzzStr
	fuzzDouble
	fuzzBool
	fuzzBytes
	fuzzEmpty
	fuzzSlice
	fuzzMap
	numFuzzKinds
)

// fuzzValue sets v to a value of kind built from s and n.
func fuzzValue(v pcommon.Value, kind byte, s string, n int64) {
	switch kind % numFuzzKinds {
	case fuzzInt:
		v.SetInt(n)
	case fuzzStr:
		v.SetStr(s)
	case fuzzDouble:
		v.SetDouble(float64(n))
	case fuzzBool:
		v.SetBool(n != 0)
	case fuzzBytes:
		v.SetEmptyBytes().FromRaw([]byte(s))
	case fuzzEmpty:
	case fuzzSlice:
		v.SetEmptySlice().AppendEmpty().SetInt(n)
	case fuzzMap:
		v.SetEmptyMap().PutStr("process.pid", s)
	}
}

// expectedPID is the specification pidFromValue implements, written
// independently of it: an int in 1..MaxPID-1, or a string of at most 10
// ASCII decimal digits (no sign, no space) whose value is in 1..MaxPID-1.
func expectedPID(kind byte, s string, n int64) (int, bool) {
	switch kind % numFuzzKinds {
	case fuzzInt:
		if n >= 1 && n < tracker.MaxPID {
			return int(n), true
		}
	case fuzzStr:
		if s == "" || len(s) > 10 {
			return 0, false
		}
		for _, c := range []byte(s) {
			if c < '0' || c > '9' {
				return 0, false
			}
		}
		// Digits only: no sign or space for ParseUint to accept.
		u, err := strconv.ParseUint(s, 10, 64)
		if err == nil && u >= 1 && u < tracker.MaxPID {
			return int(u), true
		}
	}
	return 0, false
}

// FuzzPidAttribute checks every way a pid attribute is read — a value
// (pidFromValue), a record's attributes (pidOf), a resource's (factsOf),
// a profile sample's through the dictionary (samplePIDTable, pidOfSample)
// — against the specification, the tracker's pid range and each other.
func FuzzPidAttribute(f *testing.F) {
	// The edge cases are in testdata/fuzz/FuzzPidAttribute.
	f.Add(byte(fuzzInt), "", int64(1234))
	f.Add(byte(fuzzStr), "1234", int64(0))
	f.Fuzz(func(t *testing.T, kind byte, s string, n int64) {
		v := pcommon.NewValueEmpty()
		fuzzValue(v, kind, s, n)
		pid, ok := pidFromValue(v)
		if ok != (pid != 0) {
			t.Fatalf("%s %q: pid %d, ok %v: ok must say whether a pid was found", v.Type(), v.AsString(), pid, ok)
		}
		if ok != tracker.ValidPID(pid) {
			t.Fatalf("%s %q: pid %d, ok %v: the tracker's pid range (ValidPID) says otherwise", v.Type(), v.AsString(), pid, ok)
		}
		if wantPid, wantOK := expectedPID(kind, s, n); pid != wantPid || ok != wantOK {
			t.Fatalf("%s %q: got %d %v, want %d %v", v.Type(), v.AsString(), pid, ok, wantPid, wantOK)
		}
		if ok {
			checkReadsBack(t, pid)
		}
		// Under a pid key, a value that is no pid is an invalid one.
		found := pid
		if !ok {
			found = invalidPID
		}
		checkRecordPid(t, v, found)
		checkResourcePid(t, v, found)
		checkSamplePid(t, v, found)
	})
}

// checkReadsBack: a pid reads back in either form the processor accepts.
func checkReadsBack(t *testing.T, pid int) {
	t.Helper()
	for _, form := range []func(pcommon.Value){
		func(w pcommon.Value) { w.SetInt(int64(pid)) },
		func(w pcommon.Value) { w.SetStr(strconv.Itoa(pid)) },
	} {
		w := pcommon.NewValueEmpty()
		form(w)
		if back, ok := pidFromValue(w); !ok || back != pid {
			t.Fatalf("pid %d as %s reads back as %d %v", pid, w.Type(), back, ok)
		}
	}
}

// checkRecordPid: in a record's attributes, the value under the second key
// counts when the first holds no pid, and never over a valid first one
// (pid is invalidPID for a value that is no pid).
func checkRecordPid(t *testing.T, v pcommon.Value, pid int) {
	t.Helper()
	multi := pidRanking{entitymodel.ProcessPIDKey, "pid"}
	attrs := pcommon.NewMap()
	attrs.PutStr("log.iostream", "stdout")
	v.CopyTo(attrs.PutEmpty("pid"))
	if got := multi.pidOf(attrs); got != pid {
		t.Fatalf("second key alone: pidOf %d, want %d", got, pid)
	}
	attrs.PutStr(entitymodel.ProcessPIDKey, "not a pid")
	if got := multi.pidOf(attrs); got != pid {
		t.Fatalf("invalid first key: pidOf %d, want %d", got, pid)
	}
	attrs.PutInt(entitymodel.ProcessPIDKey, 77)
	if got := multi.pidOf(attrs); got != 77 {
		t.Fatalf("valid first key: pidOf %d, want 77", got)
	}
}

// checkResourcePid: a resource's attributes, with either configuration.
func checkResourcePid(t *testing.T, v pcommon.Value, pid int) {
	t.Helper()
	res := pcommon.NewMap()
	res.PutStr("host.name", "node-1")
	v.CopyTo(res.PutEmpty(entitymodel.ProcessPIDKey))
	for _, r := range []pidRanking{{entitymodel.ProcessPIDKey}, {entitymodel.ProcessPIDKey, "pid"}} {
		if facts := r.factsOf(res); facts.pid != pid {
			t.Fatalf("resource with pid_attributes %v: pid %d, want %d", r, facts.pid, pid)
		}
	}
}

// checkSamplePid: a sample's attributes are indices into the dictionary's
// table, where the value sits beside an attribute of another key.
func checkSamplePid(t *testing.T, v pcommon.Value, pid int) {
	t.Helper()
	pd := pprofile.NewProfiles()
	dict := pd.Dictionary()
	dict.StringTable().Append("", "thread.name", entitymodel.ProcessPIDKey)
	at := dict.AttributeTable()
	at.AppendEmpty()
	other := at.AppendEmpty()
	other.SetKeyStrindex(1)
	v.CopyTo(other.Value())
	kv := at.AppendEmpty()
	kv.SetKeyStrindex(2)
	v.CopyTo(kv.Value())
	table := pidRanking{entitymodel.ProcessPIDKey}.samplePIDTable(dict)
	sample := pprofile.NewSample()
	sample.AttributeIndices().Append(1, 2)
	if got := pidOfSample(sample, table); got != pid {
		t.Fatalf("sample: pid %d, want %d", got, pid)
	}
}
