package processctxprocessor

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// Telemetry from an SDK inside a container carries its container's pids
// (often 1), which name unrelated processes on the host. With container.id
// beside the pid the pair is resolved to the host process; without it, the
// pid is taken for a host pid only when nothing contradicts that.

const (
	containerIDKey       = "container.id"
	hostPidKey           = "process.pid"
	vpidKey              = "process.vpid"
	serviceNameKey       = "service.name"
	serviceNamespaceKey  = "service.namespace"
	serviceInstanceIDKey = "service.instance.id"
)

// serviceIdentity is the service a process says it is.
type serviceIdentity struct {
	name, namespace, instanceID string
}

func identityOf(m pcommon.Map) serviceIdentity {
	return serviceIdentity{
		name:       stringAttr(m, serviceNameKey),
		namespace:  stringAttr(m, serviceNamespaceKey),
		instanceID: stringAttr(m, serviceInstanceIDKey),
	}
}

// contradicts reports whether the telemetry's identity names another
// service: a key set on both sides with different values.
func (id serviceIdentity) contradicts(tel serviceIdentity) bool {
	differs := func(a, b string) bool { return a != "" && b != "" && a != b }
	return differs(id.instanceID, tel.instanceID) || differs(id.name, tel.name) || differs(id.namespace, tel.namespace)
}

func stringAttr(m pcommon.Map, key string) string {
	if v, ok := m.Get(key); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

// resourceFacts is what one pass over a resource's attributes (this runs
// for every resource) finds: the pid under the highest-ranked pid key, the
// container.id and the service identity.
type resourceFacts struct {
	pid         int
	containerID string
	identity    serviceIdentity
}

func (c *core) factsOf(attrs pcommon.Map) resourceFacts {
	var f resourceFacts
	rank := len(c.pidKeys)
	for k, v := range attrs.All() {
		switch k {
		case containerIDKey:
			if v.Type() == pcommon.ValueTypeStr {
				f.containerID = v.Str()
			}
			continue
		case serviceNameKey:
			if v.Type() == pcommon.ValueTypeStr {
				f.identity.name = v.Str()
			}
			continue
		case serviceNamespaceKey:
			if v.Type() == pcommon.ValueTypeStr {
				f.identity.namespace = v.Str()
			}
			continue
		case serviceInstanceIDKey:
			if v.Type() == pcommon.ValueTypeStr {
				f.identity.instanceID = v.Str()
			}
			continue
		}
		for i, pk := range c.pidKeys[:rank] {
			if k == pk {
				if pid, ok := pidFromValue(v); ok {
					f.pid, rank = pid, i
				}
				break
			}
		}
	}
	return f
}

// stampPids makes an enriched resource carry the host pid as process.pid,
// and the pid inside its namespace as process.vpid where they differ.
// telemetryPid is the pid the telemetry named.
func stampPids(attrs pcommon.Map, p *tracker.Process, telemetryPid, hostPid int) {
	if hostPid != telemetryPid {
		attrs.PutInt(hostPidKey, int64(hostPid))
		attrs.PutInt(vpidKey, int64(telemetryPid))
		return
	}
	if _, ok := attrs.Get(hostPidKey); !ok {
		attrs.PutInt(hostPidKey, int64(hostPid))
	}
	if vpid := p.Identity.VPID(); vpid != 0 && vpid != hostPid {
		if _, ok := attrs.Get(vpidKey); !ok {
			attrs.PutInt(vpidKey, int64(vpid))
		}
	}
}
