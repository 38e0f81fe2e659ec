package main

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"time"
)

const (
	retainClients = 20
	retainKB      = 32 << 10 // 32 MiB each
	// retainSettle is how long RSS is watched after the last answer: gnet
	// returns an outbound buffer's slices to a sync.Pool, which keeps them
	// until the second garbage collection after; an idle server collects
	// only when the runtime forces it, every 2 minutes; and the runtime
	// gives memory back to the kernel down to the heap goal the collection
	// before set. With GODEBUG=gctrace=1: the live heap fell to 1 MB at
	// the second forced collection (244 s) and RSS at the third (364 s).
	retainSettle = 7 * time.Minute
	retainEvery  = 30 * time.Second
	retainPing   = 20 * time.Second // under the idle timeout
)

// runRetention measures, from outside, what httpserver keeps once large
// answers are written: 20 keep-alive clients each take a 32 MiB answer
// and then stay connected, asking only for / every 20 s so that the idle
// timeout (60 s by default) does not close them, and the server's RSS is
// sampled before, and every 30 s for 7 minutes after the last answer. A
// server that keeps a buffer the size of each connection's largest answer
// holds 20 x 32 MiB for as long as the clients stay.
func runRetention(bins binaries) (*results, error) {
	r := &results{
		name:  "httpload-retention",
		title: "What httpserver keeps after large answers",
		settings: []string{
			fmt.Sprintf("%d keep-alive clients each GET /big?kb=%d, read it whole, and stay connected, asking for / every %v; httpserver with default flags",
				retainClients, retainKB, retainPing),
			"RSS from /proc/PID/status. gnet returns the outbound buffer's slices to a sync.Pool, which drops them at the second garbage collection after; " +
				"an idle server collects only when the runtime forces it, every 2 minutes, and gives memory back to the kernel only down to the heap goal " +
				"its last collection set: so RSS falls at the third forced collection, about 6 minutes on",
		},
	}
	srv, idle, err := startIdle("httpserver", bins.httpserver, "-addr", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	conns := make([]net.Conn, retainClients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	var wg, pings sync.WaitGroup
	stop := make(chan struct{})
	defer func() { close(stop); pings.Wait() }()
	errs := make(chan error, 2*retainClients)
	for i := range conns {
		c, err := net.Dial("tcp", srv.addr)
		if err != nil {
			return nil, err
		}
		conns[i] = c
		wg.Add(1)
		pings.Add(1)
		go func() {
			defer pings.Done()
			br := bufio.NewReaderSize(c, 1<<16)
			_ = c.SetDeadline(time.Now().Add(time.Minute))
			err := roundTrip(c, br, fmt.Sprintf("GET /big?kb=%d HTTP/1.1\r\nHost: x\r\n\r\n", retainKB))
			errs <- err
			wg.Done()
			for err == nil {
				select {
				case <-stop:
					return
				case <-time.After(retainPing):
				}
				_ = c.SetDeadline(time.Now().Add(time.Minute))
				if err = roundTrip(c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
					errs <- fmt.Errorf("a client's ping: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	for range retainClients {
		if err := <-errs; err != nil {
			return nil, err
		}
	}
	t := table{caption: "Server RSS while the clients stay connected",
		header: []string{"seconds after the last answer", "RSS MiB", "peak RSS MiB", "RSS - idle MiB"}}
	t.add("before (idle)", mib(idle.rss), mib(idle.hwm), "0.0")
	for at := time.Duration(0); at <= retainSettle; at += retainEvery {
		p, err := srv.sample()
		if err != nil {
			return nil, err
		}
		select {
		case err := <-errs: // a ping failed: the server closed the connection
			return nil, err
		default:
		}
		t.add(int(at.Seconds()), mib(p.rss), mib(p.hwm), mib(p.rss-idle.rss))
		if at < retainSettle {
			time.Sleep(retainEvery)
		}
	}
	r.tables = []table{t}
	return r, nil
}
