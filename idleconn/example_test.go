package idleconn_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/panjf2000/gnet/v2"
)

// echo is an existing gnet server, which knows nothing of idle timeouts.
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

// Wrap the server's handler and run gnet: a client that says nothing for
// the timeout is closed. No gnet.WithTicker is needed.
func Example() {
	app := &echo{booted: make(chan gnet.Engine, 1)}
	reapedAt := make(chan time.Time, 1)
	h, err := idleconn.New(app, idleconn.Options{
		Timeout: 100 * time.Millisecond,
		OnReap: func(_ gnet.Conn, why idleconn.Reason) {
			reapedAt <- time.Now()
			fmt.Println("reaped:", why)
		},
	})
	if err != nil {
		panic(err)
	}
	go func() { _ = gnet.Run(h, "tcp://127.0.0.1:0", gnet.WithReuseAddr(true)) }()
	eng := <-app.booted
	defer stop(eng)

	start := time.Now() // before the open: the bound checked is looser
	c, err := net.Dial("tcp", addrOf(eng))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	_, _ = io.Copy(io.Discard, c) // until the server closes the connection
	fmt.Println("closed within Timeout+Resolution:", (<-reapedAt).Sub(start) < 100*time.Millisecond+h.Resolution())
	// Output:
	// reaped: idle
	// closed within Timeout+Resolution: true
}

// admin is a server whose clients may ask to be exempt from the timeout.
type admin struct {
	echo
	h *idleconn.Handler
}

func (a *admin) OnTraffic(c gnet.Conn) gnet.Action {
	if buf, _ := c.Peek(-1); string(buf) == "admin" {
		fmt.Println("untracked:", a.h.Untrack(c))
	}
	return a.echo.OnTraffic(c)
}

// A handler can exempt a connection from the reaper.
func ExampleHandler_Untrack() {
	app := &admin{echo: echo{booted: make(chan gnet.Engine, 1)}}
	h, err := idleconn.New(app, idleconn.Options{Timeout: 50 * time.Millisecond})
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
	_, _ = c.Write([]byte("admin"))
	_, _ = io.ReadFull(c, make([]byte, 5))
	time.Sleep(200 * time.Millisecond) // four timeouts
	// A reaped connection would end the echo with EOF.
	_, _ = c.Write([]byte("still here"))
	buf := make([]byte, 10)
	_, err = io.ReadFull(c, buf)
	fmt.Printf("echoed %q, err %v\n", buf, err)
	st := h.Stats()
	fmt.Println("tracked:", st.Tracked, "closed idle:", st.Reaped(idleconn.Idle))
	// Output:
	// untracked: true
	// echoed "still here", err <nil>
	// tracked: 0 closed idle: 0
}

// addrOf returns the address the engine listens on; the examples let the
// kernel pick the port.
func addrOf(eng gnet.Engine) string {
	fd, err := eng.Dup()
	if err != nil {
		panic(err)
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// stop stops eng and returns once it has. Engine.Stop looks whether the
// engine has stopped only every half second (gnet's shutdownPollInterval),
// which made each example half a second longer; Engine.Validate says so
// as soon as it has, and Stop's wait is then given up.
func stop(eng gnet.Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stopped := make(chan struct{})
	go func() { _ = eng.Stop(ctx); close(stopped) }()
	for eng.Validate() == nil && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-stopped
}
