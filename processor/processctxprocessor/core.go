package processctxprocessor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/processctx/otelcol-processctx/internal/sharedtracker"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// source is what the processor needs of a tracker (a *tracker.Tracker).
type source interface {
	Snapshot() *tracker.Snapshot
	Probe(pids []int) <-chan struct{}
	Hint(pid int)
	ScanSoon() <-chan struct{}
	AddView(ctx context.Context, fn func(*tracker.Process) any) (tracker.View, error)
	RemoveView(ctx context.Context, v tracker.View) error
	Health() (<-chan struct{}, error)
}

// core is what the processor instances of one component ID share (the
// collector creates one per pipeline): the configuration and the tracker,
// so that the logs and profiles pipelines look each process up once.
type core struct {
	cfg      *Config
	pidKeys  []string
	override bool
	// trustHostPids: unqualified_pids is "host".
	trustHostPids bool
	// pidIsHostPidKey: the first pid key is process.pid, so a resource pid
	// found under it needs no stamp when it is the host's.
	pidIsHostPidKey bool
	filter          keyFilter
	now             func() time.Time // a test hook
	// open starts the core's own tracker; a test hook.
	open func(ctx context.Context, logger *zap.Logger) (source, func(context.Context) error, error)

	mu    sync.Mutex // serializes start and stop
	state atomic.Pointer[coreState]
}

// coreState is a started core.
type coreState struct {
	src  source
	view tracker.View
	stop func(context.Context) error
}

func newCore(cfg *Config) *core {
	c := &core{
		cfg:             cfg,
		pidKeys:         slices.Clone(cfg.PIDAttributes),
		override:        cfg.Override,
		trustHostPids:   cfg.UnqualifiedPids == UnqualifiedHost,
		pidIsHostPidKey: cfg.PIDAttributes[0] == hostPidKey,
		filter:          newKeyFilter(cfg),
		now:             time.Now,
	}
	c.open = c.openTracker
	return c
}

// openTracker starts the processor's own tracker of the host.
func (c *core) openTracker(_ context.Context, logger *zap.Logger) (source, func(context.Context) error, error) {
	tr, err := tracker.Open(c.cfg.RootPath, c.cfg.limits(), c.cfg.trackerConfig(), logger)
	if err != nil {
		return nil, nil, err
	}
	tr.Start()
	return tr, tr.Stop, nil
}

// start finds the tracker of the process_context extension, or starts the
// core's own, and registers the core's view; later calls are no-ops.
func (c *core) start(ctx context.Context, host component.Host, logger *zap.Logger) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state.Load() != nil {
		return nil
	}
	if c.cfg.Cache.MaxEntries != defaultMaxEntries {
		logger.Warn("cache.max_entries is no longer used: the process tracker knows every process of the host")
	}
	shared, err := sharedtracker.Find(host, c.cfg.Tracker, c.cfg.RootPath)
	if err != nil {
		return fmt.Errorf("process_context processor: %w", err)
	}
	var src source
	var stop func(context.Context) error
	if shared != nil {
		logger.Info("Using the process tracker of the extension: its schedule and grace period apply",
			zap.String("extension", shared.ID.String()), zap.String("root_path", shared.RootPath))
		src, stop = shared.Tracker, func(context.Context) error { return nil }
	} else if src, stop, err = c.open(ctx, logger); err != nil {
		return fmt.Errorf("process_context processor: %w", err)
	}
	view, err := src.AddView(ctx, c.enrichmentOf)
	if err != nil {
		_ = stop(ctx)
		return fmt.Errorf("process_context processor: %w", err)
	}
	c.state.Store(&coreState{src: src, view: view, stop: stop})
	return nil
}

// stop stops the tracker. Batches still running pass through.
func (c *core) stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.state.Swap(nil)
	if st == nil {
		return nil
	}
	_ = st.src.RemoveView(ctx, st.view)
	return st.stop(ctx)
}

// podUIDKey is k8s.pod.uid, taken from the process's cgroup.
const podUIDKey = "k8s.pod.uid"

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
}

// identityKey is one key of a service identity and its published value.
type identityKey struct{ key, value string }

// identityKeys name the service a process says it is: telemetry whose own
// values differ comes from another process with the same pid number (an
// SDK in a container reports its container's pids).
var identityKeys = [...]string{serviceInstanceIDKey, serviceNameKey, serviceNamespaceKey}

func (c *core) enrichmentOf(p *tracker.Process) any {
	res := p.Context.Resource
	e := &enrichment{attrs: pcommon.NewMap(), vpid: p.Identity.VPID()}
	e.attrs.EnsureCapacity(res.Len())
	for _, k := range identityKeys {
		v, ok := res.Get(k)
		if !ok || v.Type() != pcommon.ValueTypeStr || v.Str() == "" {
			continue
		}
		if c.filter.keep(k) {
			v.CopyTo(e.attrs.PutEmpty(k))
			e.nIdentity++
		} else {
			e.hidden = append(e.hidden, identityKey{k, v.Str()})
		}
	}
	for k, v := range res.All() {
		if _, done := e.attrs.Get(k); !done && c.filter.keep(k) && !slices.Contains(identityKeys[:], k) {
			v.CopyTo(e.attrs.PutEmpty(k))
		}
	}
	// What the host knows beside what the process published: the pod its
	// cgroup names, for k8sattributes downstream (the host's view wins).
	if uid := p.Identity.PodUID; uid != "" && c.filter.keep(podUIDKey) {
		e.attrs.PutStr(podUIDKey, uid)
	}
	for k := range e.attrs.All() {
		e.firstKey = k
		break
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
// enriching costs no allocation beyond the copied values.
func (c *core) enrich(dst pcommon.Map, e *enrichment, verify bool) bool {
	if verify {
		for _, h := range e.hidden {
			if contradicts(dst, h.key, h.value) {
				return false
			}
		}
	}
	var added [len(identityKeys)]string
	// Grown once for every key; a resource enriched before (a retried
	// batch) has them already and is not grown.
	if _, enriched := dst.Get(e.firstKey); !enriched {
		dst.EnsureCapacity(dst.Len() + e.attrs.Len())
	}
	i := 0
	for k, v := range e.attrs.All() {
		cur, exists := dst.GetOrPutEmpty(k)
		if i < e.nIdentity {
			if exists && verify && cur.Type() == pcommon.ValueTypeStr && cur.Str() != "" && cur.Str() != v.Str() {
				for _, k := range added[:i] {
					if k != "" {
						dst.Remove(k)
					}
				}
				return false
			}
			if !exists {
				added[i] = k
			}
		}
		i++
		if exists && !c.override {
			continue
		}
		v.CopyTo(cur)
	}
	return true
}

// contradicts reports whether attrs has a non-empty string key with another
// value than published.
func contradicts(attrs pcommon.Map, key, published string) bool {
	v, ok := attrs.Get(key)
	return ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" && v.Str() != published
}
