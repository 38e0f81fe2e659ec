package idleconn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// fdReader is a wrapped handler that reads from the connection as any
// real one does, so that the bare and the wrapped benchmarks both pay for
// bringing the connection into cache.
type fdReader struct {
	gnet.BuiltinEventEngine
	sum int
}

func (r *fdReader) OnTraffic(c gnet.Conn) gnet.Action {
	r.sum += c.Fd()
	return gnet.None
}

// benchServer opens n fake connections spread over loops fake loops and
// returns them in a random order, the order traffic will visit them.
func benchServer(b *testing.B, user gnet.EventHandler, opts Options, n, loops int) (*fakeServer, []*fakeLoop, []*fakeConn) {
	if opts.MaxConns == 0 {
		opts.MaxConns = -1 // more than the descriptor limit allows
	}
	f := newFakeServer(b, user, opts)
	ls := make([]*fakeLoop, loops)
	for i := range ls {
		ls[i] = f.loop()
	}
	conns := make([]*fakeConn, n)
	for i := range conns {
		conns[i] = openFake(f.h, ls[i%loops], 10+i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(n, func(i, j int) { conns[i], conns[j] = conns[j], conns[i] })
	return f, ls, conns
}

// bufferer is an fdReader that leaves its connection holding 0 to 7 KiB
// of unconsumed input, a different amount at each read, as a handler
// waiting for the rest of a request does: the data path charges the
// change to the budget.
type bufferer struct{ fdReader }

func (r *bufferer) OnTraffic(c gnet.Conn) gnet.Action {
	fc := c.(*fakeConn)
	fc.in = fc.reads & 7 << 10
	return r.fdReader.OnTraffic(c)
}

var benchSizes = []int{1_000, 100_000}

// BenchmarkOnTraffic measures what the wrapper adds to each OnTraffic: the
// same handler called bare and through a Handler, over connections visited
// in random order; connections that buffer nothing, the common case, and
// connections that buffer a little (handler=*-buffering), whose every
// look charges the budget (32 KiB per connection, so that none is closed).
func BenchmarkOnTraffic(b *testing.B) {
	for _, loops := range []int{1, 8} {
		for _, n := range benchSizes {
			for _, name := range []string{"bare", "wrapped", "bare-buffering", "wrapped-buffering"} {
				wrapped := strings.HasPrefix(name, "wrapped")
				b.Run(fmt.Sprintf("handler=%s/loops=%d/conns=%d", name, loops, n), func(b *testing.B) {
					var user gnet.EventHandler = &fdReader{}
					opts := Options{Timeout: time.Minute}
					if strings.HasSuffix(name, "-buffering") {
						user, opts.Budget = &bufferer{}, int64(n)<<15
					}
					f, _, conns := benchServer(b, user, opts, n, loops)
					handler := user
					if wrapped {
						handler = f.h
					}
					b.ReportAllocs()
					b.ResetTimer()
					for i := range b.N {
						// gnet writes to the connection just before it
						// calls OnTraffic, so the handler finds it in cache.
						c := conns[i%n]
						c.reads++
						handler.OnTraffic(c)
					}
				})
			}
		}
	}
}

// BenchmarkOnTrafficAllLimits is BenchmarkOnTraffic's wrapped case with
// every limit on: a write stall timeout, a drain rate, a lifetime, a
// tight output limit, an input bound and overload scaling. OnTraffic
// looks at the inbound and outbound buffers after the wrapped handler
// whatever the options; nothing is pending here, the common case.
func BenchmarkOnTrafficAllLimits(b *testing.B) {
	opts := Options{Timeout: time.Minute, WriteStallTimeout: time.Minute, MinDrainRate: 1 << 10,
		MaxLifetime: time.Hour, Output: OutputLimit{Max: 1 << 16, High: 1 << 14, Low: 1 << 12}, MaxInput: 1 << 16,
		MaxConns: 1 << 20, Overload: Overload{Start: 0.9, Floor: 10 * time.Second}} // no connection refused
	defer func(was func() int) { filesLimit = was }(filesLimit)
	filesLimit = func() int { return 1 << 21 } // fake connections hold no descriptor
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("conns=%d", n), func(b *testing.B) {
			f, _, conns := benchServer(b, &fdReader{}, opts, n, 1)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				c := conns[i%n]
				c.reads++
				f.h.OnTraffic(c)
			}
		})
	}
}

// BenchmarkRelief measures the budget's relief from the data path: a
// connection whose growth takes the total past the budget closes its
// loop's largest holder, beside idle connections that hold nothing. Its
// cost must not grow with them: relief finds the largest in the loop's
// size classes, and walks no descriptor table. Each op opens the holder
// again, and runs the passes the growth asked for.
func BenchmarkRelief(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("idle=%d", n), func(b *testing.B) {
			f, ls, _ := benchServer(b, &nopHandler{}, budgetOpts, n, 1) // a budget of 1 MiB
			l := f.h.loops.find(ls[0])
			grower := openFake(f.h, ls[0], 10+n)
			holder := &fakeConn{fd: 11 + n, loop: ls[0]}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				holder.open = true
				f.h.OnOpen(holder)
				l.hold(f.slot(holder), 600<<10)
				l.hold(f.slot(grower), 500<<10) // past the budget
				if l.relieve(f.h.buffered(), f.slot(grower)) || holder.open {
					b.Fatal("the holder, the largest, is not the one closed")
				}
				l.hold(f.slot(grower), 0)
				ls[0].runQueued()
			}
		})
	}
}

// trafficPaths are the ways the data path could keep a connection's
// timer: the lazy one Handler uses, and two that move the timer.
var trafficPaths = []struct {
	name string
	path func(h *Handler, c gnet.Conn)
}{
	// lazy: stamp the epoch; the timer is re-armed when it fires.
	{"lazy", func(h *Handler, c gnet.Conn) {
		if s := h.table.lookup(c.Fd()); s != nil {
			if l := s.owner.Load(); l != nil {
				s.last.epoch = l.epoch
				if !l.busy.Load() {
					l.markBusy()
				}
			}
		}
	}},
	// eager: reschedule the timer on every read.
	{"eager", func(h *Handler, c gnet.Conn) {
		if s := h.table.lookup(c.Fd()); s != nil {
			if l := s.owner.Load(); l != nil {
				now := l.ring[l.epoch&l.mask]
				l.wheel.Schedule(&s.timer, now+1+l.cfg.idleTicks, s)
			}
		}
	}},
	// range: reschedule unless the timer is already due within one
	// Resolution after the earliest allowed deadline.
	{"range", func(h *Handler, c gnet.Conn) {
		if s := h.table.lookup(c.Fd()); s != nil {
			if l := s.owner.Load(); l != nil {
				due := l.ring[l.epoch&l.mask] + 1 + l.cfg.idleTicks
				l.wheel.ScheduleRange(&s.timer, due, due+ticksPerResolution, s)
			}
		}
	}},
}

// BenchmarkTrafficPath compares the data path strategies on both wheels.
// Each connection receives data once per tick, in random order, and the
// clock moves a tick after each round (outside the timing), so the eager
// path moves every timer it touches.
func BenchmarkTrafficPath(b *testing.B) {
	for _, tp := range trafficPaths {
		for _, kind := range []WheelKind{Hashed, Hierarchical} {
			for _, n := range benchSizes {
				b.Run(fmt.Sprintf("path=%s/wheel=%v/conns=%d", tp.name, kind, n), func(b *testing.B) {
					f, ls, conns := benchServer(b, &nopHandler{}, Options{Timeout: time.Second, Wheel: kind}, n, 1)
					l := f.h.loops.find(ls[0])
					tick := func() {
						f.clk.t = f.clk.t.Add(f.h.cfg.tick)
						_ = l.Run(context.Background())
					}
					b.ReportAllocs()
					b.ResetTimer()
					for i := range b.N {
						if i%n == n-1 {
							b.StopTimer()
							tick()
							b.StartTimer()
						}
						c := conns[i%n]
						c.reads++
						tp.path(f.h, c)
					}
				})
			}
		}
	}
}

// sweepConn is a connection as the sweeps gnet's maintainers suggest see
// it: the tick of its last data.
type sweepConn struct{ last uint64 }

// heapSweep is the min-heap sweep: one entry per connection, keyed by the
// tick it is due; on each tick it pops what is due and pushes back, due
// later, what received data since. Typed, so that it allocates nothing.
type heapSweep struct {
	items   []heapItem
	timeout uint64
	reaped  int
}

type heapItem struct {
	due uint64
	c   *sweepConn
}

func (h *heapSweep) push(it heapItem) {
	h.items = append(h.items, it)
	for i := len(h.items) - 1; i > 0; {
		p := (i - 1) / 2
		if h.items[p].due <= h.items[i].due {
			break
		}
		h.items[p], h.items[i] = h.items[i], h.items[p]
		i = p
	}
}

func (h *heapSweep) pop() heapItem {
	top, n := h.items[0], len(h.items)-1
	h.items[0] = h.items[n]
	h.items = h.items[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h.items[c+1].due < h.items[c].due {
			c++
		}
		if h.items[i].due <= h.items[c].due {
			break
		}
		h.items[i], h.items[c] = h.items[c], h.items[i]
		i = c
	}
	return top
}

func (h *heapSweep) tick(now uint64) {
	for len(h.items) > 0 && h.items[0].due <= now {
		it := h.pop()
		if due := it.c.last + h.timeout; due > now {
			h.push(heapItem{due, it.c})
		} else {
			h.reaped++
		}
	}
}

// mapSweep is the map sweep: every connection checked on every tick.
type mapSweep struct {
	conns   map[int]*sweepConn
	timeout uint64
	reaped  int
}

func (m *mapSweep) tick(now uint64) {
	for _, c := range m.conns {
		if c.last+m.timeout <= now {
			m.reaped++
		}
	}
}

// BenchmarkReaperTick measures the reaper's work per tick of one loop
// holding n connections, each receiving data every Timeout/2 ticks, so
// that none is reaped: Handler's runnable on either wheel against the
// sweeps gnet's maintainers suggest, a min-heap of due ticks and a map
// scanned on every tick, both without the lock they would need. The data
// itself is delivered outside the timing.
func BenchmarkReaperTick(b *testing.B) {
	opts := Options{Timeout: time.Second}
	cfg, err := newConfig(opts)
	if err != nil {
		b.Fatal(err)
	}
	timeout := cfg.idleTicks
	every := int(timeout / 2)
	for _, sweep := range []string{"wheel-hashed", "wheel-hierarchical", "heap", "map"} {
		for _, n := range []int{10_000, 100_000} {
			b.Run(fmt.Sprintf("sweep=%s/conns=%d", sweep, n), func(b *testing.B) {
				var (
					tick  func(now uint64)
					touch func(i int, now uint64)
					check func() int // connections still tracked
				)
				switch sweep {
				case "heap", "map":
					conns := make([]*sweepConn, n)
					hs := &heapSweep{timeout: timeout}
					ms := &mapSweep{conns: make(map[int]*sweepConn, n), timeout: timeout}
					for i := range conns {
						conns[i] = &sweepConn{}
						hs.push(heapItem{timeout, conns[i]})
						ms.conns[10+i] = conns[i]
					}
					touch = func(i int, now uint64) { conns[i].last = now }
					if sweep == "heap" {
						tick, check = hs.tick, func() int { return len(hs.items) - hs.reaped }
					} else {
						tick, check = ms.tick, func() int { return len(ms.conns) - ms.reaped }
					}
				default:
					o := opts
					if sweep == "wheel-hierarchical" {
						o.Wheel = Hierarchical
					}
					f, ls, conns := benchServer(b, &nopHandler{}, o, n, 1)
					l := f.h.loops.find(ls[0])
					start := f.clk.t
					tick = func(now uint64) {
						f.clk.t = start.Add(time.Duration(now) * f.h.cfg.tick)
						l.dispatch()
						ls[0].runQueued()
					}
					touch = func(i int, _ uint64) { f.h.OnTraffic(conns[i]) }
					check = func() int { return f.h.Stats().Tracked }
				}
				// Warm up until deadlines are spread as in a server that
				// has been running, then time b.N ticks.
				warm := 4 * timeout
				b.ReportAllocs()
				for now := uint64(1); now <= warm+uint64(b.N); now++ {
					if now == warm+1 {
						b.ResetTimer()
					}
					b.StopTimer()
					for i := int(now) % every; i < n; i += every {
						touch(i, now)
					}
					b.StartTimer()
					tick(now)
				}
				b.StopTimer()
				if check() != n {
					b.Fatalf("%d of %d connections left: a busy one was reaped", check(), n)
				}
			})
		}
	}
}

// BenchmarkLoopTimers measures firing a loop's Timers: n periodic loop
// timers, a period of ten ticks each, due at ticks spread over the
// period, so that each op, one tick of the loop's runnable, fires n/10
// of them and re-arms each for its next period. It reports the time per
// firing.
func BenchmarkLoopTimers(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("timers=%d", n), func(b *testing.B) {
			f, ls, _ := benchServer(b, &nopHandler{}, Options{Timeout: time.Second}, 1, 1)
			tick := f.h.cfg.tick
			timers := make([]Timer, n)
			fired := 0
			fn := func(gnet.Conn) { fired++ }
			for i := range timers {
				d := time.Duration(1+i%10) * tick
				if !f.h.LoopTimer(ls[0], &timers[i], d, 10*tick, fn) {
					b.Fatal("LoopTimer refused")
				}
			}
			l := f.h.loops.find(ls[0])
			step := func() {
				f.clk.t = f.clk.t.Add(tick)
				l.dispatch()
				ls[0].runQueued()
			}
			for range 20 { // two periods, to warm the wheel
				step()
			}
			fired = 0
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				step()
			}
			b.StopTimer()
			if fired < b.N*n/10*9/10 {
				b.Fatalf("%d firings in %d ticks of %d timers", fired, b.N, n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(fired, 1)), "ns/firing")
		})
	}
}

// BenchmarkMemoryPerConn reports the live heap a tracked connection costs
// the Handler (its descriptor's lines in the table and its timer in a
// loop's wheel), with 100,000 fake connections open on two loops, after a
// full garbage collection. The fake connections themselves are counted
// out: gnet owns a real connection's memory.
func BenchmarkMemoryPerConn(b *testing.B) {
	const n = 100_000
	b.ReportAllocs()
	for range b.N {
		conns := make([]*fakeConn, n)
		for i := range conns {
			conns[i] = &fakeConn{fd: 10 + i, open: true}
		}
		before := liveHeap()
		f := newFakeServer(b, &nopHandler{}, Options{Timeout: time.Minute, MaxConns: -1})
		ls := []*fakeLoop{f.loop(), f.loop()}
		for i, c := range conns {
			c.loop = ls[i%2]
			f.h.OnOpen(c)
		}
		after := liveHeap()
		b.ReportMetric(float64(after-before)/n, "B/conn")
		runtime.KeepAlive(f)
		runtime.KeepAlive(conns)
	}
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
