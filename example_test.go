package packwheel_test

import (
	"fmt"
	"time"

	"github.com/packwheel/packwheel"
)

// session is a caller's per-connection state with its timer embedded.
type session struct {
	name  string
	timer packwheel.Holder
}

// The hierarchical wheel fires every timer at its exact tick. Time moves
// only when the caller advances it.
func ExampleWheel() {
	var w packwheel.Wheel[*session] // the zero value is ready to use
	a, b := &session{name: "a"}, &session{name: "b"}

	w.Schedule(&a.timer, 30, a)     // fire at tick 30
	w.ScheduleAfter(&b.timer, 5, b) // fire 5 ticks from now
	w.Schedule(&b.timer, 90_000, b) // rescheduling moves it

	w.Advance(100_000, func(s *session) {
		fmt.Println(s.name, "expired at tick", w.Now())
	})
	// Output:
	// a expired at tick 30
	// b expired at tick 90000
}

// The hashed wheel keeps each timer in bucket deadline%Slots for as many
// revolutions as it needs; Cancel stops a timer in O(1).
func ExampleHashed() {
	w := packwheel.NewHashed[*session](packwheel.HashedOptions{Slots: 256})
	a, b := &session{name: "a"}, &session{name: "b"}

	w.Schedule(&a.timer, 1000, a)
	w.Schedule(&b.timer, 1000+256, b) // same bucket, one revolution later
	fmt.Println("cancelled:", w.Cancel(&a.timer), "active:", a.timer.Active())

	w.Advance(2000, func(s *session) {
		fmt.Println(s.name, "expired at tick", w.Now())
	})
	// Output:
	// cancelled: true active: false
	// b expired at tick 1256
}

// ScheduleRange makes "push the idle timeout back on every packet" nearly
// free: while the timer is already due inside the range nothing moves.
func ExampleWheel_ScheduleRange() {
	var w packwheel.Wheel[*session]
	s := &session{name: "conn"}
	const timeout, slack = 60_000, 1_000 // ticks

	for now := uint64(0); now <= 2_500; now += 500 { // a packet every 500 ticks
		w.Advance(now, nil)
		before := s.timer.Deadline()
		w.ScheduleRange(&s.timer, now+timeout, now+timeout+slack, s)
		fmt.Printf("tick %d: deadline %d moved=%v\n", now, s.timer.Deadline(), before != s.timer.Deadline())
	}
	// Output:
	// tick 0: deadline 61000 moved=true
	// tick 500: deadline 61000 moved=false
	// tick 1000: deadline 61000 moved=false
	// tick 1500: deadline 62500 moved=true
	// tick 2000: deadline 62500 moved=false
	// tick 2500: deadline 62500 moved=false
}

// AdvanceLimit bounds the work of one call so that a clump of timers cannot
// starve an event loop; the next call resumes where it stopped.
func ExampleWheel_AdvanceLimit() {
	var w packwheel.Wheel[int]
	holders := make([]packwheel.Holder, 5)
	for i := range holders {
		w.Schedule(&holders[i], 10, i)
	}
	fired := 0
	for !w.AdvanceLimit(10, 2, func(int) { fired++ }) {
		fmt.Println("fired", fired, "so far; back to the event loop")
	}
	fmt.Println("caught up after", fired)
	// Output:
	// fired 2 so far; back to the event loop
	// fired 4 so far; back to the event loop
	// caught up after 5
}

// A Clock drives a wheel from wall time: deadlines in ticks, sleeps as
// durations.
func ExampleClock() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // time.Now() in real use
	clock := packwheel.NewClock(start, 10*time.Millisecond)
	var w packwheel.Wheel[*session]
	s := &session{name: "idle"}

	now := start.Add(3 * time.Millisecond)
	w.Advance(clock.Tick(now), nil)
	w.Schedule(&s.timer, clock.Deadline(now, 30*time.Second), s)

	next := w.NextExpiry(clock.Tick(now.Add(time.Minute)))
	fmt.Println("deadline tick", s.timer.Deadline(), "next work in", clock.Until(now, next))
	// Output:
	// deadline tick 3001 next work in 29.437s
}
