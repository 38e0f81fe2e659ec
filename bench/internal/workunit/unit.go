package workunit

// The unit's constants, from the reference.
const (
	paceInterval = 10  // ticks between two paced messages
	responseSize = 128 // messages per response
)

// kind names a unit's five timers, and indexes unit.timers.
type kind uint8

const (
	idleTimer     kind = iota // re-armed on all activity; never fires
	closeTimer                // fires twice: start closing, then delete
	paceTimer                 // refreshes the transmit quota; always fires
	requestTimer              // client: sends the next request
	deadlineTimer             // a response's deadline; always cancelled
	timerKinds
)
