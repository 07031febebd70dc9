package processctxreceiver

import (
	"container/list"
	"time"

	"github.com/processctx/otelcol-processctx/internal/tracker"
)

// dropReason says why entity events were given up: the reason attribute
// of the dropped events metric.
type dropReason int

const (
	dropQueueFull dropReason = iota // queue_size reached: the oldest state events go first
	dropExpired                     // a delete past its retention, or an event past retry_on_failure.max_elapsed_time
	dropPermanent                   // the next consumer's error was permanent
	dropRefused                     // refused while retry_on_failure is disabled
	numDropReasons
)

func (d dropReason) String() string {
	return [...]string{"queue_full", "expired", "permanent_error", "refused"}[d]
}

// maxBatchEvents bounds the events handed to the next consumer at once.
const maxBatchEvents = 8192

// pendingEvent is an entity event not delivered yet: built anew for each
// attempt, from the immutable publication it states or ends.
type pendingEvent struct {
	p      *tracker.Process
	at     time.Time
	reason string // delete events only
}

// outbox keeps the entity events the next consumer has not accepted, so
// that a refusal (memory_limiter, a full exporter queue) loses none that
// still matters. State events are coalesced per entity (a newer state
// replaces one not delivered) and are the first to go when the outbox is
// full: each live entity is stated again every report_interval anyway.
// Delete events are kept until delivered, or until their retention has
// passed: a consumer that has not heard of an entity for its interval no
// longer needs to be told it is gone. States are delivered before deletes,
// so an entity's state never follows its delete.
type outbox struct {
	limit     int
	retention time.Duration // of delete events
	maxAge    time.Duration // of any event; 0: none
	states    list.List     // of *pendingEvent, oldest first
	deletes   list.List
	stateOf   map[tracker.Key]*list.Element
	deleteOf  map[tracker.Key]*list.Element
	// dropped counts, by reason, the events given up since takeDropped.
	dropped [numDropReasons]int64
}

func newOutbox(limit int, retention, maxAge time.Duration) *outbox {
	return &outbox{
		limit: limit, retention: retention, maxAge: maxAge,
		stateOf:  map[tracker.Key]*list.Element{},
		deleteOf: map[tracker.Key]*list.Element{},
	}
}

func (o *outbox) len() int { return o.states.Len() + o.deletes.Len() }

// addState queues a state event of p.
func (o *outbox) addState(p *tracker.Process, at time.Time) {
	if e, ok := o.deleteOf[p.Key]; ok {
		// Published again in the same process before its end was
		// delivered: the entity lives, the delete no longer holds.
		o.remove(&o.deletes, o.deleteOf, e)
	}
	ev := &pendingEvent{p: p, at: at}
	if e, ok := o.stateOf[p.Key]; ok {
		e.Value = ev
		o.states.MoveToBack(e)
		return
	}
	o.stateOf[p.Key] = o.states.PushBack(ev)
	o.bound()
}

// addDelete queues a delete event of p.
func (o *outbox) addDelete(p *tracker.Process, at time.Time, reason string) {
	ev := &pendingEvent{p: p, at: at, reason: reason}
	if e, ok := o.deleteOf[p.Key]; ok {
		o.remove(&o.deletes, o.deleteOf, e)
	}
	o.deleteOf[p.Key] = o.deletes.PushBack(ev)
	o.bound()
}

// bound drops the oldest state events, then the oldest deletes, beyond
// the limit.
func (o *outbox) bound() {
	for o.len() > o.limit {
		l, index := &o.states, o.stateOf
		if l.Len() == 0 {
			l, index = &o.deletes, o.deleteOf
		}
		o.remove(l, index, l.Front())
		o.dropped[dropQueueFull]++
	}
}

// expire drops the deletes past their retention and, with a maximum age,
// every event older than it.
func (o *outbox) expire(now time.Time) {
	o.expireList(&o.deletes, o.deleteOf, now, o.retention)
	if o.maxAge > 0 {
		o.expireList(&o.states, o.stateOf, now, o.maxAge)
		o.expireList(&o.deletes, o.deleteOf, now, o.maxAge)
	}
}

// expireList drops the events of l older than age. Both lists are in the
// order of their events' times: a replaced state moves to the back.
func (o *outbox) expireList(l *list.List, index map[tracker.Key]*list.Element, now time.Time, age time.Duration) {
	for e := l.Front(); e != nil && now.Sub(e.Value.(*pendingEvent).at) >= age; e = l.Front() {
		o.remove(l, index, e)
		o.dropped[dropExpired]++
	}
}

// batch returns the events to hand over next, oldest first: states, then
// deletes once no state is left behind (an entity's delete never goes
// before its state).
func (o *outbox) batch() (states, deletes []*pendingEvent) {
	for e := o.states.Front(); e != nil && len(states) < maxBatchEvents; e = e.Next() {
		states = append(states, e.Value.(*pendingEvent))
	}
	if len(states) < o.states.Len() {
		return states, nil
	}
	for e := o.deletes.Front(); e != nil && len(states)+len(deletes) < maxBatchEvents; e = e.Next() {
		deletes = append(deletes, e.Value.(*pendingEvent))
	}
	return states, deletes
}

// done removes the first states and deletes events, handed over.
func (o *outbox) done(states, deletes int) {
	for range states {
		o.remove(&o.states, o.stateOf, o.states.Front())
	}
	for range deletes {
		o.remove(&o.deletes, o.deleteOf, o.deletes.Front())
	}
}

// drop gives up the first states and deletes events, for reason.
func (o *outbox) drop(states, deletes int, reason dropReason) {
	o.done(states, deletes)
	o.dropped[reason] += int64(states + deletes)
}

func (o *outbox) remove(l *list.List, index map[tracker.Key]*list.Element, e *list.Element) {
	delete(index, e.Value.(*pendingEvent).p.Key)
	l.Remove(e)
}

// takeDropped returns the counts of events given up since the last call,
// by reason, and resets them.
func (o *outbox) takeDropped() [numDropReasons]int64 {
	d := o.dropped
	o.dropped = [numDropReasons]int64{}
	return d
}
