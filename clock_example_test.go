package packwheel_test

import (
	"fmt"
	"time"

	"github.com/packwheel/packwheel"
)

// Range gives ScheduleRange the ticks for an idle timeout that must not
// expire early nor more than a resolution late. A packet that comes while
// the session's deadline is still inside the new range costs no wheel work:
// at 10 ms, due exactly at the start of tick 501, the timer stays there.
func ExampleClock_Range() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // time.Now() in real use
	clock := packwheel.NewClock(start, 10*time.Millisecond)
	var w packwheel.Wheel[*session]
	s := &session{name: "peer"}

	for _, at := range []time.Duration{3 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond} {
		now := start.Add(at)
		earliest, latest := clock.Range(now, 5*time.Second)
		w.ScheduleRange(&s.timer, earliest, latest, s)
		fmt.Printf("packet at %v: range %d..%d, deadline %d\n", at, earliest, latest, s.timer.Deadline())
	}
	// Output:
	// packet at 3ms: range 501..501, deadline 501
	// packet at 10ms: range 501..502, deadline 501
	// packet at 25ms: range 503..503, deadline 503
}
