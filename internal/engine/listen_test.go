//go:build linux

package engine

import (
	"context"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPortFree checks that PortFree refuses a port that a server run with
// Options holds, which gnet's own bind, with SO_REUSEPORT, would share,
// and takes one that is free.
func TestPortFree(t *testing.T) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var soErr error
		err := c.Control(func(fd uintptr) {
			soErr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, 0xf, 1) // SO_REUSEPORT (Linux)
		})
		if err != nil {
			return err
		}
		return soErr
	}}
	held, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := held.Addr().String()
	again, err := lc.Listen(context.Background(), "tcp", addr)
	require.NoError(t, err, "SO_REUSEPORT lets a second listener share the port")
	require.NoError(t, again.Close())
	require.EqualError(t, PortFree(addr), "bind: address already in use")
	require.NoError(t, held.Close())
	require.NoError(t, PortFree(addr))
}
