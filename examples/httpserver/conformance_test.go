package main

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fate is what becomes of a connection once its answers are read.
type fate int

const (
	open    fate = iota // a request sent after the row's answers is answered
	closed              // the server closed it
	waiting             // no answer comes: the server waits for more bytes
)

func (f fate) String() string { return [...]string{"open", "closed", "waiting"}[f] }

// conformanceRow is raw bytes sent to both servers and what each must do.
type conformanceRow struct {
	name string
	send []string // written in turn, a pause between, so that they arrive apart
	// halfClose shuts the client's write side after the last piece.
	halfClose bool
	head      bool  // the answers are to HEAD requests
	want      []int // statuses, in order, 1xx included
	fate      fate
	// differ, when net/http does something else, says why; netWant and
	// netFate are then what it does.
	differ  string
	netWant []int
	netFate fate
}

const (
	getRoot = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	next    = "GET /big?kb=1 HTTP/1.1\r\nHost: x\r\n\r\n" // a request after the row's: 200
	probe   = "GET /probe HTTP/1.1\r\nHost: x\r\n\r\n"    // the fate check's: 404
	post    = "POST / HTTP/1.1\r\nHost: x\r\n"
	chunked = "Transfer-Encoding: chunked\r\n"
)

// conformance is the side-by-side table: issue 22's cases, request
// smuggling shapes (CL.TE, TE.CL, TE.TE), bad lengths, malformed heads
// and request lines, splits, pipelining, Expect and half-close.
var conformance = []conformanceRow{
	{name: "GET", send: []string{getRoot}, want: []int{200}},
	{name: "HEAD", send: []string{"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n"}, head: true, want: []int{200}},
	{name: "GET 404", send: []string{"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"}, want: []int{404}},
	{name: "POST with a body", send: []string{post + "Content-Length: 5\r\n\r\nabcde"}, want: []int{405}},
	{name: "pipelined three", send: []string{getRoot + next + getRoot}, want: []int{200, 200, 200}},
	{name: "pipelined behind a /delay", send: []string{"GET /delay?ms=20 HTTP/1.1\r\nHost: x\r\n\r\n" + next}, want: []int{200, 200}},
	{name: "head split at every byte", send: strings.Split("GET / HTTP/1.1\r\nHost: x\r\n\r\n", ""), want: []int{200}},
	{name: "head split in its last CRLF", send: []string{"GET / HTTP/1.1\r\nHost: x\r\n\r", "\n"}, want: []int{200}},
	{name: "body split from its head", send: []string{post + "Content-Length: 5\r\n\r\nab", "cde" + next}, want: []int{405, 200}},

	// Chunked bodies: decoded, never read as requests.
	{name: "POST chunked, then a GET", send: []string{post + chunked + "\r\n5\r\nhello\r\n0\r\n\r\n" + next}, want: []int{405, 200}},
	{name: "GET chunked with extension and trailer", send: []string{"GET / HTTP/1.1\r\nHost: x\r\n" + chunked + "\r\n5;a=b\r\nhello\r\n0\r\nX-T: y\r\n\r\n" + next}, want: []int{200, 200}},
	{name: "chunked split at every byte", send: strings.Split(post+chunked+"\r\n3\r\nabc\r\n0\r\n\r\n", ""), want: []int{405}},
	{name: "chunk line 0 / HTTP/1.1", send: []string{post + chunked + "\r\n0 / HTTP/1.1\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "chunk size with bare LF", send: []string{post + chunked + "\r\n5\nhello\r\n0\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "chunk data without CRLF", send: []string{post + chunked + "\r\n5\r\nhelloXX0\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "chunk size of 17 digits", send: []string{post + chunked + "\r\n00000000000000005\r\nhello\r\n0\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "chunk size not hex", send: []string{post + chunked + "\r\nz\r\n"}, want: []int{400}, fate: closed},
	{name: "trailer field with a space before its colon", send: []string{post + chunked + "\r\n0\r\nX : y\r\n\r\n" + next}, want: []int{400}, fate: closed,
		differ:  "net/http's textproto lets the space through in a trailer (Go issue 34540); ours refuses it as net/http's server refuses it in a head",
		netWant: []int{405, 200}, netFate: open},
	{name: "chunked body over 1 MiB", send: []string{post + chunked + "\r\n200000\r\n"}, want: []int{413}, fate: closed,
		differ: "ours refuses at the size line; net/http's handler reads until the data passes 1 MiB, so it waits", netWant: []int{}, netFate: waiting},

	// Smuggling shapes.
	{name: "CL.TE", send: []string{post + "Content-Length: 6\r\n" + chunked + "\r\n0\r\n\r\n" + next}, want: []int{405}, fate: closed,
		differ: "RFC 9112 6.3: a server MUST close after a request with both; net/http decodes by TE and keeps the connection", netWant: []int{405, 200}, netFate: open},
	{name: "TE.CL", send: []string{post + chunked + "Content-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n" + next}, want: []int{405}, fate: closed,
		differ: "as CL.TE", netWant: []int{405, 200}, netFate: open},
	{name: "TE.TE: two Transfer-Encoding fields", send: []string{post + chunked + "Transfer-Encoding: x\r\n\r\n0\r\n\r\n"}, want: []int{501}, fate: closed},
	{name: "TE: xchunked", send: []string{post + "Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n"}, want: []int{501}, fate: closed},
	{name: "TE: gzip, chunked", send: []string{post + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"}, want: []int{501}, fate: closed},
	{name: "TE with a space before the colon", send: []string{post + "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "TE with a tab before the value", send: []string{post + "Transfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n" + next}, want: []int{405, 200}},
	{name: "TE value obs-folded", send: []string{post + "Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n" + next}, want: []int{405, 200}},
	{name: "TE in HTTP/1.0", send: []string{"GET / HTTP/1.0\r\n" + chunked + "Connection: keep-alive\r\n\r\n5\r\nhello\r\n0\r\n\r\n"}, want: []int{200}, fate: closed,
		differ: "RFC 9112 6.1: framing faulty, close after answering; net/http ignores TE and reads the chunks as a request", netWant: []int{200, 400}, netFate: closed},

	// Content-Length.
	{name: "duplicate CL, same value", send: []string{post + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nabcde" + next}, want: []int{405, 200}},
	{name: "duplicate CL, different values", send: []string{post + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef"}, want: []int{400}, fate: closed},
	{name: "negative CL", send: []string{post + "Content-Length: -1\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "CL with a plus sign", send: []string{post + "Content-Length: +5\r\n\r\nabcde"}, want: []int{400}, fate: closed},
	{name: "CL as a list", send: []string{post + "Content-Length: 5, 5\r\n\r\nabcde"}, want: []int{400}, fate: closed},
	{name: "CL with spaces around", send: []string{post + "Content-Length:  5 \r\n\r\nabcde" + next}, want: []int{405, 200}},
	{name: "CL over 1 MiB, no body sent", send: []string{post + "Content-Length: 2000000\r\n\r\n"}, want: []int{413}, fate: closed},

	// Heads.
	{name: "obs-fold in a field", send: []string{"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n"}, want: []int{200}},
	{name: "space before a colon", send: []string{"GET / HTTP/1.1\r\nHost : x\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "HTTP/1.1 without Host", send: []string{"GET / HTTP/1.1\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "two Host fields", send: []string{"GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "Host with a slash", send: []string{"GET / HTTP/1.1\r\nHost: x/y\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "empty Host", send: []string{"GET / HTTP/1.1\r\nHost:\r\n\r\n"}, want: []int{200}},
	{name: "HTTP/1.0 without Host", send: []string{"GET / HTTP/1.0\r\n\r\n"}, want: []int{200}, fate: closed},
	{name: "HTTP/1.0 keep-alive", send: []string{"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"}, want: []int{200}},
	{name: "HTTP/2.0 in an HTTP/1 request line", send: []string{"GET / HTTP/2.0\r\nHost: x\r\n\r\n"}, want: []int{505}, fate: closed},
	{name: "HTTP/3.0", send: []string{"GET / HTTP/3.0\r\nHost: x\r\n\r\n"}, want: []int{505}, fate: closed},
	{name: "HTTP/1.2", send: []string{"GET / HTTP/1.2\r\nHost: x\r\n\r\n"}, want: []int{200}},
	{name: "malformed version", send: []string{"GET / HTTP/1.1x\r\nHost: x\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "lower-case version", send: []string{"GET / http/1.1\r\nHost: x\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "lower-case method", send: []string{"get / HTTP/1.1\r\nHost: x\r\n\r\n"}, want: []int{405}},
	{name: "method not a token", send: []string{"G(T / HTTP/1.1\r\nHost: x\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "OPTIONS *", send: []string{"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"}, want: []int{405},
		differ: "net/http answers OPTIONS * itself, before any handler; this server's routes take GET and HEAD only", netWant: []int{200}},
	{name: "absolute-form", send: []string{"GET http://x/ HTTP/1.1\r\nHost: y\r\n\r\n"}, want: []int{200}},
	{name: "absolute-form without Host", send: []string{"GET http://x/ HTTP/1.1\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "bare LF head", send: []string{"GET / HTTP/1.1\nHost: x\n\n"}, want: []int{200}},
	{name: "bare LF, two requests in one write", send: []string{"GET / HTTP/1.1\nHost: x\n\nGET /big?kb=1 HTTP/1.1\nHost: x\n\n"}, want: []int{200, 200}},
	{name: "bare LF POST with a body", send: []string{"POST / HTTP/1.1\nHost: x\nContent-Length: 5\n\nabcde" + next}, want: []int{405, 200}},
	{name: "bare CR in the request line", send: []string{"GET / HTTP/1.1\rHost: x\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "bare CR in a value", send: []string{"GET / HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "NUL in a value", send: []string{"GET / HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "NUL in the target", send: []string{"GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n"}, want: []int{400}, fate: closed},
	{name: "garbage", send: []string{"garbage\r\n\r\n" + getRoot}, want: []int{400}, fate: closed},
	{name: "leading CRLF", send: []string{"\r\n" + getRoot}, want: []int{200},
		differ:  "RFC 9112 2.2: a server SHOULD ignore an empty line before a request line; net/http does only after a POST",
		netWant: []int{400}, netFate: closed},
	// Request lines that cannot be HTTP/1.x: refused once the line has
	// ended, before any field (TestBadLineAtOnce).
	{name: "HTTP/0.9 GET /", send: []string{"GET /\r\n"}, want: []int{400}, fate: closed},
	{name: "HTTP/0.9 GET /, then a field", send: []string{"GET /\r\nHost: x\r\n"}, want: []int{400}, fate: closed},
	{name: "request line ended in a later read", send: []string{"GET /", "\r\n"}, want: []int{400}, fate: closed},
	{name: "leading CRLF, then a line of junk", send: []string{"\r\njunk\r\n"}, want: []int{400}, fate: closed},
	{name: "leading CRLF, then junk not ended", send: []string{"\r\njunk"}, want: []int{}, fate: waiting,
		differ:  "RFC 9112 2.2: the empty line is ignored, and junk may yet begin a request line, refused once it has ended; net/http refuses the empty line",
		netWant: []int{400}, netFate: closed},
	{name: "binary bytes with a LF", send: []string{"\x16\x03\x01\x00\xa5\x01\x00\n\x00"}, want: []int{400}, fate: closed},
	{name: "binary bytes, no LF", send: []string{"\x16\x03\x01\x00\xa5\x01\x00"}, want: []int{}, fate: waiting},
	{name: "HTTP/0.9 version, head not ended", send: []string{"GET / HTTP/0.9\r\n"}, want: []int{}, fate: waiting},
	{name: "CRLF after a POST body", send: []string{post + "Content-Length: 5\r\n\r\nabcde\r\n" + next}, want: []int{405, 200}},

	// Sizes: heads up to 16 KiB (net/http: MaxHeaderBytes 16 KiB, plus
	// its 4 KiB of slack).
	{name: "8 KiB target", send: []string{"GET /" + strings.Repeat("a", 8<<10) + " HTTP/1.1\r\nHost: x\r\n\r\n"}, want: []int{404}},
	{name: "12 KiB field", send: []string{"GET / HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("a", 12<<10) + "\r\n\r\n"}, want: []int{200}},
	{name: "24 KiB head", send: []string{"GET / HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("a", 24<<10) + "\r\n\r\n"}, want: []int{431}, fate: closed},
	{name: "24 KiB head in three writes", send: splitN("GET / HTTP/1.1\r\nHost: x\r\nX: "+strings.Repeat("a", 24<<10)+"\r\n\r\n", 3), want: []int{431}, fate: closed},
	{name: "24 KiB target", send: []string{"GET /" + strings.Repeat("a", 24<<10) + " HTTP/1.1\r\nHost: x\r\n\r\n"}, want: []int{431}, fate: closed},
	{name: "60 KiB head", send: []string{"GET / HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("a", 60<<10) + "\r\n\r\n"}, want: []int{431}, fate: closed},
	{name: "1,000 fields", send: []string{"GET / HTTP/1.1\r\nHost: x\r\n" + manyFields(1000) + "\r\n"}, want: []int{200}},
	{name: "2,500 fields", send: []string{"GET / HTTP/1.1\r\nHost: x\r\n" + manyFields(2500) + "\r\n"}, want: []int{431}, fate: closed},

	// Connection fate.
	{name: "pipelined after Connection: close", send: []string{"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" + next}, want: []int{200}, fate: closed},
	{name: "HTTP/1.0 pipelined", send: []string{"GET / HTTP/1.0\r\n\r\n" + next}, want: []int{200}, fate: closed},
	{name: "Expect 100-continue, body after", send: []string{post + "Content-Length: 5\r\nExpect: 100-continue\r\n\r\n", "abcde"}, want: []int{100, 405}},
	{name: "Expect 100-continue, body at once", send: []string{post + "Content-Length: 5\r\nExpect: 100-continue\r\n\r\nabcde" + next}, want: []int{100, 405, 200}},
	{name: "Expect 100-continue, GET with no body", send: []string{"GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n"}, want: []int{200}},
	{name: "Expect 100-continue, chunked", send: []string{post + chunked + "Expect: 100-continue\r\n\r\n", "3\r\nabc\r\n0\r\n\r\n"}, want: []int{100, 405}},
	{name: "Expect 100-continue over 1 MiB", send: []string{post + "Content-Length: 2000000\r\nExpect: 100-continue\r\n\r\n"}, want: []int{413}, fate: closed},
	{name: "Expect 100-continue in HTTP/1.0", send: []string{"POST / HTTP/1.0\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nabcde"}, want: []int{405}, fate: closed},
	{name: "Expect something else", send: []string{"GET / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n"}, want: []int{417}, fate: closed},
	{name: "half-close after a GET", send: []string{getRoot}, halfClose: true, want: []int{200}, fate: closed},
	{name: "half-close after a /delay", send: []string{"GET /delay?ms=50 HTTP/1.1\r\nHost: x\r\n\r\n"}, halfClose: true, want: []int{}, fate: closed,
		differ: "gnet closes a connection as soon as it reads EOF (README.md); net/http answers first", netWant: []int{200}, netFate: closed},
	{name: "/delay?ms=-5", send: []string{"GET /delay?ms=-5 HTTP/1.1\r\nHost: x\r\n\r\n"}, want: []int{400}},
	{name: "/big over the cap", send: []string{"GET /big?kb=1048576 HTTP/1.1\r\nHost: x\r\n\r\n"}, want: []int{400}},
}

// splitN cuts s into n pieces.
func splitN(s string, n int) []string {
	var pieces []string
	step := (len(s) + n - 1) / n
	for i := 0; i < len(s); i += step {
		pieces = append(pieces, s[i:min(i+step, len(s))])
	}
	return pieces
}

// manyFields returns n field lines.
func manyFields(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "X-%d: v\r\n", i)
	}
	return b.String()
}

// TestConformance sends every row of the table to this server and to
// net/http answering the same routes, each on 127.0.0.1, and checks the
// statuses and the connection's fate on both: the same, or the difference
// the row documents. With -v it prints the table.
func TestConformance(t *testing.T) {
	t.Parallel()
	ours, theirs := startBoth(t, testConfig)
	require.GreaterOrEqual(t, len(conformance), 50)
	type result struct{ ours, net outcome }
	results := make([]result, len(conformance))
	t.Run("rows", func(t *testing.T) {
		for i, row := range conformance {
			t.Run(row.name, func(t *testing.T) {
				t.Parallel()
				netWant, netFate := row.want, row.fate
				if row.differ != "" {
					netWant, netFate = row.netWant, row.netFate
				}
				results[i].ours = exchange(t, ours, row, len(row.want), row.fate)
				results[i].net = exchange(t, theirs, row, len(netWant), netFate)
				require.Equal(t, outcome{row.want, row.fate}, results[i].ours, "this server")
				require.Equal(t, outcome{netWant, netFate}, results[i].net, "net/http")
			})
		}
	})
	if testing.Verbose() {
		fmt.Fprintf(os.Stdout, "\n| row | this server | net/http | why they differ |\n|---|---|---|---|\n")
		for i, row := range conformance {
			fmt.Fprintf(os.Stdout, "| %s | %s | %s | %s |\n", row.name, results[i].ours, results[i].net, row.differ)
		}
	}
}

// startBoth runs this server and its net/http twin, with cfg, on
// 127.0.0.1 for the test, and returns their addresses.
func startBoth(t *testing.T, cfg config) (ours, theirs string) {
	_, ours = start(t, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := newNetHTTP(cfg)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ours, ln.Addr().String()
}

// outcome is what a server did with a row: its answers' statuses and the
// connection's fate.
type outcome struct {
	statuses []int
	fate     fate
}

func (o outcome) String() string { return fmt.Sprintf("%v %s", o.statuses, o.fate) }

// exchange sends row to addr, reads up to answers answers and finds the
// connection's fate: closed if the server closes it, waiting if nothing
// comes within a short wait, and open if it answers a probe request. A
// probe is not sent where the fate expected is waiting: its bytes would
// end what the server waits on.
func exchange(t *testing.T, addr string, row conformanceRow, answers int, expected fate) outcome {
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	for i, piece := range row.send {
		if i > 0 {
			time.Sleep(2 * time.Millisecond)
		}
		if _, err := io.WriteString(c, piece); err != nil {
			break // the server has closed the connection
		}
	}
	if row.halfClose {
		require.NoError(t, c.(*net.TCPConn).CloseWrite())
	}
	method := http.MethodGet
	if row.head {
		method = http.MethodHead
	}
	br := bufio.NewReader(c)
	got := outcome{statuses: []int{}}
	read := func(wait time.Duration) (int, fate, bool) {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		var timeout net.Error
		switch {
		case errors.As(err, &timeout) && timeout.Timeout():
			return 0, waiting, false
		case err != nil:
			return 0, closed, false
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, closed, false
		}
		return resp.StatusCode, open, true
	}
	wait := 3 * time.Second
	if row.fate == waiting || row.netFate == waiting {
		wait = 300 * time.Millisecond
	}
	for len(got.statuses) < answers {
		status, f, ok := read(wait)
		if !ok {
			got.fate = f
			return got
		}
		got.statuses = append(got.statuses, status)
	}
	if row.halfClose || expected == waiting {
		status, f, ok := read(wait)
		if ok {
			got.statuses = append(got.statuses, status)
		}
		got.fate = f
		return got
	}
	// Every answer expected has come: a probe tells open from closed, and
	// an answer the row did not expect shows up in its place.
	method = http.MethodGet
	if _, err := io.WriteString(c, probe); err != nil {
		got.fate = closed
		return got
	}
	for {
		status, f, ok := read(wait)
		if !ok {
			got.fate = f
			return got
		}
		if status == http.StatusNotFound {
			return got
		}
		got.statuses = append(got.statuses, status)
	}
}

// TestBadLineAtOnce sends request lines that cannot be HTTP/1.x, each
// ended by its LF with no field after it, to this server and to net/http
// side by side, both with a header timeout of a minute, and reads what
// each sends until it closes: both answer 400 and close at once, with the
// same status line and Connection: close. net/http answers, byte for byte,
// "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain;
// charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request" (-v
// prints both); this server's refusals carry its own Server, Date and
// Content-Length fields and no body.
func TestBadLineAtOnce(t *testing.T) {
	t.Parallel()
	cfg := testConfig
	cfg.headerTimeout = time.Minute
	ours, theirs := startBoth(t, cfg)

	const netAnswer = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"
	for _, tc := range []struct{ name, send string }{
		{"HTTP/0.9 GET /", "GET /\r\n"},
		{"HTTP/0.9 GET / with a bare LF", "GET /\n"},
		{"leading CRLF, then a line of junk", "\r\njunk\r\n"},
		{"three words, no version", "GET / junk\r\n"},
		{"binary bytes", "\x00\x01\x02\xff\r\n"},
		{"a TLS ClientHello", clientHello(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for name, addr := range map[string]string{"this server": ours, "net/http": theirs} {
				c := dialSend(t, addr, tc.send)
				got[name] = readAll(t, c) // within readAll's 5 s, far under the header timeout
				t.Logf("%s: %q", name, got[name])
			}
			require.Equal(t, netAnswer, got["net/http"])
			ours := got["this server"]
			require.True(t, strings.HasPrefix(ours, "HTTP/1.1 400 Bad Request\r\n"), ours)
			require.Contains(t, ours, "\r\nConnection: close\r\n")
			require.Equal(t, 1, strings.Count(ours, "HTTP/1.1"))
		})
	}
}

// clientHello returns the first bytes a TLS client sends, its ClientHello:
// what a client that takes the server for an HTTPS one sends first. It
// has a LF: the supported_groups extension's type is 0x000a.
func clientHello(t *testing.T) string {
	client, server := net.Pipe()
	defer server.Close()
	go func() {
		_ = tls.Client(client, &tls.Config{ServerName: "x"}).Handshake()
		client.Close()
	}()
	buf := make([]byte, 4096)
	require.NoError(t, server.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, err := server.Read(buf)
	require.NoError(t, err)
	require.Equal(t, byte(0x16), buf[0], "a TLS handshake record")
	require.Contains(t, string(buf[:n]), "\n")
	return string(buf[:n])
}
