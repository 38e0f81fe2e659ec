package idleconn

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Fake-clock tests of the memory budget: its accounting, exact at every
// step, and its actions as the buffered total rises.

// budgetOpts has a budget of 1 MiB over connections that may each hold
// 256 KiB of input and 512 KiB of output: the per-connection limits alone
// would let five connections hold more than the budget.
var budgetOpts = Options{Timeout: time.Second, Resolution: 20 * time.Millisecond, Budget: 1 << 20,
	MaxInput: 256 << 10, Output: OutputLimit{Max: 512 << 10, High: 32 << 10, Low: 16 << 10}}

// checkBudget checks the accounting: each loop's sum is the sum of what
// its connections were last seen to buffer, and Stats' the loops'; and
// what caches it: with a budget, each loop's holders list exactly its
// connections that buffer bytes in the classes listed, each in its size
// class, and each class's bytes are what its connections hold.
func checkBudget(t *testing.T, h *Handler) {
	t.Helper()
	var all int64
	for _, l := range h.loops.all() {
		var sum int64
		var buffering int // in the classes listed
		bytes := make([]int64, numClasses)
		h.table.each(l, func(s *slot) bool {
			require.GreaterOrEqual(t, s.held, s.pend)
			sum += int64(s.held)
			bytes[sizeClass(s.held)] += int64(s.held)
			if h.cfg.budget != 0 && sizeClass(s.held) >= h.cfg.listClass {
				buffering++
			}
			return true
		})
		require.Equal(t, sum, l.held.Load(), "a loop's sum")
		all += sum
		if h.cfg.budget == 0 {
			continue
		}
		listed := 0
		for class := range numClasses {
			var prev *slot
			for s := l.holders.first[class]; s != nil; s = s.link().next {
				// Plain comparisons: this runs at each of TestBudgetModel's steps.
				if s.owner.Load() != l || sizeClass(s.held) != class || s.link().prev != prev || listed >= buffering {
					t.Fatalf("class %d: a holder of another loop, of another class, badly linked, or a list without end", class)
				}
				prev = s
				listed++
			}
			if bytes[class] != l.holders.bytes[class] {
				t.Fatalf("class %d holds %d bytes, counted %d", class, bytes[class], l.holders.bytes[class])
			}
		}
		require.Equal(t, buffering, listed, "every connection buffering bytes is listed")
	}
	st := h.Stats()
	require.Equal(t, all, st.Buffered)
	if st.Budget != 0 {
		require.Equal(t, float64(all)/float64(st.Budget), st.Pressure)
	} else {
		require.Zero(t, st.Pressure, "no budget")
	}
}

// TestBudget follows the budget's actions as connections buffer more:
// nothing below half the budget, then limits that shrink and close the
// largest holders, OverBudget, while the others stay; at the whole budget
// new connections are refused. Closes give the bytes back.
func TestBudget(t *testing.T) {
	w := &writer{}
	f := newFakeServer(t, w, budgetOpts)
	l := f.loop()
	const kb = 1 << 10
	feed := func(c *fakeConn, in, out int32) gnet.Action {
		c.in += in
		w.add = out
		defer func() { w.add = 0 }()
		return f.traffic(c)
	}
	var conns []*fakeConn
	for i := range 4 {
		c := openFake(f.h, l, 10+i)
		require.Equal(t, gnet.None, feed(c, 100*kb, 20*kb))
		conns = append(conns, c)
	}
	checkBudget(t, f.h)
	require.Equal(t, int64(480*kb), f.h.Stats().Buffered)
	require.False(t, f.h.UnderPressure(), "under half the budget")
	require.Empty(t, f.reap)

	// A fifth connection takes the total past half the budget: the limits
	// shrink, but all of them still fit.
	big := openFake(f.h, l, 20)
	require.Equal(t, gnet.None, feed(big, 150*kb, 0))
	l.runQueued()
	checkBudget(t, f.h)
	require.True(t, f.h.UnderPressure())
	require.Empty(t, f.reap)
	lp := f.h.loops.find(l)
	require.Greater(t, lp.squeeze, 0.0)
	require.Less(t, lp.maxIn, budgetOpts.MaxInput)

	// big grows: past its shrunk limit, though under MaxInput, it is
	// closed, OverBudget, at once; the bytes it held go back.
	require.Equal(t, gnet.Close, feed(big, 80*kb, 0))
	require.Equal(t, []Reason{OverBudget}, f.reap)
	checkBudget(t, f.h)
	require.Equal(t, int64(480*kb), f.h.Stats().Buffered)

	// Past its own MaxInput the reason is the connection's own.
	require.Equal(t, gnet.Close, feed(conns[0], 200*kb, 0))
	require.Equal(t, []Reason{OverBudget, InputFull}, f.reap)
	conns = conns[1:]
	checkBudget(t, f.h)

	// Connections that hold still are closed by the loop's pass when
	// another's growth raises the pressure: the largest first.
	parked := openFake(f.h, l, 30)
	require.Equal(t, gnet.None, feed(parked, 200*kb, 0))
	for i, c := range conns {
		require.Equal(t, gnet.None, feed(c, int32(10+i)*kb, 40*kb), "grown a little")
	}
	l.runQueued()
	checkBudget(t, f.h)
	require.Equal(t, []Reason{OverBudget, InputFull, OverBudget}, f.reap, "the parked 200 KiB first")
	require.Nil(t, f.slot(parked))

	// A connection whose own growth takes the total over the budget
	// relieves it at once, from the data path: the largest holders go,
	// down to nine tenths of the budget.
	var fill []*fakeConn
	reaped := len(f.reap)
	for i := 0; len(f.reap) == reaped; i++ {
		require.Less(t, i, 100)
		c := openFake(f.h, l, 40+i)
		require.NotNil(t, f.slot(c), "under the budget: admitted")
		feed(c, 60*kb, 30*kb)
		fill = append(fill, c)
	}
	checkBudget(t, f.h)
	require.LessOrEqual(t, f.h.Stats().Buffered, budgetOpts.Budget*9/10)
	require.Equal(t, OverBudget, f.reap[len(f.reap)-1])

	// Output that grows outside the data path (here, seen by Writable)
	// is relieved by the loop's pass; until it runs, new connections are
	// refused.
	refused := f.h.Stats().Refused
	hog := openFake(f.h, l, 99)
	hog.out = 200 << 10
	f.h.Writable(hog)
	require.GreaterOrEqual(t, f.h.Stats().Buffered, budgetOpts.Budget)
	over := openFake(f.h, l, 100)
	require.Nil(t, f.slot(over), "refused at the budget")
	require.Equal(t, refused+1, f.h.Stats().Refused)
	l.runQueued()
	checkBudget(t, f.h)
	require.Nil(t, f.slot(hog), "the largest holder went first")
	require.Less(t, f.h.Stats().Buffered, budgetOpts.Budget)
	require.NotNil(t, f.slot(openFake(f.h, l, 101)), "admitted again")

	// Every connection gone, nothing is held.
	for _, c := range append(conns, fill...) {
		_ = l.Close(c)
	}
	_ = l.Close(f.h.table.lookup(101).conn().(*fakeConn))
	checkBudget(t, f.h)
	require.Zero(t, f.h.Stats().Buffered)
	l.runQueued()
	require.False(t, f.h.UnderPressure())
}

// TestSizeClass checks that size classes grow with the size, eight per
// power of two.
func TestSizeClass(t *testing.T) {
	prev := -1
	for n := range 1 << 16 {
		c := sizeClass(n)
		require.GreaterOrEqual(t, c, prev, "n %d", n)
		prev = c
	}
	require.Equal(t, 8*18+4, sizeClass(200<<10))
	require.Equal(t, 8*16+2, sizeClass(170<<10>>2))
	require.Less(t, sizeClass(math.MaxInt), numClasses)
	require.Less(t, sizeClass(170<<10), sizeClass(200<<10))
}

// TestBudgetHuge checks the budget's arithmetic at a budget of a TiB,
// where a loop's share of the excess, computed as excess*held/total,
// passes 2^63: two loops' connections hold 604 GiB each (set directly, as
// fake connections count in int32), one 64 GiB and nine 60 GiB, more
// than the budget together; the first loop's pass frees its share,
// closing its largest down to nine tenths of the budget, and no other.
func TestBudgetHuge(t *testing.T) {
	const gib = 1 << 30
	opts := budgetOpts
	opts.Budget, opts.MaxInput = 1<<40, 1<<50 // no connection past its shrunk limits
	f := newFakeServer(t, &writer{}, opts)
	loops := []*fakeLoop{f.loop(), f.loop()}
	var conns []*fakeConn // opened first: past the budget they would be refused
	for i := range 20 {
		conns = append(conns, openFake(f.h, loops[i/10], 10+i))
	}
	for i, c := range conns {
		f.h.loops.find(c.loop).hold(f.slot(c), cmp.Or(60*gib*min(i%10, 1), 64*gib))
	}
	checkBudget(t, f.h)
	require.Equal(t, int64(1208*gib), f.h.Stats().Buffered)
	loops[0].runQueued()
	require.Equal(t, []Reason{OverBudget, OverBudget, OverBudget, OverBudget, OverBudget}, f.reap,
		"the 64 GiB, then 60 GiB ones down to nine tenths")
	require.Nil(t, f.h.table.lookup(10).owner.Load(), "the largest first")
	require.Equal(t, int64(904*gib), f.h.Stats().Buffered)
	checkBudget(t, f.h)

	require.Equal(t, int64(3), mulDiv(5, 6, 10))
	require.Equal(t, int64(1)<<62, mulDiv(1<<62, 1<<62, 1<<62), "no overflow")
	require.Equal(t, int64(7), mulDiv(7, 20, 10), "b clamped to c")
}

// TestBudgetThinHolders checks relief when the excess is spread thin:
// 1,700 connections each leave 40 KiB unconsumed, less than the lists of
// holders keep (64 KiB at a budget of 64 MiB), and together pass the
// budget. The data path finds none to close in the lists; the loop's
// pass goes on over the descriptor table and closes enough of them to
// bring the total under nine tenths of the budget.
func TestBudgetThinHolders(t *testing.T) {
	opts := budgetOpts
	opts.Budget, opts.MaxInput, opts.MaxConns = 64<<20, 1<<20, -1
	w := &writer{}
	f := newFakeServer(t, w, opts)
	l := f.loop()
	var conns []*fakeConn // opened first: past the budget they would be refused
	for i := range 1700 {
		conns = append(conns, openFake(f.h, l, 10+i))
	}
	for _, c := range conns {
		c.in = 40 << 10
		require.Equal(t, gnet.None, f.traffic(c), "within the shrunk limits")
	}
	checkBudget(t, f.h)
	require.Greater(t, f.h.Stats().Buffered, opts.Budget, "over the budget: the data path closed none")
	require.Empty(t, f.reap)
	for _, lp := range f.h.loops.all() {
		for class := range numClasses {
			require.Nil(t, lp.holders.first[class], "none listed")
		}
	}
	l.runQueued()
	checkBudget(t, f.h)
	require.LessOrEqual(t, f.h.Stats().Buffered, opts.Budget*9/10)
	require.NotEmpty(t, f.reap)
	for _, why := range f.reap {
		require.Equal(t, OverBudget, why)
	}
}

// TestBudgetOff checks that Budget -1 turns the budget off: connections
// hold what their own limits allow, and nothing is refused for it.
func TestBudgetOff(t *testing.T) {
	opts := budgetOpts
	opts.Budget = -1
	w := &writer{}
	f := newFakeServer(t, w, opts)
	l := f.loop()
	for i := range 20 {
		c := openFake(f.h, l, 10+i)
		c.in = 200 << 10
		w.add = 100 << 10
		require.Equal(t, gnet.None, f.traffic(c))
	}
	l.runQueued()
	st := f.h.Stats()
	require.Zero(t, st.Budget)
	require.Equal(t, int64(20*300<<10), st.Buffered, "counted all the same")
	require.Zero(t, st.Pressure)
	require.False(t, f.h.UnderPressure())
	require.Empty(t, f.reap)
}

// budgetCloses checks each OverBudget close, from OnReap, where the
// victim is still tracked and its bytes still counted, against the rules
// Options.Budget documents: the total is past half the budget
// (UnderPressure) and either past nine tenths of it, where relief closes
// the largest holders until it is under, or the victim's input or output,
// as its latest look saw them, is past the limit the total leaves it:
// MaxInput and Output.Max shrunk in proportion to the total's excess over
// the half, toward 64 KiB and twice Output.High. The squeeze is computed
// here from the documentation, not read from the loop, so that limits
// shrinking from two fifths of the budget (the squeeze-below-half mutant)
// show; and the victim's input is what it holds less its pending output,
// so that a shed pass counting the output as input too closes a
// connection within both its limits (the shed-output-as-input mutant).
type budgetCloses struct {
	h      *Handler
	driven gnet.Conn // the connection whose OnTraffic runs, if any
	relief bool      // a close of the driven connection's relief seen
	n      int       // OverBudget closes seen
	bad    []string  // those the rules do not allow
}

// onReap is the OnReap of the tests that use b.
func (b *budgetCloses) onReap(c gnet.Conn, why Reason) {
	if why != OverBudget {
		return
	}
	b.n++
	h := b.h
	budget, used := h.cfg.budget, h.buffered()
	s, _ := h.tracking(c)
	if s == nil {
		b.bad = append(b.bad, fmt.Sprintf("close %d: fd %d not tracked at its OnReap", b.n, c.Fd()))
		return
	}
	x := min(max(2*float64(used)/float64(budget)-1, 0), 1)
	o := s.lim().output
	in, p := s.held-s.pend, s.pend
	maxIn := squeezed(h.cfg.maxInput, min(h.cfg.maxInput, budgetInputFloor), x)
	maxOut := squeezed(o.Max, min(o.Max, 2*o.High), x)
	relief := used > budget*9/10
	if relief && c != b.driven {
		b.relief = true
	}
	switch {
	case 2*used <= budget || !h.UnderPressure():
		b.bad = append(b.bad, fmt.Sprintf("close %d: at %d of %d buffered, not past half", b.n, used, budget))
	case relief || in > maxIn || p > maxOut:
	case c == b.driven && b.relief:
		// Its OnTraffic's relief passed it among the largest holders,
		// past nine tenths, and closed others before telling it.
	default:
		b.bad = append(b.bad, fmt.Sprintf("close %d: fd %d holds %d in, %d out, within %d, %d at %d of %d buffered",
			b.n, c.Fd(), in, p, maxIn, maxOut, used, budget))
	}
}

// newBudgetServer returns a fake server on budgetOpts whose OnReap checks
// every OverBudget close (budgetCloses), its wrapped handler, the checker
// and two loops.
func newBudgetServer(t *testing.T) (*fakeServer, *writer, *budgetCloses, []*fakeLoop) {
	closes := &budgetCloses{}
	opts := budgetOpts
	opts.OnReap = closes.onReap
	w := &writer{}
	f := newFakeServer(t, w, opts)
	closes.h = f.h
	return f, w, closes, []*fakeLoop{f.loop(), f.loop()}
}

// traffic is f.traffic(c), with c as the driven connection.
func (b *budgetCloses) traffic(f *fakeServer, c *fakeConn) gnet.Action {
	b.driven, b.relief = c, false
	defer func() { b.driven = nil }()
	return f.traffic(c)
}

// TestBudgetModel drives random connections on two loops, growing and
// shrinking what they buffer through their handler, opening and closing,
// closing after flush (whose late input is discarded and leaves the
// budget) and untracked (whose bytes leave it), with the clock moving:
// after every step the accounting is exact and the total within a step
// of the budget per loop, once the loops have run it is under the
// budget, and every OverBudget close is one the rules allow
// (budgetCloses).
func TestBudgetModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 29))
	f, w, closes, loops := newBudgetServer(t)
	open := map[int]*fakeConn{}
	var lingering, untracked int // moves made
	for step := range 20_000 {
		fd := 10 + rng.IntN(64)
		c := open[fd]
		switch {
		case c == nil || !c.open:
			c = openFake(f.h, loops[rng.IntN(2)], fd)
			open[fd] = c
		case rng.IntN(50) == 0:
			_ = c.loop.Close(c)
		case rng.IntN(40) == 0:
			if f.h.CloseAfterFlush(c) {
				lingering++
			}
		case rng.IntN(80) == 0:
			if f.h.Untrack(c) {
				untracked++
			}
		default:
			// The peer sends, the handler consumes some and writes some,
			// the peer reads some.
			c.in += int32(rng.IntN(80 << 10))
			w.take, w.add = int32(rng.IntN(100<<10)), int32(rng.IntN(40<<10))
			c.out -= min(c.out, int32(rng.IntN(60<<10)))
			closes.traffic(f, c)
			if s := f.slot(c); s != nil && s.flags&closing != 0 {
				// Closing after flush: the input is discarded as it
				// comes, and leaves the budget (the lingering refund).
				require.Equal(t, s.pend, s.held, "step %d: a connection closing after flush holds no input", step)
			}
		}
		require.Empty(t, closes.bad, "step %d", step)
		checkBudget(t, f.h)
		// A loop's data path relieves the budget when its own growth,
		// seen a step of 1/256 at a time, takes the total over.
		require.LessOrEqual(t, f.h.Stats().Buffered, budgetOpts.Budget+int64(len(loops))*budgetOpts.Budget/256, "step %d", step)
		if step%16 == 0 {
			f.clk.t = f.clk.t.Add(f.h.cfg.tick)
			f.h.wake(f.clk.t)
			for _, l := range loops {
				l.runQueued()
			}
			require.Empty(t, closes.bad, "step %d's run", step)
			checkBudget(t, f.h)
			require.LessOrEqual(t, f.h.Stats().Buffered, budgetOpts.Budget, "step %d", step)
		}
	}
	require.Positive(t, closes.n, "the budget closed connections")
	require.Positive(t, lingering, "closes after flush")
	require.Positive(t, untracked, "untracked connections")
}

// TestBudgetBands drives the total through the bands the budget's rules
// tell apart, with connections near their limits in each, which
// TestBudgetModel's traffic seldom holds: a random round draws a target
// under two fifths of the budget, from two fifths to a half, from a half
// to nine tenths, or past nine tenths, and opens, on two loops in random
// order, one to three heavy connections (input near MaxInput, output near
// Output.Max, or some of each, as fits under the target) and light ones
// (under 64 KiB of each, which no squeeze closes) up to the target; then
// it moves some of them a little, and lets the loops run. Every
// OverBudget close must be one the rules allow (budgetCloses), a
// connection is refused exactly when the total is at the budget, and
// UnderPressure says whether the total is past half, where the limits
// begin to shrink. Up to a half a connection at its own limits stays:
// limits that shrink from two fifths (the squeeze-below-half mutant)
// close the heavy ones there; from a half a connection within both its
// shrunk limits stays, though its input and output together are past
// the input's (the shed-output-as-input mutant).
func TestBudgetBands(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 31))
	const kb = 1 << 10
	f, w, closes, loops := newBudgetServer(t)
	b, maxIn, maxOut := budgetOpts.Budget, int(budgetOpts.MaxInput), int(budgetOpts.Output.Max)
	check := func(what string, round int) {
		t.Helper()
		require.Empty(t, closes.bad, "round %d, %s", round, what)
		checkBudget(t, f.h)
		used := f.h.buffered()
		require.Equal(t, 2*used > b, f.h.UnderPressure(), "round %d, %s: %d of %d buffered", round, what, used, b)
	}
	bandSeen := [4]int{} // rounds that reached each band with a heavy connection in it
	for round := range 400 {
		band := rng.IntN(4)
		lo := [...]float64{0.2, 0.4, 0.5, 0.9}[band]
		hi := [...]float64{0.4, 0.5, 0.9, 1.05}[band]
		target := int((lo + (hi-lo)*rng.Float64()) * float64(b))
		type plan struct{ in, out int }
		var plans []plan
		planned := 0
		for range 1 + rng.IntN(3) {
			var p plan
			switch rng.IntN(3) {
			case 0:
				p = plan{maxIn - rng.IntN(24*kb), rng.IntN(16 * kb)}
			case 1:
				p = plan{rng.IntN(16 * kb), maxOut - rng.IntN(48*kb)}
			default:
				p = plan{64*kb + rng.IntN(144*kb), 64*kb + rng.IntN(240*kb)}
			}
			if planned+p.in+p.out <= target {
				plans = append(plans, p)
				planned += p.in + p.out
			}
		}
		heavy := len(plans)
		for planned < target {
			p := plan{rng.IntN(48 * kb), rng.IntN(48 * kb)}
			plans = append(plans, p)
			planned += p.in + p.out
		}
		perm := rng.Perm(len(plans))
		var conns []*fakeConn
		for i, j := range perm {
			p := plans[j]
			full := f.h.buffered() >= b
			c := openFake(f.h, loops[rng.IntN(2)], 10+i)
			require.Equal(t, full, f.slot(c) == nil, "round %d: refused exactly at the budget", round)
			if f.slot(c) == nil {
				continue
			}
			conns = append(conns, c)
			c.in = int32(p.in)
			w.take, w.add = 0, int32(p.out)
			closes.traffic(f, c)
			check("delivery", round)
			for _, l := range loops {
				l.runQueued()
			}
			check("delivery's runnables", round)
		}
		if heavy > 0 {
			bandSeen[band]++
		}
		// Some move a little: the peer sends and reads, the handler
		// consumes and writes.
		for range len(conns) {
			c := conns[rng.IntN(len(conns))]
			if f.slot(c) == nil {
				continue
			}
			c.in += int32(rng.IntN(16 * kb))
			w.take, w.add = int32(rng.IntN(16*kb)), int32(rng.IntN(16*kb))
			c.out -= min(c.out, int32(rng.IntN(16*kb)))
			closes.traffic(f, c)
			check("move", round)
		}
		f.clk.t = f.clk.t.Add(f.h.cfg.tick)
		f.h.wake(f.clk.t)
		for _, l := range loops {
			l.runQueued()
		}
		check("run", round)
		require.LessOrEqual(t, f.h.buffered(), b, "round %d: once the loops have run", round)
		for _, c := range conns {
			_ = c.loop.Close(c)
		}
		require.Zero(t, f.h.buffered(), "round %d: every connection gone", round)
		f.clk.t = f.clk.t.Add(f.h.cfg.tick)
		f.h.wake(f.clk.t)
		for _, l := range loops {
			l.runQueued()
		}
		check("closed", round)
	}
	for band, n := range bandSeen {
		require.Positive(t, n, "band %d reached with a heavy connection", band)
	}
	require.Positive(t, closes.n, "the budget closed connections")
}

// TestBudgetZeroAllocs checks that the budget's accounting, its pass and
// its reports allocate nothing once warm.
func TestBudgetZeroAllocs(t *testing.T) {
	w := &writer{}
	f := newFakeServer(t, w, budgetOpts)
	l := f.loop()
	conns := []*fakeConn{openFake(f.h, l, 3), openFake(f.h, l, 4), openFake(f.h, l, 5)}
	i := 0
	step := func() {
		c := conns[i%len(conns)]
		i++
		c.in = int32(i%7) * 40 << 10
		w.add = int32(i%5) * 10 << 10
		if f.traffic(c) == gnet.Close {
			c.in, c.out = 0, 0
			f.h.OnOpen(c)
			c.open = true
		}
		c.out /= 2
		_ = f.h.UnderPressure()
		_ = f.h.Stats()
		f.runFor(l, f.h.cfg.tick/4, nil)
	}
	for range 1000 {
		step()
	}
	require.Zero(t, testing.AllocsPerRun(1000, step))
}

// TestDefaultBudget checks the default's sources against fixtures of
// /proc and /sys/fs/cgroup: a 1024th of the least of GOMEMLIMIT, the
// cgroup's limit along its path (v2 and v1, "max" and v1's near 2^63
// meaning none) and physical memory; 16 GiB's where none can be read; and
// never below what one connection may keep. It sets the process's memory
// limit and the package's roots for a moment, so it is not parallel.
func TestDefaultBudget(t *testing.T) {
	const gib = 1 << 30
	require.Equal(t, int64(min(DefaultMaxInput, budgetInputFloor)+min(DefaultOutput.Max, 2*DefaultOutput.High)), int64(budgetFloor))
	require.Positive(t, physicalMemory(), "this machine's /proc/meminfo is read")
	defer func(p, c string) { procRoot, cgroupRoot = p, c }(procRoot, cgroupRoot)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	write := func(root, name, data string) {
		t.Helper()
		name = filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(name), 0o755))
		require.NoError(t, os.WriteFile(name, []byte(data), 0o644))
	}
	for _, tc := range []struct {
		name      string
		gomem     int64             // 0: not set
		proc, sys map[string]string // file: contents
		want      int64
	}{
		{"physical memory", 0, map[string]string{"meminfo": "MemTotal:       25165824 kB\nMemFree: 1 kB\n", "self/cgroup": "0::/\n"},
			map[string]string{"memory.max": "max\n"}, 24 * gib / 1024},
		{"v2, nested: the least along the path", 0,
			map[string]string{"meminfo": "MemTotal: 25165824 kB\n", "self/cgroup": "0::/user.slice/app.scope\n"},
			map[string]string{"memory.max": "max\n", "user.slice/memory.max": "8589934592\n", "user.slice/app.scope/memory.max": "max\n"}, 8 * gib / 1024},
		{"v2, a leaf's limit under its parent's", 0,
			map[string]string{"meminfo": "MemTotal: 25165824 kB\n", "self/cgroup": "0::/a/b\n"},
			map[string]string{"a/memory.max": "8589934592\n", "a/b/memory.max": "2147483648\n"}, 2 * gib / 1024},
		{"v1, memory among other controllers; near 2^63 is none", 0,
			map[string]string{"meminfo": "MemTotal: 25165824 kB\n", "self/cgroup": "12:cpu,cpuacct:/x\n4:memory,hugetlb:/a/b\n1:name=systemd:/y\n"},
			map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n", "memory/a/memory.limit_in_bytes": "4294967296\n",
				"memory/a/b/memory.limit_in_bytes": "9223372036854775807\n", "cpu,cpuacct/x/memory.max": "1024\n"}, 4 * gib / 1024},
		{"a cgroup limit above physical memory", 0,
			map[string]string{"meminfo": "MemTotal: 1048576 kB\n", "self/cgroup": "0::/\n"},
			map[string]string{"memory.max": "8589934592\n"}, gib / 1024},
		{"GOMEMLIMIT under the cgroup's", 2 * gib,
			map[string]string{"meminfo": "MemTotal: 25165824 kB\n", "self/cgroup": "0::/\n"},
			map[string]string{"memory.max": "8589934592\n"}, 2 * gib / 1024},
		{"GOMEMLIMIT over the cgroup's", 16 * gib,
			map[string]string{"meminfo": "MemTotal: 25165824 kB\n", "self/cgroup": "0::/\n"},
			map[string]string{"memory.max": "8589934592\n"}, 8 * gib / 1024},
		{"GOMEMLIMIT of 1 MiB: the floor", 1 << 20, map[string]string{"meminfo": "MemTotal: 25165824 kB\n"}, nil, budgetFloor},
		{"nothing readable", 0, nil, nil, 16 * gib / 1024},
		{"unparsable", 0, map[string]string{"meminfo": "MemTotal: lots\n", "self/cgroup": "garbage"}, nil, 16 * gib / 1024},
	} {
		procRoot, cgroupRoot = t.TempDir(), t.TempDir()
		for name, data := range tc.proc {
			write(procRoot, name, data)
		}
		for name, data := range tc.sys {
			write(cgroupRoot, name, data)
		}
		debug.SetMemoryLimit(cmp.Or(tc.gomem, math.MaxInt64))
		assert.Equal(t, tc.want, DefaultBudget(), tc.name)
	}

	// New raises a default under what one connection may keep with the
	// limits it is given.
	debug.SetMemoryLimit(1 << 20)
	h, err := New(&nopHandler{}, Options{Timeout: time.Second, MaxInput: 1 << 20, Output: OutputLimit{Max: 1 << 20, High: 256 << 10, Low: 1}})
	require.NoError(t, err)
	require.Equal(t, int64(64<<10+512<<10), h.Stats().Budget)
}
