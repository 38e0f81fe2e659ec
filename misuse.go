package packwheel

import (
	"errors"
	"fmt"

	"github.com/packwheel/packwheel/packed"
)

// ErrMisuse is matched, with errors.Is, by the value of every panic with
// which packwheel refuses a call: a bad argument, a holder that is not in
// the wheel, a zero Clock, an Advance from an expiry callback. Such a value
// is an error whose message starts with "packwheel: " and names the method;
// the call changed nothing before it panicked. A program that recovers
// from panics, as a server's request handler may, can tell these apart:
//
//	if err, ok := recover().(error); ok && errors.Is(err, packwheel.ErrMisuse) { ... }
var ErrMisuse = errors.New("packwheel: misuse")

// misuse is the panic value of a refused call, a message that starts with
// "packwheel: ".
type misuse string

func (m misuse) Error() string      { return string(m) }
func (misuse) Is(target error) bool { return target == ErrMisuse }

// checkTick panics if t is beyond MaxTick.
func checkTick(op, what string, t uint64) {
	if int64(t) < 0 { // t > MaxTick, in one instruction
		panic(misuse(fmt.Sprintf("packwheel: %s: %s %d is beyond MaxTick", op, what, t)))
	}
}

// afterNow returns the deadline now+delay, panicking if it is beyond MaxTick.
func afterNow(op string, now, delay uint64) uint64 {
	if delay > MaxTick-now {
		panic(misuse(fmt.Sprintf("packwheel: %s: delay %d from tick %d is beyond MaxTick", op, delay, now)))
	}
	return now + delay
}

// checkRange panics unless earliest <= latest <= MaxTick.
func checkRange(op string, earliest, latest uint64) {
	checkTick(op, "latest", latest)
	if earliest > latest {
		panic(misuse(fmt.Sprintf("packwheel: %s: earliest %d is after latest %d", op, earliest, latest)))
	}
}

// checkMax panics unless n, the bound of a bounded advance, is positive.
func checkMax(op string, n int) {
	if n <= 0 {
		panic(misuse(fmt.Sprintf("packwheel: %s: n %d must be positive", op, n)))
	}
}

// foreignHolder is the panic value of an operation given a holder that is
// not in the wheel, an error that matches ErrMisuse. It is a plain value,
// formatted only if printed, so that store.locate stays small enough to
// inline into every operation.
type foreignHolder struct {
	op   string
	link packed.Link // as the holder had it
}

// foreignCancel is Cancel's report of a holder that is linked but not in
// the wheel, which packed.Store.Remove calls before it changes anything.
func foreignCancel(l packed.Link) { panic(foreignHolder{"Cancel", l}) }

// Is reports that a foreign holder is a misuse (see ErrMisuse).
func (foreignHolder) Is(target error) bool { return target == ErrMisuse }

func (f foreignHolder) Error() string {
	return fmt.Sprintf("packwheel: %s: holder is not scheduled in this wheel "+
		"(chunk %d, index %d): it was copied, belongs to another wheel, or was overwritten",
		f.op, f.link.Chunk, f.link.Index)
}
