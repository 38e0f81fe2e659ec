package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The burst scenario: a burst of connections at a server whose descriptor
// limit (ulimit -n) is small, each sending a request whose answer waits,
// from one client dialling as fast as it can and from 64 at once.
const (
	burstDials   = 3000
	burstDelayMS = 3000 // each request's answer waits this long
)

var (
	burstLimits  = []int{200, 1024}
	burstDialers = []int{1, 64}
	// burstServers are the servers measured unless -servers names others.
	burstServers = []string{"httpserver", "net/http"}
)

// runBurst runs the burst at each server, under each limit and with each
// number of dialers, rounds times, each round trying every server in turn.
func runBurst(bins binaries, servers []string, rounds int) (*results, error) {
	r := &results{
		name:  "httpload-burst",
		title: "A burst of connections under a small descriptor limit: examples/httpserver and net/http",
		settings: []string{
			fmt.Sprintf("each server started afresh with its default flags under ulimit -n %v; %d connections dialled by 1 goroutine, one after another, or by 64 at once, for 5 s at most, each sending GET /delay?ms=%d and held open", burstLimits, burstDials, burstDelayMS),
			"then each connection is read for 2 ms (a 503, or nothing: held), all are closed, and 300 ms later a plain GET / is timed",
		},
		notes: []string{
			"An accept that fails for want of a descriptor (EMFILE) stops a gnet engine, and httpserver exits with status 1 (\"stopped\"); net/http's accept loop sleeps and retries. " +
				"Peak descriptors are sampled every 20 ms. Held: connections that got no answer within the read, which includes those net/http left in the listen queue.",
		},
	}
	t := table{caption: "Each burst", header: []string{"server", "ulimit -n", "dialers", "dialled", "dial time", "answered 503", "held", "peak descriptors", "peak RSS MiB", "server after", "plain GET after"}}
	for round := range rounds {
		for _, limit := range burstLimits {
			for _, dialers := range burstDialers {
				for i := range servers {
					name := servers[(i+round)%len(servers)]
					row, err := burstOnce(bins, name, limit, dialers)
					if err != nil {
						return nil, err
					}
					t.add(row...)
				}
			}
		}
	}
	r.tables = append(r.tables, t)
	return r, nil
}

func burstOnce(bins binaries, name string, limit, dialers int) ([]any, error) {
	args := []string{"-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(limit), bins.httpserver, "-addr", "127.0.0.1:0"}
	switch name {
	case "httpserver":
	case "net/http":
		args = append(args, "-nethttp")
	default:
		return nil, fmt.Errorf("-servers: the burst scenario knows httpserver and net/http, not %q", name)
	}
	srv, err := start(name, "sh", args...)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	time.Sleep(500 * time.Millisecond)

	sampling := make(chan struct{})
	samples := watch(srv, 20*time.Millisecond, -1, sampling)

	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	began := time.Now()
	deadline := began.Add(5 * time.Second)
	request := fmt.Appendf(nil, "GET /delay?ms=%d HTTP/1.1\r\nHost: burst\r\n\r\n", burstDelayMS)
	var next atomic.Int64 // dials taken, so that the dialers make burstDials in all
	for range dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= burstDials {
				if time.Now().After(deadline) {
					return
				}
				c, err := net.DialTimeout("tcp", srv.addr, 3*time.Second)
				if err != nil {
					continue
				}
				_, _ = c.Write(request)
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	dialTime := time.Since(began)
	time.Sleep(300 * time.Millisecond)
	var refused, held int
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Millisecond))
		line, err := bufio.NewReader(c).ReadString('\n')
		switch {
		case strings.Contains(line, " 503 "):
			refused++
		case err != nil && strings.Contains(err.Error(), "timeout"):
			held++
		}
	}
	for _, c := range conns {
		_ = c.Close()
	}
	time.Sleep(300 * time.Millisecond)
	close(sampling)
	peakFDs := peakOf(<-samples).fds
	after, rss := "stopped", "—"
	select {
	case <-srv.exited:
	default:
		after = "running"
		if p, err := srv.sample(); err == nil {
			rss = mib(p.hwm)
		}
	}
	plain := "failed"
	client := &http.Client{Timeout: 5 * time.Second}
	t0 := time.Now()
	if resp, err := client.Get("http://" + srv.addr + "/"); err == nil {
		_ = resp.Body.Close()
		plain = fmt.Sprintf("%d in %s ms", resp.StatusCode, ms(time.Since(t0)))
	}
	return []any{name, limit, dialers, len(conns), dialTime.Round(time.Millisecond), refused, held, peakFDs, rss, after, plain}, nil
}
