package main

import (
	"strings"
	"testing"
)

// BenchmarkServe runs requests through OnTraffic on a connection whose
// socket takes everything, timeouts off: the server's own cost of a
// request, head parsing (net/http.ReadRequest) included. Each request is
// one event, or two for "split" (its head in two reads), and "pipelined"
// is 16 requests in one event.
func BenchmarkServe(b *testing.B) {
	const get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, bc := range []struct {
		name   string
		events []string
	}{
		{"get", []string{get}},
		{"pipelined", []string{strings.Repeat(get, 16)}},
		{"split", []string{"GET / HTTP/1.1\r\nHo", "st: x\r\n\r\n"}},
		{"chunked", []string{"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"}},
		{"big", []string{"GET /big?kb=64 HTTP/1.1\r\nHost: x\r\n\r\n"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv, cs := fakeServer(b)
			tc := newTracedConn(cs)
			b.ReportAllocs()
			for b.Loop() {
				tc.written = tc.written[:0]
				for _, ev := range bc.events {
					tc.receive(srv, ev)
				}
			}
			if len(tc.in) != 0 {
				b.Fatalf("%d bytes left unread", len(tc.in))
			}
		})
	}
}
