package packwheel

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// copyHolder copies a holder the way careless code would, out of go vet's
// sight.
func copyHolder(dst, src *Holder) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}

// snapshot records what misuse must leave untouched.
type snapshot struct {
	len      int
	now      uint64
	deadline uint64
}

func snap(w Timers[*conn], c *conn) snapshot {
	return snapshot{w.Len(), w.Now(), c.timer.Deadline()}
}

// panicMessage runs op and returns what it panicked with, as text: the
// message of an error matching ErrMisuse, or what else it was.
func panicMessage(op func()) (msg string) {
	defer func() {
		switch v := recover().(type) {
		case nil:
			msg = "no panic"
		case error:
			msg = v.Error()
			if !errors.Is(v, ErrMisuse) {
				msg = "not an ErrMisuse: " + msg
			}
		case string:
			msg = "a string, not an ErrMisuse: " + v
		default:
			msg = fmt.Sprintf("panic with a %T", v)
		}
	}()
	op()
	return
}

// requireMisuse checks that op panics with an ErrMisuse whose message is
// want.
func requireMisuse(t *testing.T, want string, op func()) {
	t.Helper()
	require.Equal(t, want, panicMessage(op))
}

// requireRejected checks that op panics with want and changes nothing.
func requireRejected(t *testing.T, w Timers[*conn], c *conn, want string, op func()) {
	t.Helper()
	before := snap(w, c)
	require.Equal(t, want, panicMessage(op))
	require.Equal(t, before, snap(w, c))
	mustCheck(t, w)
}

func TestMisuseHolders(t *testing.T) {
	forEachWheel(t, func(t *testing.T, w Timers[*conn]) {
		a, b := &conn{id: 1}, &conn{id: 2}
		w.Schedule(&a.timer, 100, a)
		w.Schedule(&b.timer, 100, b)
		msg := func(op string, chunk, index int) string {
			return "packwheel: " + op + ": holder is not scheduled in this wheel (chunk " +
				itoa(chunk) + ", index " + itoa(index) + "): it was copied, belongs to another wheel, or was overwritten"
		}
		chunk := int(a.timer.link.Chunk)

		t.Run("copied", func(t *testing.T) {
			c := &conn{id: 3}
			copyHolder(&c.timer, &a.timer)
			require.True(t, c.timer.Active(), "a copy looks active")
			idx := int(a.timer.link.Index)
			requireRejected(t, w, a, msg("Cancel", chunk, idx), func() { w.Cancel(&c.timer) })
			requireRejected(t, w, a, msg("Schedule", chunk, idx), func() { w.Schedule(&c.timer, 5, c) })
			requireRejected(t, w, a, msg("ScheduleAfter", chunk, idx), func() { w.ScheduleAfter(&c.timer, 5, c) })
			requireRejected(t, w, a, msg("ScheduleRange", chunk, idx), func() { w.ScheduleRange(&c.timer, 5, 9, c) })
			// Later than the entry's deadline: what pushes a timer back in
			// place must check the holder too.
			requireRejected(t, w, a, msg("Schedule", chunk, idx), func() { w.Schedule(&c.timer, 500, c) })
			requireRejected(t, w, a, msg("ScheduleAfter", chunk, idx), func() { w.ScheduleAfter(&c.timer, 500, c) })
		})

		t.Run("another wheel", func(t *testing.T) {
			for _, other := range wheelKinds {
				o := other.make()
				c := &conn{id: 4}
				// At a's tick, so that in a wheel of a's kind c's bucket and
				// index name a's entry.
				o.Schedule(&c.timer, 100, c)
				s, i := int(c.timer.link.Chunk), int(c.timer.link.Index)
				requireRejected(t, w, a, msg("Cancel", s, i), func() { w.Cancel(&c.timer) })
				requireRejected(t, w, a, msg("Schedule", s, i), func() { w.Schedule(&c.timer, 5, c) })
				requireRejected(t, w, a, msg("Schedule", s, i), func() { w.Schedule(&c.timer, 500, c) })
				requireRejected(t, w, a, msg("ScheduleAfter", s, i), func() { w.ScheduleAfter(&c.timer, 500, c) })
				require.True(t, o.Cancel(&c.timer), "the other wheel still owns its timer")
			}
		})

		t.Run("overwritten", func(t *testing.T) {
			saved, n := a.timer.link, w.Len()
			a.timer.link.Index = 7
			require.Equal(t, msg("Cancel", chunk, 7), panicMessage(func() { w.Cancel(&a.timer) }))
			// Past the end of its chunk, which Find must not read.
			a.timer.link.Index = 1 << 20
			require.Equal(t, msg("Schedule", chunk, 1<<20), panicMessage(func() { w.Schedule(&a.timer, 3, a) }))
			require.Equal(t, msg("Cancel", chunk, 1<<20), panicMessage(func() { w.Cancel(&a.timer) }))
			a.timer.link.Index = 7
			a.timer.link.Chunk = 1 << 30
			require.Equal(t, msg("Schedule", 1<<30, 7), panicMessage(func() { w.Schedule(&a.timer, 3, a) }))
			// Negative as 32-bit ints: refused on every platform.
			a.timer.link.Chunk, a.timer.link.Index = 1<<31+5, 1<<31+7
			require.Equal(t, "packwheel: Schedule: holder is not scheduled in this wheel (chunk 2147483653, index 2147483655): "+
				"it was copied, belongs to another wheel, or was overwritten", panicMessage(func() { w.Schedule(&a.timer, 3, a) }))
			require.Equal(t, "packwheel: Cancel: holder is not scheduled in this wheel (chunk 2147483653, index 2147483655): "+
				"it was copied, belongs to another wheel, or was overwritten", panicMessage(func() { w.Cancel(&a.timer) }))
			a.timer.link = saved
			require.Equal(t, n, w.Len())
			mustCheck(t, w)
			require.True(t, w.Cancel(&a.timer))
			require.False(t, w.Cancel(&a.timer), "a second Cancel is a no-op")
			require.Equal(t, 1, w.Len())
		})

		t.Run("inactive", func(t *testing.T) {
			var z conn
			require.False(t, w.Cancel(&z.timer))
			require.False(t, z.timer.Active())
			require.Zero(t, z.timer.Deadline())
		})
	})
}

func TestMisuseArguments(t *testing.T) {
	forEachWheel(t, func(t *testing.T, w Timers[*conn]) {
		c := &conn{}
		w.Advance(10, nil)
		w.Schedule(&c.timer, 50, c)
		cases := []struct {
			want string
			op   func()
		}{
			{"packwheel: Schedule: deadline 9223372036854775808 is beyond MaxTick",
				func() { w.Schedule(&c.timer, MaxTick+1, c) }},
			{"packwheel: ScheduleAfter: delay 9223372036854775798 from tick 10 is beyond MaxTick",
				func() { w.ScheduleAfter(&c.timer, MaxTick-9, c) }},
			{"packwheel: ScheduleRange: earliest 60 is after latest 59",
				func() { w.ScheduleRange(&c.timer, 60, 59, c) }},
			{"packwheel: ScheduleRange: latest 18446744073709551615 is beyond MaxTick",
				func() { w.ScheduleRange(&c.timer, 0, ^uint64(0), c) }},
			{"packwheel: Advance: to 9223372036854775808 is beyond MaxTick",
				func() { w.Advance(MaxTick+1, nil) }},
			{"packwheel: AdvanceLimit: n 0 must be positive",
				func() { w.AdvanceLimit(20, 0, nil) }},
			{"packwheel: AppendExpired: n -1 must be positive",
				func() { w.AppendExpired(nil, 20, -1) }},
		}
		for _, tc := range cases {
			requireRejected(t, w, c, tc.want, tc.op)
		}
		assert.Equal(t, uint64(50), c.timer.Deadline())
	})
}

func TestNewHashedRejectsSlots(t *testing.T) {
	for _, n := range []int{-1, 3, 100, 1 << 25} {
		requireMisuse(t,
			"packwheel: HashedOptions.Slots "+itoa(n)+" is not a power of two from 1 to 16777216",
			func() { NewHashed[int](HashedOptions{Slots: n}) })
	}
	require.Equal(t, DefaultHashedSlots, NewHashed[int](HashedOptions{}).Slots())
	var zero Hashed[int]
	require.Equal(t, DefaultHashedSlots, zero.Slots())
}

// TestAdvanceFromCallback checks that a nested Advance is refused and that
// the wheel finishes the interrupted tick on the next call.
func TestAdvanceFromCallback(t *testing.T) {
	forEachWheel(t, func(t *testing.T, w Timers[*conn]) {
		conns := make([]conn, 4)
		for i := range conns {
			conns[i].id = i
			w.Schedule(&conns[i].timer, 7, &conns[i])
		}
		var got []int
		requireMisuse(t, "packwheel: Advance called from an expiry callback", func() {
			w.Advance(10, func(c *conn) {
				got = append(got, c.id)
				w.Advance(20, nil)
			})
		})
		mustCheck(t, w)
		require.Len(t, got, 1)
		require.Equal(t, uint64(7), w.Now(), "stopped inside tick 7")
		w.Advance(10, func(c *conn) {
			require.Equal(t, uint64(7), w.Now())
			got = append(got, c.id)
		})
		require.ElementsMatch(t, []int{0, 1, 2, 3}, got)
		require.Equal(t, uint64(10), w.Now())
		require.Zero(t, w.Len())
	})
}

// TestCallbackPanic checks that a callback's panic loses no other timer.
func TestCallbackPanic(t *testing.T) {
	forEachWheel(t, func(t *testing.T, w Timers[*conn]) {
		conns := make([]conn, 10)
		for i := range conns {
			conns[i].id = i
			w.Schedule(&conns[i].timer, uint64(5+i%3), &conns[i])
		}
		fired := map[int]uint64{}
		expire := func(c *conn) {
			fired[c.id] = w.Now()
			if c.id == 4 {
				panic("boom")
			}
		}
		require.PanicsWithValue(t, "boom", func() { w.Advance(100, expire) })
		mustCheck(t, w)
		w.Advance(100, expire)
		require.Len(t, fired, len(conns))
		for id, at := range fired {
			require.Equal(t, uint64(5+id%3), at, "timer %d", id)
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestEndOfTime checks that once Now is MaxTick, a timer that could only
// fire later is refused rather than kept forever.
func TestEndOfTime(t *testing.T) {
	forEachWheel(t, func(t *testing.T, w Timers[*conn]) {
		a, b := &conn{id: 1}, &conn{id: 2}
		w.Schedule(&a.timer, MaxTick, a)
		fired := 0
		w.Advance(MaxTick, func(c *conn) {
			fired++
			require.Equal(t, MaxTick, w.Now())
			require.Equal(t, "packwheel: Schedule: Now is MaxTick; no later tick is left to fire at",
				panicMessage(func() { w.Schedule(&c.timer, MaxTick, c) }))
		})
		require.Equal(t, 1, fired)
		requireRejected(t, w, b, "packwheel: ScheduleRange: Now is MaxTick; no later tick is left to fire at",
			func() { w.ScheduleRange(&b.timer, 0, MaxTick, b) })
		require.Zero(t, w.Len())
	})
}

// TestAdvanceBackwards checks that an Advance to a tick before Now does
// nothing, even while timers of the current tick wait after a bounded one.
func TestAdvanceBackwards(t *testing.T) {
	forEachWheel(t, func(t *testing.T, w Timers[*conn]) {
		conns := make([]conn, 3)
		for i := range conns {
			w.Schedule(&conns[i].timer, 10, &conns[i])
		}
		fired := 0
		count := func(*conn) { fired++ }
		require.False(t, w.AdvanceLimit(10, 1, count))
		require.True(t, w.AdvanceLimit(5, 1, count))
		require.Equal(t, 1, fired, "a backwards Advance fired")
		require.Equal(t, uint64(10), w.Now())
		w.Advance(10, nil) // nil discards
		require.Zero(t, w.Len())
		nextTick := func() {
			for i := range conns {
				w.Schedule(&conns[i].timer, w.Now()+1, &conns[i])
			}
			w.Advance(w.Now()+1, nil)
		}
		// Warm up: a revolution of the hashed wheel's 256 slots, so that
		// every bucket has the first chunk it keeps while empty.
		for range 2 * 256 {
			nextTick()
		}
		require.Zero(t, testing.AllocsPerRun(100, nextTick))
	})
}
