// Command udpsessions is a UDP server that keeps a session per peer address
// and expires it after a configurable silence, with one goroutine owning a
// packwheel timer wheel. It prints the session count each time it changes:
//
//	sessions=1 new=127.0.0.1:53411
//	sessions=0 expired=127.0.0.1:53411
//
// Try it with:
//
//	go build -o /tmp/udpsessions ./examples/udpsessions
//	/tmp/udpsessions -timeout 3s &
//	echo hi > /dev/udp/127.0.0.1/9001 # bash
//	kill $!
//
// It stops on SIGINT or SIGTERM, which reach it only when it runs as its
// own command: kill stops go run, not the program it runs. It takes flags only, and exits with
// status 2 for a bad command line, a malformed -addr included, and 1 if it
// cannot listen.
package main

import (
	"context"
	"flag"
	"io"
	"time"

	"github.com/packwheel/packwheel/internal/cli"
)

func main() { cli.Main("udpsessions", run) }

// run parses args, then serves until ctx is done, printing to out.
func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	return start(ctx, cfg, out)
}

// parseFlags returns the configuration args ask for, or a cli.UsageError
// (flag.ErrHelp for -h).
func parseFlags(args []string) (config, error) {
	// A FlagSet of its own names the program in the usage: flag.Parse
	// would name os.Args[0], a temporary path under go run.
	fs := flag.NewFlagSet("udpsessions", flag.ContinueOnError)
	var cfg config
	addr := cli.AddrFlag(fs, "addr", "127.0.0.1:9001", "UDP `address` to listen on")
	fs.DurationVar(&cfg.timeout, "timeout", 5*time.Second, "expire a session after this much silence")
	fs.DurationVar(&cfg.resolution, "resolution", 10*time.Millisecond, "tick length: sessions expire up to this much after the timeout")
	fs.StringVar(&cfg.wheel, "wheel", "hierarchical", "timer wheel: hashed or hierarchical")
	if err := cli.Parse(fs, args); err != nil {
		return cfg, err
	}
	cfg.addr = *addr
	switch {
	case cfg.timeout <= 0:
		return cfg, cli.Usagef("-timeout %v: must be positive", cfg.timeout)
	case cfg.resolution <= 0:
		return cfg, cli.Usagef("-resolution %v: must be positive", cfg.resolution)
	case cfg.wheel != "hashed" && cfg.wheel != "hierarchical":
		return cfg, cli.Usagef("-wheel %q: want hashed or hierarchical", cfg.wheel)
	}
	return cfg, nil
}
