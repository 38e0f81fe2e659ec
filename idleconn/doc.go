// Package idleconn is the timeout layer gnet v2 lacks (gnet's
// Conn.SetDeadline is unsupported): it closes the connections of a gnet
// server that stay idle, miss a deadline, stall their writes or outlive
// their lifetime, and caps how many are open.
//
// Wrap the server's event handler and run the engine; no ticker is needed:
//
//	h, err := idleconn.New(myHandler, idleconn.Options{Timeout: 30 * time.Second})
//	if err != nil { ... }
//	err = gnet.Run(h, "tcp://:9000", gnet.WithMulticore(true), gnet.WithReuseAddr(true))
//
// A connection that receives nothing for Timeout is closed within Timeout +
// Resolution of its last data; one that receives data at least every
// Timeout/2 is never closed for being idle. Each connection also has, all
// changeable at any moment from its handler callbacks:
//
//   - an idle timeout of its own, or none (Handler.SetIdleTimeout);
//   - a deadline, whatever data arrives (Handler.SetDeadline), as a request
//     header timeout that stops slowloris clients;
//   - a write stall timeout (Options.WriteStallTimeout,
//     Handler.SetWriteStallTimeout): outbound data pending with none of it
//     drained, as a client that stops reading leaves it;
//   - a maximum lifetime (Options.MaxLifetime, Handler.SetMaxLifetime).
//
// Whichever is reached first closes the connection, within Resolution
// after it; OnReap and Stats tell which. Closes never come early, even when
// an event loop is too busy to run the reaper on time: they only come
// later. Options.MaxConns refuses connections beyond a count, so that gnet
// never fails an accept for want of descriptors (which stops its whole
// engine), and Handler.CloseIdle closes the connections between requests,
// for graceful shutdown or load shedding.
//
// A keep-alive HTTP server, for one, switches each connection between two
// states:
//
//	// first byte of a request: bound the whole head, not reset by bytes
//	h.SetIdleTimeout(c, 0)
//	h.SetDeadline(c, time.Now().Add(5*time.Second))
//	// response written: wait for the next request
//	h.SetDeadline(c, time.Time{})
//	h.SetIdleTimeout(c, 60*time.Second)
//
// Only TCP and Unix-socket engines have connections to close: a Handler
// panics on the first datagram of a UDP engine rather than do nothing.
//
// # Cost
//
// Each event loop owns one timer wheel from package packwheel, touched only
// by that loop's goroutine, so nothing takes a lock. Each connection has
// one timer, armed for the earliest of its limits; the reason is decided
// when it fires. Connections' state lives in one process-wide table
// indexed by file descriptor: a cache line per descriptor holding what the
// data path touches (the owning loop, the time of the last data, the timer
// and the connection), and a second line holding the limits. The data path
// (what OnTraffic adds to the wrapped handler) reads the first line's
// owner and stores one number in it: it allocates nothing, takes no lock
// and reschedules no timer (BenchmarkOnTraffic; BenchmarkTrafficPath
// compares it with rescheduling the timer on every read). With a write
// stall timeout on, it also reads the connection's outbound buffer size
// before and after the wrapped handler. A busy connection's timer fires
// about once per Timeout and is re-armed for the time it has left, so the
// reaper's work is the connections whose limit falls due, not every
// connection open.
//
// A driver goroutine sends each loop that has a timer due a runnable built
// once per loop, through EventLoop.Execute; the runnable advances the
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
