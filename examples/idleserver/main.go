// Command idleserver is a gnet echo server whose connections package
// idleconn bounds: in time (idle, write stall, lifetime), in memory
// (pending output, unconsumed input) and in number (a connection limit
// under the descriptor limit).
//
//	go run ./examples/idleserver -timeout 10s -write-stall 5s
//
// Its defaults are bounded, so that no client can grow it without end:
// it echoes only while a connection's pending output is under its
// high-water mark (64 KiB) and leaves the rest of the input unread until
// the peer has read enough, so a client that sends and never reads is
// closed once its unread input passes -max-input (256 KiB), and one that
// reads too slowly once its output stalls for -write-stall (10s) or
// passes -max-output (1 MiB). A connection thus holds at most about
// -max-input plus -max-output of the server's memory, and -max-unsent
// (256 KiB) of the kernel's, -max-conns (by
// default derived from ulimit -n) bounds how many there are, and -budget
// (by default derived from the memory the process may use) what they
// hold together. With -overload, idle timeouts shrink as connections
// near -max-conns, to -overload-floor with all of them open.
//
// It prints "listening on ADDR" once it accepts connections, then a status
// line with the open, reaped and refused counts every -stats (5s; 0 for
// none but the last). On SIGINT or SIGTERM it shuts down gracefully
// (idleconn's Shutdown): it refuses new connections, closes the others
// once their output has drained, for at most -drain, prints a last status
// line and "stopped",
// and exits 0. It exits with status 2 on a usage error (a bad flag or
// value, or any argument that is not a flag), and 1 on any other error,
// including the engine stopping on its own: gnet stops its whole engine
// when an accept fails (for want of descriptors, say) and its Run may
// then return nil, which -max-conns, well below ulimit -n, and gnet's
// ReusePort keep from happening.
package main

import (
	"cmp"
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

func main() { cli.Main("idleserver", run) }

// run parses args, serves until ctx is done, and reports to out. With -h
// it prints the usage and returns flag.ErrHelp, which cli.Status maps to
// success; a bad command line is a cli.UsageError.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("idleserver", flag.ContinueOnError)
	addr := cli.AddrFlag(fs, "addr", "127.0.0.1:9000", "TCP `address` to listen on")
	timeout := fs.Duration("timeout", 30*time.Second, "close connections idle this long")
	loops := fs.Int("loops", runtime.NumCPU(), "event loops")
	wheel := fs.String("wheel", "hashed", "timer wheel: hashed or hierarchical")
	maxLife := fs.Duration("max-life", 0, "close connections open this long even if busy (0: no limit)")
	stall := fs.Duration("write-stall", 10*time.Second, "close connections whose pending output has not drained for this long (0: no limit)")
	maxOutput := fs.Int("max-output", 1<<20, "close connections with more output than this pending, in bytes")
	maxInput := fs.Int("max-input", 256<<10, "close connections with more input than this unread, in bytes")
	var maxUnsent int
	cli.UnsentFlag(fs, &maxUnsent, idleconn.DefaultMaxUnsent)
	maxConns := fs.Int("max-conns", 0, "refuse connections beyond this many open; keep it under ulimit -n (0: derived from it)")
	budget := fs.Int64("budget", 0, "bytes buffered for all clients together, unread input and pending output: past half of it the largest holders are closed (0: derived from the memory the process may use, -1: none)")
	drain := fs.Duration("drain", 10*time.Second, "on SIGINT or SIGTERM, how long connections may take to finish")
	overload := fs.Float64("overload", 0, "shorten idle timeouts once this fraction of -max-conns is open, down to -overload-floor with all of them open (0: off)")
	floor := fs.Duration("overload-floor", 0, "the idle timeout with -max-conns open, under -overload (0: a quarter of -timeout)")
	every := cli.StatsFlag(fs, 5*time.Second)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	opts := idleconn.Options{Timeout: *timeout, MaxLifetime: *maxLife, WriteStallTimeout: *stall, MaxConns: *maxConns, Budget: *budget,
		Output: idleconn.OutputLimit{Max: *maxOutput, High: min(64<<10, *maxOutput), Low: min(32<<10, *maxOutput)}, MaxInput: *maxInput, MaxUnsent: maxUnsent}
	if *overload != 0 {
		opts.Overload = idleconn.Overload{Start: *overload, Floor: cmp.Or(*floor, *timeout/4)}
	}
	switch *wheel {
	case "hashed":
	case "hierarchical":
		opts.Wheel = idleconn.Hierarchical
	default:
		return cli.Usagef("-wheel %q: want hashed or hierarchical", *wheel)
	}
	// idleconn.New checks these too, but its errors name Options fields,
	// not flags.
	switch {
	case *timeout < idleconn.MinResolution:
		return cli.Usagef("-timeout %v: must be at least %v", *timeout, idleconn.MinResolution)
	case *maxLife < 0:
		return cli.Usagef("-max-life %v: must not be negative (0: no limit)", *maxLife)
	case *stall < 0:
		return cli.Usagef("-write-stall %v: must not be negative (0: no limit)", *stall)
	case *maxConns < 0:
		return cli.Usagef("-max-conns %d: must not be negative (0: derived from ulimit -n)", *maxConns)
	case *maxOutput < 1:
		return cli.Usagef("-max-output %d: must be positive", *maxOutput)
	case *maxInput < 1:
		return cli.Usagef("-max-input %d: must be positive", *maxInput)
	case *budget < -1:
		return cli.Usagef("-budget %d: want bytes, 0 for the default or -1 for none", *budget)
	case *drain < 0:
		return cli.Usagef("-drain %v: must not be negative", *drain)
	case !(*overload >= 0 && *overload < 1):
		return cli.Usagef("-overload %v: want a fraction of -max-conns above 0 and below 1 (0: off)", *overload)
	case *overload != 0 && *floor != 0 && (*floor < max(*timeout/8, idleconn.MinResolution) || *floor > *timeout):
		return cli.Usagef("-overload-floor %v: must lie between %v, the timeout's resolution, and -timeout %v", *floor, max(*timeout/8, idleconn.MinResolution), *timeout)
	}
	if err := cli.CheckLoops(*loops); err != nil {
		return err
	}

	srv := &echo{out: out, booted: make(chan gnet.Engine, 1)}
	opts.OnWritable = srv.flush
	h, err := idleconn.New(srv, opts)
	if err != nil {
		// Every option comes from a flag: idleconn's refusal (a -max-conns
		// above its DefaultMaxConns, a -budget under one connection's
		// floor) is a bad command line, as in httpserver.
		return cli.Usagef("%v", err)
	}
	srv.h = h
	logger := &engine.ErrorsOnly{}
	logging.SetDefaultLoggerAndFlusher(logger, nil)
	done := make(chan error, 1)
	at, err := engine.Bindable(*addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	go func() { done <- gnet.Run(h, "tcp://"+at, engine.Options(*loops)...) }()

	var eng gnet.Engine
	select {
	case err := <-done:
		if err == nil {
			err = srv.bootErr // gnet.Run returns nil when OnBoot shuts down
		}
		// gnet's errors, such as "bind: address already in use", do not
		// say which address.
		return fmt.Errorf("listen on %s: %w", *addr, err)
	case eng = <-srv.booted:
	}
	return engine.Serving{Engine: eng, Done: done, Handler: h, Logger: logger,
		Reasons: reasons, Every: *every, Drain: *drain}.Wait(ctx, out)
}

// reasons are the Reasons that apply to an echo server, in its status
// line.
var reasons = []idleconn.Reason{idleconn.Idle, idleconn.Lifetime, idleconn.WriteStall,
	idleconn.OutputFull, idleconn.InputFull, idleconn.Shed, idleconn.Shutdown, idleconn.OverBudget}

// echo is the application's handler: it echoes what it may and leaves the
// bounds to idleconn.
type echo struct {
	gnet.BuiltinEventEngine
	h       *idleconn.Handler
	out     io.Writer
	booted  chan gnet.Engine
	bootErr error // why OnBoot shut the engine down
}

// OnBoot announces the address, which -addr may have left to the kernel
// (port 0): the listener exists, so connections are accepted from now on.
func (e *echo) OnBoot(eng gnet.Engine) gnet.Action {
	addr, err := engine.Addr(eng)
	if err != nil {
		e.bootErr = err
		return gnet.Shutdown
	}
	fmt.Fprintf(e.out, "listening on %s\n", addr)
	e.booted <- eng
	return gnet.None
}

func (e *echo) OnTraffic(c gnet.Conn) gnet.Action {
	e.flush(c)
	return gnet.None
}

// flush echoes the input c holds while c may take more output; the rest
// waits in gnet's input buffer, bounded by -max-input, until OnWritable
// says the peer has read enough.
func (e *echo) flush(c gnet.Conn) {
	if e.h.Writable(c) {
		buf, _ := c.Next(-1)
		_, _ = c.Write(buf)
	}
}
