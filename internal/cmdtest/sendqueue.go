package cmdtest

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"

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
