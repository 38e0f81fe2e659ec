package idleconn

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"testing"
)

// Variables that make TestIdleClientsChild hold connections open.
const (
	envIdleClientsAddr  = "IDLECONN_IDLE_CLIENTS_ADDR"
	envIdleClientsConns = "IDLECONN_IDLE_CLIENTS_CONNS"
)

// TestIdleClientsChild is not a test but the client side of a measurement
// (bench/results), run as its own process since each process may hold
// 20,000 files: with IDLECONN_IDLE_CLIENTS_ADDR and _CONNS set it opens
// that many connections to the address, from four 127.0.0.x source
// addresses, prints "READY n", sends nothing, and closes them when its
// standard input ends. Without them it skips.
//
// The CPU an idle server spends is measured with it, for instance:
//
//	go test -c -o /tmp/idleconn.test ./idleconn
//	go run ./examples/idleserver -addr 127.0.0.1:9100 -timeout 120s -stats 1h &
//	IDLECONN_IDLE_CLIENTS_ADDR=127.0.0.1:9100 IDLECONN_IDLE_CLIENTS_CONNS=19000 \
//		/tmp/idleconn.test -test.run '^TestIdleClientsChild$'
//
// then reading the server's utime and stime in /proc/PID/stat ten seconds
// apart.
func TestIdleClientsChild(t *testing.T) {
	addr := os.Getenv(envIdleClientsAddr)
	if addr == "" {
		t.Skip("the client side of a measurement; see its documentation")
	}
	n, err := strconv.Atoi(os.Getenv(envIdleClientsConns))
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for i := range n {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(1+i%4))}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	fmt.Printf("READY %d\n", len(conns))
	_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
}
