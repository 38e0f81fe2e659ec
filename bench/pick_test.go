package bench

import "unsafe"

// warmAhead is how many ops before its turn a warm picker chooses an item
// and reads it: enough for a cache miss (about 100 ns) to complete while
// the ops in between run, at a few to a few dozen ns each.
const warmAhead = 16

// picker chooses the item each op of Churn and ScheduleCancel works on: a
// random one, from the same sequence of numbers for every implementation.
//
// A cold picker returns the item as cold as a random one
// of n is: its struct, and with it an embedded timer handle, is in cache
// only if n is small. A warm picker chooses each item warmAhead ops before
// its turn and reads the item's first byte then, as a server reads a
// connection's struct as it handles the connection's bytes, before it
// re-arms the connection's timer: the struct's miss is the server's, not
// the timer's, and overlaps the ops in between. Both kinds run the same
// loop, so a warm figure differs from a cold one only by that read. A
// picker is aimed (see aim) before its first pick.
type picker struct {
	rng   rng
	ahead [warmAhead]int
	// base and size locate the items a warm picker reads.
	base unsafe.Pointer
	size uintptr
	sink byte // what the reads load, kept so that they are not dropped
	// dummy is what a cold picker reads: a byte never written, so that its
	// read waits on no store, as sink's would (Churn of the wheel at
	// n=10000 took a quarter longer cold than warm when it read sink).
	dummy byte
	// settling is how many ops the loop still runs before its clock
	// starts (see settle).
	settling int
}

// settleShare sets how many ops of its pattern a Churn or ScheduleCancel
// loop runs before its clock starts: n/settleShare of n timers. fill
// leaves every implementation holding its timers as a fill does, all due
// within one second; the ops take them out of that layout into the
// pattern's own, and what that costs once is not the steady state the
// benchmarks measure. The hashed wheel keeps a bucket's entries in chunks,
// and a cancel frees its bucket's last chunk only once it has taken out
// all that chunk's timers: each of fill's 1,000 buckets holds n/1000
// timers, loses one in 1,000 ops, and may hold its last chunk partly used
// (128 entries at 10M timers), so until each has emptied it the buckets
// the ops schedule into need chunks that fill's have not yet given back.
// An eighth of a bucket's timers covers its last chunk from about 200
// timers a bucket (n = 200k) up; below that the chunks are a few hundred
// bytes in all. Without the settling, the hashed wheel's ScheduleCancel at
// 10M timers allocated 2.3 MB during its first 300,000 ops and nothing
// after, which its 2M measured ops reported as 1 B/op
// (bench/results/settling.txt).
const settleShare = 8

// aim readies p to pick among items, warm or cold (see picker), and to
// run its settling ops (settleShare); it must be called before the first
// pick.
func aim[T any](p *picker, items []T, warm bool) {
	var zero T
	p.settling = len(items) / settleShare
	p.base, p.size = unsafe.Pointer(&p.dummy), 0
	if warm {
		p.base, p.size = unsafe.Pointer(unsafe.SliceData(items)), unsafe.Sizeof(zero)
	}
}

// pick returns the index of the item of n the next op works on: the one
// chosen warmAhead picks ago. A cold picker's read is of its own dummy
// byte, so cold and warm run the same instructions, and pick inlines into
// the benchmark loops as the random choice they had before it did (a call
// there cost a quarter of Churn's time at n=1000000).
func (p *picker) pick(n int) int {
	j := p.rng.below(n)
	p.sink = *(*byte)(unsafe.Add(p.base, uintptr(j)*p.size))
	// The generator's state steps by an odd constant, so its low bits
	// visit each slot once in every warmAhead picks.
	slot := &p.ahead[p.rng.s%warmAhead]
	j, *slot = *slot, j
	return j
}

// settle reports whether a Churn or ScheduleCancel loop runs one more of
// the picker's settling ops (see settleShare), and counts it. Each such
// loop runs its settling ops in a loop of their own, the same op as its
// timed loop's, and then, if its b is not nil, b.Loop's ops; so calling it
// with a nil b once after aim, before the clock and the CPU time are read,
// settles the pattern untimed, and the timed loop checks nothing more
// (callgrind counted 6 instructions an op for the check in the condition
// of a single loop, "for s.settle() || b != nil && b.Loop()", in the
// wheel's ScheduleCancel at 10k; gtimer's op takes about 20 ns).
func (p *picker) settle() bool {
	if p.settling == 0 {
		return false
	}
	p.settling--
	return true
}
