// Command httpserver is a small HTTP/1.1 keep-alive server on gnet whose
// limits are package idleconn's: a header and a body deadline that stop
// slowloris and slow-body clients (408, then close), an idle timeout
// between requests, a write-stall timeout and a minimum drain rate for
// clients that stop reading or read too slowly, bounds on pending output
// and unread input, a maximum lifetime, a connection limit and a memory
// budget for all clients together (503 for a connection refused, then
// close; Connection: close on every answer while the budget is under
// pressure). It answers pipelined requests only while the client reads
// (idleconn's Writable), closes after an answer only once the answer has
// drained (CloseAfterFlush), and stops gracefully (Shutdown). It frames
// requests as Go's net/http server does, parsing heads with
// net/http.ReadRequest and decoding chunked bodies itself, as their bytes
// arrive. Its defaults are bounded: no client can make it hold more than
// about -max-output plus -max-input, nor more connections than
// -max-conns, nor all clients together buffer much more than -budget.
//
//	go build -o /tmp/httpserver ./examples/httpserver
//	/tmp/httpserver -addr 127.0.0.1:8080 &
//	curl -s http://127.0.0.1:8080/ http://127.0.0.1:8080/delay?ms=200
//	kill $!
//
// GET and HEAD of / answer "hello"; /delay?ms=N answers after N ms (at most
// 10 s) without blocking its event loop, through a connection timer;
// /big?kb=N answers N KiB (at most 64 MiB). Request bodies are read and
// discarded (at most 1 MiB), pipelined requests are answered in order, a
// share per event so that one client cannot hold its loop, and
// "Connection: close" is honoured. A periodic timer on each event loop
// refreshes the Date header once a second. README.md says how each
// request is framed and how gnet's events shape the server.
//
// It prints "listening on ADDR", then serves until SIGINT or SIGTERM, when
// it stops gracefully: it refuses new connections, answers the requests
// in flight, each with its connection's close, for at most -drain, and
// prints a status line and "stopped". The status line, as idleserver's,
// says how many connections are open, how many idleconn closed for each
// reason, and how many it refused: what no client can see from outside.
// -stats prints one at that interval too. It takes flags only and exits 2 on a bad command line,
// 1 on any other failure. -timeouts=false turns the time limits off (the
// idle timeout becomes a day; the lingering close stays), for
// load.sh to measure what they cost; -nethttp serves the same routes with
// Go's net/http instead, with its timeouts set from the same flags, for
// bench/cmd/httpload to measure beside it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"runtime"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/packwheel/packwheel/internal/cli"
	"github.com/packwheel/packwheel/internal/engine"
	"github.com/panjf2000/gnet/v2"
)

func main() { cli.Main("httpserver", run) }

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("httpserver", flag.ContinueOnError)
	addr := cli.AddrFlag(fs, "addr", "127.0.0.1:8080", "TCP `address` to listen on")
	loops := fs.Int("loops", runtime.NumCPU(), "event loops")
	var cfg config
	fs.DurationVar(&cfg.headerTimeout, "header-timeout", defaults.headerTimeout, "time to receive a whole request head, from its first byte; then 408 and close")
	fs.DurationVar(&cfg.bodyTimeout, "body-timeout", defaults.bodyTimeout, "time to receive a whole request body, from the end of its head; then 408 and close")
	fs.DurationVar(&cfg.idleTimeout, "idle", defaults.idleTimeout, "close a keep-alive connection idle this long between requests")
	fs.DurationVar(&cfg.writeStall, "write-stall", defaults.writeStall, "close a connection whose pending output has not drained for this long (0: no limit)")
	fs.IntVar(&cfg.minDrainRate, "min-drain-rate", defaults.minDrainRate, "close a connection whose pending output drains fewer bytes a second than this, over 10s (0: no limit)")
	fs.DurationVar(&cfg.maxLife, "max-life", defaults.maxLife, "close connections open this long even if busy (0: no limit)")
	fs.IntVar(&cfg.maxOutput, "max-output", defaults.maxOutput, "close a connection with more output than this pending, in bytes")
	fs.IntVar(&cfg.maxInput, "max-input", defaults.maxInput, "close a connection with more input than this unread, in bytes")
	fs.IntVar(&cfg.maxConns, "max-conns", defaults.maxConns, "refuse connections beyond this many open, with 503; keep it under ulimit -n (0: derived from it)")
	cli.UnsentFlag(fs, &cfg.maxUnsent, idleconn.DefaultMaxUnsent)
	fs.Int64Var(&cfg.budget, "budget", defaults.budget, "bytes buffered for all clients together, unread input and pending output: past half of it answers close their connection and the largest holders are closed (0: derived from the memory the process may use, -1: none)")
	fs.DurationVar(&cfg.drain, "drain", defaults.drain, "on SIGINT or SIGTERM, how long requests in flight may take")
	fs.BoolVar(&cfg.timeouts, "timeouts", defaults.timeouts, "false turns the header, body, idle, write-stall, drain-rate and lifetime limits off (the idle timeout becomes 24h; the lingering close stays)")
	every := cli.StatsFlag(fs, 0)
	nethttp := fs.Bool("nethttp", false, "serve the same routes with Go's net/http, its ReadHeaderTimeout, IdleTimeout and WriteTimeout set from these flags (-max-life, -max-conns, -max-unsent, -budget and -stats must be left unset)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case cfg.headerTimeout < idleconn.MinResolution:
		return cli.Usagef("-header-timeout %v: must be at least %v", cfg.headerTimeout, idleconn.MinResolution)
	case cfg.idleTimeout < idleconn.MinResolution:
		return cli.Usagef("-idle %v: must be at least %v", cfg.idleTimeout, idleconn.MinResolution)
	case cfg.bodyTimeout < idleconn.MinResolution:
		return cli.Usagef("-body-timeout %v: must be at least %v", cfg.bodyTimeout, idleconn.MinResolution)
	case cfg.writeStall < 0:
		return cli.Usagef("-write-stall %v: must not be negative (0: no limit)", cfg.writeStall)
	case cfg.minDrainRate < 0:
		return cli.Usagef("-min-drain-rate %d: must not be negative (0: no limit)", cfg.minDrainRate)
	case cfg.maxLife < 0:
		return cli.Usagef("-max-life %v: must not be negative (0: no limit)", cfg.maxLife)
	case cfg.maxOutput < piece:
		return cli.Usagef("-max-output %d: must be at least %d, a piece of an answer", cfg.maxOutput, piece)
	case cfg.maxInput < maxHead:
		return cli.Usagef("-max-input %d: must be at least %d, the longest head", cfg.maxInput, maxHead)
	case cfg.maxConns < 0:
		return cli.Usagef("-max-conns %d: must not be negative (0: derived from ulimit -n)", cfg.maxConns)
	case cfg.budget < -1:
		return cli.Usagef("-budget %d: want bytes, 0 for the default or -1 for none", cfg.budget)
	case cfg.drain < 0:
		return cli.Usagef("-drain %v: must not be negative", cfg.drain)
	}
	if *nethttp {
		if cfg.maxLife != 0 || cfg.maxConns != 0 || cfg.maxUnsent != defaults.maxUnsent || cfg.budget != 0 || *every != 0 {
			return cli.Usagef("-nethttp: net/http has no -max-life, -max-conns, -max-unsent, -budget or -stats")
		}
		return runNetHTTP(ctx, *addr, cfg, out)
	}
	if err := cli.CheckLoops(*loops); err != nil {
		return err
	}
	srv, err := newServer(cfg)
	if err != nil {
		// Every option comes from a flag: idleconn's refusal (a -budget
		// under one connection's floor, a -max-conns above its
		// DefaultMaxConns) is a bad command line.
		return cli.Usagef("%v", err)
	}
	logger := &engine.ErrorsOnly{}
	done := make(chan error, 1)
	at, err := engine.Bindable(*addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	go func() {
		done <- gnet.Run(srv.h, "tcp://"+at, append(engine.Options(*loops), gnet.WithLogger(logger))...)
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
	return engine.Serving{Engine: eng, Done: done, Handler: srv.h, Logger: logger,
		Reasons: reasons, Every: *every, Drain: cfg.drain}.Wait(ctx, out)
}

// reasons are the Reasons for which idleconn closes this server's
// connections, in its status line: every one but Lifetime's is in use by
// default.
var reasons = []idleconn.Reason{idleconn.Idle, idleconn.Deadline, idleconn.WriteStall, idleconn.SlowDrain,
	idleconn.Lifetime, idleconn.OutputFull, idleconn.InputFull, idleconn.Linger, idleconn.Shed, idleconn.Shutdown,
	idleconn.OverBudget}

// keepsAlive reports whether an answer may leave its connection open:
// not once Shutdown has begun, nor while idleconn's memory budget is under
// pressure, when keep-alive is off so that clients waiting between
// requests give their memory back, as Envoy's overload manager
// (disable_http_keepalive) and nginx under load do (TestPressureCloses).
func (s *server) keepsAlive() bool { return !s.h.ShuttingDown() && !s.h.UnderPressure() }

// runNetHTTP serves with newNetHTTP until ctx is done, then shuts down.
func runNetHTTP(ctx context.Context, addr string, cfg config, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := newNetHTTP(cfg)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(out, "listening on %s\n", ln.Addr())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), cfg.drain)
	defer cancel()
	if err := srv.Shutdown(stopCtx); err != nil && err != context.DeadlineExceeded {
		return err
	}
	fmt.Fprintln(out, "stopped")
	return nil
}

// drainWindow is the span over which -min-drain-rate is counted.
const drainWindow = 10 * time.Second

// newServer makes the application and the idleconn Handler that wraps it.
// The bounds on memory and connections hold whatever -timeouts says: they
// are what keeps one client from growing the server without end.
func newServer(cfg config) (*server, error) {
	srv := &server{cfg: cfg, booted: make(chan gnet.Engine, 1)}
	opts := idleconn.Options{Timeout: cfg.idleTimeout, OnReap: srv.onReap, OnRefuse: onRefuse, OnWritable: srv.resume,
		Output:   idleconn.OutputLimit{Max: cfg.maxOutput, High: outputHigh, Low: outputLow},
		MaxInput: cfg.maxInput, MaxConns: cfg.maxConns, MaxUnsent: cfg.maxUnsent, Budget: cfg.budget}
	if cfg.timeouts {
		opts.WriteStallTimeout, opts.MaxLifetime = cfg.writeStall, cfg.maxLife
		// Every limit may close up to Resolution late, and its default,
		// Timeout/8, suits the idle timeout, not a header deadline of a
		// few seconds: an eighth of the shortest limit, as far as
		// idleconn allows.
		shortest := min(cfg.idleTimeout, cfg.headerTimeout, cfg.bodyTimeout)
		if cfg.writeStall > 0 {
			shortest = min(shortest, cfg.writeStall)
		}
		opts.Resolution = min(max(shortest/8, idleconn.MinResolution, cfg.idleTimeout/1024), cfg.idleTimeout)
		if cfg.minDrainRate > 0 {
			opts.MinDrainRate, opts.DrainWindow = cfg.minDrainRate, max(drainWindow, opts.Resolution)
		}
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
