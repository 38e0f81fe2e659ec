package packwheel

import "github.com/packwheel/packwheel/packed"

// Holder is the caller's handle on one timer. Embed it by value in the
// struct the timer belongs to (a connection, a session); the wheel keeps a
// pointer back to it and updates it whenever the timer's entry moves, so
// cancelling or rescheduling needs no search and no allocation.
//
// The zero value is an inactive holder, ready to be scheduled. A Holder is 16
// bytes and records the timer's deadline and position, so [Holder.Active] and
// [Holder.Deadline] are O(1) reads that need no access to the wheel.
//
// A Holder belongs to at most one wheel at a time, and it must not be copied
// or moved while active: go vet reports copies, and a wheel given a copy, a
// holder of another wheel or a corrupted holder panics before it changes
// anything. What no check can see is an active holder overwritten in place
// (its struct zeroed, or moved by an append that grows a slice of structs):
// it then looks inactive while its timer stays in the wheel, as with any
// intrusive structure. Cancel before reusing the memory, or keep such
// structs behind pointers. A Holder is not safe for concurrent use; it
// follows the rules of its wheel.
type Holder struct {
	_    noCopy
	link packed.Link
}

// Active reports whether the timer is scheduled and has not yet fired or
// been cancelled. O(1).
func (h *Holder) Active() bool { return h.link.Chunk != 0 }

// Deadline returns the tick the timer fires at, or 0 if it is not active.
// It is the tick the wheel settled on: for a deadline already past when it
// was scheduled, the next tick the wheel processes; for a range, the tick the
// wheel chose inside it. O(1).
func (h *Holder) Deadline() uint64 {
	if h.link.Chunk == 0 {
		return 0
	}
	return h.link.Deadline
}

// dueWithin reports whether h is active and due inside [earliest, latest]
// with latest no later than MaxTick: the no-op of ScheduleRange, answered
// from the holder alone. It reads no entry and so cannot see a holder that
// belongs to another wheel; that is harmless, since the no-op changes
// nothing, and any call that does change something checks the holder
// first. A deadline inside the range implies earliest <= latest, so the
// range needs no other check.
func (h *Holder) dueWithin(earliest, latest uint64) bool {
	d := h.link.Deadline
	return h.link.Chunk != 0 && d >= earliest && d <= latest && int64(latest) >= 0
}

// noCopy makes go vet's copylocks check report copies of a Holder.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
