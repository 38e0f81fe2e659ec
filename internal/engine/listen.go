package engine

import (
	"errors"
	"net"
	"strconv"

	"github.com/panjf2000/gnet/v2"
)

// Options returns the gnet options the example servers run with, on
// loops event loops:
//   - ReuseAddr: a server closes idle connections first, leaving them in
//     TIME_WAIT, which would keep a restart from binding its port for a
//     minute.
//   - ReusePort: each loop accepts from a listener of its own and refuses
//     a connection beyond idleconn's MaxConns before it accepts the next,
//     where gnet's main reactor would accept a whole burst first and, under
//     a small descriptor limit, stop the engine with a failed accept
//     (idleconn's TestBurstAtFilesLimit).
//
// ReusePort has two more effects, which the servers meet with Bindable:
// a second server may bind a port the first holds, and share its clients;
// and each loop binds the address it is given, so port 0 gives each loop
// a port of its own, of which the server would report the first alone.
func Options(loops int) []gnet.Option {
	return []gnet.Option{gnet.WithNumEventLoop(loops), gnet.WithReuseAddr(true), gnet.WithReusePort(true)}
}

// Bindable returns addr, a TCP address, with its port chosen if it is 0,
// or an error if addr cannot be bound: a listener there, even one that set
// SO_REUSEPORT as Options does, makes it "bind: address already in use",
// as gnet would without ReusePort. The host stays as given: an empty one
// is every address, IPv4 and IPv6, where the listener's own, "[::]", is
// IPv6 alone to gnet. It binds and closes a listener of its own, so a
// server that takes the port between that and its own bind shares it.
func Bindable(addr string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", addr)
	if op := (*net.OpError)(nil); errors.As(err, &op) {
		return "", op.Err // "bind: ...": the caller names the address
	} else if err != nil {
		return "", err
	}
	defer ln.Close()
	return net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)), nil
}
