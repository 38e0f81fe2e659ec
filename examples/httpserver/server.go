package main

import (
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
	idleTimeout   time.Duration // between requests on a keep-alive connection, and between a body's reads
	writeStall    time.Duration // pending output not draining
	maxLife       time.Duration // however busy
	maxConns      int
	timeouts      bool // false: none of the above but the loop timers, for load.sh
}

// What one connection may do in one event before the others on its loop
// have theirs: a client that pipelines many requests is answered a share
// at a time (TestFairShare).
const (
	answersPerEvent = 64
	bytesPerEvent   = 1 << 20 // of answers
)

// server is the application: an HTTP/1.1 keep-alive server on gnet that
// frames requests as net/http does (head.go, chunked.go) and leaves every
// timeout to idleconn.
//
// A connection is in one of four states, each begun in one place; the
// timers each state runs are idleconn's:
//
//	idle    between requests: the idle timeout, counted from the last
//	        byte received or the last answer (startIdle)
//	head    a request head seen incomplete: the header deadline, counted
//	        from then and not reset by bytes, and no idle timeout, so a
//	        slowloris client is closed at it with 408 (startHead)
//	body    head parsed, its body being read and discarded: the idle
//	        timeout, between reads (startBody)
//	answer  the answer waits for its /delay: no idle timeout, since the
//	        client has nothing to send (startAnswer)
//
// A request that arrives whole with no delay goes from idle back to idle
// without touching a timer: the idle timeout stays on and counts from its
// data. The write-stall timeout and the lifetime are idleconn's options
// and run in every state. README.md draws the states.
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
	date   []byte // the Date header's value, refreshed each second by tick
	tick   idleconn.Timer
	parser *headParser
	iov    [][]byte // a big answer's pieces, for Writev
}

// conn is a connection's context.
type conn struct {
	loop     *loopState
	state    uint8
	scanned  int   // bytes of the head already searched for its end
	skipped  uint8 // CR and LF bytes ignored before this request line
	req      request
	bodyLeft int64  // bytes of a Content-Length body still to discard
	chunks   chunks // the decoder of a chunked body
	delay    idleconn.Timer
	out      []byte // an answer's head, reused: never larger than a head
	woken    bool   // a Wake is on its way: the next OnTraffic runs in gnet's task queue
}

const (
	stateIdle uint8 = iota
	stateHead
	stateBody
	stateAnswer
)

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
		l := &loopState{parser: newHeadParser()}
		l.refresh()
		s.h.LoopTimer(el, &l.tick, time.Second, time.Second, func(gnet.Conn) { l.refresh() })
		ls, _ = s.loops.LoadOrStore(el, l)
	}
	c.SetContext(&conn{loop: ls.(*loopState)})
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
	queued := cs.woken
	cs.woken = false
	return s.serve(c, cs, queued)
}

// serve answers the requests in c's inbound buffer, in order, until it
// needs more bytes, an answer waits for its delay, or c has had its share
// of this event (answersPerEvent, bytesPerEvent); then, with requests
// left, it yields. queued says whether it runs in gnet's task queue (a
// Wake's OnTraffic or a timer), not for a read.
func (s *server) serve(c gnet.Conn, cs *conn, queued bool) gnet.Action {
	answers, sent := 0, 0
	for {
		switch cs.state {
		case stateAnswer:
			return gnet.None
		case stateIdle, stateHead:
			if answers >= answersPerEvent || sent >= bytesPerEvent {
				if c.InboundBuffered() > 0 {
					s.yield(c, cs, queued)
				}
				return gnet.None
			}
			if action, ok := s.readHead(c, cs); !ok {
				return action
			}
		}
		if cs.state == stateBody {
			done, status := s.readBody(c, cs)
			if status != 0 {
				return s.refuse(c, cs, status)
			}
			if !done {
				return gnet.None
			}
		}
		if cs.req.delay > 0 {
			return s.startAnswer(c, cs)
		}
		n, action := s.answer(c, cs)
		if action == gnet.Close {
			return action
		}
		answers++
		sent += n
	}
}

// yield lets the other connections of c's loop have their events before c
// goes on: gnet's Wake queues an OnTraffic behind the loop's current
// events. A Wake made in gnet's task queue would run in the same pass over
// the queue, before any event, so there it is made from a new goroutine,
// which runs once the loop has moved on (README.md, "gnet's events"). A
// yield costs gnet's Wake an allocation, and that path a goroutine: at
// most once per answersPerEvent answers or bytesPerEvent bytes.
func (s *server) yield(c gnet.Conn, cs *conn, queued bool) {
	cs.woken = true
	if queued {
		go func() { _ = c.Wake(nil) }()
	} else {
		_ = c.Wake(nil)
	}
}

// readHead looks for a whole request head at the start of c's inbound
// buffer and, once there is one, parses it and begins its request. It
// reports false, with the action to return, when there is none yet or it
// was refused.
func (s *server) readHead(c gnet.Conn, cs *conn) (gnet.Action, bool) {
	buf, _ := c.Peek(-1)
	if cs.state == stateIdle && cs.skipped < maxLeadingEmpty {
		if n := leadingEmpty(buf, maxLeadingEmpty-int(cs.skipped)); n > 0 {
			_, _ = c.Discard(n)
			cs.skipped += uint8(n)
			buf, _ = c.Peek(-1)
		}
	}
	if len(buf) == 0 {
		return gnet.None, false
	}
	end, next := headEnd(buf, cs.scanned)
	if end == 0 {
		cs.scanned = next
		if len(buf) > maxHead {
			return s.refuse(c, cs, http.StatusRequestHeaderFieldsTooLarge), false
		}
		if cs.state == stateIdle {
			s.startHead(c, cs)
		}
		return gnet.None, false
	}
	if end > maxHead {
		return s.refuse(c, cs, http.StatusRequestHeaderFieldsTooLarge), false
	}
	req, status := cs.loop.parser.parse(buf[:end])
	_, _ = c.Discard(end)
	cs.scanned, cs.skipped = 0, 0
	if status != 0 {
		return s.refuse(c, cs, status), false
	}
	s.startBody(c, cs, req)
	return gnet.None, true
}

// readBody discards what has arrived of the request's body and reports
// whether all of it has, or the status that refuses a malformed or too
// long chunked body.
func (s *server) readBody(c gnet.Conn, cs *conn) (done bool, status int) {
	// gnet's Discard empties the whole buffer when asked for 0 bytes.
	if cs.req.bodyLen >= 0 {
		if n := int(min(cs.bodyLeft, int64(c.InboundBuffered()))); n > 0 {
			_, _ = c.Discard(n)
			cs.bodyLeft -= int64(n)
		}
		return cs.bodyLeft == 0, 0
	}
	buf, _ := c.Peek(-1)
	n, done, err := cs.chunks.decode(buf)
	if n > 0 {
		_, _ = c.Discard(n)
	}
	switch {
	case err == errBodyTooLarge:
		return false, http.StatusRequestEntityTooLarge
	case err != nil:
		return false, http.StatusBadRequest
	}
	return done, 0
}

// startIdle begins the idle state after an answer: the idle timeout, now
// counted from the answer, if the answer state had turned it off. In the
// other states it is on already.
func (s *server) startIdle(c gnet.Conn, cs *conn) {
	if cs.state == stateAnswer && s.cfg.timeouts {
		s.h.SetIdleTimeout(c, s.cfg.idleTimeout)
	}
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

// startBody begins the body state once req's head is parsed: after the
// head state, the deadline is cleared and the idle timeout back on. A
// client that asked for it is told to send its body.
func (s *server) startBody(c gnet.Conn, cs *conn, req request) {
	if cs.state == stateHead && s.cfg.timeouts {
		s.h.SetDeadline(c, time.Time{})
		s.h.SetIdleTimeout(c, s.cfg.idleTimeout)
	}
	cs.state, cs.req = stateBody, req
	cs.bodyLeft, cs.chunks = req.bodyLen, chunks{}
	if req.sendContinue {
		_, _ = c.Write(continue100)
	}
}

var continue100 = []byte("HTTP/1.1 100 Continue\r\n\r\n")

// startAnswer begins the answer state for a request whose answer waits:
// no idle timeout until it is answered, and a timer on c's loop that
// answers it and goes on with the requests after it.
func (s *server) startAnswer(c gnet.Conn, cs *conn) gnet.Action {
	cs.state = stateAnswer
	if s.cfg.timeouts {
		s.h.SetIdleTimeout(c, 0)
	}
	if !s.h.ConnTimer(c, &cs.delay, cs.req.delay, 0, func(c gnet.Conn) {
		if _, action := s.answer(c, cs); action == gnet.Close || s.serve(c, cs, true) == gnet.Close {
			_ = c.Close()
		}
	}) {
		return gnet.Close // no longer tracked: closing
	}
	return gnet.None
}

// answer writes the answer to the request read, begins the idle state and
// returns the bytes written, or reports Close after an answer that ends
// the connection. No allocation (TestAnswerZeroAllocs): the answer's head
// is made in cs.out, which never grows past a head, and a big body is
// written from bigBlock; what the socket does not take, gnet copies into
// its outbound buffer.
func (s *server) answer(c gnet.Conn, cs *conn) (int, gnet.Action) {
	r := &cs.req
	cs.out = appendHead(cs.out[:0], cs.loop.date, r.status, r.length(), r.close, r.keepAlive10)
	n := len(cs.out)
	switch {
	case r.head:
		_, _ = c.Write(cs.out)
	case r.bigKB == 0:
		cs.out = append(cs.out, r.body...)
		n = len(cs.out)
		_, _ = c.Write(cs.out)
	default:
		iov := append(cs.loop.iov[:0], cs.out)
		for left := r.bigKB << 10; left > 0; left -= len(bigBlock) {
			iov = append(iov, bigBlock[:min(left, len(bigBlock))])
		}
		n += r.length()
		_, _ = c.Writev(iov)
		clear(iov) // keep no answer's head alive
		cs.loop.iov = iov[:0]
	}
	closing := r.close
	cs.req = request{}
	if closing {
		return n, gnet.Close
	}
	s.startIdle(c, cs)
	return n, gnet.None
}

// refuse answers a request that cannot be read with status, and closes.
func (s *server) refuse(c gnet.Conn, cs *conn, status int) gnet.Action {
	cs.out = appendHead(cs.out[:0], cs.loop.date, status, 0, true, false)
	_, _ = c.Write(cs.out)
	return gnet.Close
}

// onReap answers 408 to a connection closed at its header deadline.
func (s *server) onReap(c gnet.Conn, why idleconn.Reason) {
	if cs, ok := c.Context().(*conn); ok && why == idleconn.Deadline {
		cs.out = appendHead(cs.out[:0], cs.loop.date, http.StatusRequestTimeout, 0, true, false)
		_, _ = c.Write(cs.out)
	}
}

// full is what a connection beyond MaxConns is told before it is closed.
var full = []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 21\r\nConnection: close\r\n\r\ntoo many connections\n")

// onRefuse tells a connection MaxConns refuses why, rather than closing it
// silently.
func onRefuse(c gnet.Conn) { _, _ = c.Write(full) }

// appendHead appends an HTTP/1.1 response head to dst.
func appendHead(dst, date []byte, status, length int, close, keepAlive10 bool) []byte {
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	dst = append(dst, ' ')
	dst = append(dst, http.StatusText(status)...)
	dst = append(dst, "\r\nServer: packwheel-httpserver\r\nDate: "...)
	dst = append(dst, date...)
	dst = append(dst, "\r\nContent-Type: text/plain\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(length), 10)
	switch {
	case close:
		dst = append(dst, "\r\nConnection: close"...)
	case keepAlive10:
		dst = append(dst, "\r\nConnection: keep-alive"...)
	}
	return append(dst, "\r\n\r\n"...)
}
