package cli

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// AddrFlag defines a flag of fs, as fs.String does, for a host:port
// address to listen on, and refuses while parsing one that no listener
// could take: no port, a port that is not a number from 0 to 65535, or a
// host that is neither an IP address nor a host name. fs then reports it
// as a bad command line, as it does a bad number, before anything starts.
// Whether a host name resolves, or the port is free, is learnt only by
// listening. A refusal gives value, the command's own default, as the
// example of a good address.
func AddrFlag(fs *flag.FlagSet, name, value, usage string) *string {
	a := &addrValue{addr: value, example: value}
	fs.Var(a, name, usage)
	return &a.addr
}

// addrValue is an AddrFlag's value.
type addrValue struct {
	addr    string
	example string // what a refusal shows as a good address
}

func (a *addrValue) String() string {
	if a == nil { // the flag package's zero value, for -h
		return ""
	}
	return a.addr
}

func (a *addrValue) Set(s string) error {
	if err := checkAddr(s, a.example); err != nil {
		return err
	}
	a.addr = s
	return nil
}

// checkAddr returns why addr is no address to listen on, or nil; example
// is a good one, to show.
func checkAddr(addr, example string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		var addrErr *net.AddrError
		if errors.As(err, &addrErr) {
			// "address nonsense: missing port in address" names addr twice
			// once the flag package has quoted it.
			return fmt.Errorf("want host:port, as in %s (%s)", example, addrErr.Err)
		}
		return err
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q: want a number from 0 to 65535 (0: any free port)", port)
	}
	if host == "" || isHostName(host) {
		return nil
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return fmt.Errorf("host %q: want an IP address, a host name, or nothing for every address", host)
	}
	return nil
}

// isHostName reports whether s is spelt as a host name: dot-separated
// labels of letters, digits, hyphens and underscores, the last not all
// digits, so that a mistyped IPv4 address such as 127.0.0.256 is not
// taken for a name to look up.
func isHostName(s string) bool {
	s = strings.TrimSuffix(s, ".") // a fully qualified name
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return false
		}
		for _, c := range []byte(l) {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}
