package idleconn_test

import (
	"bufio"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/panjf2000/gnet/v2"
)

// The Examples in this file are README.md's snippets, whole and runnable;
// TestReadmeSnippets, in the root package, checks that each snippet's
// lines are still here.

// server is the smallest gnet handler: embedding BuiltinEventEngine makes
// any struct one. It would have its OnTraffic and the rest as before; this
// one echoes, and tells the example its engine.
type server struct{ gnet.BuiltinEventEngine } // your handler

// booted passes the engine of serve's server to the example, which stops
// it.
var booted = make(chan gnet.Engine, 1)

func (*server) OnBoot(eng gnet.Engine) gnet.Action {
	booted <- eng
	return gnet.None
}

func (*server) OnTraffic(c gnet.Conn) gnet.Action {
	buf, _ := c.Next(-1)
	_, _ = c.Write(buf)
	return gnet.None
}

// serve is README's first idleconn snippet: it wraps the server's handler
// with idleconn's limits and runs gnet on addr until the engine stops.
func serve(addr string) error {
	h, err := idleconn.New(&server{}, idleconn.Options{
		Timeout:           60 * time.Second, // close after 60 s without data
		WriteStallTimeout: 10 * time.Second, // close a client that stops reading
		MaxLifetime:       time.Hour,        // close even busy connections
		// MaxConns left 0: refuse beyond ulimit -n less a reserve (see below)
		OnReap: func(c gnet.Conn, why idleconn.Reason) { log.Println(c.RemoteAddr(), why) },
	})
	if err != nil {
		return err
	}
	return gnet.Run(h, addr, gnet.WithMulticore(true), gnet.WithReuseAddr(true), gnet.WithReusePort(true))
}

// A server wrapped with idleconn.New serves as before, and gnet.Run
// returns once its engine is stopped.
func Example_serve() {
	done := make(chan error, 1)
	go func() { done <- serve("tcp://127.0.0.1:0") }()
	eng := <-booted
	c, err := net.Dial("tcp", addrOf(eng))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("hello\n"))
	echoed, err := bufio.NewReader(c).ReadString('\n')
	fmt.Printf("echoed %q, err %v\n", echoed, err)
	stop(eng)
	fmt.Println("serve returned:", <-done)
	// Output:
	// echoed "hello\n", err <nil>
	// serve returned: <nil>
}

// dated is a server that answers each line with the Date header its event
// loop keeps, refreshed every second by a loop timer, as an HTTP server
// does rather than format the time on every response.
type dated struct {
	echo
	h     *idleconn.Handler
	loops sync.Map // gnet.EventLoop to *loopState
}

// loopState is what a loop keeps; only the loop's goroutine touches it.
type loopState struct {
	refresh idleconn.Timer
	date    string
}

func (l *loopState) refreshDate() { l.date = time.Now().UTC().Format(http.TimeFormat) }

func (s *dated) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	el := c.EventLoop()                 // OnOpen runs on c's loop, where LoopTimer must be called
	if _, ok := s.loops.Load(el); !ok { // the loop's first connection: arm the loop's timer
		l := new(loopState)
		s.loops.Store(el, l)
		s.h.LoopTimer(el, &l.refresh, 0, time.Second, func(gnet.Conn) { l.refreshDate() })
	}
	return nil, gnet.None
}

func (s *dated) OnTraffic(c gnet.Conn) gnet.Action {
	_, _ = c.Next(-1)
	l, _ := s.loops.Load(c.EventLoop())
	_, _ = c.Write([]byte(l.(*loopState).date + "\n"))
	return gnet.None
}

// A loop timer does a loop's periodic work, tied to no connection. It is
// armed on the loop, here by the loop's first connection in OnOpen; with
// no delay it first fires at the reaper's next tick.
func ExampleHandler_LoopTimer() {
	app := &dated{echo: echo{booted: make(chan gnet.Engine, 1)}}
	h, err := idleconn.New(app, idleconn.Options{Timeout: time.Second})
	if err != nil {
		panic(err)
	}
	app.h = h
	go func() { _ = gnet.Run(h, "tcp://127.0.0.1:0", gnet.WithReuseAddr(true)) }()
	eng := <-app.booted
	defer stop(eng)

	c, err := net.Dial("tcp", addrOf(eng))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	time.Sleep(2 * h.Resolution()) // eight ticks: the timer has fired
	_, _ = c.Write([]byte("date?\n"))
	date, _ := bufio.NewReader(c).ReadString('\n')
	_, err = http.ParseTime(strings.TrimSpace(date))
	fmt.Println("a Date header:", err == nil)
	// Output:
	// a Date header: true
}
