package minheap

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

type timer struct {
	h  Item
	id int
}

// TestMatchesModel drives a heap and a map of deadlines with the same random
// operations and checks that every timer fires at its deadline, once.
func TestMatchesModel(t *testing.T) {
	var h Heap[*timer]
	timers := make([]timer, 500)
	want := map[int]uint64{} // id -> deadline of the active timers
	r := rand.New(rand.NewPCG(1, 2))
	for i := range timers {
		timers[i].id = i
	}
	for range 20_000 {
		tm := &timers[r.IntN(len(timers))]
		switch r.IntN(4) {
		case 0, 1:
			d := h.Now() + 1 + r.Uint64N(100)
			h.Schedule(&tm.h, d, tm)
			want[tm.id] = d
		case 2:
			lo := h.Now() + r.Uint64N(50)
			hi := lo + r.Uint64N(50)
			h.ScheduleRange(&tm.h, lo, hi, tm)
			if d, ok := want[tm.id]; !ok || d < lo || d > hi {
				want[tm.id] = max(hi, h.Now()+1)
			}
		case 3:
			_, active := want[tm.id]
			require.Equal(t, active, h.Cancel(&tm.h))
			delete(want, tm.id)
		}
		require.Equal(t, len(want), h.Len())
		to := h.Now() + r.Uint64N(5)
		h.Advance(to, func(tm *timer) {
			d, ok := want[tm.id]
			require.True(t, ok, "timer %d fired twice or after Cancel", tm.id)
			require.Equal(t, d, h.Now(), "timer %d fired at the wrong tick", tm.id)
			require.False(t, tm.h.Active())
			delete(want, tm.id)
		})
		require.Equal(t, to, h.Now())
		for id, d := range want {
			require.Greater(t, d, to, "timer %d is overdue", id)
			require.True(t, timers[id].h.Active())
		}
	}
}

// TestScheduleFromCallback checks the relative scheduling the work-unit
// workload relies on: a callback at tick T scheduling d fires at T+d.
func TestScheduleFromCallback(t *testing.T) {
	var h Heap[*timer]
	a, b, c := &timer{id: 1}, &timer{id: 2}, &timer{id: 3}
	h.Schedule(&a.h, 10, a)
	h.Schedule(&c.h, 30, c)
	var fired []uint64
	h.Advance(100, func(tm *timer) {
		fired = append(fired, uint64(tm.id), h.Now())
		switch tm {
		case a:
			h.ScheduleAfter(&b.h, 7, b)
			h.ScheduleAfter(&c.h, 0, c) // a past deadline fires at the next tick
		case b:
			require.False(t, h.Cancel(&c.h))
		}
	})
	require.Equal(t, []uint64{1, 10, 3, 11, 2, 17}, fired)
	require.Equal(t, uint64(100), h.Now())
}

// TestZeroAllocs checks that a warm heap does not allocate per operation.
func TestZeroAllocs(t *testing.T) {
	var h Heap[*timer]
	timers := make([]timer, 1024)
	for i := range timers {
		h.Schedule(&timers[i].h, uint64(1+i), &timers[i])
	}
	i := 0
	expire := func(tm *timer) { h.ScheduleAfter(&tm.h, 1000, tm) }
	allocs := testing.AllocsPerRun(1000, func() {
		tm := &timers[i%len(timers)]
		i++
		h.Schedule(&tm.h, h.Now()+uint64(i%977), tm)
		other := &timers[(i*7)%len(timers)]
		h.Cancel(&other.h)
		h.ScheduleRange(&other.h, h.Now()+10, h.Now()+20, other)
		h.Advance(h.Now()+1, expire)
	})
	require.Zero(t, allocs)
}
