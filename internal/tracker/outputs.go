// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package tracker

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/benbjohnson/immutable"

	"github.com/processctx/otelcol-processctx/internal/pidtable"
)

// outputs is what the tracker tells: the snapshot (published atomically),
// the changes and scan summaries for the subscribers and WithScanStats,
// the views, and the ended publications kept for the grace period (the
// live ones are the registry's). The loop records and flushes (publish,
// tell); other goroutines read snapshot and subscribe.
type outputs struct {
	snap   atomic.Pointer[Snapshot]
	subsMu sync.Mutex
	subs   []*subscriber
	onScan []func(ScanStats) // the WithScanStats functions
	views  []view
	// ended is the last ended publication of each pid, unless the pid names
	// another process or published again since; endedQueue every one in
	// the order its grace period ends.
	ended      map[int]endedPub
	endedQueue []endedPub
	// altered are the pids whose publication may have changed since the
	// last snapshot.
	altered []int
	// inContainer holds, for each key of the snapshot's byContainer, the
	// pids of its publications (a live one and ended ones, seldom more):
	// when one of them changes, the key's entry is chosen among them again.
	inContainer map[ContainerPid][]int
	touched     []int      // the pids whose lookup answer may have changed
	changes     []Change   // the subscribers' next
	stats       *ScanStats // the last scan's summary, the subscribers' next
	// prompt: the changes recorded now are Prompt (the loop sets it while
	// it handles an event or applies an urgent read).
	prompt bool
}

// endedPub is a publication that ended, kept until the clock until.
type endedPub struct {
	pid   int
	p     *Publication // in ended only
	until int64
}

// view is one View's computation, shared by the AddView calls with its
// key.
type view struct {
	key   any
	fn    func(*Publication) any // nil once removed
	users int
}

type subscriber struct{ fn Subscriber }

func (o *outputs) init() {
	o.ended = map[int]endedPub{}
	o.inContainer = map[ContainerPid][]int{}
	o.snap.Store(emptySnapshot())
}

func (o *outputs) callOnScan(fn func(ScanStats)) { o.onScan = append(o.onScan, fn) }
func (o *outputs) snapshot() *Snapshot           { return o.snap.Load() }

// touch notes that pid's lookup answer may have changed: the next
// snapshot says it again.
func (o *outputs) touch(pid int) { o.touched = append(o.touched, pid) }

// record records a change of a publication. One that ends it is kept
// until the clock until (0: not kept); any other replaces the ended one
// of its pid.
func (o *outputs) record(kind ChangeKind, pub *Publication, until int64) {
	o.changes = append(o.changes, Change{Kind: kind, Publication: pub, Prompt: o.prompt})
	o.altered = append(o.altered, pub.PID)
	switch {
	case !kind.Ends():
		delete(o.ended, pub.PID)
	case until != 0:
		o.ended[pub.PID] = endedPub{pid: pub.PID, p: pub, until: until}
		o.endedQueue = append(o.endedQueue, endedPub{pid: pub.PID, until: until})
	}
}

// dropEnded drops the ended publication of pid unless it is of the
// process that started at start (the pid names another process).
func (o *outputs) dropEnded(pid int, start uint64) {
	if e, ok := o.ended[pid]; ok && e.p.StartTicks != start {
		delete(o.ended, pid)
		o.altered = append(o.altered, pid)
	}
}

// expire drops the ended publications whose grace period passed at now,
// and returns how many are kept.
func (o *outputs) expire(now int64) int {
	q := o.endedQueue
	for len(q) > 0 && now >= q[0].until {
		if e, ok := o.ended[q[0].pid]; ok && e.until == q[0].until {
			delete(o.ended, q[0].pid)
			o.altered = append(o.altered, q[0].pid)
		}
		q = q[1:]
	}
	o.endedQueue = q
	return len(q)
}

// handScan hands the summary of a scan to the next tell.
func (o *outputs) handScan(stats *ScanStats) { o.stats = stats }

// publish publishes a new snapshot when something changed: live returns
// the live publication of a pid (nil: none), answer what a lookup of a pid
// without one answers. A snapshot says Scanned from the one that comes
// with the first scan's summary.
func (o *outputs) publish(live func(pid int) *Publication, answer func(pid int) Answer) {
	cur := o.snap.Load()
	scanned := cur.Scanned || o.stats != nil
	if len(o.altered) == 0 && len(o.touched) == 0 && cur.Scanned == scanned {
		return
	}
	s := &Snapshot{byPID: cur.byPID, byContainer: cur.byContainer, answers: cur.answers, Scanned: scanned}
	var keys []ContainerPid
	for _, pid := range o.altered {
		was, _ := s.byPID.Get(pid)
		is := live(pid)
		if e, ok := o.ended[pid]; ok && is == nil {
			is = e.p // never both: a live publication drops the ended one
		}
		if is == was {
			continue
		}
		if is == nil {
			s.byPID = s.byPID.Without(pid)
		} else {
			s.byPID = s.byPID.With(pid, is)
		}
		keys = o.reindex(keys, pid, was, is)
	}
	o.altered = o.altered[:0]
	for _, k := range keys {
		s.byContainer = o.containerEntry(s, k)
	}
	w := pidtable.NewNibbleWriter(cur.answers)
	for _, pid := range o.touched {
		w.Set(pid, uint8(answer(pid)))
	}
	o.touched = o.touched[:0]
	s.answers = w.Table()
	o.snap.Store(s)
}

// reindex moves pid, whose publication was and is now is (either nil),
// between the keys of inContainer, and returns keys with those whose
// publication may change.
func (o *outputs) reindex(keys []ContainerPid, pid int, was, is *Publication) []ContainerPid {
	if was != nil && was.Identity.ContainerID != "" {
		k := ContainerPid{was.Identity.ContainerID, was.Identity.VPID()}
		pids := slices.DeleteFunc(o.inContainer[k], func(p int) bool { return p == pid })
		if len(pids) == 0 {
			delete(o.inContainer, k)
		} else {
			o.inContainer[k] = pids
		}
		keys = append(keys, k)
	}
	if is != nil && is.Identity.ContainerID != "" {
		k := ContainerPid{is.Identity.ContainerID, is.Identity.VPID()}
		if pids := o.inContainer[k]; !slices.Contains(pids, pid) {
			o.inContainer[k] = append(pids, pid)
		}
		keys = append(keys, k)
	}
	return keys
}

// containerEntry returns s.byContainer with the publication of k, as s.byPID
// has them: a live one wins over an ended one of the same pair.
func (o *outputs) containerEntry(s *Snapshot, k ContainerPid) *immutable.Map[ContainerPid, *Publication] {
	var best *Publication
	for _, pid := range o.inContainer[k] {
		if p, _ := s.byPID.Get(pid); p != nil && (best == nil || !best.Live()) {
			best = p
		}
	}
	if cur, _ := s.byContainer.Get(k); cur == best {
		return s.byContainer
	}
	if best == nil {
		return s.byContainer.Delete(k)
	}
	return s.byContainer.Set(k, best)
}

// tell hands the last scan's summary to the WithScanStats functions, and
// it and the changes since the last call to the subscribers.
func (o *outputs) tell() {
	if o.stats != nil {
		for _, fn := range o.onScan {
			fn(*o.stats)
		}
	}
	if len(o.changes) == 0 && o.stats == nil {
		return
	}
	changes, stats := o.changes, o.stats
	o.changes, o.stats = nil, nil
	o.subsMu.Lock()
	subs := slices.Clone(o.subs)
	o.subsMu.Unlock()
	for _, s := range subs {
		s.fn(changes, stats)
	}
}

// subscribe adds s to the subscribers and returns what removes it.
func (o *outputs) subscribe(s *subscriber) (unsubscribe func()) {
	o.subsMu.Lock()
	defer o.subsMu.Unlock()
	o.subs = append(o.subs, s)
	return func() {
		o.subsMu.Lock()
		defer o.subsMu.Unlock()
		if i := slices.Index(o.subs, s); i >= 0 {
			o.subs = slices.Delete(o.subs, i, i+1)
		}
	}
}

// addView returns the view computed by fn under key: the one added before
// under key (added false), or a new one.
func (o *outputs) addView(key any, fn func(*Publication) any) (v View, added bool) {
	for i := range o.views {
		if w := &o.views[i]; w.fn != nil && w.key == key {
			w.users++
			return View{id: i}, false
		}
	}
	o.views = append(o.views, view{key: key, fn: fn, users: 1})
	return View{id: len(o.views) - 1}, true
}

// removeView stops computing v once every addView of it is removed.
func (o *outputs) removeView(v View) {
	w := &o.views[v.id]
	if w.users--; w.users == 0 {
		w.fn = nil
	}
}

// withViews returns a copy of p with the views' values.
func (o *outputs) withViews(p *Publication) *Publication {
	c := *p
	c.views = make([]any, len(o.views))
	for i, v := range o.views {
		if v.fn != nil {
			c.views[i] = v.fn(&c)
		}
	}
	return &c
}

// recomputeViews gives the ended publications the views' values (the live
// ones have them from registry.rewrite); the next snapshot has them all.
func (o *outputs) recomputeViews() {
	for pid, e := range o.ended {
		e.p = o.withViews(e.p)
		o.ended[pid] = e
	}
	// Every publication of the snapshot is replaced (those not yet in it
	// are altered already).
	for pid := range o.snap.Load().byPID.All() {
		o.altered = append(o.altered, pid)
	}
}
