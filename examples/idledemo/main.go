// Command idledemo shows package idleconn doing its job, in one command
// with no set-up:
//
//	go run ./examples/idledemo
//
// It starts a gnet echo server wrapped by idleconn in-process, and a few
// thousand loopback clients of three kinds: chatty ones, which talk every
// Timeout/4 in sessions shorter than MaxLifetime; silent ones, which
// connect and say nothing; and trickling ones, which send one byte every
// Timeout/2 and so are only ever closed by MaxLifetime. Clients reconnect
// when their connection ends. It prints progress every second and ends
// with a table: connections reaped, how many late and the worst lateness,
// active connections wrongly closed (which must be 0), and the reaper's
// memory. It exits with status 1 if any active connection was wrongly
// closed. Lateness is reported, not failed on: it depends on how busy the
// machine keeps the event loops.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/packwheel/packwheel/idleconn"
)

// config is the demo's set-up, from its flags.
type config struct {
	clients  [kinds]int
	timeout  time.Duration
	maxLife  time.Duration
	duration time.Duration
	loops    int
	wheel    idleconn.WheelKind
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := parseFlags(os.Args[1:])
	var usage usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return // the flag package has printed the usage, as asked
	case errors.As(err, &usage):
		// The flag package has printed it, with the usage.
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "idledemo:", err)
		os.Exit(2)
	}
	res, err := run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "idledemo:", err)
		os.Exit(1)
	}
	if res.wronglyClosed() > 0 {
		os.Exit(1)
	}
}

// usageError is an error in the command line that the flag package has
// already reported on stderr.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// parseFlags returns the configuration args ask for. Its error wraps
// flag.ErrHelp if they ask for help instead: the usage is printed then.
func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("idledemo", flag.ContinueOnError)
	var cfg config
	fs.IntVar(&cfg.clients[chatty], "chatty", 1000, "clients that talk every timeout/4")
	fs.IntVar(&cfg.clients[silent], "silent", 1500, "clients that connect and say nothing")
	fs.IntVar(&cfg.clients[trickle], "trickle", 500, "clients that send a byte every timeout/2")
	fs.DurationVar(&cfg.timeout, "timeout", time.Second, "idle timeout")
	fs.DurationVar(&cfg.maxLife, "max-life", 3*time.Second, "maximum connection lifetime: more than 2.25 × timeout")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long the clients run")
	fs.IntVar(&cfg.loops, "loops", runtime.NumCPU(), "server event loops")
	wheel := fs.String("wheel", "hashed", "timer wheel: hashed or hierarchical")
	if err := fs.Parse(args); err != nil {
		return cfg, usageError{err}
	}
	switch *wheel {
	case "hashed":
	case "hierarchical":
		cfg.wheel = idleconn.Hierarchical
	default:
		return cfg, fmt.Errorf("-wheel %q: want hashed or hierarchical", *wheel)
	}
	switch {
	case cfg.timeout < idleconn.MinResolution:
		// idleconn.New would refuse it too, naming Options.Timeout.
		return cfg, fmt.Errorf("-timeout %v: must be at least %v", cfg.timeout, idleconn.MinResolution)
	case cfg.maxLife <= chattyLifetime(cfg.timeout):
		return cfg, fmt.Errorf("-max-life %v: must be more than %v, as a chatty connection stays open up to 2 × -timeout plus a -timeout/4 send period",
			cfg.maxLife, chattyLifetime(cfg.timeout))
	case cfg.duration <= 0:
		return cfg, fmt.Errorf("-duration %v: must be positive", cfg.duration)
	case cfg.loops < 1:
		return cfg, fmt.Errorf("-loops %d: must be at least 1", cfg.loops)
	}
	for k, n := range cfg.clients {
		if n < 0 {
			return cfg, fmt.Errorf("-%s %d: must not be negative", kind(k), n)
		}
	}
	return cfg, nil
}

// run serves, runs the clients for cfg.duration while printing progress to
// out, and prints the final table.
func run(ctx context.Context, cfg config, out io.Writer) (*results, error) {
	// Each client holds one connection at a time. Measure before the run,
	// on a quiet heap.
	clients := cfg.clients[chatty] + cfg.clients[silent] + cfg.clients[trickle]
	mem, err := reaperMemory(cfg, clients)
	if err != nil {
		return nil, err
	}
	srv, err := startServer(cfg)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "server on %s: timeout %v, resolution %v, max lifetime %v, %v wheel, %d event loops\n",
		srv.addr, cfg.timeout, srv.h.Resolution(), cfg.maxLife, cfg.wheel, cfg.loops)
	fmt.Fprintf(out, "clients: %d chatty, %d silent, %d trickling, for %v\n",
		cfg.clients[chatty], cfg.clients[silent], cfg.clients[trickle], cfg.duration)

	// A cancel, unlike a deadline, is seen by ctx.Err before it interrupts
	// a dial: the clients tell the end of the run from a failure.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	time.AfterFunc(cfg.duration, cancel)
	fleet := startClients(runCtx, cfg, srv.addr)
	start := time.Now()
	peak := 0
	tk := time.NewTicker(time.Second)
	for done := false; !done; {
		select {
		case <-runCtx.Done():
			done = true
		case <-tk.C:
		}
		s := srv.h.Stats()
		peak = max(peak, s.Tracked)
		fmt.Fprintf(out, "%5.1fs  open %5d  reaped idle %6d  lifetime %5d  wrongly closed %d\n",
			time.Since(start).Seconds(), s.Tracked, s.ReapedIdle, s.ReapedLifetime, srv.res.wronglyClosed())
	}
	tk.Stop()
	fleet.wait()
	if err := srv.stop(); err != nil {
		return nil, err
	}
	if fleet.err != nil {
		return nil, fleet.err
	}
	srv.res.conns = fleet.conns()
	srv.res.print(out, cfg, srv.h.Resolution(), peak, clients, mem)
	return srv.res, nil
}
