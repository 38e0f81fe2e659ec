package packwheel

// policy is how a wheel's buckets get, keep and give back their arrays:
// every choice the two wheels make differently, in one place. The table
// lists them with the constants both share and those of package packed,
// each with the test that fails when it is set the other way.
//
//	knob           Wheel          Hashed     why
//	groupSize      64, a level    all slots  buckets that fill and drain in turn: an array one
//	                                         leaves suits the next of its group to fill
//	shrinkRefills  yes            no         a crowded coarse slot drains by cancels while the
//	                                         next fills (TestCancelSteadyState allocates without);
//	                                         a hashed wheel kept megabytes of a fired burst with
//	                                         it (TestMemoryAfterBurstWithSurvivors)
//	keepArrays     yes            no         a slot refills as it empties, a level-0 slot every
//	                                         64 ticks; a hashed slot refills a revolution later,
//	                                         and adopting other sizes grew arrays the pool had not
//	                                         (TestRearmSteadyState, hashed/after=1000); keeping the
//	                                         smallest class only was 17% slower, as a kept array
//	                                         is cold where the pool hands out its newest
//	                                         (BenchmarkRequestTimeout, hashed, n=10000)
//	ownedBelow     64, level 0    none       see ownedCap
//
//	constant       value   where
//	keepBelow      1024    store.keep: a larger emptied array goes to its group's next fill
//	keptFloor      2048    store.keep: kept arrays' budget beyond the live timers
//	ownedCap       64      store.keep, Wheel.fire: level-0 arrays kept for good, uncounted
//	presizeFrom    64      Wheel.cascade: a move down this large sizes its targets first
//	packed         -       spareFloor, shrinkMemory, maxHeirs, jumpFrom, smallJump and the
//	                       outgrown share (a quarter once buckets ShrinkRefill, else an
//	                       eighth) are the pool's own, documented in packed/pool.go
type policy struct {
	groupSize     int
	shrinkRefills bool
	keepArrays    bool
	ownedBelow    int // buckets below it keep arrays up to ownedCap for good
}

// wheelPolicy is the hierarchical wheel's policy.
var wheelPolicy = policy{groupSize: levelSlots, shrinkRefills: true, keepArrays: true, ownedBelow: levelSlots}

// hashedPolicy is the policy of a hashed wheel of slots buckets: its ring
// is one group.
func hashedPolicy(slots int) policy { return policy{groupSize: slots} }

// keepBelow is the capacity from which a drained bucket hands its array
// to the next bucket of its group that grows (packed.Bucket.Release)
// instead of keeping it: a crowd's array is what the slot the crowd
// re-arms into needs, wherever that is.
const keepBelow = 1024

// keptFloor is how many entries' worth of arrays the buckets may keep
// whatever the live timers, so that a small wheel keeps all it needs.
const keptFloor = 2048

// ownedCap is the capacity up to which the buckets below policy.ownedBelow,
// a hierarchical wheel's level 0, keep their arrays for good, uncounted.
// Such a slot empties every time its tick comes, usually holding a handful
// of timers when the wheel is busy with few: counting its array in and out
// of the kept budget cost more than the firing (the work-unit workload at
// 1,000 pairs, bench/internal/workunit). At most 64 such arrays exist.
const ownedCap = 64

// presizeFrom is the least number of timers in a coarse slot for which
// Wheel.presize pays for its pass over them.
const presizeFrom = 64
