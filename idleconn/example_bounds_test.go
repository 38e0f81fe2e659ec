package idleconn_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/panjf2000/gnet/v2"
)

// answers is a keep-alive server in miniature, written as the bounds ask:
// each request, a line "N", is answered with N KiB of dots and a newline,
// in order, however many the client pipelines; "N close" asks the server
// to close the connection after the answer, as HTTP's Connection: close. It writes while the
// connection is writable and goes on when OnWritable says the client has
// read enough, so its pending output stays near the high-water mark
// whatever the client asks for. It turns the idle timeout off while it
// answers, which marks the connection busy for Shutdown. It closes a
// connection after flush, so that the last answer reaches the client
// whole: when asked to, and after the answer in hand during Shutdown. With delay set, each answer waits that long on a connection
// timer first, as one that waits on a database would.
type answers struct {
	gnet.BuiltinEventEngine
	h      *idleconn.Handler
	booted chan gnet.Engine
	delay  time.Duration
}

// exchange is a connection's request in hand.
type exchange struct {
	left    int  // bytes of the answer still to write; -1 for none
	close   bool // close after the answer
	waiting bool
	timer   idleconn.Timer
}

var dots = bytes.Repeat([]byte{'.'}, 64<<10)

func (a *answers) OnBoot(eng gnet.Engine) gnet.Action {
	a.booted <- eng
	return gnet.None
}

func (a *answers) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	c.SetContext(&exchange{left: -1})
	return nil, gnet.None
}

func (a *answers) OnTraffic(c gnet.Conn) gnet.Action {
	a.answer(c)
	return gnet.None
}

// answer writes what c may take of the answers its requests ask for.
func (a *answers) answer(c gnet.Conn) {
	x := c.Context().(*exchange)
	for !x.waiting && a.h.Writable(c) { // above the high-water mark, wait for OnWritable
		switch {
		case x.left > 0:
			n, err := c.Write(dots[:min(x.left, len(dots))])
			if err != nil {
				return // the peer is gone, and gnet closes the connection
			}
			x.left -= n
		case x.left == 0: // the answer is written: the request is done
			_, _ = c.Write([]byte{'\n'})
			x.left = -1
			if x.close || a.h.ShuttingDown() {
				a.h.CloseAfterFlush(c) // the answer reaches the client whole
				return
			}
			a.h.SetIdleTimeout(c, 30*time.Second) // between requests
		default:
			line, err := readLine(c)
			if err != nil {
				return // no whole request yet
			}
			size, close, _ := strings.Cut(line, " ")
			kb, _ := strconv.Atoi(size)
			x.left, x.close = kb<<10, close == "close"
			a.h.SetIdleTimeout(c, 0) // answering: busy
			if a.delay > 0 {
				x.waiting = true
				a.h.ConnTimer(c, &x.timer, a.delay, 0, func(c gnet.Conn) {
					x.waiting = false
					a.answer(c)
				})
			}
		}
	}
}

// readLine takes a whole line from c's input.
func readLine(c gnet.Conn) (string, error) {
	buf, _ := c.Peek(-1)
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		return "", io.ErrShortBuffer
	}
	line := string(buf[:i])
	_, _ = c.Discard(i + 1)
	return line, nil
}

// serveAnswers runs an answers server wrapped with opts, and returns it
// and its engine.
func serveAnswers(delay time.Duration, opts idleconn.Options) (*answers, gnet.Engine) {
	a := &answers{booted: make(chan gnet.Engine, 1), delay: delay}
	opts.OnWritable = a.answer // the client has read enough: go on
	h, err := idleconn.New(a, opts)
	if err != nil {
		panic(err)
	}
	a.h = h
	go func() { _ = gnet.Run(h, "tcp://127.0.0.1:0", gnet.WithNumEventLoop(1)) }()
	return a, <-a.booted
}

// A client pipelines 20 requests of 1 MiB each and reads slowly: the
// server writes as the client reads, so its pending output stays under
// the high-water mark and a chunk, 20 MiB asked for or not, and no bound
// closes the client, which reads steadily.
func ExampleHandler_Writable() {
	a, eng := serveAnswers(0, idleconn.Options{
		Timeout:           30 * time.Second,
		WriteStallTimeout: 5 * time.Second,                                                   // nothing read for 5 s: closed
		Output:            idleconn.OutputLimit{Max: 1 << 20, High: 64 << 10, Low: 32 << 10}, // more than 1 MiB pending: closed
	})
	defer stop(eng)
	c, err := net.Dial("tcp", addrOf(eng))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	_, _ = c.Write(bytes.Repeat([]byte("1024\n"), 20))
	r := bufio.NewReaderSize(c, 64<<10)
	var answered int
	for answered < 20 {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			time.Sleep(time.Millisecond) // a slow reader: 64 MiB/s at most
			continue
		}
		if err != nil {
			panic(err)
		}
		if len(line) > 0 {
			answered++
		}
	}
	st := a.h.Stats()
	fmt.Println("answered:", answered, "closed for output:", st.Reaped(idleconn.OutputFull)+st.Reaped(idleconn.WriteStall))
	// Output:
	// answered: 20 closed for output: 0
}

// An answer that ends its connection is closed after flush: the client
// reads it whole, however large, then the end of the stream, though it
// sent another request meanwhile, which a plain close would have turned
// into a reset that destroys the answer's unread tail.
func ExampleHandler_CloseAfterFlush() {
	_, eng := serveAnswers(0, idleconn.Options{Timeout: 30 * time.Second})
	defer stop(eng)
	c, err := net.Dial("tcp", addrOf(eng))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("8192 close\n")) // 8 MiB, then close
	head := make([]byte, 1<<20)
	_, _ = io.ReadFull(c, head)
	_, _ = c.Write([]byte("1\n")) // pipelined, never answered
	rest, err := io.ReadAll(c)
	fmt.Println("answer bytes:", len(head)+len(rest), "then:", err)
	// Output:
	// answer bytes: 8388609 then: <nil>
}

// Shutdown with a request in flight: the client gets its answer whole,
// then the close, and Shutdown returns nil once every connection has
// gone; a connection opened meanwhile is refused.
func ExampleHandler_Shutdown() {
	a, eng := serveAnswers(200*time.Millisecond, idleconn.Options{Timeout: 30 * time.Second})
	defer stop(eng)
	addr := addrOf(eng)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("1\n")) // answered in 200 ms
	time.Sleep(50 * time.Millisecond)

	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() { done <- a.h.Shutdown(ctx) }() // as on SIGTERM, then stop the engine
	for !a.h.ShuttingDown() {
		time.Sleep(time.Millisecond)
	}
	late, err := net.Dial("tcp", addr)
	if err == nil {
		_, err = late.Read(make([]byte, 1))
		late.Close()
	}
	fmt.Println("late connection:", err)
	answer, err := io.ReadAll(c)
	fmt.Println("answer bytes:", len(answer), "then:", err)
	c.Close() // as a client does at the end of the stream
	fmt.Println("Shutdown:", <-done)
	// Output:
	// late connection: EOF
	// answer bytes: 1025 then: <nil>
	// Shutdown: <nil>
}
