package packwheel

import (
	"errors"
	"fmt"
	"math"
)

// MaxTick is the largest tick a deadline or an Advance target may name.
// At one tick per nanosecond it is 292 years away.
const MaxTick uint64 = math.MaxInt64

// Timers is the API that both wheels, [Wheel] and [Hashed], implement.
//
// Time is a plain tick count driven by the caller through Advance; the wheel
// never reads a clock. Now is the last tick whose processing has begun, and a
// timer fires during the Advance that processes its deadline, at which point
// Now equals that deadline. A deadline at or before Now (one already past,
// or the tick being processed) becomes Now+1: it fires at the next tick
// processed, never twice and never lost.
//
// Expiry callbacks may schedule, reschedule and cancel any timer, the one
// firing included; the holder of a firing timer is already inactive when its
// callback runs. They must not call Advance, AdvanceLimit or AppendExpired.
//
// Implementations are not safe for concurrent use: one goroutine, typically
// an event loop, owns a wheel and all holders scheduled in it.
//
// Costs are those of the implementations, which differ in how Advance and
// NextExpiry walk their buckets: see the methods of [Wheel] and [Hashed]
// and the table in the package documentation. Scheduling and Cancel are
// O(1) amortized in both, and once a wheel is warm no method allocates but
// AppendExpired, to grow dst.
type Timers[V any] interface {
	// Schedule sets the timer of h to fire at deadline with value v. An
	// active timer pushed later may keep its entry until the wheel reaches
	// it; one brought earlier moves.
	Schedule(h *Holder, deadline uint64, v V)
	// ScheduleAfter is Schedule at Now()+delay.
	ScheduleAfter(h *Holder, delay uint64, v V)
	// ScheduleRange sets the timer of h to fire at some tick in
	// [earliest, latest]. It does nothing at all, not even store v, when h
	// is already due inside the range; otherwise the wheel picks the tick.
	ScheduleRange(h *Holder, earliest, latest uint64, v V)
	// Cancel stops the timer of h, reporting whether it was active.
	Cancel(h *Holder) bool
	// Len returns the number of active timers.
	Len() int
	// Now returns the last tick whose processing has begun.
	Now() uint64
	// NextExpiry returns the earliest tick at which Advance has work to do,
	// or limit if that is later.
	NextExpiry(limit uint64) uint64
	// Advance processes every tick up to and including to, calling expire
	// (unless nil) with the value of each timer as it fires.
	Advance(to uint64, expire func(V))
	// AdvanceLimit is Advance that fires or moves at most n timers,
	// reporting whether it caught up with to; the next call resumes.
	AdvanceLimit(to uint64, n int, expire func(V)) bool
	// AppendExpired is AdvanceLimit that appends the values of expired
	// timers to dst instead of calling a function.
	AppendExpired(dst []V, to uint64, n int) ([]V, bool)
}

var (
	_ Timers[int] = (*Wheel[int])(nil)
	_ Timers[int] = (*Hashed[int])(nil)
)

// ErrMisuse is matched, with errors.Is, by the value of every panic with
// which packwheel refuses a call: a bad argument, a holder that is not in
// the wheel, a zero Clock, an Advance from an expiry callback. Such a value
// is an error whose message starts with "packwheel: " and names the method;
// the call changed nothing before it panicked. A program that recovers
// from panics, as a server's request handler may, can tell these apart:
//
//	if err, ok := recover().(error); ok && errors.Is(err, packwheel.ErrMisuse) { ... }
var ErrMisuse = errors.New("packwheel: misuse")

// misuse is the panic value of a refused call, a message that starts with
// "packwheel: ".
type misuse string

func (m misuse) Error() string      { return string(m) }
func (misuse) Is(target error) bool { return target == ErrMisuse }

// checkTick panics if t is beyond MaxTick.
func checkTick(op, what string, t uint64) {
	if int64(t) < 0 { // t > MaxTick, in one instruction
		panic(misuse(fmt.Sprintf("packwheel: %s: %s %d is beyond MaxTick", op, what, t)))
	}
}

// afterNow returns the deadline now+delay, panicking if it is beyond MaxTick.
func afterNow(op string, now, delay uint64) uint64 {
	if delay > MaxTick-now {
		panic(misuse(fmt.Sprintf("packwheel: %s: delay %d from tick %d is beyond MaxTick", op, delay, now)))
	}
	return now + delay
}

// checkRange panics unless earliest <= latest <= MaxTick.
func checkRange(op string, earliest, latest uint64) {
	checkTick(op, "latest", latest)
	if earliest > latest {
		panic(misuse(fmt.Sprintf("packwheel: %s: earliest %d is after latest %d", op, earliest, latest)))
	}
}

// checkMax panics unless n, the bound of a bounded advance, is positive.
func checkMax(op string, n int) {
	if n <= 0 {
		panic(misuse(fmt.Sprintf("packwheel: %s: n %d must be positive", op, n)))
	}
}

// sink delivers expired values to a function, to a slice, or nowhere.
type sink[V any] struct {
	fn      func(V)
	dst     []V
	collect bool // append to dst; otherwise call fn unless it is nil
}

func (s *sink[V]) deliver(v V) {
	switch {
	case s.fn != nil:
		s.fn(v)
	case s.collect:
		s.dst = append(s.dst, v)
	}
}

// reentry guards against Advance being called from an expiry callback,
// which would process ticks out of order under the running Advance.
type reentry bool

func (r *reentry) enter(op string) {
	if *r {
		panic(misuse("packwheel: " + op + " called from an expiry callback"))
	}
	*r = true
}

func (r *reentry) leave() { *r = false }
