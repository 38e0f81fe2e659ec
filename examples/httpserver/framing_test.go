package main

import (
	"bufio"
	"bytes"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/require"
)

// TestHeadEnd checks where headEnd says a head ends, whole and as its
// bytes arrive one at a time, against where http.ReadRequest stops.
func TestHeadEnd(t *testing.T) {
	for _, tc := range []struct {
		in  string
		end int // 0: no whole head
	}{
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /", 27},
		{"GET / HTTP/1.1\nHost: x\n\nGET /", 24},
		{"GET / HTTP/1.1\r\nHost: x\n\r\n", 26},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r", 0},
		{"GET / HTTP/1.1\r\nHost: x\r\n", 0},
		{"GET / HTTP/1.1\r\nHost: x\r\r\n\r\n", 28},
		{"GET / HTTP/1.1\r\nX: a\r\r\n", 0}, // "\r" alone is not an empty line
		{"\r\n", 2},
		{"\n", 1},
		{"\r", 0},
		{"", 0},
	} {
		end, _ := headEnd([]byte(tc.in), 0)
		require.Equal(t, tc.end, end, "%q", tc.in)
		// The same, a byte at a time.
		next, end := 0, 0
		for i := 1; i <= len(tc.in) && end == 0; i++ {
			end, next = headEnd([]byte(tc.in[:i]), next)
		}
		require.Equal(t, tc.end, end, "%q a byte at a time", tc.in)
		if end > 1 && strings.HasPrefix(tc.in, "GET") {
			br := bufio.NewReader(strings.NewReader(tc.in))
			if _, err := http.ReadRequest(br); err == nil {
				require.Equal(t, len(tc.in)-end, br.Buffered(), "%q: ReadRequest stopped elsewhere", tc.in)
			}
		}
	}
}

// TestHeadEndRandomSplits checks that a head found in random pieces ends
// where the whole one does.
func TestHeadEndRandomSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab: \r\n\r\n")
	for range 2000 {
		in := make([]byte, 1+rng.IntN(40))
		for i := range in {
			in[i] = alphabet[rng.IntN(len(alphabet))]
		}
		want, _ := headEnd(in, 0)
		next, end, n := 0, 0, 0
		for end == 0 && n < len(in) {
			n = min(len(in), n+1+rng.IntN(5))
			end, next = headEnd(in[:n], next)
		}
		require.Equal(t, want, end, "%q", in)
	}
}

func TestHeadEndZeroAllocs(t *testing.T) {
	head := []byte("GET / HTTP/1.1\r\nHost: x\r\nUser-Agent: test\r\n\r\n")
	require.Zero(t, testing.AllocsPerRun(100, func() {
		_, next := headEnd(head[:30], 0)
		headEnd(head, next)
	}))
}

// TestChunks checks the chunked decoder on bodies whole, a byte at a
// time, and with the next request after them.
func TestChunks(t *testing.T) {
	for _, tc := range []struct {
		in   string
		err  error // nil: the body is whole and valid
		used int   // for a valid body: its length
	}{
		{"5\r\nhello\r\n0\r\n\r\n", nil, 15},
		{"5;ext=1;x\r\nhello\r\n0\r\n\r\nGET", nil, 23},
		{"5 \r\nhello\r\n0\r\n\r\n", nil, 16},
		{"A\r\n0123456789\r\n0\r\nX-Trailer: yes\r\nY: \t1\r\n\r\n", nil, 43},
		{"0\r\nX: a\r\n b\r\n\r\n", nil, 15}, // an obs-folded trailer line, as textproto takes it
		{"000\r\n\r\n", nil, 7},
		{"5\nhello\r\n0\r\n\r\n", errChunkLine, 0},
		{"5\r\nhelloXX0\r\n\r\n", errChunkLine, 0},
		{"5 ;x\r\nhello\r\n0\r\n\r\n", errChunkLine, 0},
		{"x\r\n", errChunkLine, 0},
		{"\r\n", errChunkLine, 0},
		{"5\r\r\nhello\r\n0\r\n\r\n", errChunkLine, 0},
		{"10000000000000000\r\n", errChunkLine, 0},
		{"100001\r\n", errBodyTooLarge, 0},
		{"0 / HTTP/1.1\r\n\r\n", errChunkLine, 0},
		{"0\r\nX : a\r\n\r\n", errChunkLine, 0},
		{"0\r\nX: \x00\r\n\r\n", errChunkLine, 0},
		{"0\r\n a\r\n\r\n", errChunkLine, 0},
		{strings.Repeat("1", maxChunkLine+1), errChunkTooLong, 0},
		{"1;" + strings.Repeat("x", maxChunkLine) + "\r\n", errChunkTooLong, 0},
	} {
		var d chunks
		n, done, err := d.decode([]byte(tc.in))
		require.Equal(t, tc.err, err, "%q", tc.in)
		if tc.err == nil {
			require.True(t, done, "%q", tc.in)
			require.Equal(t, tc.used, n, "%q", tc.in)
		}
		// A byte at a time, as bytes might arrive.
		d = chunks{}
		buf, used := []byte{}, 0
		err, done = nil, false
		for i := 0; i < len(tc.in) && !done && err == nil; i++ {
			buf = append(buf, tc.in[i])
			n, done, err = d.decode(buf)
			buf = buf[n:]
			used += n
		}
		require.Equal(t, tc.err, err, "%q a byte at a time", tc.in)
		if tc.err == nil {
			require.True(t, done)
			require.Equal(t, tc.used, used, "%q a byte at a time", tc.in)
		}
	}
}

func TestChunksZeroAllocs(t *testing.T) {
	body := []byte("5;e\r\nhello\r\n3\r\nabc\r\n0\r\nX: y\r\n\r\n")
	require.Zero(t, testing.AllocsPerRun(100, func() {
		var d chunks
		n, _, _ := d.decode(body[:9])
		d.decode(body[n:])
	}))
}

// FuzzChunks checks the decoder against net/http's own reading of a
// chunked request body: where net/http reads a body whole, the decoder
// finds the same end, and where net/http refuses one, so does the
// decoder, with the bytes whole or in two pieces. Left out are two kinds
// of trailer line net/http's textproto lets through, where the decoder is
// as strict as net/http's server is with a head: one ending in a bare LF,
// and a field name with a space in it (Go issue 34540).
func FuzzChunks(f *testing.F) {
	for _, s := range []string{"5\r\nhello\r\n0\r\n\r\n", "3;x\r\nabc\r\n0\r\nA: b\r\n\r\nGET", "0\r\n\r\n", "1\r\nx\r\n0\r\nA: b\r\n c\r\n\r\n", "f\n"} {
		f.Add([]byte(s), uint(3))
	}
	head := "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
	f.Fuzz(func(t *testing.T, body []byte, split uint) {
		br := bufio.NewReader(io.MultiReader(strings.NewReader(head), bytes.NewReader(body)))
		req, err := http.ReadRequest(br)
		require.NoError(t, err)
		_, goErr := io.Copy(io.Discard, req.Body)
		goUsed := len(body) - br.Buffered()
		if goErr == nil && lenient(body[:goUsed]) {
			return
		}
		var d chunks
		n, done, err := d.decode(body)
		if err == errBodyTooLarge {
			return
		}
		switch {
		case goErr == nil:
			require.NoError(t, err)
			require.True(t, done)
			require.Equal(t, goUsed, n)
		case err == nil && !done && (goErr == io.ErrUnexpectedEOF || strings.Contains(goErr.Error(), "unexpected EOF") ||
			strings.Contains(goErr.Error(), "suspiciously long trailer")):
			// The body is not all there: net/http, reading from a
			// reader that has ended, says so in one of these ways.
		default:
			require.Error(t, err, "net/http: %v", goErr)
		}
		// In two pieces.
		cut := int(split % uint(len(body)+1))
		var d2 chunks
		n1, done1, err1 := d2.decode(body[:cut])
		if err1 != nil || done1 {
			require.Equal(t, err, err1)
			return
		}
		n2, done2, err2 := d2.decode(body[n1:])
		require.Equal(t, err, err2)
		if err == nil {
			require.Equal(t, done, done2)
			if done {
				require.Equal(t, n, n1+n2)
			}
		}
	})
}

// lenient reports whether body has a line that textproto lets through in
// a trailer and the decoder refuses: one ending in a bare LF, or a field
// name with a space in it.
func lenient(body []byte) bool {
	for i, c := range body {
		if c == '\n' && (i == 0 || body[i-1] != '\r') {
			return true
		}
	}
	for line := range bytes.Lines(body) {
		if name, _, ok := bytes.Cut(line, []byte(":")); ok && bytes.ContainsAny(name, " \t") {
			return true
		}
	}
	return false
}

// fakeConn is the part of a gnet.Conn that serve and answer use, over a
// byte slice: it counts what is written and the Wakes asked for.
type fakeConn struct {
	gnet.Conn
	in      []byte
	written []byte
	wakes   int
}

func (f *fakeConn) Peek(int) ([]byte, error) { return f.in, nil }
func (f *fakeConn) InboundBuffered() int     { return len(f.in) }
func (f *fakeConn) Discard(n int) (int, error) {
	if n <= 0 || n > len(f.in) { // as gnet does
		n = len(f.in)
	}
	f.in = f.in[n:]
	return n, nil
}
func (f *fakeConn) Write(p []byte) (int, error) {
	f.written = append(f.written, p...)
	return len(p), nil
}
func (f *fakeConn) Writev(bs [][]byte) (int, error) {
	n := 0
	for _, b := range bs {
		f.Write(b)
		n += len(b)
	}
	return n, nil
}
func (f *fakeConn) Wake(gnet.AsyncCallback) error { f.wakes++; return nil }

// The socket takes everything at once: nothing is ever pending, and the
// connection, not tracked (no descriptor), is always writable.
func (f *fakeConn) OutboundBuffered() int { return 0 }
func (f *fakeConn) Fd() int               { return -1 }

// tracedConn is a fakeConn with the context OnTraffic reads, whose input
// is received into one buffer, so that receiving allocates nothing.
type tracedConn struct {
	*fakeConn
	ctx any
	buf []byte
}

func newTracedConn(cs *conn) *tracedConn {
	return &tracedConn{fakeConn: &fakeConn{}, ctx: cs, buf: make([]byte, 0, 64<<10)}
}

func (t *tracedConn) Context() any       { return t.ctx }
func (t *tracedConn) SetContext(ctx any) { t.ctx = ctx }

// receive adds b to the input, as a read does, and runs OnTraffic.
func (t *tracedConn) receive(s *server, b string) {
	if len(t.in) == 0 {
		t.in = t.buf[:0]
	}
	t.in = append(t.in, b...)
	s.OnTraffic(t)
}

// fakeServer returns a server with its timeouts off, which serve and
// answer then never hand to idleconn, and a connection of it.
func fakeServer(t testing.TB) (*server, *conn) {
	cfg := testConfig
	cfg.timeouts = false
	srv, err := newServer(cfg)
	require.NoError(t, err)
	l := &loopState{parser: newHeadParser()}
	l.refresh()
	return srv, &conn{loop: l}
}

// TestFairShare pipelines more requests than one event may answer: serve
// answers its share (answersPerEvent answers, or bytesPerEvent bytes and
// the rest of a piece), asks gnet for another turn with one Wake, and
// answers the rest in later turns.
func TestFairShare(t *testing.T) {
	for _, tc := range []struct {
		req   string
		n     int
		share int // answers a turn, or 0: a turn is bounded by bytes
	}{
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 200, answersPerEvent},
		{"GET /big?kb=400 HTTP/1.1\r\nHost: x\r\n\r\n", 10, 0},
	} {
		srv, cs := fakeServer(t)
		fc := &fakeConn{in: []byte(strings.Repeat(tc.req, tc.n))}
		answered := 0
		for turn := 1; fc.InboundBuffered() > 0 || cs.sending > 0; turn++ {
			fc.written = fc.written[:0]
			srv.serve(fc, cs, false)
			got := bytes.Count(fc.written, []byte("HTTP/1.1 200 OK"))
			if tc.share > 0 {
				require.Equal(t, min(tc.share, tc.n-answered), got, "turn %d", turn)
			} else {
				require.LessOrEqual(t, len(fc.written), bytesPerEvent+piece+got*256, "turn %d", turn)
			}
			answered += got
			done := fc.InboundBuffered() == 0 && cs.sending == 0
			require.Equal(t, turn, fc.wakes+boolInt(done), "turn %d", turn)
		}
		require.Equal(t, tc.n, answered)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestAnswerZeroAllocs checks that writing an answer allocates nothing,
// small or big.
func TestAnswerZeroAllocs(t *testing.T) {
	srv, cs := fakeServer(t)
	fc := &fakeConn{}
	for _, a := range []answer{{status: 200, body: hello}, {status: 200, bigKB: 3 << 10}} {
		srv.answer(fc, cs, &share{}) // warm cs.out and the loop's iov
		require.Zero(t, testing.AllocsPerRun(100, func() {
			fc.written = fc.written[:0]
			cs.req = request{answer: a}
			srv.answer(fc, cs, &share{})
		}))
	}
}

// TestServeAllocs checks that serving a request allocates only what
// parsing its head does (net/http.ReadRequest's request and header), and,
// for a head that arrives in pieces, checking its request line: the steps
// of its states allocate nothing, whether it arrives whole, with others,
// or in pieces.
func TestServeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race sync.Pool drops what is put at random, so ReadRequest's allocations vary from run to run")
	}
	const get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	srv, cs := fakeServer(t)
	head, line := []byte(get), []byte("GET / HTTP/1.1\r\n")
	parse := testing.AllocsPerRun(100, func() { cs.loop.parser.parse(head) })
	checkLine := testing.AllocsPerRun(100, func() { cs.loop.parser.checkLine(line) })
	require.NotZero(t, parse)
	for _, tc := range []struct {
		name   string
		events []string
		want   float64
	}{
		{"whole", []string{get}, parse},
		{"pipelined", []string{strings.Repeat(get, 8)}, 8 * parse},
		{"split", []string{"GET / HTTP/1.1\r\nHo", "st: x\r\n\r\n"}, checkLine + parse},
		{"split in the line", []string{"GET / HT", "TP/1.1\r\nHost: x\r\n\r\n"}, checkLine + parse},
	} {
		tc2 := newTracedConn(cs)
		got := testing.AllocsPerRun(100, func() {
			tc2.written = tc2.written[:0]
			for _, ev := range tc.events {
				tc2.receive(srv, ev)
			}
		})
		require.Empty(t, tc2.in, tc.name)
		require.Equal(t, tc.want, got, tc.name)
	}
}
