package packwheel

import "math"

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
