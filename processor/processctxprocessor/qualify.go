package processctxprocessor

import (
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/procmem"
)

// Telemetry from an SDK inside a container carries its container's pids
// (often 1), which name unrelated processes on the host. With container.id
// beside the pid the pair is resolved to the host process; without it, the
// pid is taken for a host pid only when nothing contradicts that.

const (
	containerIDKey = "container.id"
	hostPidKey     = "process.pid"
	vpidKey        = "process.vpid"
)

// serviceIdentity is the service a process says it is.
type serviceIdentity struct {
	name, namespace, instanceID string
}

func identityOf(m pcommon.Map) serviceIdentity {
	return serviceIdentity{
		name:       stringAttr(m, "service.name"),
		namespace:  stringAttr(m, "service.namespace"),
		instanceID: stringAttr(m, "service.instance.id"),
	}
}

// contradicts reports whether the telemetry's identity names another
// service: a key set on both sides with different values.
func (id serviceIdentity) contradicts(tel serviceIdentity) bool {
	differs := func(a, b string) bool { return a != "" && b != "" && a != b }
	return differs(id.instanceID, tel.instanceID) || differs(id.name, tel.name) || differs(id.namespace, tel.namespace)
}

// resourceFacts reads, in one pass over a resource's attributes (this runs
// for every resource), its container.id and its service identity.
func resourceFacts(attrs pcommon.Map) (containerID string, id serviceIdentity) {
	for k, v := range attrs.All() {
		if v.Type() != pcommon.ValueTypeStr {
			continue
		}
		switch k {
		case containerIDKey:
			containerID = v.Str()
		case "service.name":
			id.name = v.Str()
		case "service.namespace":
			id.namespace = v.Str()
		case "service.instance.id":
			id.instanceID = v.Str()
		}
	}
	return containerID, id
}

func stringAttr(m pcommon.Map, key string) string {
	if v, ok := m.Get(key); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

// resolveFor resolves the pid found on (or under) a resource with
// attributes attrs: the entry, the outcome and the host pid. onResource says
// the pid is the resource's own: only then do the resource's service
// attributes describe the pid's process (a resource whose records come from
// several processes, such as journald's or an eBPF profiler's, does not).
func (b *batch) resolveFor(attrs pcommon.Map, pid int, onResource bool) (*entry, outcome, int) {
	cid, tel := resourceFacts(attrs)
	if cid != "" {
		return b.resolveInContainer(cid, pid)
	}
	var e *entry
	var o outcome
	if onResource {
		// Resources rarely share a pid within a batch: the batch memo
		// would cost more than the cache lookup it saves.
		e, o = b.res.lookup(pid, b.now)
	} else {
		e, o = b.resolve(pid)
	}
	if e != nil && onResource && !b.p.core.trustHostPids && e.identity.contradicts(tel) {
		return nil, outcomeMismatch, pid
	}
	return e, o, pid
}

// resolveInContainer resolves pid as seen by container cid: a host pid of a
// process in that container (as host agents report it), else the pid of a
// process inside the container's pid namespace.
func (b *batch) resolveInContainer(cid string, pid int) (*entry, outcome, int) {
	if e, o := b.resolve(pid); e != nil && e.containerID == cid {
		return e, o, pid
	}
	host, ok := b.res.hostPidIn(cid, pid, b.now)
	if !ok {
		return nil, outcomeNoContext, pid
	}
	e, o := b.resolve(host)
	if e != nil && (e.containerID != cid || e.vpid != pid) {
		return nil, outcomeNoContext, pid // the index is older than the process
	}
	return e, o, host
}

// stampPids makes an enriched resource carry the host pid as process.pid,
// and the pid inside its namespace as process.vpid where they differ.
// telemetryPid is the pid the telemetry named.
func stampPids(attrs pcommon.Map, e *entry, telemetryPid, hostPid int) {
	if hostPid != telemetryPid {
		attrs.PutInt(hostPidKey, int64(hostPid))
		attrs.PutInt(vpidKey, int64(telemetryPid))
		return
	}
	if _, ok := attrs.Get(hostPidKey); !ok {
		attrs.PutInt(hostPidKey, int64(hostPid))
	}
	if e.vpid != 0 && e.vpid != hostPid {
		if _, ok := attrs.Get(vpidKey); !ok {
			attrs.PutInt(vpidKey, int64(e.vpid))
		}
	}
}

// containerPid is a pid as seen inside a container.
type containerPid struct {
	id   string
	vpid int
}

// containerIndex maps container pids to host pids. It is rebuilt from a
// scan of the procfs (one cgroup read per process, a status read per
// containerized one) when a pair is missing, at most once per negative TTL.
type containerIndex struct {
	mu      sync.Mutex
	builtAt time.Time
	hosts   map[containerPid]int
}

// hostPidIn returns the host pid of the process that is vpid in container
// cid.
func (r *resolver) hostPidIn(cid string, vpid int, now time.Time) (int, bool) {
	x := &r.containers
	x.mu.Lock()
	defer x.mu.Unlock()
	key := containerPid{cid, vpid}
	host, ok := x.hosts[key]
	if ok && now.Sub(x.builtAt) < r.ttl {
		return host, true
	}
	if !x.builtAt.IsZero() && now.Sub(x.builtAt) < r.negativeTTL {
		return host, ok
	}
	x.hosts = scanContainers(r.fs)
	x.builtAt = now
	host, ok = x.hosts[key]
	return host, ok
}

func scanContainers(fs *procmem.FS) map[containerPid]int {
	hosts := map[containerPid]int{}
	var lister procmem.PidLister
	entries, err := lister.List(fs)
	if err != nil {
		return hosts
	}
	for _, ent := range entries {
		cid, err := fs.ContainerID(ent.Pid)
		if err != nil || cid == "" {
			continue
		}
		if vpid, err := fs.VPID(ent.Pid); err == nil {
			hosts[containerPid{cid, vpid}] = ent.Pid
		}
	}
	return hosts
}
