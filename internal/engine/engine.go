// Package engine holds what the example servers need of a running gnet
// engine beyond gnet's own API: its address, the status line they print,
// and the wait that serves until a signal and then stops gracefully.
package engine

import (
	"net"
	"os"

	"github.com/panjf2000/gnet/v2"
)

// Addr returns the address the engine's listener is bound to, which a
// server started on port 0 learns only this way: gnet's Engine does not
// say. It duplicates the listener's descriptor and closes the copy.
func Addr(eng gnet.Engine) (net.Addr, error) {
	fd, err := eng.Dup()
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	return ln.Addr(), nil
}
