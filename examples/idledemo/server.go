package main

import (
	"context"
	"log"
	"net"
	"os"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"
)

// server is the demo's in-process gnet server.
type server struct {
	h    *idleconn.Handler
	addr string
	eng  gnet.Engine
	done chan error
	res  *results
}

// echo is the application's handler, which knows nothing of idle
// timeouts. It keeps each connection's open and last-data times in its
// Context, for the demo's account of lateness.
type echo struct {
	gnet.BuiltinEventEngine
	booted chan gnet.Engine
}

type connTimes struct{ opened, lastData time.Time }

func (e *echo) OnBoot(eng gnet.Engine) gnet.Action {
	e.booted <- eng
	return gnet.None
}

func (e *echo) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	c.SetContext(&connTimes{opened: time.Now()})
	return nil, gnet.None
}

func (e *echo) OnTraffic(c gnet.Conn) gnet.Action {
	c.Context().(*connTimes).lastData = time.Now()
	buf, _ := c.Next(-1)
	_, _ = c.Write(buf)
	return gnet.None
}

// startServer runs the server on a port of 127.0.0.1 the kernel picks.
func startServer(cfg config) (*server, error) {
	logging.SetDefaultLoggerAndFlusher(quiet{}, nil)
	app := &echo{booted: make(chan gnet.Engine, 1)}
	s := &server{done: make(chan error, 1), res: &results{}}
	h, err := idleconn.New(app, idleconn.Options{
		Timeout:     cfg.timeout,
		MaxLifetime: cfg.maxLife,
		Wheel:       cfg.wheel,
		OnReap: func(c gnet.Conn, why idleconn.Reason) {
			s.res.reaped(c, why, cfg, s.h.Resolution())
		},
	})
	if err != nil {
		return nil, err
	}
	s.h = h
	go func() {
		s.done <- gnet.Run(h, "tcp://127.0.0.1:0", gnet.WithNumEventLoop(cfg.loops), gnet.WithTicker(true))
	}()
	select {
	case err := <-s.done:
		return nil, err
	case s.eng = <-app.booted:
	}
	fd, err := s.eng.Dup()
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, err
	}
	s.addr = ln.Addr().String()
	return s, ln.Close()
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
