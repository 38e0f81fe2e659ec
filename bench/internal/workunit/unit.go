package workunit

// The unit's constants, from the reference.
const (
	paceInterval = 10  // ticks between two paced messages
	responseSize = 128 // messages per response
)

// kind names a unit's five timers, and indexes unit.timers.
type kind uint8

const (
	idleTimer     kind = iota // re-armed on all activity; never fires
	closeTimer                // fires twice: start closing, then delete
	paceTimer                 // refreshes the transmit quota; always fires
	requestTimer              // client: sends the next request
	deadlineTimer             // a response's deadline; always cancelled
	timerKinds
)

// timer is one of a unit's timers: the implementation's handle, embedded by
// value, and what the expiry callback needs to dispatch it.
type timer[H any] struct {
	handle H
	unit   *unit[H]
	kind   kind
}

// unit is one end of a work unit, a server or a client; each method is a
// literal port of the reference's method of the same name.
type unit[H any] struct {
	sim             *sim[H]
	other           *unit[H]
	tx, rx          int
	quota           int
	closing         bool
	waiting         bool
	requestInterval uint64
	timers          [timerKinds]timer[H]
}

func newUnit[H any](s *sim[H], requestInterval uint64) *unit[H] {
	u := &unit[H]{sim: s, quota: 1, requestInterval: requestInterval}
	for k := range u.timers {
		u.timers[k].unit, u.timers[k].kind = u, kind(k)
	}
	return u
}

// schedule fires timer k delay ticks from now.
func (u *unit[H]) schedule(k kind, delay uint64) {
	t := &u.timers[k]
	u.sim.q.ScheduleAfter(&t.handle, delay, t)
}

func (u *unit[H]) cancel(k kind) { u.sim.q.Cancel(&u.timers[k].handle) }

func (u *unit[H]) start(server bool) {
	u.unidle()
	u.schedule(closeTimer, 180*second)
	if !server {
		u.onRequest()
	}
}

func (u *unit[H]) transmit(n int) {
	u.tx += n
	u.deliver()
}

func (u *unit[H]) deliver() {
	u.unidle()
	a := min(u.quota, u.tx)
	u.quota -= a
	u.tx -= a
	u.other.receive(a)
	if u.quota == 0 {
		u.schedule(paceTimer, paceInterval)
	}
}

// receive counts one message per call whatever n is, as the reference does.
func (u *unit[H]) receive(int) {
	u.unidle()
	if u.waiting {
		u.schedule(deadlineTimer, paceInterval*responseSize*2)
		u.waiting = false
	}
	u.rx++
	if u.rx%responseSize == 0 {
		u.cancel(deadlineTimer)
		u.schedule(requestTimer, u.requestInterval)
	}
}

func (u *unit[H]) onClose() {
	if u.closing {
		u.delete()
		return
	}
	u.closing = true
	u.schedule(closeTimer, 10*second)
}

func (u *unit[H]) onPace() {
	if u.tx > 0 {
		u.quota = 1
		u.deliver()
	}
}

func (u *unit[H]) onIdle() { u.delete() }

func (u *unit[H]) onRequest() {
	if !u.closing {
		u.schedule(deadlineTimer, paceInterval*responseSize*4)
		u.waiting = true
		u.other.transmit(responseSize)
	}
}

func (u *unit[H]) onRequestDeadline() {
	u.delete()
	u.other.delete()
}

// unidle pushes the idle timeout back: with range scheduling, a no-op while
// the timer is already due between 60 s and 61 s from now.
func (u *unit[H]) unidle() {
	t, q := &u.timers[idleTimer], u.sim.q
	if u.sim.useRange {
		now := q.Now()
		q.ScheduleRange(&t.handle, now+60*second, now+61*second, t)
		return
	}
	q.ScheduleAfter(&t.handle, 60*second, t)
}

// delete is the reference's destructor: it adds the unit's rx to the total
// and cancels its timers.
func (u *unit[H]) delete() {
	u.sim.totalRx += int64(u.rx)
	for k := range u.timers {
		u.cancel(kind(k))
	}
}

// expire dispatches a fired timer to its handler.
func (t *timer[H]) expire() {
	u := t.unit
	switch t.kind {
	case idleTimer:
		u.onIdle()
	case closeTimer:
		u.onClose()
	case paceTimer:
		u.onPace()
	case requestTimer:
		u.onRequest()
	case deadlineTimer:
		u.onRequestDeadline()
	}
}
