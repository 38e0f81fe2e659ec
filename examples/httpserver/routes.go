package main

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// What the application answers, the same on this gnet server and on its
// net/http twin (nethttp.go): GET and HEAD of / answer "hello",
// /delay?ms=N answers after N ms and /big?kb=N answers N KiB. No route
// reads a request body: both servers read bodies only to find where the
// next request begins, and discard them.
const (
	// maxDelay bounds /delay?ms=N, under any idle timeout worth having.
	maxDelay = 10 * time.Second
	// maxBigKB bounds /big?kb=N at 64 MiB: one request of about 40 bytes
	// must not make the server build, or hold, an answer without bound.
	// Its bytes come from bigBlock, shared by every response, so a
	// response costs nothing to make; what the socket does not take at
	// once, gnet copies into the connection's outbound buffer, so 64 MiB
	// is also what one answered /big can make the server hold until it
	// drains (pipelined ones add up until idleconn's output bound, issue
	// 21, stops them). 64 MiB is enough to show a client that does not
	// read stalled (TestWriteStall) and a large response cut by a close.
	maxBigKB = 64 << 10
	// maxBody bounds a request body the servers will read and discard to
	// keep the connection: a longer one, announced or found while decoding
	// chunks, is answered 413 and the connection closed.
	maxBody = 1 << 20
)

// bigBlock is the bytes /big answers with, repeated: 1 MiB, made once.
var bigBlock = bytes.Repeat([]byte("x"), 1<<20)

var (
	hello        = []byte("hello\n")
	badDelay     = []byte("ms must be a whole number of milliseconds from 0 to " + strconv.Itoa(int(maxDelay/time.Millisecond)) + "\n")
	badBig       = []byte("kb must be a whole number of KiB from 0 to " + strconv.Itoa(maxBigKB) + "\n")
	notAllowed   = []byte("GET and HEAD only\n")
	notFound     = []byte("no such path: try /, /delay?ms=N or /big?kb=N\n")
	tooLargeBody = []byte("request bodies are read and discarded up to " + strconv.Itoa(maxBody) + " bytes\n")
)

// answer is what a request gets, decided from its head alone.
type answer struct {
	status int
	body   []byte        // static: never written to
	bigKB  int           // KiB of bigBlock's bytes after body
	delay  time.Duration // how long to wait before answering
}

// length is the answer's Content-Length.
func (a answer) length() int { return len(a.body) + a.bigKB<<10 }

// route decides the answer to method on u.
func route(method string, u *url.URL) answer {
	if method != http.MethodGet && method != http.MethodHead {
		return answer{status: http.StatusMethodNotAllowed, body: notAllowed}
	}
	switch u.Path {
	case "/":
		return answer{status: http.StatusOK, body: hello}
	case "/delay":
		ms, err := strconv.Atoi(u.Query().Get("ms"))
		if d := time.Duration(ms) * time.Millisecond; err == nil && ms >= 0 && d <= maxDelay {
			return answer{status: http.StatusOK, body: hello, delay: d}
		}
		return answer{status: http.StatusBadRequest, body: badDelay}
	case "/big":
		kb, err := strconv.Atoi(u.Query().Get("kb"))
		if err == nil && kb >= 0 && kb <= maxBigKB {
			return answer{status: http.StatusOK, bigKB: kb}
		}
		return answer{status: http.StatusBadRequest, body: badBig}
	}
	return answer{status: http.StatusNotFound, body: notFound}
}
