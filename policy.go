package packwheel

// policy is what the two wheels set differently about how their buckets
// get, keep and give back arrays (arrays.go). The table lists every knob of
// that reuse, per wheel and shared, each with the test or benchmark that
// fails when it is set otherwise.
//
//	knob          Wheel       Hashed    meaning, and why
//	groupBits     6: a level  31: all   buckets b>>groupBits form a group, whose buckets fill and
//	                                    drain in turn: the array a bucket leaves as it empties is
//	                                    its group's heir (TestHeir, TestHashedHandsArrayOn;
//	                                    TestRearmSteadyState allocates without)
//	sharedFrom    64: level 1 0         buckets below it keep arrays under crowdCap to themselves:
//	                                    no heir, and no growing bucket takes them (takeKept). A
//	                                    level-0 slot refills within 64 ticks; when the slots took
//	                                    each other's arrays the work units executed 10.66 G
//	                                    instructions at 1,000 pairs instead of 10.07 G, and at
//	                                    8,000 pairs a level-0 slot grew 5.4 million times
//	shrinksWiden  yes         no        each shrink widens the shelf's budget by the class it went
//	                                    to, for the next shrinkMemory shrinks: a hierarchical
//	                                    wheel's coarse slot drains by cancels while the next fills,
//	                                    each needing arrays the other left (TestCancelSteadyState
//	                                    allocates without); a hashed wheel kept megabytes of a
//	                                    fired burst with it (TestMemoryAfterBurstWithSurvivors)
//
//	constant      value  meaning
//	keptFloor     8192   entries of kept arrays allowed beyond 1.5x the live timers (store.keptBudget;
//	                     TestReclaim, TestDrainEndingInACrowd)
//	keptScan      64     words of the kept bitmap a growing bucket searches before it allocates
//	                     (store.takeKept; TestRearmSteadyState, hashed/after=1000, allocates with 16)
//	spareShift    3      the shelf keeps live>>spareShift entries of spares (store.spareBudget): a
//	                     quarter kept a byte per timer more after a fill (TestMemoryPerTimer)
//	spareFloor    4096   entries of spares the shelf keeps whatever the live timers, half of it
//	                     beyond the share (store.spareBudget)
//	shrinkFloor   40     no bucket shrinks to an array smaller than this (store.shrink)
//	shrinkMemory  32     shrinks that widen the shelf's budget (store.spareBudget)
//	shrinksBound  3      times the live timers the shrinks widen it by at most: with 2, the
//	                     wheel allocated 18 B per op (TestCancelSteadyState, n=100000)
//	crowdCap      1024   an array this large is shared whatever its bucket (arrays.shared): a crowd
//	                     that fires from level 0 re-arms into other slots (TestRearmSteadyState,
//	                     wheel, after=17, allocates without)
//	jumpFrom      1024   a bucket this full may grow into a spare largeJump classes larger, a shorter
//	                     one smallJump (store.growTo)
//	largeJump     6      classes beyond the one needed a long bucket may take (steady-state memory)
//	smallJump     3      the same for a shorter one, so that it does not sit on a huge array
//	presizeFrom   64     Wheel.cascade sizes the buckets a move down fills when it moves this many
//	smallCaps     1024   classOf looks up capacities below it in a table (shelf.go)
//
// Size classes grow by half (classCaps in shelf.go); a bucket grows when
// full and, when a removal leaves it a quarter full, shrinks to half full
// (store.shrink).
type policy struct {
	groupBits    int
	sharedFrom   int
	shrinksWiden bool
}

// wheelPolicy is the hierarchical wheel's policy: each level is a group,
// and level 0's slots keep their arrays to themselves.
var wheelPolicy = policy{groupBits: levelBits, sharedFrom: levelSlots, shrinksWiden: true}

// hashedPolicy is the hashed wheel's policy: its ring is one group.
var hashedPolicy = policy{groupBits: 31}

// keptFloor is how many entries' worth of arrays the empty buckets may keep
// beyond their share of the live timers, so that a small wheel keeps all it
// needs even when its timers all fire at once: bench's Expire at 10k timers
// (schedule 10k timers within a second, fire them all) allocated 703 KB per
// round with 2048, 348 KB with 8192 (475 KB at 94549a5, whose level-0
// arrays were kept uncounted). 8192 entries of 16 bytes plus an 8-byte
// value are 192 KB that an idle wheel may keep.
const keptFloor = 8192

// spareShift sets the shelf's share of the live timers: live>>spareShift
// entries of spare arrays, an eighth. While buckets only grow, as when a
// wheel fills, what they outgrow is rarely wanted again.
const spareShift = 3

// spareFloor is how many entries' worth of spare arrays the shelf keeps
// whatever the live timers, so that a small or idle wheel does not give
// arrays to the garbage collector and take new ones back on every burst.
const spareFloor = 4096

// crowdCap is the capacity from which an array is shared whatever its
// bucket (see policy.sharedFrom).
const crowdCap = 1024

// jumpFrom is the length from which a bucket that grows may take a spare
// up to largeJump classes larger than it needs (about 11 times the
// capacity; see store.growTo), and smallJump how many a shorter one may
// (about 3.4 times). With no bound on the jump, the array a fill left
// behind, too large for any bucket since, went from bucket to bucket
// instead of ageing off the shelf: a hierarchical wheel under sustained
// schedule-and-cancel at 1M timers held 116 bytes per timer, 92 with
// largeJump 6 (bench's ScheduleCancel pattern, 40 ops per timer).
const (
	jumpFrom  = 1024
	smallJump = 3
	largeJump = 6
)

// shrinkFloor is the capacity below which no bucket shrinks: moving a small
// array costs the shelf's bookkeeping whatever its size, and a sparse
// hashed wheel's buckets, a few timers each, went back and forth between
// the smallest classes (callgrind, bench's ScheduleCancel, hashed, 10k
// timers: 326 instructions per operation without, 292 with 40). 64 made
// TestRearmSteadyState (hashed, after=5000) allocate: its buckets wander
// between 30 and 60 entries, and the arrays they grow into came from
// shrinks.
const shrinkFloor = 40

// shrinkMemory is how many of the latest shrinks widen the shelf's budget:
// about two buckets' way down from a hundred thousand entries to a handful.
// With 16, the small classes at the end of one bucket's way down pushed the
// large ones out of the ring, the budget fell back, and the arrays the next
// slot needed were let go (TestCancelSteadyState at 100k timers allocates
// with 16; not with 32).
const shrinkMemory = 32

// keptScan is how many words of the kept bitmap, 64 buckets each, a
// growing bucket that finds no spare on the shelf looks through for a kept
// array of its class before it makes one: all of a default hashed wheel's.
// A hashed bucket refills a revolution after it fired, and the arrays the
// buckets between keep are what the bucket growing now needs; they gather
// behind Now, so that 16 words from where the last search stopped missed
// them (TestRearmSteadyState, hashed/after=1000).
const keptScan = 64

// shrinksBound bounds how far the latest shrinks widen the shelf's
// budget, in live timers, so that it falls with them as a burst drains.
const shrinksBound = 3

// presizeFrom is the least number of timers in a coarse slot for which
// Wheel.presize pays for its pass over them.
const presizeFrom = 64
