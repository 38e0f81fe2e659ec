package cli

import (
	"errors"
	"flag"
	"strconv"

	"github.com/packwheel/packwheel/idleconn"
)

// UnsentFlag defines the example servers' -max-unsent flag on fs, as
// fs.IntVar does: how many bytes the kernel may hold unsent for a
// connection, idleconn.DefaultMaxUnsent unless set, 0 for the kernel's own
// bound. It stores in *p what idleconn.Options.MaxUnsent takes for it,
// which *p starts as: 0 for the default, -1 for the kernel's own bound. A
// negative count is refused while parsing, so fs reports it as a bad
// command line (TestUnsentFlag).
func UnsentFlag(fs *flag.FlagSet, p *int) {
	fs.Var((*unsentValue)(p), "max-unsent", "bytes the kernel may hold unsent for a connection (TCP_NOTSENT_LOWAT), beside -max-output (0: the kernel's own bound, up to net.ipv4.tcp_wmem's largest)")
}

// unsentValue is an UnsentFlag's value, in idleconn.Options.MaxUnsent's
// terms.
type unsentValue int

func (u *unsentValue) String() string {
	switch {
	case u == nil || *u == 0: // nil: the flag package's zero value, for -h
		return strconv.Itoa(idleconn.DefaultMaxUnsent)
	case *u < 0:
		return "0"
	}
	return strconv.Itoa(int(*u))
}

func (u *unsentValue) Set(v string) error {
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return errors.New("want a number of bytes")
	case n < 0:
		return errors.New("must not be negative (0: the kernel's own bound)")
	case n == 0:
		*u = -1
	default:
		*u = unsentValue(n)
	}
	return nil
}
