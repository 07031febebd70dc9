// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/xpdata/entity"

	"github.com/processctx/otelcol-processctx/internal/entitymodel"
)

// entityRef is an entity reference to append to a resource: its type and
// the resource attribute keys that identify and describe it.
type entityRef struct {
	typ             string
	idKeys          []string
	descriptionKeys []string
}

// planRefs prebuilds the references of a resource that had none and to
// which every key of attrs was added, with and without process.vpid
// stamped: what most resources get, computed once per publication.
func (e *enrichment) planRefs() {
	added := make([]string, 0, e.attrs.Len()+1)
	for k := range e.attrs.All() {
		added = append(added, k)
	}
	e.refs = e.refsFor(added, nil, nil)
	e.refsVpid = e.refsFor(append(added, entitymodel.ProcessVPIDKey), nil, nil)
}

// refsFor returns the references for the keys added to a resource that
// references the entities of types already, whose references list the
// keys claimed: the process, described by the added keys no other
// referenced entity claims, and one per service entity whose identifying
// key was added. A type the resource references already is not
// referenced again, and its keys count as claimed.
func (e *enrichment) refsFor(added, types, claimed []string) []entityRef {
	var services []entityRef
	for _, s := range entitymodel.Services() {
		if slices.Contains(types, s.Type) {
			claimed = append(append(append(claimed, s.ID...), s.Optional...), s.Description...)
			continue
		}
		if !containsAll(added, s.ID) {
			continue
		}
		ref := entityRef{typ: s.Type, idKeys: append(slices.Clip(s.ID), present(added, s.Optional)...),
			descriptionKeys: present(added, s.Description)}
		claimed = append(append(claimed, ref.idKeys...), ref.descriptionKeys...)
		services = append(services, ref)
	}
	// Without its creation time a process is not identified: a pid alone
	// names every process that ever had it.
	if !e.identifiesProcess || slices.Contains(types, entitymodel.Process) {
		return services
	}
	process := entityRef{typ: entitymodel.Process, idKeys: []string{entitymodel.ProcessPIDKey, entitymodel.ProcessCreationTimeKey}}
	for _, k := range added {
		if k != entitymodel.ProcessCreationTimeKey && !slices.Contains(claimed, k) {
			process.descriptionKeys = append(process.descriptionKeys, k)
		}
	}
	return append([]entityRef{process}, services...)
}

// addEntityRefs references on res the entities of what was added to it.
// present are the keys of e.attrs that were on res already and kept their
// value; vpidStamped says whether process.vpid was stamped. A resource
// that had no reference and got every key (the usual case) gets the
// prebuilt references; any other is planned for itself.
func addEntityRefs(res pcommon.Resource, e *enrichment, present []string, vpidStamped bool) {
	refs := entity.ResourceEntityRefs(res)
	if len(present) == 0 && refs.Len() == 0 {
		if vpidStamped {
			appendRefs(refs, e.refsVpid)
		} else {
			appendRefs(refs, e.refs)
		}
		return
	}
	added := make([]string, 0, e.attrs.Len()+1)
	for k := range e.attrs.All() {
		if !slices.Contains(present, k) {
			added = append(added, k)
		}
	}
	if vpidStamped {
		added = append(added, entitymodel.ProcessVPIDKey)
	}
	var types, claimed []string
	for _, r := range refs.All() {
		types = append(types, r.Type())
		claimed = append(claimed, r.IdKeys().AsRaw()...)
		claimed = append(claimed, r.DescriptionKeys().AsRaw()...)
	}
	appendRefs(refs, e.refsFor(added, types, claimed))
}

// containsAll says whether every key of keys is in added.
func containsAll(added, keys []string) bool {
	for _, k := range keys {
		if !slices.Contains(added, k) {
			return false
		}
	}
	return true
}

// present returns the keys of keys that are in added.
func present(added, keys []string) []string {
	var out []string
	for _, k := range keys {
		if slices.Contains(added, k) {
			out = append(out, k)
		}
	}
	return out
}

// appendRefs appends refs to dst: a pointer array grown once, then per
// reference its struct and a copy of each non-empty key list (pdata's
// public API copies key lists; it cannot share the prebuilt ones).
func appendRefs(dst entity.EntityRefSlice, refs []entityRef) {
	dst.EnsureCapacity(dst.Len() + len(refs))
	for i := range refs {
		r := &refs[i]
		ref := dst.AppendEmpty()
		ref.SetType(r.typ)
		ref.IdKeys().Append(r.idKeys...)
		ref.DescriptionKeys().Append(r.descriptionKeys...)
	}
}
