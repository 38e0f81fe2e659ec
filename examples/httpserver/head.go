package main

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
)

// Framing of a request head, per RFC 9112 sections 2-6, decided as Go's
// net/http server decides it, so that both servers take the same bytes
// for the same request (conformance_test.go holds them side by side).

// maxHead bounds a request head, from its first byte to the empty line
// that ends it: a longer one gets 431 and a close, however its bytes were
// split into reads (TestHeadLimitAnySplit).
const maxHead = 16 << 10

// maxLeadingEmpty is how many CR or LF bytes before a request line are
// ignored: RFC 9112 section 2.2 asks a server to ignore at least one empty
// line there, and net/http ignores four bytes after a POST.
const maxLeadingEmpty = 4

// headEnd returns the length of the request head at the start of buf, up
// to and including the empty line that ends it, or 0 if buf holds no whole
// head yet; then next is where a later call, with more bytes, resumes the
// search (from is the next of the call before, 0 at first). A line ends
// at LF, a CR just before it being part of the line end, as net/http's
// textproto reads lines: so the head ends where http.ReadRequest stops,
// and a bare-LF head is one head, as net/http takes it. O(new bytes), no
// allocation (TestHeadEndZeroAllocs).
func headEnd(buf []byte, from int) (end, next int) {
	if from == 0 { // an empty first line is a head, which the parser refuses
		switch {
		case len(buf) >= 1 && buf[0] == '\n':
			return 1, 0
		case len(buf) >= 2 && buf[0] == '\r' && buf[1] == '\n':
			return 2, 0
		case len(buf) < 2:
			return 0, 0
		}
	}
	for i := from; ; i++ {
		j := bytes.IndexByte(buf[i:], '\n')
		if j < 0 {
			return 0, len(buf)
		}
		i += j
		switch rest := buf[i+1:]; {
		case len(rest) >= 1 && rest[0] == '\n':
			return i + 2, 0
		case len(rest) >= 2 && rest[0] == '\r' && rest[1] == '\n':
			return i + 3, 0
		case len(rest) == 0, len(rest) == 1 && rest[0] == '\r':
			return 0, i // the line after this LF has not arrived yet
		}
	}
}

// leadingEmpty returns how many of buf's first bytes, at most max, are CR
// or LF: what is left of the empty lines a server ignores before a request
// line.
func leadingEmpty(buf []byte, max int) int {
	n := 0
	for n < len(buf) && n < max && (buf[n] == '\r' || buf[n] == '\n') {
		n++
	}
	return n
}

// request is what a head decides: the answer, how the body is framed and
// what becomes of the connection.
type request struct {
	answer
	bodyLen      int64 // Content-Length, or -1 for a chunked body
	sendContinue bool  // answer "100 Continue" before reading the body
	head         bool  // HEAD: the answer has no body
	close        bool  // close once answered
	keepAlive10  bool  // an HTTP/1.0 client asked to keep the connection
}

// headParser parses request heads with net/http.ReadRequest; one per
// event loop, which reuses it for every head.
type headParser struct {
	src     bytes.Reader
	br      *bufio.Reader
	lineBuf []byte // a request line and the empty line checkLine adds
}

func newHeadParser() *headParser {
	return &headParser{br: bufio.NewReader(nil)}
}

// parse parses head, a whole head as headEnd found it, and returns the
// request, or the status that refuses it, after which the connection
// closes. The checks and their order are net/http's server's (readRequest
// and the serve loop in net/http/server.go, Go 1.26), with two framing
// faults RFC 9112 section 6 says must close the connection and net/http
// leaves open: Transfer-Encoding in an HTTP/1.0 request (6.1) and
// Content-Length beside Transfer-Encoding (6.3).
func (p *headParser) parse(head []byte) (request, int) {
	req, err := p.read(head)
	if err != nil {
		// ReadRequest's error for a Transfer-Encoding other than one
		// "chunked" is unexported; its text is all there is to go on
		// (TestConformance's TE rows guard it).
		if msg := err.Error(); strings.Contains(msg, "transfer encoding") {
			return request{}, http.StatusNotImplemented
		}
		return request{}, http.StatusBadRequest
	}
	if req.ProtoMajor != 1 && !(req.ProtoMajor == 2 && req.ProtoMinor == 0 && req.Method == "PRI" && req.RequestURI == "*") {
		return request{}, http.StatusHTTPVersionNotSupported
	}
	// textproto lets a field name with white space before its colon
	// through (Go issue 34540); the server refuses it, and any other
	// name or value it would not send.
	for name, values := range req.Header {
		if !validName(name) {
			return request{}, http.StatusBadRequest
		}
		for _, v := range values {
			if !validValue(v) {
				return request{}, http.StatusBadRequest
			}
		}
	}
	// ReadRequest drops the Host field (keeping req.Host, which an
	// absolute-form target overrides): the server's checks read it here.
	host, haveHost := field(head, "host")
	if req.ProtoAtLeast(1, 1) && !haveHost && req.Method != http.MethodConnect && req.Method != "PRI" {
		return request{}, http.StatusBadRequest
	}
	if haveHost && !validHost(host) {
		return request{}, http.StatusBadRequest
	}
	r := request{
		answer:      route(req.Method, req.URL),
		bodyLen:     req.ContentLength,
		head:        req.Method == http.MethodHead,
		close:       req.Close || req.Method == "PRI",
		keepAlive10: req.ProtoMajor == 1 && req.ProtoMinor == 0 && !req.Close,
	}
	chunked := len(req.TransferEncoding) > 0
	switch {
	case !req.ProtoAtLeast(1, 1) && hasField(head, "transfer-encoding"):
		// Framing faulty: the body's length cannot be known. Answer, and
		// close without reading on.
		r.bodyLen, r.close = 0, true
	case chunked && hasField(head, "content-length"):
		r.close = true
	}
	expect := req.Header.Get("Expect")
	switch {
	case hasToken(expect, "100-continue"):
		r.sendContinue = req.ProtoAtLeast(1, 1) && r.bodyLen != 0
	case expect != "":
		return request{}, http.StatusExpectationFailed
	}
	if r.bodyLen > maxBody {
		return request{}, http.StatusRequestEntityTooLarge
	}
	return r, 0
}

// checkLine returns 400 if net/http's server refuses line, a request line
// ended by its LF while the rest of its head has not arrived, or 0.
// net/http reads the request line first and refuses a malformed one at
// once, with 400 and a close, before any header field arrives: an HTTP/0.9
// "GET /", binary bytes, any line ReadRequest cannot parse. So does this
// server (TestBadLineAtOnce), with ReadRequest's own check: the line is
// read as a head of its own, an empty line added. A well-formed line of
// another version waits, as in net/http, for the whole head and its 505.
func (p *headParser) checkLine(line []byte) int {
	p.lineBuf = append(append(p.lineBuf[:0], line...), "\r\n"...)
	if _, err := p.read(p.lineBuf); err != nil {
		return http.StatusBadRequest
	}
	return 0
}

// read parses head with http.ReadRequest.
func (p *headParser) read(head []byte) (*http.Request, error) {
	p.src.Reset(head)
	p.br.Reset(&p.src)
	return http.ReadRequest(p.br)
}

// field returns the value of the first field of head named name, given in
// lower case, without the white space around it, and whether there is
// one. The parser has checked every field line, so a name ends at the
// colon.
func field(head []byte, name string) ([]byte, bool) {
	for line := range bytes.Lines(head) {
		if len(line) > len(name) && line[len(name)] == ':' && strings.EqualFold(string(line[:len(name)]), name) {
			return bytes.Trim(line[len(name)+1:], " \t\r\n"), true
		}
	}
	return nil, false
}

// hasField reports whether head has a field named name, in lower case.
func hasField(head []byte, name string) bool {
	_, ok := field(head, name)
	return ok
}

// hasToken reports whether the comma-separated list v holds token, in any
// case, as net/http's hasToken does for Expect and Connection.
func hasToken(v, token string) bool {
	for elem := range strings.SplitSeq(v, ",") {
		if strings.EqualFold(strings.Trim(elem, " \t"), token) {
			return true
		}
	}
	return false
}

// validName reports whether name is a token, as a field name must be
// (RFC 9110 section 5.1).
func validName[S ~string | ~[]byte](name S) bool {
	for i := 0; i < len(name); i++ {
		if !isTokenByte(name[i]) {
			return false
		}
	}
	return len(name) > 0
}

// validValue reports whether v has no control byte but HTAB, as
// httpguts.ValidHeaderFieldValue checks.
func validValue[S ~string | ~[]byte](v S) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// validHost reports whether h has only bytes a Host field may have: those
// of golang.org/x/net/http/httpguts.ValidHostHeader, which net/http's
// server checks.
func validHost(h []byte) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!$%&'()*+,-.:;=[]_~", c) >= 0) {
			return false
		}
	}
	return true
}
