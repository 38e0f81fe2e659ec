package cli

import (
	"errors"
	"flag"
	"strconv"
)

// UnsentFlag defines the example servers' -max-unsent flag on fs, as
// fs.IntVar does: how many bytes the kernel may hold unsent for a
// connection, 0 for the kernel's own bound. It stores in *p what
// idleconn.Options.MaxUnsent takes for it, which *p starts as: 0 for the
// option's default, which the flag shows as def (the servers pass
// idleconn.DefaultMaxUnsent: cli does not import idleconn, as bench's
// commands use cli and not gnet), -1 for the kernel's own bound. A
// negative count is refused while parsing, so fs reports it as a bad
// command line (TestUnsentFlag).
func UnsentFlag(fs *flag.FlagSet, p *int, def int) {
	fs.Var(&unsentValue{p, def}, "max-unsent", "`bytes` the kernel may hold unsent for a connection (TCP_NOTSENT_LOWAT), beside -max-output (0: the kernel's own bound, up to net.ipv4.tcp_wmem's largest)")
}

// unsentValue is an UnsentFlag's value: the option, in
// idleconn.Options.MaxUnsent's terms, and what its 0 stands for.
type unsentValue struct {
	option *int
	def    int
}

func (u *unsentValue) String() string {
	switch {
	case u == nil || u.option == nil: // the flag package's zero value, for -h
		return "0"
	case *u.option == 0:
		return strconv.Itoa(u.def)
	case *u.option < 0:
		return "0"
	}
	return strconv.Itoa(*u.option)
}

func (u *unsentValue) Set(v string) error {
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return errors.New("want a number of bytes")
	case n < 0:
		return errors.New("must not be negative (0: the kernel's own bound)")
	case n == 0:
		*u.option = -1
	default:
		*u.option = n
	}
	return nil
}
