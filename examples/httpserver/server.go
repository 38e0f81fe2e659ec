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
	bodyTimeout   time.Duration // whole request body, from the end of its head; 408 and close
	idleTimeout   time.Duration // between requests on a keep-alive connection
	writeStall    time.Duration // pending output not draining
	minDrainRate  int           // bytes a second pending output must drain, over drainWindow
	maxLife       time.Duration // however busy
	maxOutput     int           // pending output: more closes the connection
	maxInput      int           // unread input: more closes the connection
	maxConns      int           // 0: idleconn's default, from ulimit -n
	budget        int64         // bytes buffered for all clients: 0 idleconn's default, -1 none
	drain         time.Duration // how long a graceful stop waits for requests in flight
	timeouts      bool          // false: no time limit but the loop timers, for load.sh
}

// defaults are the flags' defaults: the time limits nginx and net/http
// servers commonly run with, and bounds on memory that keep what one
// client can make the server hold to about a MiB of output and a quarter
// of input. -min-drain-rate, 4 KiB/s, is far under any client on a
// working network and far over what a slow-read attack reads.
var defaults = config{
	headerTimeout: 5 * time.Second,
	bodyTimeout:   10 * time.Second,
	idleTimeout:   60 * time.Second,
	writeStall:    10 * time.Second,
	minDrainRate:  4 << 10,
	maxOutput:     1 << 20,
	maxInput:      256 << 10,
	drain:         10 * time.Second,
	timeouts:      true,
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
// A connection is in one of six states, each begun in one place; the
// limits each state runs are idleconn's:
//
//	idle     between requests: the idle timeout, counted from the last
//	         byte received, or the last of an answer read (startIdle)
//	head     a request head seen incomplete: the header deadline, counted
//	         from then and not reset by bytes, and no idle timeout, so a
//	         slowloris client is closed at it with 408 (wait)
//	body     head parsed, its body being read and discarded: the body
//	         deadline, counted from the end of the head, and no idle
//	         timeout, so a slow-body client is closed at it with 408
//	         (startBody, wait)
//	answer   the answer waits for its /delay: no idle timeout, since the
//	         client has nothing to send (startAnswer)
//	send     a /big answer written as the client reads it, a piece while
//	         the connection is writable: no idle timeout; the write stall,
//	         the drain rate and the output bound (send)
//	closing  the answer ended the connection (Connection: close, a
//	         refusal, or Shutdown): idleconn closes it once the answer
//	         has drained, and the server hears nothing more (finish)
//
// A state that waits turns the idle timeout off, which also marks the
// connection busy for idleconn's Shutdown; startIdle turns it back on. A
// request that arrives whole with no delay, and whose answer fits, goes
// from idle back to idle without touching a timer: the idle timeout stays
// on and counts from its data. The write-stall timeout, the drain rate,
// the lifetime and the bounds on output and input run in every state.
// README.md draws the states.
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
	sending  int    // bytes of a /big answer still to write
	busy     bool   // a waiting state turned the idle timeout off
	bodyWait bool   // the body's deadline is set
	woken    bool   // a Wake is on its way: the next OnTraffic runs in gnet's task queue
}

const (
	stateIdle uint8 = iota
	stateHead
	stateBody
	stateAnswer
	stateSend
	stateClosing
)

// Output water marks and pieces. The server stops answering a connection
// once its pending output exceeds outputHigh and goes on once it is below
// outputLow (idleconn's OutputLimit, after Netty's water marks); a /big
// answer is written a piece at a time while the connection is writable,
// so a connection that reads slowly holds at most outputHigh and a piece,
// 32 KiB, of the server's memory: under slowhttptest's slow-read attack
// 2,000 connections hold at most 64 MiB (bench/results'
// httpload-attack-after.txt; with 64 KiB marks and pieces they held
// 135 MiB). A client that reads fast is not slowed: what the kernel's
// send buffer takes never counts as pending.
const (
	outputHigh = 16 << 10
	outputLow  = 8 << 10
	piece      = 16 << 10
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
// needs more bytes, an answer waits for its delay, c is not writable
// (idleconn's OnWritable calls resume), or c has had its share of this
// event (answersPerEvent, bytesPerEvent); then, with requests or an answer
// left, it yields. queued says whether it runs in gnet's task queue (a
// Wake's OnTraffic, a timer or OnWritable), not for a read.
func (s *server) serve(c gnet.Conn, cs *conn, queued bool) gnet.Action {
	answers, sent := 0, 0
	for {
		switch cs.state {
		case stateAnswer, stateClosing:
			return gnet.None
		}
		if !s.h.Writable(c) {
			return gnet.None // the client reads too slowly: wait
		}
		if answers >= answersPerEvent || sent >= bytesPerEvent {
			if cs.state == stateSend || c.InboundBuffered() > 0 {
				s.yield(c, cs, queued)
			}
			return gnet.None
		}
		switch cs.state {
		case stateSend:
			sent += s.send(c, cs, bytesPerEvent-sent)
			if cs.sending == 0 {
				answers++
				if s.finish(c, cs) {
					return gnet.None
				}
			}
			continue
		case stateIdle, stateHead:
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
				if !cs.bodyWait { // the body's deadline counts from the end of its head
					cs.bodyWait = true
					s.wait(c, cs, time.Now().Add(s.cfg.bodyTimeout))
				}
				return gnet.None
			}
		}
		if cs.req.delay > 0 {
			return s.startAnswer(c, cs)
		}
		sent += s.answer(c, cs)
		if cs.state != stateSend {
			answers++
		}
		if cs.state == stateClosing {
			return gnet.None
		}
	}
}

// resume goes on serving c, which has drained enough to take more output:
// idleconn's OnWritable.
func (s *server) resume(c gnet.Conn) {
	if cs, ok := c.Context().(*conn); ok && !cs.woken {
		if s.serve(c, cs, true) == gnet.Close {
			_ = c.Close()
		}
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
			cs.state = stateHead
			s.wait(c, cs, time.Now().Add(s.cfg.headerTimeout))
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
// counted from the answer, if a waiting state had turned it off, and no
// deadline. Otherwise it is on already.
func (s *server) startIdle(c gnet.Conn, cs *conn) {
	if cs.busy && s.cfg.timeouts {
		s.h.SetDeadline(c, time.Time{})
		s.h.SetIdleTimeout(c, s.cfg.idleTimeout)
	}
	cs.state, cs.busy = stateIdle, false
}

// wait begins waiting within a request (for the rest of its head or body,
// its delay, or the client to read its answer): no idle timeout, which
// marks c busy, and deadline, or none for the zero time. A head's deadline
// counts from the look that found it incomplete, at most one read after
// its first byte, and is not reset by bytes.
func (s *server) wait(c gnet.Conn, cs *conn, deadline time.Time) {
	if s.cfg.timeouts {
		if !cs.busy {
			s.h.SetIdleTimeout(c, 0)
		}
		s.h.SetDeadline(c, deadline)
	}
	cs.busy = true
}

// startBody begins the body state once req's head is parsed; the body's
// deadline is set if the body is not all there (serve). A client that
// asked for it is told to send its body.
func (s *server) startBody(c gnet.Conn, cs *conn, req request) {
	cs.state, cs.req, cs.bodyWait = stateBody, req, false
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
	s.wait(c, cs, time.Time{})
	if !s.h.ConnTimer(c, &cs.delay, cs.req.delay, 0, func(c gnet.Conn) {
		s.answer(c, cs)
		if s.serve(c, cs, true) == gnet.Close {
			_ = c.Close()
		}
	}) {
		return gnet.Close // no longer tracked: closing
	}
	return gnet.None
}

// answer writes the answer to the request read, or its head and the
// send state for a /big one, and returns the bytes written. An answer
// during Shutdown or under pressure (keepsAlive) ends its connection, as
// Connection: close does. No
// allocation (TestAnswerZeroAllocs): the head is made in cs.out, which
// never grows past a head, and a big body is written from bigBlock.
func (s *server) answer(c gnet.Conn, cs *conn) int {
	r := &cs.req
	r.close = r.close || !s.keepsAlive()
	cs.out = appendHead(cs.out[:0], cs.loop.date, r.status, r.length(), r.close, r.keepAlive10)
	if !r.head {
		cs.out = append(cs.out, r.body...)
	}
	_, _ = c.Write(cs.out)
	if !r.head && r.bigKB > 0 {
		cs.state, cs.sending = stateSend, r.bigKB<<10
		s.wait(c, cs, time.Time{})
		return len(cs.out)
	}
	s.finish(c, cs)
	return len(cs.out)
}

// send writes what c takes of the /big answer left, a piece at a time
// while c is writable and at most budget bytes, and returns the bytes
// written: what the socket does not take, gnet copies into its outbound
// buffer, so the server holds at most outputHigh and a piece of it,
// however large the answer.
func (s *server) send(c gnet.Conn, cs *conn, budget int) int {
	sent := 0
	for cs.sending > 0 && sent < budget && s.h.Writable(c) {
		n, _ := c.Write(bigBlock[:min(cs.sending, piece)])
		cs.sending -= n
		sent += n
	}
	return sent
}

// finish ends the request answered: the connection closes once the answer
// has drained (idleconn's CloseAfterFlush), if it asked to or the server
// is shutting down, or waits for the next request. It reports whether the
// connection is closing.
func (s *server) finish(c gnet.Conn, cs *conn) bool {
	closing := cs.req.close
	cs.req = request{}
	if closing {
		cs.state = stateClosing
		if !s.h.CloseAfterFlush(c) {
			_ = c.Close() // not tracked: gnet's own close
		}
		return true
	}
	s.startIdle(c, cs)
	return false
}

// refuse answers a request that cannot be read with status and closes the
// connection once the answer has drained.
func (s *server) refuse(c gnet.Conn, cs *conn, status int) gnet.Action {
	cs.out = appendHead(cs.out[:0], cs.loop.date, status, 0, true, false)
	_, _ = c.Write(cs.out)
	cs.req = request{close: true}
	s.finish(c, cs)
	return gnet.None
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
