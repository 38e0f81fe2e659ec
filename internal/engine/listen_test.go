//go:build linux && !(mips || mipsle || mips64 || mips64le)

package engine

import (
	"context"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBindable checks that Bindable refuses a port that a server run with
// Options holds, which gnet's own bind, with SO_REUSEPORT, would share,
// takes one that is free, and chooses one for port 0, keeping the host.
// SO_REUSEPORT's number here is Linux's but on MIPS.
func TestBindable(t *testing.T) {
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
	_, err = Bindable(addr)
	require.EqualError(t, err, "bind: address already in use")
	require.NoError(t, held.Close())
	got, err := Bindable(addr)
	require.NoError(t, err)
	require.Equal(t, addr, got)
	chosen, err := Bindable("127.0.0.1:0")
	require.NoError(t, err)
	require.NotEqual(t, "127.0.0.1:0", chosen)
	require.NotEqual(t, addr, chosen)
	// Every address stays every address, IPv4's included: the port alone
	// is chosen.
	every, err := Bindable(":0")
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(every)
	require.NoError(t, err)
	require.Empty(t, host)
	require.NotEqual(t, "0", port)
}
