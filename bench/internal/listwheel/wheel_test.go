package listwheel

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

type item struct {
	id   int
	node Node[*item]
}

// TestAgainstModel runs seeded random operations, callbacks that
// reschedule and cancel included, against a map of deadlines, and checks
// that every timer fires at its exact tick, once.
func TestAgainstModel(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		var w Wheel[*item]
		items := make([]item, 200)
		model := map[int]uint64{}
		for i := range items {
			items[i].id = i
		}
		delay := func() uint64 {
			switch r.IntN(4) {
			case 0:
				return r.Uint64N(64)
			case 1:
				return r.Uint64N(5000)
			case 2:
				return r.Uint64N(1 << 20)
			}
			return r.Uint64N(1 << 40) // huge jumps
		}
		schedule := func(it *item) {
			d := w.Now() + delay()
			switch r.IntN(3) {
			case 0:
				w.Schedule(&it.node, d, it)
			case 1:
				w.ScheduleRange(&it.node, d, d+r.Uint64N(100), it)
			default:
				w.ScheduleAfter(&it.node, d-w.Now(), it)
			}
			model[it.id] = it.node.Deadline()
		}
		for range 3000 {
			it := &items[r.IntN(len(items))]
			switch r.IntN(5) {
			case 0:
				require.Equal(t, model[it.id] != 0, w.Cancel(&it.node))
				delete(model, it.id)
			case 1:
				to := w.Now() + delay()
				want := uint64(0)
				for _, d := range model {
					if d <= to && (want == 0 || d < want) {
						want = d
					}
				}
				if want != 0 {
					// The next work may be moving a coarse slot down, before
					// the next expiry; never after it.
					next := w.NextExpiry(to)
					require.LessOrEqual(t, next, want, "seed %d", seed)
					require.GreaterOrEqual(t, next, w.Now(), "seed %d", seed)
				}
				w.Advance(to, func(x *item) {
					require.Equal(t, model[x.id], w.Now(), "seed %d: fired at the wrong tick", seed)
					require.False(t, x.node.Active())
					delete(model, x.id)
					if r.IntN(3) == 0 {
						schedule(x)
					}
					if y := &items[r.IntN(len(items))]; r.IntN(4) == 0 {
						w.Cancel(&y.node)
						delete(model, y.id)
					}
				})
				for id, d := range model {
					require.Greater(t, d, to, "seed %d: timer %d due at %d left after Advance(%d)", seed, id, d, to)
				}
			default:
				schedule(it)
			}
			require.Equal(t, len(model), w.Len())
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	var w Wheel[*item]
	items := make([]item, 1000)
	for i := range items {
		w.ScheduleAfter(&items[i].node, uint64(i%5000+1), &items[i])
	}
	i := 0
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		it := &items[i%len(items)]
		i++
		w.ScheduleAfter(&it.node, 3000, it)
		w.ScheduleRange(&it.node, w.Now()+2000, w.Now()+4000, it)
		w.Cancel(&items[(i*7)%len(items)].node)
		w.Advance(w.Now()+3, func(x *item) { w.ScheduleAfter(&x.node, 100, x) })
	}))
}
