//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/packwheel/packwheel/internal/engine"
	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"
)

// server is the demo's in-process gnet server.
type server struct {
	h     *idleconn.Handler
	addr  string
	eng   gnet.Engine
	done  chan error // gnet.Run's result
	res   *results
	kinds *kindRegistry
}

// echo is the application's handler, which knows nothing of idle
// timeouts.
type echo struct {
	gnet.BuiltinEventEngine
	booted chan gnet.Engine
}

func (e *echo) OnBoot(eng gnet.Engine) gnet.Action {
	e.booted <- eng
	return gnet.None
}

func (e *echo) OnTraffic(c gnet.Conn) gnet.Action {
	buf, _ := c.Next(-1)
	_, _ = c.Write(buf)
	return gnet.None
}

// observer wraps the reaper to keep the demo's own account of each
// connection: its kind, and when it opened and last received data, stamped
// before the reaper sees the event, so that a close that comes before
// Timeout of silence by these stamps came early by the reaper's too.
type observer struct {
	*idleconn.Handler
	s *server
}

// connInfo is the demo's account of a connection, in its Context.
type connInfo struct {
	kind             kind
	known            bool // kind found: the connection is one of the clients'
	reaped           bool
	opened, lastData time.Time
}

func (o *observer) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	info := &connInfo{opened: time.Now()}
	info.kind, info.known = o.s.kinds.of(c.RemoteAddr())
	c.SetContext(info)
	if info.known {
		o.s.res.opened(info.kind)
	}
	return o.Handler.OnOpen(c)
}

func (o *observer) OnTraffic(c gnet.Conn) gnet.Action {
	c.Context().(*connInfo).lastData = time.Now()
	return o.Handler.OnTraffic(c)
}

func (o *observer) OnClose(c gnet.Conn, err error) gnet.Action {
	if info := c.Context().(*connInfo); info.known && !info.reaped {
		o.s.res.closedByClient(info.kind)
	}
	return o.Handler.OnClose(c, err)
}

// startServer runs the server on a port of 127.0.0.1 the kernel picks.
func startServer(cfg config) (*server, error) {
	logging.SetDefaultLoggerAndFlusher(quiet{}, nil)
	app := &echo{booted: make(chan gnet.Engine, 1)}
	s := &server{done: make(chan error, 1), res: &results{}, kinds: newKindRegistry()}
	h, err := idleconn.New(app, idleconn.Options{
		Timeout:     cfg.timeout,
		MaxLifetime: cfg.maxLife,
		Wheel:       cfg.wheel,
		OnReap: func(c gnet.Conn, why idleconn.Reason) {
			info := c.Context().(*connInfo)
			info.reaped = true
			if info.known {
				s.res.reaped(info, why, cfg, s.h.Resolution())
			}
		},
	})
	if err != nil {
		return nil, err
	}
	s.h = h
	go func() {
		s.done <- gnet.Run(&observer{h, s}, "tcp://127.0.0.1:0", gnet.WithNumEventLoop(cfg.loops))
	}()
	select {
	case err := <-s.done:
		return nil, fmt.Errorf("start the server: %w", err)
	case s.eng = <-app.booted:
	}
	addr, err := engine.Addr(s.eng)
	if err != nil {
		return nil, err
	}
	s.addr = addr.String()
	return s, nil
}

// errStopped says that the engine stopped by itself during the run.
var errStopped = errors.New("the server stopped during the run")

// stopped returns why the engine stopped by itself: gnet stops the whole
// engine when an accept fails, as it does at the descriptor limit, and
// its Run may then return nil.
func (s *server) stopped(err error, limit descriptorLimit) error {
	if err != nil {
		err = fmt.Errorf("%w: %w", errStopped, err)
	} else {
		err = errStopped
	}
	return fmt.Errorf("%w (gnet stops when accepting a connection fails, as at the descriptor limit: %v)", err, limit)
}

// stop waits, briefly, for the clients' closes to reach the server, then
// stops it.
func (s *server) stop() error {
	for deadline := time.Now().Add(5 * time.Second); s.h.Stats().Tracked > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.eng.Stop(ctx); err != nil {
		return err
	}
	return <-s.done
}

// quiet keeps gnet's start-up banner out of the demo's output.
type quiet struct{}

func (quiet) Debugf(string, ...any)        {}
func (quiet) Infof(string, ...any)         {}
func (quiet) Warnf(string, ...any)         {}
func (quiet) Errorf(f string, args ...any) { log.Printf(f, args...) }
func (quiet) Fatalf(f string, args ...any) { log.Fatalf(f, args...) }
