// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.uber.org/zap"
)

// processProfiles enriches each resource by its pid (eBPF profiler builds
// since 2026-03), or regroups its samples by their process.pid attribute
// (earlier builds: several pids under one resource).
func (p *instance) processProfiles(ctx context.Context, pd pprofile.Profiles) (pprofile.Profiles, error) {
	b := p.newBatch()
	if b == nil {
		return pd, nil
	}
	defer b.finish()
	if hasAttributeReferences(pd.ResourceProfiles()) {
		if err := resolveReferences(pd); err != nil {
			// Never dropped: passed on as it came (minus what pdata converted).
			p.logger.Debug("Profiles with attribute references pass through", zap.Error(err))
		}
	}
	rps, dict := pd.ResourceProfiles(), pd.Dictionary()
	// tree is made, with the dictionary's pid table, for the first resource
	// without a pid.
	var tree *profilesTree
	run(ctx, b, rps, sampleCount, func(rp pprofile.ResourceProfiles) itemTree {
		if tree == nil {
			tree = &profilesTree{rps: rps, table: p.pids.samplePIDTable(dict)}
		}
		if len(tree.table) == 0 {
			return nil // no sample names a pid
		}
		tree.reset(rp)
		return tree
	})
	if b.counts.noPID > 0 && b.missDue {
		b.missKeys.noteDictionary(dict)
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

// profilesTree is a resource's samples for regroupResource: a leaf per
// profile. Each process's samples move into fragments of their profiles
// (same profile-level fields) under copies of their scopes under a new
// ResourceProfiles in the same Profiles, so that the dictionary, and with
// it every stack, link and attribute index, stays valid.
type profilesTree struct {
	table []pidPick // pidRanking.samplePIDTable
	rps   pprofile.ResourceProfilesSlice
	rp    pprofile.ResourceProfiles
	// The leaves, in order: each profile, its samples and its scope's
	// index.
	profiles []pprofile.Profile
	samples  []pprofile.SampleSlice
	scopeOf  []int
	groups   []profileGroup
	// open holds each group's samples of the leaf being moved.
	open    []pprofile.SampleSlice
	emptied marks // leaves
}

// profileGroup is one process's share of the resource.
type profileGroup struct {
	resource pprofile.ResourceProfiles
	hostPid  int
	// scope is its copy of the scope of index scopeIndex (-1: none yet).
	scope      pprofile.ScopeProfiles
	scopeIndex int
	// fragment is its fragment of the profile moved last.
	fragment pprofile.Profile
}

// reset makes the tree rp's.
func (t *profilesTree) reset(rp pprofile.ResourceProfiles) {
	t.rp = rp
	t.profiles, t.samples, t.scopeOf = t.profiles[:0], t.samples[:0], t.scopeOf[:0]
	t.groups, t.open, t.emptied = t.groups[:0], t.open[:0], t.emptied[:0]
	for si, sp := range rp.ScopeProfiles().All() {
		for _, prof := range sp.Profiles().All() {
			t.profiles = append(t.profiles, prof)
			t.samples = append(t.samples, prof.Samples())
			t.scopeOf = append(t.scopeOf, si)
		}
	}
}

func (t *profilesTree) leaves() int { return len(t.profiles) }

func (t *profilesTree) items(leaf int) int { return t.samples[leaf].Len() }

func (t *profilesTree) pid(leaf, i int) int { return pidOfSample(t.samples[leaf].At(i), t.table) }

// noteKeys notes nothing: processProfiles notes the keys of the
// dictionary's attributes, to which samples refer, once per batch.
func (t *profilesTree) noteKeys(int, int, *missKeys) {}

func (t *profilesTree) newResource(pid int) pcommon.Resource {
	nrp := t.rps.AppendEmpty()
	t.rp.Resource().CopyTo(nrp.Resource())
	nrp.SetSchemaUrl(t.rp.SchemaUrl())
	t.groups = append(t.groups, profileGroup{resource: nrp, hostPid: pid, scopeIndex: -1})
	t.open = append(t.open, pprofile.SampleSlice{})
	return nrp.Resource()
}

func (t *profilesTree) moveLeaf(leaf int, groups []int32, counts []int) {
	for g, n := range counts {
		if n > 0 {
			t.open[g] = t.openFragment(&t.groups[g], leaf, n)
		}
	}
	moveItems[pprofile.Sample](t.samples[leaf], groups, t.open)
	if t.samples[leaf].Len() == 0 {
		// The original profile goes: its first fragment carries on its
		// identity and original payload, which thus exist once.
		prof, first := t.profiles[leaf], t.groups[groups[0]].fragment
		first.SetProfileID(prof.ProfileID())
		prof.OriginalPayload().MoveTo(first.OriginalPayload())
		t.emptied.set(leaf)
	}
}

// openFragment makes group g's fragment of a leaf's profile, in g's copy of
// the profile's scope, with room for n samples, and returns its samples.
func (t *profilesTree) openFragment(g *profileGroup, leaf, n int) pprofile.SampleSlice {
	if si := t.scopeOf[leaf]; g.scopeIndex != si {
		sp := t.rp.ScopeProfiles().At(si)
		g.scope, g.scopeIndex = g.resource.ScopeProfiles().AppendEmpty(), si
		sp.Scope().CopyTo(g.scope.Scope())
		g.scope.SetSchemaUrl(sp.SchemaUrl())
	}
	prof := t.profiles[leaf]
	g.fragment = g.scope.Profiles().AppendEmpty()
	copyProfileFields(prof, g.fragment)
	g.fragment.SetProfileID(fragmentID(prof.ProfileID(), g.hostPid))
	g.fragment.Samples().EnsureCapacity(n)
	return g.fragment.Samples()
}

// prune removes the profiles emptied, and the scopes they emptied.
func (t *profilesTree) prune() {
	if len(t.emptied) == 0 {
		return
	}
	sps := t.rp.ScopeProfiles()
	var emptiedScopes marks
	leaf := 0
	for si, sp := range sps.All() {
		ps := sp.Profiles()
		n := ps.Len()
		ps.RemoveIf(removeMarked[pprofile.Profile](t.emptied, leaf))
		leaf += n
		if n > 0 && ps.Len() == 0 {
			emptiedScopes.set(si)
		}
	}
	if len(emptiedScopes) > 0 {
		sps.RemoveIf(removeMarked[pprofile.ScopeProfiles](emptiedScopes, 0))
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
