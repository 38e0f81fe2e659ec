package idleconn

import "github.com/panjf2000/gnet/v2"

// The input bound: Options.MaxInput, reason InputFull. gnet reads whatever
// arrives and keeps what the handler leaves unconsumed, so a peer that
// sends faster than the handler consumes (or a handler waiting on
// something else, as an HTTP server answering a slow request) would grow
// the inbound buffer without end. The data path checks it after each
// OnTraffic (traffic.go); no timer is needed, since input grows only by
// reads, each followed by OnTraffic.

// inputFull reports whether c holds more unconsumed input than l allows.
func (l *loop) inputFull(c gnet.Conn) bool {
	return c.InboundBuffered() > l.cfg.maxInput
}
