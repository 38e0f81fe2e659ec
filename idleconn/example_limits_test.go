package idleconn_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/panjf2000/gnet/v2"
)

// requests is a server of requests that end with an empty line. A
// request's head must arrive whole within 100ms of its first byte;
// between requests a connection may stay idle for 5s.
type requests struct {
	echo
	h *idleconn.Handler
}

type request struct {
	head    []byte
	started bool
}

func (r *requests) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	c.SetContext(&request{})
	return nil, gnet.None
}

func (r *requests) OnTraffic(c gnet.Conn) gnet.Action {
	req := c.Context().(*request)
	in, _ := c.Next(-1)
	if !req.started { // the first byte of a request
		req.started = true
		r.h.SetIdleTimeout(c, 0)
		r.h.SetDeadline(c, time.Now().Add(100*time.Millisecond))
	}
	req.head = append(req.head, in...)
	if bytes.HasSuffix(req.head, []byte("\n\n")) { // complete: answer, then wait
		*req = request{}
		r.h.SetDeadline(c, time.Time{})
		r.h.SetIdleTimeout(c, 5*time.Second)
		_, _ = c.Write([]byte("ok\n"))
	}
	return gnet.None
}

// A deadline bounds a request's head, however slowly its bytes come: a
// client sending one byte every 20ms is closed 100ms after its first.
func ExampleHandler_SetDeadline() {
	app := &requests{echo: echo{booted: make(chan gnet.Engine, 1)}}
	h, err := idleconn.New(app, idleconn.Options{
		Timeout: 5 * time.Second,
		OnReap:  func(_ gnet.Conn, why idleconn.Reason) { fmt.Println("reaped:", why) },
	})
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
	_, _ = c.Write([]byte("GET / x\n\n"))
	answer, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Print("answered: ", answer)
	for {
		if _, err := c.Write([]byte("G")); err != nil {
			break // closed by the server
		}
		time.Sleep(20 * time.Millisecond)
	}
	st := h.Stats()
	fmt.Println("tracked:", st.Tracked, "closed at the deadline:", st.Reaped(idleconn.Deadline))
	// Output:
	// answered: ok
	// reaped: deadline
	// tracked: 0 closed at the deadline: 1
}

// later answers each message 50ms after it arrives, from a timer on the
// connection's event loop, without blocking the loop meanwhile.
type later struct {
	echo
	h *idleconn.Handler
}

type reply struct{ timer idleconn.Timer }

func (l *later) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	c.SetContext(new(reply))
	return nil, gnet.None
}

func (l *later) OnTraffic(c gnet.Conn) gnet.Action {
	msg, _ := c.Next(-1)
	answer := append([]byte("later: "), msg...)
	l.h.ConnTimer(c, &c.Context().(*reply).timer, 50*time.Millisecond, 0, func(c gnet.Conn) {
		_, _ = c.Write(answer)
	})
	return gnet.None
}

// A Timer runs code on a connection's event loop after a delay.
func ExampleHandler_ConnTimer() {
	app := &later{echo: echo{booted: make(chan gnet.Engine, 1)}}
	h, err := idleconn.New(app, idleconn.Options{Timeout: 5 * time.Second})
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
	start := time.Now()
	_, _ = c.Write([]byte("hello\n"))
	answer, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Print(answer)
	fmt.Println("not before 50ms:", time.Since(start) >= 50*time.Millisecond)
	// Output:
	// later: hello
	// not before 50ms: true
}
