package main

import (
	"io"
	"net/http"
	"strconv"
	"time"
)

// newNetHTTP returns the server users would write instead: Go's net/http,
// answering the same routes (routes.go) and reading bodies as this server
// does, with the timeouts net/http has set from the same flags. It is run
// with -nethttp, beside this server, by the conformance test and
// bench/cmd/httpload.
//
// net/http's WriteTimeout bounds a whole answer, from the end of its head,
// not a stall: it is set to the write-stall timeout plus maxDelay, so that
// the longest /delay is answered. Its header limit counts 4 KiB more than
// MaxHeaderBytes.
func newNetHTTP(cfg config) *http.Server {
	srv := &http.Server{Handler: http.HandlerFunc(serveNetHTTP), MaxHeaderBytes: maxHead}
	if cfg.timeouts {
		srv.ReadHeaderTimeout = cfg.headerTimeout
		srv.IdleTimeout = cfg.idleTimeout
		srv.WriteTimeout = cfg.writeStall + maxDelay
	}
	return srv
}

// serveNetHTTP reads and discards the body, up to maxBody (so net/http
// answers "100 Continue" when asked, as this server does), then answers
// as route decides.
func serveNetHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > maxBody {
		w.Header().Set("Connection", "close")
		http.Error(w, string(tooLargeBody), http.StatusRequestEntityTooLarge)
		return
	}
	switch n, err := io.CopyN(io.Discard, r.Body, maxBody+1); {
	case err != nil && err != io.EOF:
		w.Header().Set("Connection", "close")
		http.Error(w, "malformed body", http.StatusBadRequest)
		return
	case n > maxBody:
		w.Header().Set("Connection", "close")
		http.Error(w, string(tooLargeBody), http.StatusRequestEntityTooLarge)
		return
	}
	a := route(r.Method, r.URL)
	if a.delay > 0 {
		t := time.NewTimer(a.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Content-Length", strconv.Itoa(a.length()))
	w.WriteHeader(a.status)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(a.body)
	for left := a.bigKB << 10; left > 0; left -= len(bigBlock) {
		if _, err := w.Write(bigBlock[:min(left, len(bigBlock))]); err != nil {
			return
		}
	}
}
