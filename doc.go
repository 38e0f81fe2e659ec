// Package packwheel provides allocation-free timer wheels for programs that
// hold hundreds of thousands to millions of timers, such as one idle timeout
// per connection of a server.
//
// # Design
//
// A timer is an entry stored by value in a bucket, not a node of a linked
// list. Each entry points back at a [Holder] that the caller embeds in its
// own struct (a connection, a session), and the wheel keeps the holder told
// where the entry is. Cancelling swap-removes the entry in O(1), moving the
// last entry of the bucket into the hole and updating its holder.
//
// Where entries live is one rule (package packed). A bucket is a list of
// chunks, contiguous arrays of entries, that fills at its tail, its chunks
// growing from 8 entries as the cube root of what it holds; a chunk its
// bucket empties goes to the wheel's free list (but its first chunk, of 8
// entries, or 64 in a hierarchical wheel's level 0, whose buckets fill and
// fire whole, which the bucket keeps for its next fill), and a bucket that
// needs one takes a free one before anything is allocated, so buckets grow
// and shrink without copying, and timers that come and go, one at a time or
// in waves, reuse the same memory. Free chunks that no bucket needed for
// [Retain] ticks go back to the garbage collector, save a headroom of four
// square roots of what the buckets last needed (4% of 10,000 chunks), so
// that a wave that returns within Retain allocates nothing and a burst that
// has drained gives its memory back. Once the wheel has held as many timers
// as it holds now, spread over its buckets as they are now (a hashed
// wheel's buckets have each held one after its first revolution), no
// operation allocates: TestPatternsAllocateNothing and
// TestWavesAllocateNothingForLong assert it for bench's patterns, and
// README's Limitations say when timers that change their pattern take new
// chunks.
//
// Time is a plain tick count that the caller drives with Advance; a wheel
// never reads a clock, which makes it deterministic under test. [Clock] maps
// wall time to ticks for callers who drive a wheel from time.Now.
//
// # Choosing a wheel
//
// [Hashed] is a single-level hashed wheel: a timer waits in bucket
// deadline%Slots for as many revolutions as it needs, and each tick compares
// the deadlines in one bucket. It suits timers that mostly fire within a
// revolution or a few, as when Slots spans the longest timeout: there a
// tick's work is the timers that expire in it, and it fires timers faster
// at most sizes (BenchmarkExpire in bench/). Each revolution a timer waits
// costs it a compare, and a cancel in its sparse buckets misses the cache
// more often, so it is behind where timers wait many revolutions or are
// cancelled and re-armed (bench/results/results.md).
//
// [Wheel] is hierarchical: eleven levels of 64 slots cover every 64-bit
// tick, one occupancy bitmap per level finds the next work in O(levels), and
// every timer fires at its exact tick. A timer's cost does not grow with how
// far away its deadline is, which suits timeouts of many revolutions and
// timers of very different lengths in one wheel, and its zero value is ready
// to use; it is the one to start with. Each level is a ring of the blocks
// after the current tick's, and a timer's distance sets its level: timers
// due within 64 ticks go straight to the first level, and timeouts that
// keep firing and re-arming move the same way each time rather than piling
// into a coarser level whenever their deadlines cross a block boundary.
//
// Both implement [Timers]; tests and benchmarks run the same code on both.
//
// # Semantics
//
// Precision: a timer fires during the Advance that processes its deadline
// tick, with Now equal to that tick, never earlier; how late that is in wall
// time is up to how often the caller advances and how long a tick is.
//
// Range: ticks run from 0 to [MaxTick]. Deadlines beyond it, and Advance
// targets beyond it, are refused with a panic; every other deadline fires at
// its exact tick, however far away.
//
// Reentrancy: expiry callbacks may schedule, reschedule and cancel any timer,
// including the one firing and others due at the same tick. A deadline at or
// before Now, or one for the tick being processed, fires at the next tick
// processed: never twice, never lost. Callbacks must not call Advance, which
// panics if they do. A callback that panics leaves the rest of its tick for
// the next Advance.
//
// Bounded work: AdvanceLimit and AppendExpired fire or move at most n
// timers and report whether they caught up, so that neither a clump of
// timers nor a crowded coarse slot can starve an event loop; the next call
// resumes where the last one stopped.
//
// End of time: once Now is MaxTick no later tick can be processed, so
// scheduling then panics rather than keep a timer that could never fire.
//
// Concurrency: a wheel and its holders are owned by one goroutine and are
// not safe for concurrent use. The idleconn package runs one wheel per gnet
// event loop and reaches each wheel only from its own loop.
//
// Misuse: a bad argument, an operation given a holder that is not in the
// wheel (a copy, a holder of another wheel, one whose position was
// overwritten), a zero Clock or an Advance from an expiry callback panics
// before it changes anything, with an error that matches [ErrMisuse] and
// whose message starts "packwheel: "; go vet reports copies of a Holder and
// of a wheel. Cancelling an inactive holder is a
// no-op that returns false. An active holder zeroed or moved in memory is
// beyond any check: see [Holder].
//
// # Costs
//
//	Schedule, ScheduleAfter, ScheduleRange   O(1) amortized, no allocation
//	                                         once warm
//	Cancel                                   O(1)
//	Len, Now, Holder.Deadline                O(1)
//	Advance, per tick with work              O(levels) Wheel, O(bucket) Hashed
//	Advance, per timer fired or moved        O(1)
//	Advance across empty ticks               O(levels) Wheel; Hashed skips
//	                                         empty buckets and, after one
//	                                         revolution, jumps to the next due
//	AdvanceLimit, AppendExpired              as Advance, stopping after n
//	                                         timers fired or moved: at most
//	                                         O(n·levels) Wheel
//	NextExpiry                               O(levels) Wheel; O(timers in the
//	                                         buckets it visits) Hashed
//	NewHashed                                O(Slots), about 32 bytes a slot
//	Clock methods                            O(1), no allocation
package packwheel
