// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxprocessor

import (
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/attrpolicy"
	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/procfs"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// enrichment is what the processor stamps for one publication: computed
// once per publication by the tracker (a View), read by every batch.
type enrichment struct {
	// attrs are what the policy lets the publication add, with the
	// collector's own observations of the process, the service identity
	// keys first (the nIdentity first ones). Read-only.
	attrs     pcommon.Map
	nIdentity int
	// replace says, for each key of attrs in order, whether its value
	// replaces the telemetry's own (the family's override); the others
	// are added where missing. Read-only.
	replace []bool
	// hidden are the identity keys published but not added (include and
	// exclude), which telemetry is still verified against.
	hidden []identityKey
	// vpid is the process's pid in its innermost pid namespace.
	vpid int
	// firstKey is the first key of attrs ("" when none).
	firstKey string
	// source is where the process's identity comes from, for the counts.
	source tracker.Source
	// refs are the entity references of a resource that had none, to
	// which every key of attrs was added (the usual case), so that such a
	// resource costs appending them; refsVpid are the same for a resource
	// that was stamped process.vpid too. Both are empty with entity_refs
	// off, or when nothing added identifies an entity. Read-only.
	refs, refsVpid []entityRef
	// identifiesProcess: attrs holds process.creation.time, so that a
	// resource enriched has both keys identifying its process.
	identifiesProcess bool
}

// identityKey is one key of a service identity and its published value.
type identityKey struct{ key, value string }

// identityKeys name the service a process says it is: telemetry whose own
// values differ comes from another process with the same pid number (an
// SDK in a container reports its container's pids).
var identityKeys = [...]string{entitymodel.ServiceInstanceIDKey, entitymodel.ServiceNameKey, entitymodel.ServiceNamespaceKey}

// enrichmentOf is the instance's view of a publication (see
// tracker.AddView): what the policy (attrpolicy) lets its resource add,
// decided here once for every record of every batch. The collector's own
// observations of the process come before the published keys of the
// same names, which the policy copies (observed.copy) only where the
// collector has none; none of them replaces the telemetry's own.
func (p *instance) enrichmentOf(proc *tracker.Publication) any {
	res := proc.Context.Resource
	e := &enrichment{attrs: pcommon.NewMap(), vpid: proc.Identity.VPID(), source: proc.Source}
	e.attrs.EnsureCapacity(res.Len() + len(observedByHost))
	put := func(k string, v pcommon.Value, replace bool) {
		v.CopyTo(e.attrs.PutEmpty(k))
		e.replace = append(e.replace, replace)
	}
	for _, k := range identityKeys {
		v, ok := res.Get(k)
		if !ok || v.Type() != pcommon.ValueTypeStr || v.Str() == "" {
			continue
		}
		if a := p.policy.Published(k, v); a != attrpolicy.Skip {
			put(k, v, a == attrpolicy.Replace)
			e.nIdentity++
		} else {
			e.hidden = append(e.hidden, identityKey{k, v.Str()})
		}
	}
	// What the host knows beside what the process published: the pod and
	// the container its cgroup names (for k8sattributes downstream), and
	// its creation time in the form the receiver's entity events use, so
	// that both name the same process entity (unknown when the boot time
	// could not be read).
	for _, o := range observedByHost {
		if v := o.value(&proc.Identity); v != "" && p.policy.Admits(o.key) {
			put(o.key, pcommon.NewValueStr(v), false)
		}
	}
	for k, v := range res.All() {
		if _, done := e.attrs.Get(k); done || slices.Contains(identityKeys[:], k) {
			continue
		}
		if a := p.policy.Published(k, v); a != attrpolicy.Skip {
			put(k, v, a == attrpolicy.Replace)
		}
	}
	_, e.identifiesProcess = e.attrs.Get(entitymodel.ProcessCreationTimeKey)
	for k := range e.attrs.All() {
		e.firstKey = k
		break
	}
	if p.entityRefs {
		e.planRefs()
	}
	return e
}

// observedByHost are the keys the processor adds from the collector's own
// observation of a process (beside process.pid and process.vpid, which
// stampPids writes). The host's identity (host.*) is not among them: that
// is resourcedetection's job.
var observedByHost = [...]struct {
	key   string
	value func(*procfs.Identity) string
}{
	{entitymodel.PodUIDKey, func(id *procfs.Identity) string { return id.PodUID }},
	{entitymodel.ContainerIDKey, func(id *procfs.Identity) string { return id.ContainerID }},
	{entitymodel.ProcessCreationTimeKey, func(id *procfs.Identity) string { return id.CreationTimeString() }},
}

// enrich adds the enrichment's attributes to a resource's attributes:
// each where the resource has none, and replacing the resource's own
// where the policy says so (a family's override). With verify, the
// resource's own service identity must not contradict the published one
// (a key set on both sides with different values): then nothing is added
// and enrich returns false. The identity keys come first, so a
// contradiction is seen before anything else is added. The map is grown
// once up front when the first key is missing (the usual case: nothing
// added yet), so that enriching costs no allocation beyond the copied
// values. With present not nil, the keys that were on dst already and
// kept their value are appended to it: they were not added, and entity
// references must not claim them.
func (p *instance) enrich(dst pcommon.Map, e *enrichment, verify bool, present *[]string) bool {
	if verify && len(e.hidden) > 0 && e.hiddenContradicted(dst) {
		return false
	}
	// Grown once for every key; a resource enriched before (a retried
	// batch) has them already and is not grown.
	if _, enriched := dst.Get(e.firstKey); !enriched {
		dst.EnsureCapacity(dst.Len() + e.attrs.Len())
	}
	var added addedKeys
	i := 0
	for k, v := range e.attrs.All() {
		cur, exists := dst.GetOrPutEmpty(k)
		if i < e.nIdentity {
			if verify && exists && contradicts(cur, v.Str()) {
				added.undo(dst)
				return false
			}
			if !exists {
				added[i] = k
			}
		}
		switch {
		case !exists || e.replace[i]:
			v.CopyTo(cur)
		case present != nil:
			*present = append(*present, k)
		}
		i++
	}
	return true
}

// hiddenContradicted reports whether attrs contradict an identity key
// published but not added.
func (e *enrichment) hiddenContradicted(attrs pcommon.Map) bool {
	for _, h := range e.hidden {
		if v, ok := attrs.Get(h.key); ok && contradicts(v, h.value) {
			return true
		}
	}
	return false
}

// contradicts reports whether v is a non-empty string other than
// published.
func contradicts(v pcommon.Value, published string) bool {
	return v.Type() == pcommon.ValueTypeStr && v.Str() != "" && v.Str() != published
}

// addedKeys are the identity keys enrich added, by position: removed
// again when a later one contradicts the telemetry.
type addedKeys [len(identityKeys)]string

func (a *addedKeys) undo(dst pcommon.Map) {
	for _, k := range a {
		if k != "" {
			dst.Remove(k)
		}
	}
}
