package main

import (
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
	bodyTimeout   time.Duration // whole request body, from the end of its head; 408 and close
	idleTimeout   time.Duration // between requests on a keep-alive connection
	writeStall    time.Duration // pending output not draining
	minDrainRate  int           // bytes a second pending output must drain, over drainWindow
	maxLife       time.Duration // however busy
	maxOutput     int           // pending output: more closes the connection
	maxInput      int           // unread input: more closes the connection
	maxConns      int           // 0: idleconn's default, from ulimit -n
	maxUnsent     int           // bytes the kernel holds unsent, as idleconn.Options.MaxUnsent takes them
	budget        int64         // bytes buffered for all clients: 0 idleconn's default, -1 none
	drain         time.Duration // how long a graceful stop waits for requests in flight
	timeouts      bool          // false: no time limit but the loop timers, for load.sh
}

// defaults are the flags' defaults: the time limits nginx and net/http
// servers commonly run with, and bounds on memory that keep what one
// client can make the server hold to about a MiB of output and a quarter
// of input. -min-drain-rate, 4 KiB/s, is far under any client on a
// working network and far over what a slow-read attack reads.
// -max-unsent bounds what the kernel holds for a client that does not
// read (idleconn.Options.MaxUnsent, whose default it keeps).
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
// timeout to idleconn. A connection's life is a small state machine
// (state, below): each state is a step that runs it once and returns the
// next; serve runs the steps of a connection's states in turn until one
// must wait for an event.
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

// conn is a connection's context. Each field but loop, state and out
// belongs to the states named beside it.
type conn struct {
	loop     *loopState
	state    state
	skipped  uint8 // CR and LF bytes ignored before this request line (idle)
	scanned  int   // bytes of the request line or head already searched (line, head)
	req      request
	bodyLeft int64          // bytes of a Content-Length body still to discard (body)
	chunks   chunks         // the decoder of a chunked body (body)
	delay    idleconn.Timer // answers after a /delay (delay)
	sending  int            // bytes of a /big answer still to write (send)
	out      []byte         // an answer's head, reused: never larger than a head
}

// state is where a connection is in the life of a request. Each state
// waits for one kind of event and runs its own idleconn limits; the write
// stall, the drain rate, the lifetime and the bounds on output and input
// run in all. The idle timeout is on in idle only: a state that waits
// within a request turns it off (wait), which also marks the connection
// busy for idleconn's Shutdown, and finish turns it back on.
//
//	idle     between requests: the idle timeout, counted from the last
//	         byte received or the last of an answer read. A request that
//	         arrives whole, with no delay and an answer the socket takes,
//	         goes from idle back to idle without touching a timer.
//	line     a request line incomplete: the header deadline, counted from
//	         the look that found the head incomplete and not reset by
//	         bytes, so a slowloris client is closed at it with 408. A line
//	         net/http refuses is refused once it has ended, with 400.
//	head     the line read, its header fields incomplete: the same deadline
//	body     the head parsed, its body incomplete: the body deadline,
//	         counted from the end of the head, so a slow-body client is
//	         closed at it with 408
//	delay    the answer waits for its /delay: a connection timer
//	send     a /big answer written a piece at a time while the connection
//	         is writable: the write stall, the drain rate and the output
//	         bound
//	closing  the answer ended the connection (Connection: close, a
//	         refusal, or Shutdown): idleconn closes it once the answer has
//	         drained, and the server hears nothing more
//	yielded  its share of an event spent (answersPerEvent, bytesPerEvent)
//	         with requests or an answer left: it waits for the Wake yield
//	         asked for, then goes on in send or idle
//
// README.md draws them.
type state uint8

const (
	stateIdle state = iota
	stateLine
	stateHead
	stateBody
	stateDelay
	stateSend
	stateClosing
	stateYielded
)

// Output water marks and pieces. The server stops answering a connection
// once its pending output exceeds outputHigh and goes on once it is below
// outputLow (idleconn's OutputLimit, after Netty's water marks); a /big
// answer is written a piece at a time while the connection is writable,
// so a connection that reads slowly holds at most outputHigh and a piece,
// 32 KiB, of the server's memory (TestSlowPipeliningReader); what 2,000
// slow readers hold at once under slowhttptest's slow-read attack is
// measured in bench/results/httpload-attack-after.txt. A client that
// reads fast is not slowed: what the kernel's send buffer takes never
// counts as pending.
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

// A connection is served on three events: bytes received, or the Wake
// that yield asked for (OnTraffic); the client having read enough of its
// answers (resume); and the end of a /delay (startDelay's timer).

// OnTraffic serves c's requests: on bytes received, or on the Wake yield
// asked for, which runs in gnet's task queue.
func (s *server) OnTraffic(c gnet.Conn) gnet.Action {
	cs, ok := c.Context().(*conn)
	if !ok {
		return gnet.Close
	}
	s.serve(c, cs, cs.state == stateYielded)
	return gnet.None
}

// resume goes on serving c, which has drained enough to take more output:
// idleconn's OnWritable. A connection that has yielded waits for its Wake.
func (s *server) resume(c gnet.Conn) {
	if cs, ok := c.Context().(*conn); ok && cs.state != stateYielded {
		s.serve(c, cs, true)
	}
}

// share is what one event has given a connection: at most answersPerEvent
// answers or bytesPerEvent bytes of them, then the others on its loop have
// their events (TestFairShare).
type share struct{ answers, bytes int }

func (sh *share) spent() bool { return sh.answers >= answersPerEvent || sh.bytes >= bytesPerEvent }

// serve runs c's states in turn, each step returning the next, until one
// waits for an event: more bytes, the client reading (c is not writable:
// resume goes on), the delay's timer, the close, or, once c has had its
// share of this event with requests or an answer left, the Wake yield
// asks for. queued says whether it runs in gnet's task queue (a Wake's
// OnTraffic, a timer or OnWritable), not for a read.
func (s *server) serve(c gnet.Conn, cs *conn, queued bool) {
	if cs.state == stateYielded { // its Wake, or bytes before it
		cs.state = stateIdle
		if cs.sending > 0 {
			cs.state = stateSend
		}
	}
	var sh share
	for ready := cs.state != stateDelay && cs.state != stateClosing; ready; {
		if !s.h.Writable(c) {
			return // the client reads too slowly: wait for resume
		}
		if sh.spent() {
			if cs.state == stateSend || c.InboundBuffered() > 0 {
				s.yield(c, cs, queued)
			}
			return
		}
		cs.state, ready = s.step(c, cs, &sh)
	}
}

// step runs cs's state once and returns the next state, and whether it may
// run at once: false when it waits for an event.
func (s *server) step(c gnet.Conn, cs *conn, sh *share) (state, bool) {
	switch cs.state {
	case stateIdle:
		return s.stepIdle(c, cs, sh)
	case stateLine:
		return s.stepLine(c, cs)
	case stateHead:
		return s.stepHead(c, cs, sh)
	case stateBody:
		return s.stepBody(c, cs, sh)
	case stateSend:
		return s.stepSend(c, cs, sh)
	}
	return cs.state, false // delay, closing and yielded wait for their event
}

// stepIdle looks for a request at the start of c's input, after what is
// left of the empty lines a server ignores before one (RFC 9112 section
// 2.2). A whole head is read at once; the start of one begins its
// deadline.
func (s *server) stepIdle(c gnet.Conn, cs *conn, sh *share) (state, bool) {
	buf, _ := c.Peek(-1)
	if cs.skipped < maxLeadingEmpty {
		if n := leadingEmpty(buf, maxLeadingEmpty-int(cs.skipped)); n > 0 {
			_, _ = c.Discard(n)
			cs.skipped += uint8(n)
			buf, _ = c.Peek(-1)
		}
	}
	if len(buf) == 0 {
		return stateIdle, false
	}
	if end, _ := headEnd(buf, 0); end > 0 {
		return s.readHead(c, cs, buf, end, sh)
	}
	// The head's deadline counts from this look, at most one read after
	// its first byte, and is not reset by bytes.
	s.wait(c, cs, time.Now().Add(s.cfg.headerTimeout))
	return stateLine, true
}

// stepLine waits for the request line to end and refuses it there, with
// 400, if net/http would, as net/http does: before any header field
// arrives (TestBadLineAtOnce).
func (s *server) stepLine(c gnet.Conn, cs *conn) (state, bool) {
	buf, _ := c.Peek(-1)
	i := bytes.IndexByte(buf[cs.scanned:], '\n')
	switch {
	case i < 0 && len(buf) > maxHead:
		return s.refuse(c, cs, http.StatusRequestHeaderFieldsTooLarge)
	case i < 0:
		cs.scanned = len(buf)
		return stateLine, false
	}
	if status := cs.loop.parser.checkLine(buf[:cs.scanned+i+1]); status != 0 {
		return s.refuse(c, cs, status)
	}
	cs.scanned = 0
	return stateHead, true
}

// stepHead waits for the head to end, within maxHead.
func (s *server) stepHead(c gnet.Conn, cs *conn, sh *share) (state, bool) {
	buf, _ := c.Peek(-1)
	end, next := headEnd(buf, cs.scanned)
	switch {
	case end == 0 && len(buf) > maxHead:
		return s.refuse(c, cs, http.StatusRequestHeaderFieldsTooLarge)
	case end == 0:
		cs.scanned = next
		return stateHead, false
	}
	return s.readHead(c, cs, buf, end, sh)
}

// readHead parses the head that ends at end of buf, c's input, and begins
// its request: a client that asked for it is told to send its body, and
// what has come of the body is read.
func (s *server) readHead(c gnet.Conn, cs *conn, buf []byte, end int, sh *share) (state, bool) {
	if end > maxHead {
		return s.refuse(c, cs, http.StatusRequestHeaderFieldsTooLarge)
	}
	req, status := cs.loop.parser.parse(buf[:end])
	_, _ = c.Discard(end)
	cs.scanned, cs.skipped = 0, 0
	if status != 0 {
		return s.refuse(c, cs, status)
	}
	cs.req, cs.bodyLeft, cs.chunks = req, req.bodyLen, chunks{}
	if req.sendContinue {
		if _, err := c.Write(continue100); err != nil {
			return stateClosing, false // gnet has closed c
		}
	}
	return s.stepBody(c, cs, sh)
}

var continue100 = []byte("HTTP/1.1 100 Continue\r\n\r\n")

// stepBody discards what has arrived of the request's body; once all of
// it has, the request is answered, now or after its delay. Run from the
// state that read the head, it begins the body's deadline if the body is
// not all there: the deadline counts from the end of the head.
func (s *server) stepBody(c gnet.Conn, cs *conn, sh *share) (state, bool) {
	done, status := s.discardBody(c, cs)
	switch {
	case status != 0:
		return s.refuse(c, cs, status)
	case !done:
		if cs.state != stateBody {
			s.wait(c, cs, time.Now().Add(s.cfg.bodyTimeout))
		}
		return stateBody, false
	case cs.req.delay > 0:
		return s.startDelay(c, cs)
	}
	return s.answer(c, cs, sh)
}

// discardBody discards what has arrived of the request's body and reports
// whether all of it has, or the status that refuses a malformed or too
// long chunked body.
func (s *server) discardBody(c gnet.Conn, cs *conn) (done bool, status int) {
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

// startDelay begins the delay state for a request whose answer waits: a
// timer on c's loop answers it and goes on with the requests after it. A
// connection idleconn does not track has no timer: it is closed.
func (s *server) startDelay(c gnet.Conn, cs *conn) (state, bool) {
	s.wait(c, cs, time.Time{})
	if !s.h.ConnTimer(c, &cs.delay, cs.req.delay, 0, func(c gnet.Conn) {
		cs.state, _ = s.answer(c, cs, &share{})
		s.serve(c, cs, true)
	}) {
		_ = c.Close()
		return stateClosing, false
	}
	return stateDelay, false
}

// answer writes the answer to the request read, or its head and the send
// state for a /big one, and counts it in sh. No allocation
// (TestAnswerZeroAllocs): the head is made in cs.out, which never grows
// past a head, and a big body is written from bigBlock.
func (s *server) answer(c gnet.Conn, cs *conn, sh *share) (state, bool) {
	r := &cs.req
	r.close = s.closes(r)
	cs.out = appendHead(cs.out[:0], cs.loop.date, r.status, r.length(), r.close, r.keepAlive10)
	if !r.head {
		cs.out = append(cs.out, r.body...)
	}
	if _, err := c.Write(cs.out); err != nil {
		return stateClosing, false // gnet has closed c
	}
	sh.bytes += len(cs.out)
	if !r.head && r.bigKB > 0 {
		cs.sending = r.bigKB << 10
		s.wait(c, cs, time.Time{})
		return stateSend, true
	}
	sh.answers++
	return s.finish(c, cs)
}

// closes reports whether the answer to r ends its connection: the client
// asked for it (Connection: close, or HTTP/1.0 without keep-alive), its
// framing was faulty, or the server keeps no connection alive now
// (keepsAlive: during Shutdown, as net/http's Shutdown answers requests in
// flight, or under memory pressure).
func (s *server) closes(r *request) bool {
	return r.close || !s.keepsAlive()
}

// stepSend writes what c takes of the /big answer left, a piece at a time
// while c is writable and its share lasts: what the socket does not take,
// gnet copies into its outbound buffer, so the server holds at most
// outputHigh and a piece of it, however large the answer. A write that
// fails has had gnet close c (the client reset it): the answer ends there,
// where retrying the closed connection spun its loop forever
// (TestResetMidAnswer).
func (s *server) stepSend(c gnet.Conn, cs *conn, sh *share) (state, bool) {
	for cs.sending > 0 && sh.bytes < bytesPerEvent && s.h.Writable(c) {
		n, err := c.Write(bigBlock[:min(cs.sending, piece)])
		if err != nil {
			return stateClosing, false // gnet has closed c
		}
		cs.sending -= n
		sh.bytes += n
	}
	if cs.sending > 0 {
		return stateSend, true // serve waits for resume, or yields
	}
	sh.answers++
	return s.finish(c, cs)
}

// finish ends the request answered: the connection closes once the answer
// has drained, if it is to, or waits in idle for the next request, its
// idle timeout on again, counted from now, if a waiting state turned it
// off.
func (s *server) finish(c gnet.Conn, cs *conn) (state, bool) {
	closing := cs.req.close
	cs.req = request{}
	if closing {
		return s.close(c)
	}
	if cs.state != stateIdle && s.cfg.timeouts {
		s.h.SetDeadline(c, time.Time{})
		s.h.SetIdleTimeout(c, s.cfg.idleTimeout)
	}
	return stateIdle, true
}

// refuse answers a request that cannot be read with status and closes the
// connection once the answer has drained.
func (s *server) refuse(c gnet.Conn, cs *conn, status int) (state, bool) {
	cs.out = appendHead(cs.out[:0], cs.loop.date, status, 0, true, false)
	_, _ = c.Write(cs.out)
	cs.req = request{}
	return s.close(c)
}

// close closes c once its output has drained (idleconn's CloseAfterFlush):
// the closing state.
func (s *server) close(c gnet.Conn) (state, bool) {
	if !s.h.CloseAfterFlush(c) {
		_ = c.Close() // not tracked: gnet's own close
	}
	return stateClosing, false
}

// wait begins a state that waits within a request (line, body, delay,
// send): the idle timeout off if it was on, in idle, which marks c busy,
// and deadline, or none for the zero time.
func (s *server) wait(c gnet.Conn, cs *conn, deadline time.Time) {
	if !s.cfg.timeouts {
		return
	}
	if cs.state == stateIdle {
		s.h.SetIdleTimeout(c, 0)
	}
	s.h.SetDeadline(c, deadline)
}

// yield lets the other connections of c's loop have their events before c
// goes on: gnet's Wake queues an OnTraffic behind the loop's current
// events. A Wake made in gnet's task queue would run in the same pass over
// the queue, before any event, so there it is made from a new goroutine,
// which runs once the loop has moved on (README.md, "gnet's events"). A
// yield costs gnet's Wake an allocation, and that path a goroutine: at
// most once per answersPerEvent answers or bytesPerEvent bytes.
func (s *server) yield(c gnet.Conn, cs *conn, queued bool) {
	cs.state = stateYielded
	if queued {
		go func() { _ = c.Wake(nil) }()
	} else {
		_ = c.Wake(nil)
	}
}

// onReap answers 408 to a connection closed at its header deadline.
func (s *server) onReap(c gnet.Conn, why idleconn.Reason) {
	if cs, ok := c.Context().(*conn); ok && why == idleconn.Deadline {
		cs.out = appendHead(cs.out[:0], cs.loop.date, http.StatusRequestTimeout, 0, true, false)
		_, _ = c.Write(cs.out)
	}
}

// unavailable is what a connection idleconn refuses is told before it is
// closed. idleconn refuses for MaxConns, for its memory budget at its
// whole, and once Shutdown has begun, and does not say which: the body
// names all three.
var unavailable = []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 75\r\nConnection: close\r\n\r\nserver unavailable: too many connections or too much buffered, or stopping\n")

// onRefuse tells a connection idleconn refuses why, rather than closing
// it silently.
func onRefuse(c gnet.Conn) { _, _ = c.Write(unavailable) }

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
