package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The budget scenario: the attacks of issue 29, thousands of clients at
// once, each within its connection's own limits, whose sum no
// per-connection limit bounds.
const (
	budgetAttackers = 4000
	budgetFair      = 100       // clients fetching /big?kb=budgetFairKB in a loop
	budgetFairKB    = 256       // KiB each of their answers
	budgetDials     = 200       // attackers dialling at once
	budgetEchoBytes = 3_100_000 // each idleserver attacker's, in 16 KiB writes
	budgetHTTPBytes = 250_000   // each httpserver attacker's pipelined requests
)

// floodServer is a server with its default flags, the attack against it,
// and whether fair clients fetch /big beside the attackers.
type floodServer struct {
	name   string
	bin    func(binaries) string
	args   []string
	attack string
	flood  func(c net.Conn, stop <-chan struct{}) // one attacker's connection
	fetch  func(addr string) error                // the plain client's request
	fair   bool
}

var floodServers = []floodServer{
	{"httpserver", func(b binaries) string { return b.httpserver }, nil, "park /delay, pipeline 250 KB, never read", floodHTTP, fetchHTTP, true},
	{"httpserver -max-unsent 0", func(b binaries) string { return b.httpserver }, []string{"-max-unsent", "0"}, "park /delay, pipeline 250 KB, never read", floodHTTP, fetchHTTP, true},
	{"net/http", func(b binaries) string { return b.httpserver }, []string{"-nethttp"}, "park /delay, pipeline 250 KB, never read", floodHTTP, fetchHTTP, true},
	{"idleserver", func(b binaries) string { return b.idleserver }, nil, "send 3.1 MB in 16 KiB writes, never read", floodEcho, fetchEcho, false},
	{"idleserver -max-unsent 0", func(b binaries) string { return b.idleserver }, []string{"-max-unsent", "0"}, "send 3.1 MB in 16 KiB writes, never read", floodEcho, fetchEcho, false},
}

// runBudget runs each server's attack at 4,000 connections, with a plain
// client and, for the HTTP servers, 100 fair clients beside it, rounds
// times, each round starting with the next server, so that a burst of
// load on the machine falls on each server alike.
func runBudget(bins binaries, servers []string, length time.Duration, rounds int) (*results, error) {
	r := &results{
		name:  "httpload-budget",
		title: "Thousands of attacking clients at once: examples/httpserver, net/http and examples/idleserver",
		settings: []string{
			fmt.Sprintf("%d attacking connections, dialled %d at a time, each held open for the whole run (%v) and never read from; every server started afresh with its default flags", budgetAttackers, budgetDials, length),
			fmt.Sprintf("HTTP attack: each connection sends GET /delay?ms=10000, then %d bytes of pipelined GET / requests, at once", budgetHTTPBytes),
			fmt.Sprintf("echo attack: each connection sends %d bytes in 16 KiB writes, as fast as the server takes them", budgetEchoBytes),
			plainSetting,
			fmt.Sprintf("fair clients (HTTP servers): %d keep-alive connections, each fetching /big?kb=%d and reading it whole, again and again, during the whole run; a failed fetch dials again", budgetFair, budgetFairKB),
			"RSS: the server's VmRSS before the attack (idle) and VmHWM at its end (peak), from /proc",
			"kernel TCP MiB: the most /proc/net/sockstat's TCP mem was above its level before the attack, sampled every second; the whole machine's, the attackers' own sockets included, memory that no RSS shows",
		},
		notes: []string{
			"The server's status line is examples/httpserver's and examples/idleserver's at their stop: the connections idleconn closed, by reason (over budget is the memory budget's), and those it refused. net/http prints none.",
		},
	}
	t := table{caption: "Per round and server", header: []string{"round", "server", "attack", "idle RSS MiB", "peak RSS MiB", "peak - idle MiB", "kernel TCP MiB", "peak fds",
		"attackers connected", "plain fetches made/due", "plain success % of due", "plain p99 ms from due", "fair fetches", "fair failures", "fair clients never failed", "fair fewest fetches", "server's status line at its stop"}}
	var chosen []floodServer
	for _, s := range floodServers {
		if slices.Contains(servers, s.name) {
			chosen = append(chosen, s)
		}
	}
	for round := range rounds {
		for i := range chosen {
			s := chosen[(round+i)%len(chosen)]
			row, err := floodOnce(bins, s, length)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %v", round+1, s.name, err)
			}
			t.rows = append(t.rows, append([]string{strconv.Itoa(round + 1)}, row...))
		}
	}
	r.tables = []table{t}
	return r, nil
}

func floodOnce(bins binaries, s floodServer, length time.Duration) ([]string, error) {
	srv, idle, err := startIdle(s.name, s.bin(bins), append([]string{"-addr", "127.0.0.1:0"}, s.args...)...)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	idleTCP, err := tcpMemory()
	if err != nil {
		return nil, err
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup

	var plain plainClient
	wg.Add(1)
	go func() {
		defer wg.Done()
		plain.run(s.fetch, srv.addr, stop)
	}()

	// The fair clients.
	fetches := make([]int, budgetFair)
	fails := make([]int, budgetFair)
	if s.fair {
		for i := range budgetFair {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fetches[i], fails[i] = fetchBig(srv.addr, stop)
			}()
		}
	}

	// The attackers.
	var connected atomic.Int64
	dials := make(chan struct{}, budgetDials)
	for range budgetAttackers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dials <- struct{}{}
			c, err := net.DialTimeout("tcp", srv.addr, 5*time.Second)
			<-dials
			if err != nil {
				return
			}
			defer c.Close()
			connected.Add(1)
			s.flood(c, stop)
		}()
	}

	peakTCP := idleTCP
	for end := time.Now().Add(length); time.Now().Before(end); {
		time.Sleep(min(time.Second, time.Until(end)))
		if m, err := tcpMemory(); err == nil {
			peakTCP = max(peakTCP, m)
		}
	}
	peak, err := srv.sample()
	close(stop)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	status, err := srv.stopStatus()
	if err != nil {
		return nil, err
	}
	fair := []string{"—", "—", "—", "—"}
	if s.fair {
		never, fetched, failed := 0, 0, 0
		for i := range budgetFair {
			fetched += fetches[i]
			failed += fails[i]
			if fails[i] == 0 {
				never++
			}
		}
		fair = []string{strconv.Itoa(fetched), strconv.Itoa(failed), strconv.Itoa(never), strconv.Itoa(slices.Min(fetches))}
	}
	return append([]string{s.name, s.attack, mib(idle.rss), mib(peak.hwm), mib(peak.hwm - idle.rss), mib(peakTCP - idleTCP), strconv.Itoa(peak.fds),
		strconv.FormatInt(connected.Load(), 10), plain.fetches(), plain.success(), plain.p99()},
		append(fair, status)...), nil
}

// floodHTTP parks a request whose answer waits 10 s, pipelines requests
// behind it, and holds the connection, never reading.
func floodHTTP(c net.Conn, stop <-chan struct{}) {
	var b bytes.Buffer
	b.WriteString("GET /delay?ms=10000 HTTP/1.1\r\nHost: x\r\n\r\n")
	for b.Len() < budgetHTTPBytes {
		b.WriteString("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	_ = c.SetWriteDeadline(time.Now().Add(time.Minute))
	_, _ = c.Write(b.Bytes()[:budgetHTTPBytes])
	<-stop
}

// floodEcho sends budgetEchoBytes in 16 KiB writes, until the server
// closes the connection or the run ends, never reading.
func floodEcho(c net.Conn, stop <-chan struct{}) {
	chunk := make([]byte, 16<<10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sent := 0; sent < budgetEchoBytes; sent += len(chunk) {
			if _, err := c.Write(chunk[:min(len(chunk), budgetEchoBytes-sent)]); err != nil {
				return
			}
		}
	}()
	<-stop
	_ = c.Close() // ends a write blocked on a full socket
	<-done
}

// fetchBig fetches /big?kb=budgetFairKB on a keep-alive connection and
// reads each answer whole, until stop; a failed fetch dials again. It
// returns the fetches that succeeded and those that failed.
func fetchBig(addr string, stop <-chan struct{}) (ok, failed int) {
	req := "GET /big?kb=" + strconv.Itoa(budgetFairKB) + " HTTP/1.1\r\nHost: x\r\n\r\n"
	var c net.Conn
	var r *bufio.Reader
	defer func() {
		if c != nil {
			_ = c.Close()
		}
	}()
	for {
		select {
		case <-stop:
			return ok, failed
		default:
		}
		if c == nil {
			var err error
			if c, err = net.DialTimeout("tcp", addr, 5*time.Second); err != nil {
				failed++
				c = nil
				time.Sleep(10 * time.Millisecond)
				continue
			}
			r = bufio.NewReader(c)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		err := func() error {
			if _, err := io.WriteString(c, req); err != nil {
				return err
			}
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			n, err := io.Copy(io.Discard, resp.Body)
			switch {
			case err != nil:
				return err
			case resp.StatusCode != http.StatusOK || n != budgetFairKB<<10:
				return fmt.Errorf("status %d, %d bytes", resp.StatusCode, n)
			case resp.Close || strings.EqualFold(resp.Header.Get("Connection"), "close"):
				_ = c.Close() // served; the server asked to close
				c = nil
			}
			return nil
		}()
		if err != nil {
			failed++
			_ = c.Close()
			c = nil
			continue
		}
		ok++
	}
}
