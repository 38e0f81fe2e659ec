// Package idleconn bounds what each connection of a gnet v2 server may
// hold: time, memory and descriptors. gnet has no deadlines (its
// Conn.SetDeadline is unsupported) and buffers whatever a peer sends or
// fails to read; idleconn wraps the server's event handler and closes the
// connections that go past a limit.
//
// Wrap the server's event handler and run the engine; no ticker is needed:
//
//	h, err := idleconn.New(myHandler, idleconn.Options{Timeout: 30 * time.Second})
//	if err != nil { ... }
//	err = gnet.Run(h, "tcp://:9000", gnet.WithMulticore(true), gnet.WithReuseAddr(true), gnet.WithReusePort(true))
//
// # Limits
//
// Each kind of limit is declared in one place, holding its option's
// check, its per-connection state and setter, the tick at which it
// closes a connection and what else it does. A connection goes when it
// passes any limit, with the limit's Reason, which OnReap and
// Stats.Reaped report.
//
//	limit                 option (default)             per connection        reason
//	idle                  Timeout (required)           SetIdleTimeout        Idle
//	deadline              -                            SetDeadline           Deadline
//	write stall           WriteStallTimeout (off)      SetWriteStallTimeout  WriteStall
//	drain rate            MinDrainRate (off)           -                     SlowDrain
//	lifetime              MaxLifetime (off)            SetMaxLifetime        Lifetime
//	lingering close       Linger (5 s)                 CloseAfterFlush       Linger
//	pending output        Output (DefaultOutput)       SetOutputLimit        OutputFull
//	unconsumed input      MaxInput (1 MiB)             -                     InputFull
//	between requests      -                            CloseIdle             Shed
//	shutdown              -                            Shutdown              Shed, Shutdown
//	memory budget         Budget (DefaultBudget)       -                     OverBudget
//	unsent in the kernel  MaxUnsent (256 KiB)          -                     -
//	connections           MaxConns (DefaultMaxConns)   -                     (refused)
//	idle under load       Overload (off)               -                     Idle
//
// The timed limits (idle, deadline, write stall, drain rate, lifetime,
// lingering close) close a connection never before its limit, and at most
// Resolution after it as long as its event loop is not held up (by a
// handler, or a process starved of CPU) for longer than a quarter of
// Resolution; a loop held up longer closes later, never earlier. The bounds
// on memory are checked where the memory grows: input after each OnTraffic,
// output after each callback that may write and each tick while output is
// pending. Output also has water marks: a handler that answers pipelined
// requests asks Writable before each answer, stops when it is false, and
// goes on when OnWritable says the peer has read enough, as Netty's handlers
// do. The memory budget bounds what all connections buffer together: from
// half of it each connection's input and output maximum shrink, closing the
// largest holders first, and at the whole of it new connections are refused,
// as Envoy's overload manager does; UnderPressure tells a keep-alive server
// to close after its answers meanwhile. A close for a limit that a peer not
// reading or the memory bounds pass is a reset, which frees what the
// kernel still held to send for the connection (Reason).
//
// A keep-alive HTTP server, for one, switches each connection between
// states, all O(1) with no allocation:
//
//	// first byte of a request: bound the whole head, not reset by bytes
//	h.SetIdleTimeout(c, 0)
//	h.SetDeadline(c, time.Now().Add(5*time.Second))
//	// head complete: the body and the answer are bounded by the output
//	// limits, not by the idle timeout
//	h.SetDeadline(c, time.Time{})
//	// answer written: wait for the next request
//	h.SetIdleTimeout(c, 60*time.Second)
//	// an answer that ends the connection (Connection: close)
//	h.CloseAfterFlush(c)
//
// The setters may be called at any moment from a handler callback for c
// or a runnable on c's loop (given to c.EventLoop().Execute), and from
// nowhere else: they take no lock, and a call from another goroutine is a
// data race. Each reports whether c is tracked, and does nothing to a
// connection that is not (one untracked, refused, or closed and its
// descriptor reused). Each is O(1), reads the clock at most twice and
// allocates nothing once warm (see Cost). A limit brought earlier re-arms the connection's one
// timer; one moved later leaves it, and the timer, firing early, is
// re-armed for the time left. A bad argument panics, with a message
// starting "idleconn: ", before anything changes.
//
// Shutdown closes a server gracefully, as net/http's Server.Shutdown
// does: new connections are refused, those between requests are closed,
// the others finish their requests, and whatever is left goes when its
// context ends, but for connections the wrapped handler untracked, which
// are its own to close.
//
// Only TCP and Unix-socket engines have connections to close: a Handler
// panics on the first datagram of a UDP engine rather than do nothing.
//
// # Cost
//
// Each event loop owns one timer wheel from package packwheel, touched only
// by that loop's goroutine, so nothing takes a lock. Each connection has
// one timer, armed for the earliest of its timed limits; the reason is
// decided when it fires. Connections' state lives in one table per
// Handler, indexed by file descriptor: a cache line per descriptor holding
// what the data path touches (the owning loop, the time of the last data,
// the output pending at the last look and the timer), two more lines
// holding the connection and its limits, and 16 bytes placing it among
// its loop's holders of buffered bytes, for the memory budget
// (BenchmarkMemoryPerConn measures the whole per connection). The data path (what OnTraffic adds to the
// wrapped handler) reads the first line, stores one number in it and asks
// the connection for its input and output sizes: it allocates nothing,
// but for the closure gnet's Execute makes when a step of the memory
// budget's pressure wakes the loops, takes no lock and reschedules no
// timer (BenchmarkOnTraffic;
// BenchmarkTrafficPath compares it with rescheduling the timer on every
// read). A busy connection's timer fires about once per Timeout and is
// re-armed for the time it has left, so the reaper's work is the
// connections whose limit falls due, not every connection open.
//
// "No allocation", here and in the methods' docs, means once warm: a
// timer armed when its loop's wheel has used every chunk of entries it
// keeps takes a new chunk, as package packwheel describes, and the tables
// grow to the most connections a loop has held. After that, opens,
// closes, the setters, the data path and the reaper's runs allocate nothing
// (TestZeroAllocs, TestTimerZeroAllocs).
//
// A driver goroutine sends each loop that has a timer due a runnable built
// once per loop, through EventLoop.Execute, which wraps it in a closure of
// gnet's own at each call: that wake, at most one per loop and tick, is
// the reaper's one allocation, and gnet's. The runnable advances the
// loop's wheel and closes expired connections on their own loop with
// EventLoop.Close. In between the driver sleeps until the earliest timer
// of any loop, or until a loop wakes it with an earlier one, so a server
// with nothing due soon costs no wake-ups (TestDriverSleeps). While data
// flows it wakes each loop once per tick, a quarter of Resolution, for the
// loop to note the time.
//
// # Lifecycle
//
// A Handler serves one engine at a time and may serve another after that
// one stops. OnBoot starts the driver; OnShutdown stops it, waits for its
// goroutine to end, and drops every wheel and all per-connection state.
package idleconn
