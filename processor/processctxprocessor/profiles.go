package processctxprocessor

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"slices"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

// processProfiles enriches each resource by its pid (eBPF profiler builds
// since 2026-03), or regroups its samples by their process.pid attribute
// (earlier builds: several pids under one resource).
func (p *instance) processProfiles(ctx context.Context, pd pprofile.Profiles) (pprofile.Profiles, error) {
	b := p.newBatch()
	if b == nil {
		return pd, nil
	}
	defer b.finish(ctx)
	rps := pd.ResourceProfiles()
	n := rps.Len()
	var table []samplePID
	tableBuilt := false
	for i := range n {
		rp := rps.At(i)
		attrs := rp.Resource().Attributes()
		if pid, ok := p.core.pidOf(attrs); ok {
			b.enrichResource(attrs, pid, sampleCount(rp))
			continue
		}
		if !tableBuilt {
			table = p.core.samplePIDTable(pd.Dictionary())
			tableBuilt = true
		}
		if len(table) > 0 && b.splitProfiles(rps, rp, table) {
			b.emptiedResources.set(i)
		}
	}
	if len(b.emptiedResources) > 0 {
		rps.RemoveIf(removeMarked[pprofile.ResourceProfiles](b.emptiedResources))
	}
	return pd, nil
}

func sampleCount(rp pprofile.ResourceProfiles) int {
	n := 0
	sps := rp.ScopeProfiles()
	for i := range sps.Len() {
		ps := sps.At(i).Profiles()
		for j := range ps.Len() {
			n += ps.At(j).Samples().Len()
		}
	}
	return n
}

// samplePID is what an attribute table entry says of a pid: the pid (0 for
// none) and the rank of its key in pid_attributes.
type samplePID struct {
	pid  int32
	rank int32
}

// samplePIDTable indexes the dictionary's attribute table by pid: entry i
// holds the pid of attribute i when its key is a pid key. Sample attributes
// are indices into this shared table, so one pass over it replaces a key
// lookup per sample. The result is empty when no attribute holds a pid.
func (c *core) samplePIDTable(dict pprofile.ProfilesDictionary) []samplePID {
	strs := dict.StringTable()
	attrs := dict.AttributeTable()
	var table []samplePID
	for i := range attrs.Len() {
		kv := attrs.At(i)
		ki := int(kv.KeyStrindex())
		if ki < 0 || ki >= strs.Len() {
			continue
		}
		rank := slices.Index(c.pidKeys, strs.At(ki))
		if rank < 0 {
			continue
		}
		pid, ok := pidFromValue(kv.Value())
		if !ok {
			continue
		}
		if table == nil {
			table = make([]samplePID, attrs.Len())
		}
		table[i] = samplePID{pid: int32(pid), rank: int32(rank)}
	}
	return table
}

// pidOfSample returns the pid of the sample's highest-ranked pid attribute.
func pidOfSample(s pprofile.Sample, table []samplePID) int {
	best := samplePID{}
	idx := s.AttributeIndices()
	for i := range idx.Len() {
		a := int(idx.At(i))
		if a < 0 || a >= len(table) {
			continue
		}
		if sp := table[a]; sp.pid != 0 && (best.pid == 0 || sp.rank < best.rank) {
			best = sp
		}
	}
	return int(best.pid)
}

// splitProfiles is splitLogs for samples: each process's samples move into
// new Profiles (same profile-level fields) under new ScopeProfiles under a
// new ResourceProfiles in the same Profiles, so that the dictionary, and with
// it every stack, link and attribute index, stays valid. It reports whether
// rp lost every sample.
func (b *batch) splitProfiles(rps pprofile.ResourceProfilesSlice, rp pprofile.ResourceProfiles, table []samplePID) bool {
	resAttrs := rp.Resource().Attributes()
	b.resetGroups()
	b.decisions = b.decisions[:0]
	resolvedItems := 0
	sps := rp.ScopeProfiles()
	for i := range sps.Len() {
		ps := sps.At(i).Profiles()
		for j := range ps.Len() {
			ss := ps.At(j).Samples()
			for k := range ss.Len() {
				g := int32(-1)
				if pid := pidOfSample(ss.At(k), table); pid != 0 {
					g = b.groupOf(resAttrs, pid)
				}
				if g >= 0 {
					resolvedItems++
				}
				b.decisions = append(b.decisions, g)
			}
		}
	}
	inPlace, split := b.regroup(resolvedItems, len(b.decisions))
	if inPlace != nil {
		b.enrichGroup(rp.Resource().Attributes(), inPlace)
	}
	if !split {
		return false
	}

	dst := make([]pprofile.ResourceProfiles, len(b.groups))
	for g := range b.groups {
		nrp := rps.AppendEmpty()
		rp.Resource().CopyTo(nrp.Resource())
		nrp.SetSchemaUrl(rp.SchemaUrl())
		b.enrichGroup(nrp.Resource().Attributes(), &b.groups[g])
		dst[g] = nrp
	}
	scopes := make([]pprofile.ScopeProfiles, len(b.groups))
	profiles := make([]pprofile.Profile, len(b.groups))
	b.emptiedScopes.reset()
	k := 0
	for i := range sps.Len() {
		sp := sps.At(i)
		ps := sp.Profiles()
		b.emptiedProfiles.reset()
		for j := range ps.Len() {
			prof := ps.At(j)
			ss := prof.Samples()
			first, moved := k, 0
			firstFragment := -1
			for s := range ss.Len() {
				g := b.decisions[k]
				k++
				if g < 0 {
					continue
				}
				grp := &b.groups[g]
				if grp.scopeIdx != i {
					scopes[g] = dst[g].ScopeProfiles().AppendEmpty()
					sp.Scope().CopyTo(scopes[g].Scope())
					scopes[g].SetSchemaUrl(sp.SchemaUrl())
					grp.scopeIdx = i
					grp.profileIdx = -1
				}
				if grp.profileIdx != j {
					profiles[g] = scopes[g].Profiles().AppendEmpty()
					copyProfileFields(prof, profiles[g])
					profiles[g].SetProfileID(fragmentID(prof.ProfileID(), grp.pid))
					grp.profileIdx = j
					if firstFragment < 0 {
						firstFragment = int(g)
					}
				}
				ss.At(s).MoveTo(profiles[g].Samples().AppendEmpty())
				moved++
			}
			if moved == 0 {
				continue
			}
			if moved == ss.Len() {
				// The original disappears: its first fragment carries on
				// its identity and original payload, which thus exist once.
				profiles[firstFragment].SetProfileID(prof.ProfileID())
				prof.OriginalPayload().MoveTo(profiles[firstFragment].OriginalPayload())
				b.emptiedProfiles.set(j)
				continue
			}
			decisions := b.decisions[first:k]
			ss.RemoveIf(func(pprofile.Sample) bool {
				moved := decisions[0] >= 0
				decisions = decisions[1:]
				return moved
			})
		}
		if len(b.emptiedProfiles) == 0 {
			continue
		}
		ps.RemoveIf(removeMarked[pprofile.Profile](b.emptiedProfiles))
		if ps.Len() == 0 {
			b.emptiedScopes.set(i)
		}
	}
	b.emptiedProfiles.reset()
	if resolvedItems == len(b.decisions) {
		return true
	}
	if len(b.emptiedScopes) > 0 {
		sps.RemoveIf(removeMarked[pprofile.ScopeProfiles](b.emptiedScopes))
	}
	return false
}

// copyProfileFields copies every profile-level field but the samples, the
// profile ID and the original payload onto a fragment of the profile.
func copyProfileFields(src, dst pprofile.Profile) {
	src.SampleType().CopyTo(dst.SampleType())
	src.PeriodType().CopyTo(dst.PeriodType())
	dst.SetPeriod(src.Period())
	dst.SetTime(src.Time())
	dst.SetDurationNano(src.DurationNano())
	src.AttributeIndices().CopyTo(dst.AttributeIndices())
	dst.SetDroppedAttributesCount(src.DroppedAttributesCount())
	dst.SetOriginalPayloadFormat(src.OriginalPayloadFormat())
}

// fragmentID derives the ID of one process's fragment of a profile from
// the profile's ID: unique per (profile, pid), stable across retries, and
// empty when the profile has no ID. Reusing the ID on every fragment could
// make a backend drop fragments as duplicates.
func fragmentID(id pprofile.ProfileID, pid int) pprofile.ProfileID {
	if id.IsEmpty() {
		return id
	}
	h := fnv.New128a()
	_, _ = h.Write(id[:])
	_, _ = h.Write(binary.LittleEndian.AppendUint64(nil, uint64(pid)))
	var out pprofile.ProfileID
	copy(out[:], h.Sum(nil))
	return out
}
