package processctxprocessor

import (
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// enrichment is what the processor stamps for one publication: computed
// once per publication by the tracker (a View), read by every batch.
type enrichment struct {
	// attrs are the published resource attributes after include/exclude,
	// the service identity keys first (the nIdentity first ones). Read-only.
	attrs     pcommon.Map
	nIdentity int
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
// tracker.AddView).
func (p *instance) enrichmentOf(proc *tracker.Process) any {
	res := proc.Context.Resource
	e := &enrichment{attrs: pcommon.NewMap(), vpid: proc.Identity.VPID(), source: proc.Source}
	e.attrs.EnsureCapacity(res.Len() + 2) // and k8s.pod.uid, process.creation.time
	for _, k := range identityKeys {
		v, ok := res.Get(k)
		if !ok || v.Type() != pcommon.ValueTypeStr || v.Str() == "" {
			continue
		}
		if p.filter.keep(k) {
			v.CopyTo(e.attrs.PutEmpty(k))
			e.nIdentity++
		} else {
			e.hidden = append(e.hidden, identityKey{k, v.Str()})
		}
	}
	for k, v := range res.All() {
		if _, done := e.attrs.Get(k); !done && p.filter.keep(k) && !slices.Contains(identityKeys[:], k) {
			v.CopyTo(e.attrs.PutEmpty(k))
		}
	}
	// What the host knows beside what the process published: the pod its
	// cgroup names, for k8sattributes downstream (the host's view wins).
	if uid := proc.Identity.PodUID; uid != "" && p.filter.keep(entitymodel.PodUIDKey) {
		e.attrs.PutStr(entitymodel.PodUIDKey, uid)
	}
	// The form the receiver's entity events use, so that both name the
	// same process entity. Unknown (the boot time could not be read): a
	// published value, if any, stays.
	if created := proc.Identity.CreationTimeString(); created != "" && p.filter.keep(entitymodel.ProcessCreationTimeKey) {
		e.attrs.PutStr(entitymodel.ProcessCreationTimeKey, created)
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

// enrich adds the published attributes to a resource's attributes;
// existing keys win unless override is set. With verify, the resource's
// own service identity must not contradict the published one (a key set
// on both sides with different values): then nothing is added and enrich
// returns false. The identity keys come first, so a contradiction is seen
// before anything else is added. The map is grown once up front when the
// first key is missing (the usual case: nothing added yet), so that
// enriching costs no allocation beyond the copied values. With present
// not nil, the keys that were on dst already and kept their value are
// appended to it: they were not added, and entity references must not
// claim them.
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
		i++
		switch {
		case !exists || p.override:
			v.CopyTo(cur)
		case present != nil:
			*present = append(*present, k)
		}
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
