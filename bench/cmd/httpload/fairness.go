package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	fairOthers    = 20   // clients fetching / in a loop
	fairPipelined = 1000 // requests the pipelining client sends at once
	fairKB        = 1024 // KiB each of them asks for
	fairQuiet     = 2 * time.Second
)

// runFairness measures what one pipelining client does to the others on
// its event loop: httpserver runs with one loop, so every connection
// shares it; net/http, a goroutine per connection, is measured beside it.
func runFairness(bins binaries, servers []string) (*results, error) {
	r := &results{
		name:  "httpload-fairness",
		title: "One pipelining client and the others on its event loop",
		settings: []string{
			fmt.Sprintf("%d clients, each on its own keep-alive connection, fetch / every 5 ms; after %v one more client writes %d requests for /big?kb=%d at once and reads the answers as fast as it can",
				fairOthers, fairQuiet, fairPipelined, fairKB),
			"httpserver with -loops 1, so that every connection shares the pipelining client's loop; net/http as it comes",
		},
		notes: []string{"Latencies are the other clients', from writing a request to reading its whole answer; RSS is the server's peak (VmHWM)."},
	}
	t := table{caption: "Other clients' latency", header: []string{"server", "phase", "requests", "p50 ms", "p99 ms", "max ms", "pipelined answers in s", "peak RSS MiB"}}
	for _, s := range []struct {
		name string
		args []string
	}{{"httpserver", []string{"-loops", "1"}}, {"net/http", []string{"-nethttp"}}} {
		if !slices.Contains(servers, s.name) {
			continue
		}
		rows, err := fairOnce(bins, s.name, s.args)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", s.name, err)
		}
		t.rows = append(t.rows, rows...)
	}
	r.tables = []table{t}
	return r, nil
}

func fairOnce(bins binaries, name string, args []string) ([][]string, error) {
	srv, err := start(name, bins.httpserver, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	if err != nil {
		return nil, err
	}
	defer srv.stop()

	var (
		pipelining  atomic.Bool
		stop        = make(chan struct{})
		wg          sync.WaitGroup
		mu          sync.Mutex
		quiet, busy []time.Duration
		clientErr   error
	)
	for range fairOthers {
		c, err := net.Dial("tcp", srv.addr)
		if err != nil {
			close(stop)
			wg.Wait()
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			br := bufio.NewReader(c)
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				during := pipelining.Load()
				began := time.Now()
				_ = c.SetDeadline(began.Add(30 * time.Second))
				err := roundTrip(c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				took := time.Since(began)
				mu.Lock()
				switch {
				case err != nil:
					clientErr = err
				case during || pipelining.Load():
					busy = append(busy, took)
				default:
					quiet = append(quiet, took)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(fairQuiet)

	p, err := net.Dial("tcp", srv.addr)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	pipelining.Store(true)
	began := time.Now()
	_ = p.SetDeadline(began.Add(2 * time.Minute))
	req := fmt.Sprintf("GET /big?kb=%d HTTP/1.1\r\nHost: x\r\n\r\n", fairKB)
	go func() { _, _ = io.WriteString(p, strings.Repeat(req, fairPipelined)) }()
	br := bufio.NewReaderSize(p, 1<<16)
	for i := range fairPipelined {
		resp, err := http.ReadResponse(br, nil)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
		}
		if err != nil {
			pipelining.Store(false)
			close(stop)
			wg.Wait()
			return nil, fmt.Errorf("pipelined answer %d: %v", i, err)
		}
	}
	pipelined := time.Since(began)
	pipelining.Store(false)
	close(stop)
	wg.Wait()
	if clientErr != nil {
		return nil, fmt.Errorf("a plain client: %v", clientErr)
	}
	peak, err := srv.sample()
	if err != nil {
		return nil, err
	}
	row := func(phase string, ds []time.Duration, extra ...string) []string {
		slices.Sort(ds)
		cells := []string{name, phase, fmt.Sprint(len(ds)), ms(percentile(ds, 50)), ms(percentile(ds, 99)), ms(percentile(ds, 100))}
		return append(cells, extra...)
	}
	return [][]string{
		row("quiet", quiet, "", ""),
		row("while one client pipelines", busy, fmt.Sprintf("%.2f", pipelined.Seconds()), mib(peak.hwm)),
	}, nil
}

// roundTrip writes req on c and reads its whole answer.
func roundTrip(c net.Conn, br *bufio.Reader, req string) error {
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return err
}
