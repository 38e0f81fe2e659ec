// Package idleconn closes idle connections of a gnet v2 server, which has no
// idle timeout of its own (gnet's Conn.SetDeadline is unsupported).
//
// Wrap the server's event handler and run the engine with a ticker:
//
//	h, err := idleconn.New(myHandler, idleconn.Options{Timeout: 30 * time.Second})
//	if err != nil { ... }
//	err = gnet.Run(h, "tcp://:9000", gnet.WithMulticore(true), gnet.WithTicker(true))
//
// A connection that receives nothing for Timeout is closed within Timeout +
// Resolution of its last data; one that receives data at least every
// Timeout/2 is never closed by the reaper; with MaxLifetime set, none lives
// longer than MaxLifetime + Resolution. Closes never come early, even when an
// event loop is too busy to run the reaper on time: they only come later.
//
// # Cost
//
// Each event loop owns one timer wheel from package packwheel, touched only
// by that loop's goroutine, so nothing takes a lock. Connections' state
// lives in one process-wide table indexed by file descriptor, a cache line
// per descriptor holding the timer, the owning loop and the time of the
// last data. The data path (what OnTraffic adds to the wrapped handler)
// reads that line's owner and stores one number in it: it allocates
// nothing, takes no lock and reschedules no timer, and costs a few
// nanoseconds when the line is in cache, one cache miss when it is not
// (BenchmarkOnTraffic; BenchmarkTrafficPath compares it with rescheduling
// the timer on every read, which cost 2.2 to 22.5 times as much, depending
// on the wheel and the number of connections). A busy connection's timer
// fires about once per Timeout and is re-armed for the time it has left,
// so the reaper's work per tick is the connections whose deadline falls in
// that tick, not every connection open.
//
// The ticker (gnet's OnTick goroutine) sends each loop that tracks
// connections a runnable built once per loop, through EventLoop.Execute;
// the runnable advances the loop's wheel and closes expired connections on
// their own loop with EventLoop.Close.
//
// # Lifecycle
//
// A Handler serves one engine at a time and may serve another after that
// one stops. When the engine shuts down (OnShutdown) every wheel and all
// per-connection state is dropped; the package starts no goroutine.
package idleconn
