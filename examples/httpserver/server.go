package main

import (
	"bufio"
	"bytes"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/panjf2000/gnet/v2"
)

// config is what the server's flags set.
type config struct {
	headerTimeout time.Duration // whole request head, from its first byte; 408 and close
	idleTimeout   time.Duration // between requests on a keep-alive connection
	writeStall    time.Duration // pending output not draining
	maxLife       time.Duration // however busy
	maxConns      int
	timeouts      bool // false: none of the above but the loop timers, for load.sh
}

// maxHead bounds a request head; a longer one gets 431 and a close.
const maxHead = 16 << 10

// maxDelay bounds /delay?ms=N, under any idle timeout worth having.
const maxDelay = 10 * time.Second

// server is the application: an HTTP/1.1 keep-alive server on gnet that
// parses with net/http.ReadRequest and leaves every timeout to idleconn.
//
// A connection is in one of three states, each begun in one place:
//
//	idle     between requests (open, or response written): the idle
//	         timeout runs and no deadline is set (startIdle)
//	head     a request head seen incomplete, until it is complete: the
//	         idle timeout is off and the header deadline runs, not reset
//	         by bytes, so a slowloris client is closed at it (startHead)
//	request  head parsed, body being read or the response being made,
//	         perhaps after a delay (a loop timer): the idle timeout runs,
//	         no deadline (startRequest)
//
// A head that arrives whole, as nearly every one does, goes from idle to
// request without touching a timer: the idle timeout stays on and counts
// from its data. The write-stall timeout and the lifetime are idleconn's
// options and run in every state.
type server struct {
	gnet.BuiltinEventEngine
	cfg    config
	h      *idleconn.Handler
	booted chan gnet.Engine
	loops  sync.Map // gnet.EventLoop -> *loopState, made by a connection's first open there
}

// loopState is what one event loop shares among its connections, which
// only it runs.
type loopState struct {
	date []byte // the Date header's value, refreshed each second by tick
	tick idleconn.Timer
	head bytes.Reader  // the request head being parsed
	br   *bufio.Reader // reads it for http.ReadRequest
}

// conn is a connection's context.
type conn struct {
	loop     *loopState
	state    uint8
	bodyLeft int64    // bytes of the current request's body still to discard
	reply    response // the response made once the body is read
	waiting  bool     // a /delay response is pending: later requests wait in the buffer
	delay    idleconn.Timer
	out      []byte
}

const (
	stateIdle uint8 = iota
	stateHead
	stateRequest
)

// response is a request's answer, kept while its body is read or its delay
// runs.
type response struct {
	status int
	body   []byte
	head   bool // HEAD: headers only
	close  bool // Connection: close
	delay  time.Duration
}

var hello = []byte("hello\n")

func (s *server) OnBoot(eng gnet.Engine) gnet.Action {
	s.booted <- eng
	return gnet.None
}

func (s *server) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	el := c.EventLoop()
	ls, ok := s.loops.Load(el)
	if !ok {
		// The loop's first connection: start its Date header cache, on
		// the loop, as LoopTimer requires.
		l := &loopState{br: bufio.NewReader(nil)}
		l.refresh()
		s.h.LoopTimer(el, &l.tick, time.Second, time.Second, func(gnet.Conn) { l.refresh() })
		ls, _ = s.loops.LoadOrStore(el, l)
	}
	cs := &conn{loop: ls.(*loopState)}
	c.SetContext(cs)
	return nil, gnet.None
}

func (l *loopState) refresh() {
	l.date = time.Now().UTC().AppendFormat(l.date[:0], http.TimeFormat)
}

func (s *server) OnTraffic(c gnet.Conn) gnet.Action {
	cs, ok := c.Context().(*conn)
	if !ok {
		return gnet.Close
	}
	return s.serve(c, cs)
}

// serve answers every complete request in c's inbound buffer, in order,
// and stops at an incomplete one, or while a delayed response is pending.
func (s *server) serve(c gnet.Conn, cs *conn) gnet.Action {
	for !cs.waiting {
		if cs.state == stateRequest {
			if cs.bodyLeft > 0 {
				n, _ := c.Discard(int(min(cs.bodyLeft, int64(c.InboundBuffered()))))
				cs.bodyLeft -= int64(n)
				if cs.bodyLeft > 0 {
					return gnet.None
				}
			}
			if cs.reply.delay > 0 {
				cs.waiting = true
				if !s.h.ConnTimer(c, &cs.delay, cs.reply.delay, 0, func(c gnet.Conn) {
					cs.waiting = false
					if s.respond(c, cs) == gnet.Close {
						_ = c.Close()
						return
					}
					if s.serve(c, cs) == gnet.Close {
						_ = c.Close()
					}
				}) {
					return gnet.Close // no longer tracked: closing
				}
				return gnet.None
			}
			if s.respond(c, cs) == gnet.Close {
				return gnet.Close
			}
			continue
		}
		buf, _ := c.Peek(-1)
		if len(buf) == 0 {
			return gnet.None
		}
		end := bytes.Index(buf, []byte("\r\n\r\n"))
		if end < 0 {
			if len(buf) > maxHead {
				return s.fail(c, cs, http.StatusRequestHeaderFieldsTooLarge)
			}
			if cs.state == stateIdle {
				s.startHead(c, cs)
			}
			return gnet.None
		}
		head := buf[:end+4]
		cs.loop.head.Reset(head)
		cs.loop.br.Reset(&cs.loop.head)
		req, err := http.ReadRequest(cs.loop.br)
		_, _ = c.Discard(len(head))
		if err != nil {
			return s.fail(c, cs, http.StatusBadRequest)
		}
		s.startRequest(c, cs, req)
	}
	return gnet.None
}

// startIdle begins the idle state. The idle timeout is on already: only
// the head state turns it off, and startRequest turns it back on.
func (s *server) startIdle(c gnet.Conn, cs *conn) {
	cs.state = stateIdle
}

// startHead begins the head state when a request head is seen incomplete:
// the header deadline, counted from now and not reset by bytes, and no
// idle timeout. The deadline counts from the look that found the head
// incomplete, at most one read after its first byte.
func (s *server) startHead(c gnet.Conn, cs *conn) {
	cs.state = stateHead
	if s.cfg.timeouts {
		s.h.SetIdleTimeout(c, 0)
		s.h.SetDeadline(c, time.Now().Add(s.cfg.headerTimeout))
	}
}

// startRequest begins the request state once req's head is parsed: after
// the head state, the deadline is cleared and the idle timeout back on;
// the response is decided and the body is to be discarded.
func (s *server) startRequest(c gnet.Conn, cs *conn, req *http.Request) {
	if cs.state == stateHead && s.cfg.timeouts {
		s.h.SetDeadline(c, time.Time{})
		s.h.SetIdleTimeout(c, s.cfg.idleTimeout)
	}
	cs.state = stateRequest
	cs.bodyLeft = max(req.ContentLength, 0)
	cs.reply = route(req)
}

// route decides the answer to req.
func route(req *http.Request) response {
	r := response{status: http.StatusOK, body: hello, head: req.Method == http.MethodHead, close: req.Close}
	switch {
	case req.Method != http.MethodGet && req.Method != http.MethodHead:
		r.status, r.body = http.StatusMethodNotAllowed, nil
	case len(req.TransferEncoding) > 0:
		// Chunked bodies are beyond this example: refuse and close, so
		// the body is not taken for the next request.
		r.status, r.body, r.close = http.StatusNotImplemented, nil, true
	case req.URL.Path == "/":
	case req.URL.Path == "/delay":
		ms, err := strconv.Atoi(req.URL.Query().Get("ms"))
		if d := time.Duration(ms) * time.Millisecond; err != nil || ms < 0 || d > maxDelay {
			r.status, r.body = http.StatusBadRequest, nil
		} else {
			r.delay = max(d, 1) // a zero delay would not be a timer
		}
	case req.URL.Path == "/big":
		kb, err := strconv.Atoi(req.URL.Query().Get("kb"))
		if err != nil || kb < 0 || kb > 1<<20 {
			r.status, r.body = http.StatusBadRequest, nil
		} else {
			r.body = bytes.Repeat([]byte("x"), kb<<10)
		}
	default:
		r.status, r.body = http.StatusNotFound, nil
	}
	return r
}

// respond writes the pending response and begins the idle state, or
// reports Close after a response that ends the connection.
func (s *server) respond(c gnet.Conn, cs *conn) gnet.Action {
	r := cs.reply
	cs.out = appendResponse(cs.out[:0], cs.loop.date, r.status, r.body, r.head, r.close)
	_, _ = c.Write(cs.out)
	cs.reply = response{}
	if r.close {
		return gnet.Close
	}
	s.startIdle(c, cs)
	return gnet.None
}

// fail answers a request that cannot be read with status and closes.
func (s *server) fail(c gnet.Conn, cs *conn, status int) gnet.Action {
	cs.out = appendResponse(cs.out[:0], cs.loop.date, status, nil, false, true)
	_, _ = c.Write(cs.out)
	return gnet.Close
}

// onReap answers 408 to a connection closed at its header deadline.
func (s *server) onReap(c gnet.Conn, why idleconn.Reason) {
	if cs, ok := c.Context().(*conn); ok && why == idleconn.Deadline {
		cs.out = appendResponse(cs.out[:0], cs.loop.date, http.StatusRequestTimeout, nil, false, true)
		_, _ = c.Write(cs.out)
	}
}

// appendResponse appends an HTTP/1.1 response to dst.
func appendResponse(dst, date []byte, status int, body []byte, head, close bool) []byte {
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	dst = append(dst, ' ')
	dst = append(dst, http.StatusText(status)...)
	dst = append(dst, "\r\nServer: packwheel-httpserver\r\nDate: "...)
	dst = append(dst, date...)
	dst = append(dst, "\r\nContent-Type: text/plain\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	if close {
		dst = append(dst, "\r\nConnection: close"...)
	}
	dst = append(dst, "\r\n\r\n"...)
	if !head {
		dst = append(dst, body...)
	}
	return dst
}
