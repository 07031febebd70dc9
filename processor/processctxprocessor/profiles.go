package processctxprocessor

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.uber.org/zap"
)

// processProfiles enriches each resource by its pid (eBPF profiler builds
// since 2026-03), or regroups its samples by their process.pid attribute
// (earlier builds: several pids under one resource).
func (p *instance) processProfiles(ctx context.Context, pd pprofile.Profiles) (pprofile.Profiles, error) {
	b := p.core.newBatch(&p.batches)
	if b == nil {
		return pd, nil
	}
	defer b.finish(p.tel, &p.batches)
	if hasAttributeReferences(pd.ResourceProfiles()) {
		if err := resolveReferences(pd); err != nil {
			// Never dropped: passed on as it came (minus what pdata converted).
			p.logger.Debug("Profiles with attribute references pass through", zap.Error(err))
		}
	}
	rps := pd.ResourceProfiles()
	pr := profilesRun{p: p, b: b, rps: rps, dict: pd.Dictionary()}
	n := rps.Len()
	for i := range n {
		if !pr.resource(i) {
			b.deferred = append(b.deferred, i)
		}
	}
	if b.wait(ctx) {
		for _, i := range b.deferred {
			pr.resource(i)
		}
	}
	if len(pr.emptied) > 0 {
		rps.RemoveIf(removeMarked[pprofile.ResourceProfiles](pr.emptied))
	}
	return pd, nil
}

// hasAttributeReferences reports whether a resource has an attribute
// without a key: a string table reference. pdata's marshalers turn the
// resource attributes of mutable profiles into references in place (the
// otlphttp exporter marshals so), so a batch retried after the next
// consumer marshaled it comes back so: its pid would not be found, and a
// regrouped resource would be enriched again beside the references. An
// attribute sent with an empty key also counts: such batches pay the round
// trip of resolveReferences, and are still enriched.
func hasAttributeReferences(rps pprofile.ResourceProfilesSlice) bool {
	for _, rp := range rps.All() {
		for k := range rp.Resource().Attributes().All() {
			if k == "" {
				return true
			}
		}
	}
	return false
}

// resolveReferences makes the attributes of pd plain again. pdata resolves
// references only when it unmarshals, hence the round trip; it is taken
// only by batches that were marshaled (retried ones), not on the hot path.
func resolveReferences(pd pprofile.Profiles) error {
	buf, err := (&pprofile.ProtoMarshaler{}).MarshalProfiles(pd)
	if err != nil {
		return fmt.Errorf("resolve attribute references: marshal: %w", err)
	}
	back, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(buf)
	if err != nil {
		return fmt.Errorf("resolve attribute references: unmarshal: %w", err)
	}
	back.MoveTo(pd)
	return nil
}

// profilesRun is one call of processProfiles.
type profilesRun struct {
	p          *instance
	b          *batch
	rps        pprofile.ResourceProfilesSlice
	dict       pprofile.ProfilesDictionary
	table      []samplePID
	tableBuilt bool
	emptied    marks
}

// resource enriches or regroups resource i; false: it names a pid being
// read.
func (r *profilesRun) resource(i int) bool {
	rp := r.rps.At(i)
	attrs := rp.Resource().Attributes()
	facts := r.p.core.factsOf(attrs)
	if facts.pid != 0 {
		return r.b.enrichResource(attrs, &facts, sampleCount(rp))
	}
	if !r.p.regroup {
		return true
	}
	if !r.tableBuilt {
		r.table = r.p.core.samplePIDTable(r.dict)
		r.tableBuilt = true
	}
	if len(r.table) == 0 {
		return true
	}
	t := newProfilesTree(r.rps, rp, r.table)
	deferred, all := r.b.regroupResource(attrs, t)
	if all {
		r.emptied.set(i)
	}
	return !deferred
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

// profilesTree is a resource's samples for regroupResource: a leaf per
// profile. Each process's samples move into new Profiles (same
// profile-level fields) under new ScopeProfiles under a new
// ResourceProfiles in the same Profiles, so that the dictionary, and with
// it every stack, link and attribute index, stays valid.
type profilesTree struct {
	rps   pprofile.ResourceProfilesSlice
	rp    pprofile.ResourceProfiles
	table []samplePID
	// The leaves: scope and profile index of each.
	scopeOf, profileOf []int
	profiles           []pprofile.Profile
	samples            []pprofile.SampleSlice
	// Per group: its resource, its current scope copy (for scope index
	// curScope) and the profile copy opened last.
	dst      []pprofile.ResourceProfiles
	curScope []int
	scopes   []pprofile.ScopeProfiles
	last     []pprofile.Profile
	groupPid []int // host pid
	// The profiles emptied, per scope.
	emptiedProfiles map[int]*marks
}

func newProfilesTree(rps pprofile.ResourceProfilesSlice, rp pprofile.ResourceProfiles, table []samplePID) *profilesTree {
	t := &profilesTree{rps: rps, rp: rp, table: table}
	sps := rp.ScopeProfiles()
	for i := range sps.Len() {
		ps := sps.At(i).Profiles()
		for j := range ps.Len() {
			t.scopeOf = append(t.scopeOf, i)
			t.profileOf = append(t.profileOf, j)
			prof := ps.At(j)
			t.profiles = append(t.profiles, prof)
			t.samples = append(t.samples, prof.Samples())
		}
	}
	return t
}

func (t *profilesTree) leaves() int { return len(t.profiles) }

func (t *profilesTree) items(leaf int) *[]unsafe.Pointer { return itemPointers(t.samples[leaf]) }

func (t *profilesTree) pid(leaf, i int) int { return pidOfSample(t.samples[leaf].At(i), t.table) }

func (t *profilesTree) newResource(_, pid int) pcommon.Map {
	nrp := t.rps.AppendEmpty()
	t.rp.Resource().CopyTo(nrp.Resource())
	nrp.SetSchemaUrl(t.rp.SchemaUrl())
	t.dst = append(t.dst, nrp)
	t.curScope = append(t.curScope, -1)
	t.scopes = append(t.scopes, pprofile.ScopeProfiles{})
	t.last = append(t.last, pprofile.Profile{})
	t.groupPid = append(t.groupPid, pid)
	return nrp.Resource().Attributes()
}

func (t *profilesTree) openLeaf(g, leaf, n int) *[]unsafe.Pointer {
	si := t.scopeOf[leaf]
	if t.curScope[g] != si {
		sp := t.rp.ScopeProfiles().At(si)
		nsp := t.dst[g].ScopeProfiles().AppendEmpty()
		sp.Scope().CopyTo(nsp.Scope())
		nsp.SetSchemaUrl(sp.SchemaUrl())
		t.scopes[g], t.curScope[g] = nsp, si
	}
	prof := t.profiles[leaf]
	np := t.scopes[g].Profiles().AppendEmpty()
	copyProfileFields(prof, np)
	np.SetProfileID(fragmentID(prof.ProfileID(), t.groupPid[g]))
	np.Samples().EnsureCapacity(n)
	t.last[g] = np
	return itemPointers(np.Samples())
}

// emptied: the original profile disappears; its first fragment carries on
// its identity and original payload, which thus exist once.
func (t *profilesTree) emptied(leaf, first int) {
	prof, frag := t.profiles[leaf], t.last[first]
	frag.SetProfileID(prof.ProfileID())
	prof.OriginalPayload().MoveTo(frag.OriginalPayload())
	if t.emptiedProfiles == nil {
		t.emptiedProfiles = map[int]*marks{}
	}
	m := t.emptiedProfiles[t.scopeOf[leaf]]
	if m == nil {
		m = &marks{}
		t.emptiedProfiles[t.scopeOf[leaf]] = m
	}
	m.set(t.profileOf[leaf])
}

func (t *profilesTree) prune() {
	if len(t.emptiedProfiles) == 0 {
		return
	}
	sps := t.rp.ScopeProfiles()
	var emptiedScopes marks
	for si, m := range t.emptiedProfiles {
		ps := sps.At(si).Profiles()
		ps.RemoveIf(removeMarked[pprofile.Profile](*m))
		if ps.Len() == 0 {
			emptiedScopes.set(si)
		}
	}
	if len(emptiedScopes) > 0 {
		sps.RemoveIf(removeMarked[pprofile.ScopeProfiles](emptiedScopes))
	}
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
