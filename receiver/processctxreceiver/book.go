// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

package processctxreceiver

import (
	"cmp"
	"container/list"
	"slices"
	"sync"
	"time"

	"github.com/processctx/otelcol-processctx/internal/entitymodel"
	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// dropReason says why entity events were given up: the reason attribute
// of the dropped events metric.
type dropReason int

const (
	dropQueueFull dropReason = iota // queue_size reached: the oldest state events go first
	dropExpired                     // a delete past report_interval, or an event past retry_on_failure.max_elapsed_time
	dropPermanent                   // the next consumer's error was permanent
	dropRefused                     // refused while retry_on_failure is disabled
	numDropReasons
)

func (d dropReason) String() string {
	return [...]string{"queue_full", "expired", "permanent_error", "refused"}[d]
}

// Reasons of delete events.
const (
	reasonExited      = "process_exited"
	reasonUnpublished = "context_unpublished"
	reasonInvalid     = "context_invalid"
)

// maxBatchEvents bounds the events handed to the next consumer at once.
const maxBatchEvents = 8192

// book is everything the receiver owes the next consumer, per entity (one
// process's publication): the state events it has not accepted, the
// deletes it has not accepted, and the live entities to state again every
// report_interval. It is the one place that decides which entity events
// are due.
//
// The tracker's loop records its changes into the book (record: a newer
// state of an entity replaces one not accepted, so the book stays as big as
// the host's publications however fast they change); the receiver's loop
// hands batches to the next consumer (batch) and settles them (settle).
// States go before deletes, so an entity's delete never precedes its state.
// When queue_size events are owed, the oldest states are dropped first
// (each live entity is stated again every report_interval anyway), then
// the oldest deletes. A delete is owed for report_interval at most: a
// consumer that has not heard of an entity for that long expires it
// itself.
type book struct {
	filter   executableFilter
	interval time.Duration // report_interval
	limit    int           // queue_size
	maxAge   time.Duration // retry_on_failure.max_elapsed_time; 0: none
	wake     chan struct{} // signaled when something is owed
	now      func() time.Time

	mu       sync.Mutex
	entities map[tracker.Key]*entity
	// instances are the live entities by the service.instance.id their
	// identity publishes: the processes of one service instance.
	instances map[string]map[*entity]struct{}
	states    list.List             // of *owed, oldest first
	deletes   list.List             // of *owed, oldest first
	dropped   [numDropReasons]int64 // since takeDropped
	// prompt: a change the tracker passed on at once (tracker.Change.Prompt)
	// was recorded since takePrompt: its events go out without waiting
	// for the delivery pace.
	prompt bool
}

// entity is one process entity the receiver has stated.
type entity struct {
	p        *tracker.Publication // its latest publication
	ended    bool
	instance string        // the service.instance.id it is a live process of; "" for none
	statedAt time.Time     // when its last state became owed
	state    *list.Element // its owed state, nil when none
	delete   *list.Element // its owed delete, nil when none
}

// owed is one entity event the next consumer has not accepted.
type owed struct {
	e      *entity
	p      *tracker.Publication
	at     time.Time
	reason string // "" for a state
	// Set by batch, as the book stands when the event is handed over:
	// peers are the live processes of a state's service instance (itself
	// included); endsInstance says that a delete's process was the last
	// live one of its service instance.
	peers        []*tracker.Publication
	endsInstance bool
}

func newBook(cfg *Config) *book {
	return &book{
		filter:    newExecutableFilter(cfg.Include, cfg.Exclude),
		interval:  cfg.ReportInterval,
		limit:     cfg.QueueSize,
		maxAge:    cfg.RetryOnFailure.MaxElapsedTime,
		wake:      make(chan struct{}, 1),
		now:       time.Now,
		entities:  map[tracker.Key]*entity{},
		instances: map[string]map[*entity]struct{}{},
	}
}

// record takes the tracker's changes and scan summary (a
// tracker.Subscriber: it never blocks). A scan is the receiver's clock: at
// each, the live entities stated report_interval ago are owed a state
// again (restate). The receiver's loop is woken only when something is
// owed: a scan that changes nothing costs it no wake-up.
func (b *book) record(changes []tracker.Change, scan *tracker.ScanStats) {
	now := b.now()
	b.mu.Lock()
	for _, c := range changes {
		b.prompt = b.prompt || c.Prompt
		if c.Kind.Ends() {
			b.ended(c, now)
		} else {
			b.stated(c.Publication, now)
		}
	}
	if scan != nil {
		b.restateLocked(now)
	}
	owed := b.states.Len()+b.deletes.Len() > 0
	b.mu.Unlock()
	if owed {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// stated owes a state of p's entity.
func (b *book) stated(p *tracker.Publication, now time.Time) {
	e := b.entities[p.Key]
	if e == nil {
		if !b.filter.selects(p.Identity.ExecutableName) {
			return
		}
		e = &entity{}
		b.entities[p.Key] = e
	}
	if e.delete != nil {
		// Published again in the same process before its end was
		// accepted: the entity lives, the delete no longer holds.
		b.deletes.Remove(e.delete)
		e.delete = nil
	}
	e.p, e.ended = p, false
	b.join(e, instanceID(p))
	b.oweState(e, now)
}

// ended owes a delete of the entity c ends, if it was stated.
func (b *book) ended(c tracker.Change, now time.Time) {
	e := b.entities[c.Publication.Key]
	if e == nil {
		return // never stated (filtered out)
	}
	reason := reasonExited
	switch c.Kind {
	case tracker.Unpublished:
		reason = reasonUnpublished
	case tracker.Invalidated:
		reason = reasonInvalid
	}
	e.p, e.ended = c.Publication, true
	b.join(e, "")
	if e.delete != nil {
		b.deletes.Remove(e.delete)
	}
	e.delete = b.deletes.PushBack(&owed{e: e, p: e.p, at: now, reason: reason})
	b.bound()
}

// join makes e a live process of the service instance id ("": of none).
// A process whose published instance id changed leaves its old instance
// without a delete of it: the instance expires by its report interval.
func (b *book) join(e *entity, id string) {
	if e.instance == id {
		return
	}
	if members := b.instances[e.instance]; members != nil {
		delete(members, e)
		if len(members) == 0 {
			delete(b.instances, e.instance)
		}
	}
	e.instance = id
	if id == "" {
		return
	}
	if b.instances[id] == nil {
		b.instances[id] = map[*entity]struct{}{}
	}
	b.instances[id][e] = struct{}{}
}

// instanceID is the service.instance.id p's identity publishes, for a
// named service; "" for none.
func instanceID(p *tracker.Publication) string {
	if strAttr(p.Context.Resource, entitymodel.ServiceNameKey) == "" {
		return ""
	}
	return strAttr(p.Context.Resource, entitymodel.ServiceInstanceIDKey)
}

// instanceView sets o.peers or o.endsInstance as the book stands.
func (b *book) instanceView(o *owed) {
	id := instanceID(o.p)
	members := b.instances[id]
	if o.reason != "" {
		o.endsInstance = id != "" && len(members) == 0
		return
	}
	o.peers = o.peers[:0]
	if id == "" {
		return
	}
	for m := range members {
		o.peers = append(o.peers, m.p)
	}
	if !slices.Contains(o.peers, o.p) {
		o.peers = append(o.peers, o.p) // a state handed over after its process ended
	}
	slices.SortFunc(o.peers, func(a, b *tracker.Publication) int { return cmp.Compare(a.PID, b.PID) })
}

// oweState makes e's state owed now, replacing one not accepted.
func (b *book) oweState(e *entity, now time.Time) {
	if e.state != nil {
		b.states.Remove(e.state)
	}
	e.state = b.states.PushBack(&owed{e: e, p: e.p, at: now})
	e.statedAt = now
	b.bound()
}

// restate owes a state of every live entity not stated for
// report_interval.
func (b *book) restate(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.restateLocked(now)
}

func (b *book) restateLocked(now time.Time) {
	for _, e := range b.entities {
		if !e.ended && e.state == nil && now.Sub(e.statedAt) >= b.interval {
			b.oweState(e, now)
		}
	}
}

// bound drops the oldest owed states, then the oldest deletes, beyond the
// limit.
func (b *book) bound() {
	for b.states.Len()+b.deletes.Len() > b.limit {
		l := &b.states
		if l.Len() == 0 {
			l = &b.deletes
		}
		b.give(l.Front().Value.(*owed), dropQueueFull)
	}
}

// expire gives up the deletes owed for report_interval and, with a
// maximum age, every event older than it.
func (b *book) expire(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expireList(&b.deletes, now, b.interval)
	if b.maxAge > 0 {
		b.expireList(&b.states, now, b.maxAge)
		b.expireList(&b.deletes, now, b.maxAge)
	}
}

// expireList gives up the events of l older than age (l is in the order
// of their times).
func (b *book) expireList(l *list.List, now time.Time, age time.Duration) {
	for f := l.Front(); f != nil && now.Sub(f.Value.(*owed).at) >= age; f = l.Front() {
		b.give(f.Value.(*owed), dropExpired)
	}
}

// batch returns the events to hand over next, oldest first: states, then
// deletes once no state is left behind.
func (b *book) batch() []*owed {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*owed
	for f := b.states.Front(); f != nil && len(out) < maxBatchEvents; f = f.Next() {
		out = append(out, f.Value.(*owed))
	}
	if len(out) == b.states.Len() {
		for f := b.deletes.Front(); f != nil && len(out) < maxBatchEvents; f = f.Next() {
			out = append(out, f.Value.(*owed))
		}
	}
	for _, o := range out {
		b.instanceView(o)
	}
	return out
}

// settle removes the events of a batch from what is owed: accepted, or
// given up for reason (accepted: -1). An event replaced meanwhile (a newer
// state) stays owed.
func (b *book) settle(events []*owed, reason dropReason) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, o := range events {
		if reason >= 0 {
			b.give(o, reason)
		} else {
			b.remove(o)
		}
	}
}

// accepted is settle's reason for events the next consumer accepted.
const accepted dropReason = -1

// give gives up o, counting it for reason.
func (b *book) give(o *owed, reason dropReason) {
	if b.remove(o) {
		b.dropped[reason]++
	}
}

// remove removes o if it is still owed. An entity whose delete is settled
// is forgotten.
func (b *book) remove(o *owed) bool {
	e := o.e
	switch {
	case o.reason == "" && e.state != nil && e.state.Value == o:
		b.states.Remove(e.state)
		e.state = nil
	case o.reason != "" && e.delete != nil && e.delete.Value == o:
		b.deletes.Remove(e.delete)
		e.delete = nil
		if e.ended && b.entities[e.p.Key] == e {
			delete(b.entities, e.p.Key)
		}
	default:
		return false
	}
	return true
}

// takePrompt reports whether a prompt change was recorded since the last
// call.
func (b *book) takePrompt() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.prompt
	b.prompt = false
	return p
}

// owedEvents returns how many events are owed.
func (b *book) owedEvents() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.states.Len() + b.deletes.Len()
}

// takeDropped returns the counts of events given up since the last call,
// by reason.
func (b *book) takeDropped() [numDropReasons]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.dropped
	b.dropped = [numDropReasons]int64{}
	return d
}
