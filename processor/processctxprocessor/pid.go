// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// invalidPID is what factsOf, pidOf and pidOfSample return when no
// pid_attributes key holds a valid pid but one is there with something
// else ("abc", 0, -5, a double...): the lookup of that "pid" answers
// outcomeInvalidPID at once, so that its items pass through counted
// (kind invalid_pid) and a wrong pid_attributes shows. A valid pid under
// any key wins over it.
const invalidPID = -1

// pidFromValue reads a pid from an int attribute or a string of decimal
// digits. Anything else (out of tracker.ValidPID's range, other
// characters, other types) is not a pid.
func pidFromValue(v pcommon.Value) (int, bool) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		if n := v.Int(); n > 0 && n < tracker.MaxPID {
			return int(n), true
		}
	case pcommon.ValueTypeStr:
		return parsePID(v.Str())
	}
	return 0, false
}

// parsePID parses a string of decimal digits without allocating; ten
// digits at most, so that it cannot overflow.
func parsePID(s string) (int, bool) {
	if s == "" || len(s) > 10 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if !tracker.ValidPID(n) {
		return 0, false
	}
	return n, true
}

// pidRanking is pid_attributes: the keys that may hold a pid, the best
// first. Resources, log records and profile samples all find their pid
// the same way: each attribute is offered to a pidPick, which keeps the
// pid under the best key.
type pidRanking []string

// rankOf returns the rank of key (0: the best), -1 when it is no pid key.
func (r pidRanking) rankOf(key string) int {
	for i, k := range r {
		if k == key {
			return i
		}
	}
	return -1
}

// pidPick is the best pid offered so far, and its key's rank; invalidPID
// when only values that are no pid were offered. The zero value has none.
type pidPick struct{ pid, rank int32 }

// offer keeps the pid v holds when its key's rank (>= 0) is better than
// the pick's; a value that is no pid makes the pick invalidPID when it has
// no pid.
func (p *pidPick) offer(rank int, v pcommon.Value) {
	if p.pid > 0 && int32(rank) >= p.rank {
		return
	}
	if pid, ok := pidFromValue(v); ok {
		p.pid, p.rank = int32(pid), int32(rank)
	} else if p.pid == 0 {
		p.pid = invalidPID
	}
}

// keep keeps other when it has a pid under a better key, or is invalidPID
// where p has nothing.
func (p *pidPick) keep(other pidPick) {
	switch {
	case other.pid > 0 && (p.pid <= 0 || other.rank < p.rank):
		*p = other
	case other.pid == invalidPID && p.pid == 0:
		*p = other
	}
}

// resourceFacts is what one pass over a resource's attributes finds: the
// pid (0: none; invalidPID) and the container.id.
type resourceFacts struct {
	pid         int
	containerID string
}

func (r pidRanking) factsOf(attrs pcommon.Map) resourceFacts {
	var f resourceFacts
	var pick pidPick
	for k, v := range attrs.All() {
		if k == entitymodel.ContainerIDKey && v.Type() == pcommon.ValueTypeStr {
			f.containerID = v.Str()
		}
		if rank := r.rankOf(k); rank >= 0 {
			pick.offer(rank, v)
		}
	}
	f.pid = int(pick.pid)
	return f
}

// pidOf returns the pid of a log record's attributes, 0 for none,
// invalidPID for one that is no pid.
func (r pidRanking) pidOf(attrs pcommon.Map) int { return r.factsOf(attrs).pid }

// samplePIDTable returns what each attribute of the dictionary's table
// offers, by index: samples hold indices into that table, so one pass over
// it replaces a key comparison per sample attribute. It returns nil when no
// attribute is under a pid key.
func (r pidRanking) samplePIDTable(dict pprofile.ProfilesDictionary) []pidPick {
	strs := dict.StringTable()
	attrs := dict.AttributeTable()
	var table []pidPick
	for i := range attrs.Len() {
		kv := attrs.At(i)
		ki := int(kv.KeyStrindex())
		if ki < 0 || ki >= strs.Len() {
			continue
		}
		rank := r.rankOf(strs.At(ki))
		if rank < 0 {
			continue
		}
		var pick pidPick
		if pick.offer(rank, kv.Value()); pick.pid == 0 {
			continue
		}
		if table == nil {
			table = make([]pidPick, attrs.Len())
		}
		table[i] = pick
	}
	return table
}

// pidOfSample returns the pid of a sample's attributes, 0 for none,
// invalidPID for one that is no pid.
func pidOfSample(s pprofile.Sample, table []pidPick) int {
	var pick pidPick
	idx := s.AttributeIndices()
	for i := range idx.Len() {
		if a := int(idx.At(i)); a >= 0 && a < len(table) {
			pick.keep(table[a])
		}
	}
	return int(pick.pid)
}
