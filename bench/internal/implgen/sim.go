package implgen

// Sim is the work-unit simulation, sim_<Name>.go in
// bench/internal/workunit.
var Sim = Kind{prefix: "sim_", suffix: ".go", name: func(impl Impl) string { return impl.Name },
	tmpl: parse("sim", simTemplate)}

// simTemplate is the simulation: each method a literal port of the
// reference's method of the same name.
const simTemplate = header + `
package workunit

import "{{.Import}}"

// {{.Name}}Timer is one of a unit's timers: the queue's handle, embedded by
// value, and what the expiry callback needs to dispatch it.
type {{.Name}}Timer struct {
	handle {{typ .Handle (print "*" .Name "Timer")}}
	unit   *{{.Name}}Unit
	kind   kind
}

// {{.Name}}Unit is one end of a work unit, a server or a client.
type {{.Name}}Unit struct {
	sim             *{{.Name}}Sim
	other           *{{.Name}}Unit
	tx, rx          int
	quota           int
	closing         bool
	waiting         bool
	requestInterval uint64
	timers          [timerKinds]{{.Name}}Timer
}

// {{.Name}}Sim is a run of the simulation: the driver of the reference's
// bench().
type {{.Name}}Sim struct {
	q        *{{typ .Queue (print "*" .Name "Timer")}}
	useRange bool
	rand     *glibcRand
	pairs    int   // requested
	created  int   // pairs created
	totalRx  int64 // rx of the units deleted so far
	expire   func(*{{.Name}}Timer)
}

func new{{.Name}}Sim(pairs int, useRange bool) *{{.Name}}Sim {
	return &{{.Name}}Sim{
		q:        {{typ .New (print "*" .Name "Timer")}},
		useRange: useRange,
		rand:     newGlibcRand(),
		pairs:    pairs,
		expire:   (*{{.Name}}Timer).expire,
	}
}

// create runs the creation phase: one tick at a time for a second, creating
// pairs at random moments so that about pairs of them are spread over it.
func (s *{{.Name}}Sim) create() {
	perTick := float64(s.pairs) / createPeriod * 2
	progress := 0.0
	for s.q.Now() < createPeriod {
		progress += float64(s.rand.next()) * perTick / randMax
		for progress > 1 {
			progress--
			s.makePair(1*second + uint64(s.rand.next()%100))
		}
		s.q.Advance(s.q.Now()+1, s.expire)
	}
}

func (s *{{.Name}}Sim) makePair(requestInterval uint64) {
	server := s.newUnit(1 * second)
	client := s.newUnit(requestInterval)
	server.other, client.other = client, server
	server.start(true)
	client.start(false)
	s.created++
}

// runUntil runs the run phase until Now reaches tick: each step advances to
// the next expiry, or by maxStep if none is sooner.
func (s *{{.Name}}Sim) runUntil(tick uint64) {
	for s.q.Now() < tick {
		s.q.Advance(s.q.NextExpiry(s.q.Now()+maxStep), s.expire)
	}
}

func (s *{{.Name}}Sim) now() uint64 { return s.q.Now() }

func (s *{{.Name}}Sim) result() Result { return Result{Pairs: s.created, Rx: s.totalRx} }

func (s *{{.Name}}Sim) newUnit(requestInterval uint64) *{{.Name}}Unit {
	u := &{{.Name}}Unit{sim: s, quota: 1, requestInterval: requestInterval}
	for k := range u.timers {
		u.timers[k].unit, u.timers[k].kind = u, kind(k)
	}
	return u
}

// schedule fires timer k delay ticks from now.
func (u *{{.Name}}Unit) schedule(k kind, delay uint64) {
	t := &u.timers[k]
	u.sim.q.ScheduleAfter(&t.handle, delay, t)
}

func (u *{{.Name}}Unit) cancel(k kind) { u.sim.q.Cancel(&u.timers[k].handle) }

func (u *{{.Name}}Unit) start(server bool) {
	u.unidle()
	u.schedule(closeTimer, 180*second)
	if !server {
		u.onRequest()
	}
}

func (u *{{.Name}}Unit) transmit(n int) {
	u.tx += n
	u.deliver()
}

func (u *{{.Name}}Unit) deliver() {
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
func (u *{{.Name}}Unit) receive(int) {
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

func (u *{{.Name}}Unit) onClose() {
	if u.closing {
		u.delete()
		return
	}
	u.closing = true
	u.schedule(closeTimer, 10*second)
}

func (u *{{.Name}}Unit) onPace() {
	if u.tx > 0 {
		u.quota = 1
		u.deliver()
	}
}

func (u *{{.Name}}Unit) onIdle() { u.delete() }

func (u *{{.Name}}Unit) onRequest() {
	if !u.closing {
		u.schedule(deadlineTimer, paceInterval*responseSize*4)
		u.waiting = true
		u.other.transmit(responseSize)
	}
}

func (u *{{.Name}}Unit) onRequestDeadline() {
	u.delete()
	u.other.delete()
}

// unidle pushes the idle timeout back: with range scheduling, a no-op while
// the timer is already due between 60 s and 61 s from now.
func (u *{{.Name}}Unit) unidle() {
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
func (u *{{.Name}}Unit) delete() {
	u.sim.totalRx += int64(u.rx)
	for k := range u.timers {
		u.cancel(kind(k))
	}
}

// expire dispatches a fired timer to its handler.
func (t *{{.Name}}Timer) expire() {
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
`
