package cli

import (
	"flag"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAddrFlag checks that a bad address is a bad command line, refused
// while parsing with the flag's default as the example of a good one, and
// that a good one, or none, is what the flag holds.
func TestAddrFlag(t *testing.T) {
	parseWith := func(value string, args ...string) (string, error) {
		fs := flag.NewFlagSet("demo", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		addr := AddrFlag(fs, "addr", value, "`address` to listen on")
		err := Parse(fs, args)
		return *addr, err
	}
	parse := func(args ...string) (string, error) { return parseWith("127.0.0.1:9000", args...) }
	addr, err := parse()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9000", addr)
	addr, err = parse("-addr", "[::1]:0")
	require.NoError(t, err)
	require.Equal(t, "[::1]:0", addr)

	_, err = parse("-addr", "nonsense")
	var usage UsageError
	require.ErrorAs(t, err, &usage)
	require.EqualError(t, err, `invalid value "nonsense" for flag -addr: want host:port, as in 127.0.0.1:9000 (missing port in address)`)

	// httpserver's default is 8080: its refusal once suggested 9000.
	_, err = parseWith("127.0.0.1:8080", "-addr", "8080")
	require.EqualError(t, err, `invalid value "8080" for flag -addr: want host:port, as in 127.0.0.1:8080 (missing port in address)`)
}

// TestCheckAddr checks which addresses are refused before listening:
// those no listener takes, whatever the machine. Each one accepted here
// must be one net.Listen parses, which listening on the loopback ones
// shows.
func TestCheckAddr(t *testing.T) {
	for _, addr := range []string{
		"127.0.0.1:0", ":0", "[::1]:0", "localhost:0", "127.0.0.1:00",
		"example.com:80", "example.com.:80", "my-host_1:65535", "[fe80::1%lo]:80", "0.0.0.0:9000",
	} {
		require.NoError(t, checkAddr(addr, "127.0.0.1:9000"), addr)
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "127.0.0.1:00"} {
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err, addr)
		require.NoError(t, ln.Close())
	}
	for _, tc := range []struct{ addr, want string }{
		{"nonsense", "want host:port, as in 127.0.0.1:9000 (missing port in address)"},
		{"127.0.0.1", "want host:port, as in 127.0.0.1:9000 (missing port in address)"},
		{"::1:80", "want host:port, as in 127.0.0.1:9000 (too many colons in address)"},
		{"[::1:80", "want host:port, as in 127.0.0.1:9000 (missing ']' in address)"},
		{"127.0.0.1:99999", `port "99999": want a number from 0 to 65535 (0: any free port)`},
		{"127.0.0.1:65536", `port "65536": want a number from 0 to 65535 (0: any free port)`},
		{"127.0.0.1:-1", `port "-1": want a number from 0 to 65535 (0: any free port)`},
		{"127.0.0.1:", `port "": want a number from 0 to 65535 (0: any free port)`},
		{"127.0.0.1:http", `port "http": want a number from 0 to 65535 (0: any free port)`},
		{"127.0.0.256:80", `host "127.0.0.256": want an IP address, a host name, or nothing for every address`},
		{"99999:80", `host "99999": want an IP address, a host name, or nothing for every address`},
		{"a b:80", `host "a b": want an IP address, a host name, or nothing for every address`},
		{"a..b:80", `host "a..b": want an IP address, a host name, or nothing for every address`},
		{"host/path:80", `host "host/path": want an IP address, a host name, or nothing for every address`},
	} {
		require.EqualError(t, checkAddr(tc.addr, "127.0.0.1:9000"), tc.want, tc.addr)
	}
}
