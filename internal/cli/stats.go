package cli

import (
	"errors"
	"flag"
	"time"
)

// StatsFlag defines the example servers' -stats flag on fs, as fs.Duration
// does, with value as its default: the interval between status lines, 0
// for none but the last, which a server prints at a stop whatever the
// interval. A negative interval is refused while parsing, so fs reports it
// as a bad command line. The servers share it so that -stats means the
// same in each (TestStatsFlag).
func StatsFlag(fs *flag.FlagSet, value time.Duration) *time.Duration {
	s := &statsValue{value}
	fs.Var(s, "stats", "interval between status lines: open connections, reaped by reason, refused (0: only the last, at a stop)")
	return &s.every
}

// statsValue is a StatsFlag's value.
type statsValue struct{ every time.Duration }

func (s *statsValue) String() string {
	if s == nil { // the flag package's zero value, for -h
		return "0s"
	}
	return s.every.String()
}

func (s *statsValue) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return errors.New("want a duration, such as 5s")
	}
	if d < 0 {
		return errors.New("must not be negative (0: only the last, at a stop)")
	}
	s.every = d
	return nil
}
