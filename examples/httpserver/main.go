// Command httpserver is a small HTTP/1.1 keep-alive server on gnet whose
// timeouts are package idleconn's: a header deadline that stops slowloris
// clients (408, then close), an idle timeout between requests, a
// write-stall timeout for clients that stop reading, a maximum lifetime
// and a connection limit. It parses requests with net/http.ReadRequest.
//
//	go run ./examples/httpserver -addr 127.0.0.1:8080
//	curl -s http://127.0.0.1:8080/ http://127.0.0.1:8080/delay?ms=200
//
// GET and HEAD of / answer "hello"; /delay?ms=N answers after N ms (at most
// 10 s) without blocking its event loop, through a loop timer; /big?kb=N
// answers N KiB. Content-Length bodies are read and discarded, pipelined
// requests are answered in order, "Connection: close" is honoured, and a
// request that cannot be parsed gets 400 and a close. A periodic timer on
// each event loop refreshes the Date header once a second.
//
// It prints "listening on ADDR", then serves until SIGINT or SIGTERM. It
// takes flags only and exits 2 on a bad command line, 1 on any other
// failure. -timeouts=false turns every timeout off, for load.sh to
// measure what they cost.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/packwheel/packwheel/internal/cli"
	"github.com/packwheel/packwheel/internal/engine"
	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"
)

func main() { cli.Main("httpserver", run) }

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("httpserver", flag.ContinueOnError)
	addr := cli.AddrFlag(fs, "addr", "127.0.0.1:8080", "TCP `address` to listen on")
	loops := fs.Int("loops", runtime.NumCPU(), "event loops")
	var cfg config
	fs.DurationVar(&cfg.headerTimeout, "header-timeout", 5*time.Second, "time to receive a whole request head, from its first byte; then 408 and close")
	fs.DurationVar(&cfg.idleTimeout, "idle", 60*time.Second, "close a keep-alive connection idle this long between requests")
	fs.DurationVar(&cfg.writeStall, "write-stall", 10*time.Second, "close a connection whose pending output has not drained for this long (0: no limit)")
	fs.DurationVar(&cfg.maxLife, "max-life", 0, "close connections open this long even if busy (0: no limit)")
	fs.IntVar(&cfg.maxConns, "max-conns", 0, "refuse connections beyond this many open; keep it under ulimit -n (0: no limit)")
	fs.BoolVar(&cfg.timeouts, "timeouts", true, "false turns every timeout and limit off")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case cfg.headerTimeout < idleconn.MinResolution:
		return cli.Usagef("-header-timeout %v: must be at least %v", cfg.headerTimeout, idleconn.MinResolution)
	case cfg.idleTimeout < idleconn.MinResolution:
		return cli.Usagef("-idle %v: must be at least %v", cfg.idleTimeout, idleconn.MinResolution)
	case cfg.writeStall < 0:
		return cli.Usagef("-write-stall %v: must not be negative (0: no limit)", cfg.writeStall)
	case cfg.maxLife < 0:
		return cli.Usagef("-max-life %v: must not be negative (0: no limit)", cfg.maxLife)
	case cfg.maxConns < 0:
		return cli.Usagef("-max-conns %d: must not be negative (0: no limit)", cfg.maxConns)
	}
	if err := cli.CheckLoops(*loops); err != nil {
		return err
	}
	srv, err := newServer(cfg)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		done <- gnet.Run(srv.h, "tcp://"+*addr, gnet.WithNumEventLoop(*loops), gnet.WithReuseAddr(true),
			gnet.WithLogLevel(logging.ErrorLevel))
	}()
	var eng gnet.Engine
	select {
	case err := <-done:
		return fmt.Errorf("listen on %s: %v", *addr, err)
	case eng = <-srv.booted:
	}
	bound, err := engine.Addr(eng)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "listening on %s\n", bound)
	select {
	case err := <-done:
		if err == nil {
			err = fmt.Errorf("the engine stopped on its own")
		}
		return err
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := eng.Stop(stopCtx); err != nil {
		return err
	}
	return <-done
}

// newServer makes the application and the idleconn Handler that wraps it.
func newServer(cfg config) (*server, error) {
	srv := &server{cfg: cfg, booted: make(chan gnet.Engine, 1)}
	opts := idleconn.Options{Timeout: cfg.idleTimeout, OnReap: srv.onReap}
	if cfg.timeouts {
		opts.WriteStallTimeout, opts.MaxLifetime, opts.MaxConns = cfg.writeStall, cfg.maxLife, cfg.maxConns
		// Every limit may close up to Resolution late, and its default,
		// Timeout/8, suits the idle timeout, not a header deadline of a
		// few seconds: an eighth of the shortest limit, as far as
		// idleconn allows.
		shortest := min(cfg.idleTimeout, cfg.headerTimeout)
		if cfg.writeStall > 0 {
			shortest = min(shortest, cfg.writeStall)
		}
		opts.Resolution = min(max(shortest/8, idleconn.MinResolution, cfg.idleTimeout/1024), cfg.idleTimeout)
	} else {
		// The loop timers still need the Handler; its idle timeout is
		// made too long to matter.
		opts.Timeout = 24 * time.Hour
	}
	h, err := idleconn.New(srv, opts)
	if err != nil {
		return nil, err
	}
	srv.h = h
	return srv, nil
}
