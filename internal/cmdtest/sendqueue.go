package cmdtest

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// SendQueue returns what the kernel holds of what the socket at local has
// sent to remote and remote has not acknowledged, unsent bytes included:
// tx_queue in /proc/net/tcp, read from outside the server that owns it.
// Both are IPv4 host:port addresses. ok is false when no such socket is
// open. Linux only.
func SendQueue(t *testing.T, local, remote string) (n int, ok bool) {
	t.Helper()
	hexAddr := func(a string) string {
		ap := netip.MustParseAddrPort(a)
		ip := ap.Addr().As4()
		return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], ap.Port())
	}
	table, err := os.ReadFile("/proc/net/tcp")
	require.NoError(t, err)
	l, r := hexAddr(local), hexAddr(remote)
	for line := range strings.Lines(string(table)) {
		f := strings.Fields(line) // sl local_address rem_address st tx_queue:rx_queue ...
		if len(f) > 4 && f[1] == l && f[2] == r {
			tx, _, _ := strings.Cut(f[4], ":")
			q, err := strconv.ParseInt(tx, 16, 64)
			require.NoError(t, err)
			return int(q), true
		}
	}
	return 0, false
}

// watchSendQueue samples SendQueue every 20 ms until done, given the most
// seen and the time since the first sample, says to stop, and returns
// them. It fails the test if the socket is gone.
func watchSendQueue(t *testing.T, local, remote string, done func(most int, d time.Duration) bool) (most int, d time.Duration) {
	t.Helper()
	began := time.Now()
	for {
		time.Sleep(20 * time.Millisecond)
		q, ok := SendQueue(t, local, remote)
		require.True(t, ok, "the socket from %s to %s is gone", local, remote)
		most, d = max(most, q), time.Since(began)
		if done(most, d) {
			return most, d
		}
	}
}

// SendNeverRead dials the echo server at addr with a 4 KiB receive buffer
// and sends it size bytes, reading none of the echo, until the test ends:
// with 8 MiB, a client whose echo fills the server's send queue, and with
// less than the server's kernel takes, one whose echo leaves gnet's buffer
// empty.
func SendNeverRead(t *testing.T, addr string, size int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.(*net.TCPConn).SetReadBuffer(4<<10))
	go func() { _, _ = c.Write(make([]byte, size)) }() // it ends when c closes
	return c
}

// UnsentWatch is how TestUnsentBound in the example servers and
// idleconn's TestMaxUnsentNetwork watch a send queue, first with the
// kernel's own bound and then with theirs: without it, until the queue
// passes bound plus slack (a write past the bound completes its segment),
// for at most 8 s, under the example servers' write stall of 10; with it,
// for twice as long as the queue took to grow past it without, and at
// least 1 s, so that a bound that did nothing would be seen, however
// loaded the machine.
type UnsentWatch struct {
	Bound, Slack int
	grew         time.Duration
}

// Watch watches the queue from local to remote. Without the bound it
// fails the test if the queue never passed it (the test would show
// nothing); with it, called after the watch without, if the queue did.
func (w *UnsentWatch) Watch(t *testing.T, local, remote string, bounded bool) {
	t.Helper()
	limit := w.Bound + w.Slack
	if !bounded {
		most, d := watchSendQueue(t, local, remote, func(most int, d time.Duration) bool {
			return most > limit || d >= 8*time.Second
		})
		require.Greater(t, most, limit, "without the bound the kernel held no more: the test shows nothing")
		w.grew = d
		return
	}
	most, _ := watchSendQueue(t, local, remote, func(_ int, d time.Duration) bool {
		return d >= min(max(time.Second, 2*w.grew), 8*time.Second)
	})
	require.LessOrEqual(t, most, limit, "the kernel holds more than the bound")
}
