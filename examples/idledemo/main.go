//go:build unix

// Command idledemo shows package idleconn doing its job, in one command
// with no set-up:
//
//	go run ./examples/idledemo
//
// It starts a gnet echo server wrapped by idleconn in-process, and a few
// thousand loopback clients of three kinds: chatty ones, which talk every
// Timeout/4 and hang up after 2 × Timeout, shorter than MaxLifetime;
// silent ones, which connect and say nothing; and trickling ones, which
// send one byte every Timeout/2 and so are only ever closed by
// MaxLifetime. Clients reconnect when their connection ends, so each makes
// several connections in a run. It prints progress every second and ends
// with a table, counted by the server, a row per kind of client, followed
// by what each row counts: connections accepted; reaped idle,
// reaped at MaxLifetime or closed by the client; how many were reaped late
// and the worst lateness; connections closed early (which must be 0); and
// connections of active clients reaped because no data reached the server
// for a Timeout, as the clients or the loops fell behind; then the
// reaper's memory. Lateness and clients that fall behind are
// reported, not failed on: they depend on how busy the machine keeps the
// event loops and the clients.
//
// It runs on Unix systems (Linux, macOS, the BSDs): it binds its clients'
// sockets itself and reads the descriptor limit. It takes flags only, and
// exits with status 2 for a bad command line, which includes more clients
// than ulimit -n leaves descriptors for, and 1 if the run fails: a
// connection closed early, a client that cannot connect, or the server
// stopping (gnet stops it when an accept finds no descriptor left).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/packwheel/packwheel/internal/cli"
)

// config is the demo's set-up, from its flags.
type config struct {
	clients  [kinds]int
	timeout  time.Duration
	maxLife  time.Duration
	duration time.Duration
	loops    int
	wheel    idleconn.WheelKind
	// firstSource is the first of the loopback addresses the clients
	// dial from (see sources).
	firstSource netip.Addr
}

func main() { cli.Main("idledemo", run) }

// run parses args, runs the demo and prints it to out.
func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	res, err := demo(ctx, cfg, out)
	if err != nil {
		return err
	}
	if n := res.closedEarly(); n > 0 {
		return fmt.Errorf("%d connections were closed before their Timeout or MaxLifetime was up", n)
	}
	return nil
}

// parseFlags returns the configuration args ask for, or a cli.UsageError
// (flag.ErrHelp for -h).
func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("idledemo", flag.ContinueOnError)
	cfg := config{firstSource: netip.AddrFrom4([4]byte{127, 0, 0, 10})}
	fs.IntVar(&cfg.clients[chatty], "chatty", 1000, "clients that talk every timeout/4")
	fs.IntVar(&cfg.clients[silent], "silent", 1500, "clients that connect and say nothing")
	fs.IntVar(&cfg.clients[trickle], "trickle", 500, "clients that send a byte every timeout/2")
	fs.DurationVar(&cfg.timeout, "timeout", time.Second, "idle timeout")
	fs.DurationVar(&cfg.maxLife, "max-life", 3*time.Second, "maximum connection lifetime: more than 2.25 × timeout")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long the clients run")
	fs.IntVar(&cfg.loops, "loops", min(runtime.NumCPU(), cli.MaxLoops), "server event loops")
	wheel := fs.String("wheel", "hashed", "timer wheel: hashed or hierarchical")
	if err := cli.Parse(fs, args); err != nil {
		return cfg, err
	}
	switch *wheel {
	case "hashed":
	case "hierarchical":
		cfg.wheel = idleconn.Hierarchical
	default:
		return cfg, cli.Usagef("-wheel %q: want hashed or hierarchical", *wheel)
	}
	switch {
	case cfg.timeout < idleconn.MinResolution:
		// idleconn.New would refuse it too, naming Options.Timeout.
		return cfg, cli.Usagef("-timeout %v: must be at least %v", cfg.timeout, idleconn.MinResolution)
	case cfg.maxLife <= chattyLifetime(cfg.timeout):
		return cfg, cli.Usagef("-max-life %v: must be more than %v, as a chatty connection stays open up to 2 × -timeout plus a -timeout/4 send period",
			cfg.maxLife, chattyLifetime(cfg.timeout))
	case cfg.duration <= 0:
		return cfg, cli.Usagef("-duration %v: must be positive", cfg.duration)
	}
	if err := cli.CheckLoops(cfg.loops); err != nil {
		return cfg, err
	}
	for k, n := range cfg.clients {
		if n < 0 {
			return cfg, cli.Usagef("-%s %d: must not be negative", kind(k), n)
		}
	}
	return cfg, nil
}

// stopGrace is how long a run whose client failed waits for the server to
// say it stopped by itself, which the engine's shutdown takes a few ms to.
const stopGrace = 500 * time.Millisecond

// progressTimes returns when, from the start of a run of duration d, the
// demo prints its progress: at each whole second before the end, and at
// the end.
func progressTimes(d time.Duration) []time.Duration {
	var at []time.Duration
	for t := time.Second; t < d; t += time.Second {
		at = append(at, t)
	}
	return append(at, d)
}

// demo serves, runs the clients for cfg.duration while printing progress
// to out, and prints the final table. It stops early, with an error, if a
// client fails or the server stops.
func demo(ctx context.Context, cfg config, out io.Writer) (*results, error) {
	// Each client holds one connection at a time.
	clients := cfg.clients[chatty] + cfg.clients[silent] + cfg.clients[trickle]
	limit, err := checkDescriptors(clients, cfg.loops)
	if err != nil {
		return nil, err
	}
	// Measure before the run, on a quiet heap.
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
	fleet := startClients(runCtx, cfg, srv.addr, srv.kinds)
	start := time.Now()
	peak := 0
	// One timer paces the progress lines, so that each is printed once,
	// the last at the run's end. A ticker beside a separate timer for the
	// end printed the last line twice whenever both were ready when the
	// loop looked, as on a busy machine (TestProgressOncePerTime).
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for _, at := range progressTimes(cfg.duration) {
		timer.Reset(time.Until(start.Add(at)))
		interrupted := false
		select {
		case <-runCtx.Done(): // ctx's: SIGINT or SIGTERM
			interrupted = true
		case <-fleet.failed:
			cancel()
			fleet.wait()
			// A client's failure can be the echo of the server stopping by
			// itself: gnet shuts the engine down when an accept fails, and
			// the clients' connections are reset as it does. Then the
			// server's stop is the news (TestServerStops).
			select {
			case err := <-srv.done:
				return nil, srv.stopped(err, limit)
			case <-time.After(stopGrace):
			}
			_ = srv.stop() // the client's failure is the news
			return nil, fleet.failure(limit)
		case err := <-srv.done:
			cancel()
			fleet.wait()
			return nil, srv.stopped(err, limit)
		case <-timer.C:
		}
		s := srv.h.Stats()
		peak = max(peak, s.Tracked)
		fmt.Fprintf(out, "%5.1fs  open %5d  reaped idle %6d  lifetime %5d  closed early %d\n",
			time.Since(start).Seconds(), s.Tracked, s.Reaped(idleconn.Idle), s.Reaped(idleconn.Lifetime), srv.res.closedEarly())
		if interrupted {
			break
		}
	}
	cancel()
	fleet.wait()
	if err := srv.stop(); err != nil {
		return nil, err
	}
	if fleet.err != nil { // failed as the run ended
		return nil, fleet.failure(limit)
	}
	if fleet.sources.fellBack.Load() {
		fmt.Fprintf(out, "note: %v and the addresses after it are not local here (only 127.0.0.1 is, as on macOS): "+
			"the clients dialed from 127.0.0.1\n", cfg.firstSource)
	}
	srv.res.print(out, cfg, srv.h.Resolution(), peak, clients, mem)
	return srv.res, nil
}
