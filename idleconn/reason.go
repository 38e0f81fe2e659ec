package idleconn

import "fmt"

// Reason says why the package closed a connection. The zero value is not a
// reason and is never given to OnReap.
type Reason uint8

// The reasons, one per limit; the package documentation's table says which
// option and call set each.
const (
	// Idle means the connection received nothing, and had none of its
	// pending output read, for its idle timeout.
	Idle Reason = iota + 1
	// Deadline means the connection's deadline (Handler.SetDeadline)
	// passed.
	Deadline
	// WriteStall means the connection had output pending, none of it
	// drained, for its write stall timeout.
	WriteStall
	// SlowDrain means the connection's pending output drained slower than
	// Options.MinDrainRate over a DrainWindow.
	SlowDrain
	// Lifetime means the connection was open for its maximum lifetime.
	Lifetime
	// Linger means the connection, closing after flush
	// (Handler.CloseAfterFlush), lingered with its write side shut for
	// Options.Linger without its peer closing.
	Linger
	// OutputFull means the connection had more output pending than its
	// OutputLimit's Max.
	OutputFull
	// InputFull means the connection had more unconsumed input than
	// Options.MaxInput.
	InputFull
	// Shed means Handler.CloseIdle, or Handler.Shutdown's first pass,
	// closed the connection between requests.
	Shed
	// Shutdown means the connection was still open when the context given
	// to Handler.Shutdown ended.
	Shutdown
)

// numReasons is how many Reasons there are: Stats counts each.
const numReasons = int(Shutdown)

var reasonNames = [numReasons + 1]string{
	Idle:       "idle",
	Deadline:   "deadline",
	WriteStall: "write stall",
	SlowDrain:  "slow drain",
	Lifetime:   "lifetime",
	Linger:     "linger",
	OutputFull: "output full",
	InputFull:  "input full",
	Shed:       "shed",
	Shutdown:   "shutdown",
}

// String returns the reason's name in lower case, as "write stall", or
// "Reason(N)" for a value that is no reason.
func (r Reason) String() string {
	if r != 0 && int(r) <= numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}
