// Command idleserver is a gnet echo server that closes idle connections,
// clients that stop reading and connections beyond a count with package
// idleconn.
//
//	go run ./examples/idleserver -timeout 10s -write-stall 5s -max-conns 10000
//
// It prints "listening on ADDR" once it accepts connections, then a status
// line every few seconds with the open, reaped and refused counts, and
// exits cleanly on SIGINT or SIGTERM. It exits with status 2 on a usage
// error (a bad flag or value, or any argument that is not a flag), and 1 on
// any other error, including the engine stopping on its own: gnet stops
// its whole engine when an accept fails (for want of descriptors, say) and
// its Run may then return nil. Set -max-conns below the descriptor limit
// (ulimit -n) to keep that from happening.
package main

import (
	"context"
	"errors"
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
	addr := fs.String("addr", "127.0.0.1:9000", "TCP address to listen on")
	timeout := fs.Duration("timeout", 30*time.Second, "close connections idle this long")
	loops := fs.Int("loops", runtime.NumCPU(), "event loops")
	wheel := fs.String("wheel", "hashed", "timer wheel: hashed or hierarchical")
	maxLife := fs.Duration("max-life", 0, "close connections open this long even if busy (0: no limit)")
	stall := fs.Duration("write-stall", 0, "close connections whose pending output has not drained for this long (0: no limit)")
	maxConns := fs.Int("max-conns", 0, "refuse connections beyond this many open; keep it under ulimit -n (0: no limit)")
	every := fs.Duration("stats", 5*time.Second, "interval between status lines")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	opts := idleconn.Options{Timeout: *timeout, MaxLifetime: *maxLife, WriteStallTimeout: *stall, MaxConns: *maxConns}
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
		return cli.Usagef("-max-conns %d: must not be negative (0: no limit)", *maxConns)
	case *every <= 0:
		return cli.Usagef("-stats %v: must be positive", *every)
	}
	if err := cli.CheckLoops(*loops); err != nil {
		return err
	}

	srv := &echo{out: out, booted: make(chan gnet.Engine, 1)}
	h, err := idleconn.New(srv, opts)
	if err != nil {
		return err
	}
	logger := &engine.ErrorsOnly{}
	logging.SetDefaultLoggerAndFlusher(logger, nil)
	done := make(chan error, 1)
	go func() {
		// ReuseAddr: the server closes idle connections first, leaving
		// them in TIME_WAIT, which would keep a restart from binding the
		// port for a minute.
		done <- gnet.Run(h, "tcp://"+*addr, gnet.WithNumEventLoop(*loops), gnet.WithReuseAddr(true))
	}()

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
	tk := time.NewTicker(*every)
	defer tk.Stop()
	status := func() {
		s := h.Stats()
		fmt.Fprintf(out, "open %d  reaped %d (idle %d, lifetime %d, write stall %d)  refused %d\n",
			s.Tracked, s.ReapedIdle+s.ReapedLifetime+s.ReapedWriteStall,
			s.ReapedIdle, s.ReapedLifetime, s.ReapedWriteStall, s.Refused)
	}
	for {
		select {
		case err := <-done:
			// Nobody asked the engine to stop.
			if err == nil {
				err = errors.New("the engine stopped on its own")
			}
			if cause := logger.Cause(); cause != "" {
				err = fmt.Errorf("%w after gnet logged: %s", err, cause)
			}
			return err
		case <-tk.C:
			status()
		case <-ctx.Done():
			stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := eng.Stop(stopCtx); err != nil {
				return err
			}
			if err := <-done; err != nil {
				return err
			}
			status()
			fmt.Fprintln(out, "stopped")
			return nil
		}
	}
}

// echo is the application's handler: it knows nothing of idle timeouts.
type echo struct {
	gnet.BuiltinEventEngine
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
	buf, _ := c.Next(-1)
	_, _ = c.Write(buf)
	return gnet.None
}
