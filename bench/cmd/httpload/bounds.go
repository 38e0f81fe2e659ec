package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The clients each of idleconn's bounds is for (issue 21), one at a time
// against a server started afresh with its default flags.
const (
	boundFor       = 30 * time.Second // each client's run, and the server's watch
	boundRate      = 1 << 20          // bytes a second a slow reader reads
	boundChunk     = 64 << 10         // bytes a sender writes at a time
	boundPipelined = 1000             // requests the slow reader pipelines
	boundKB        = 1024             // KiB each of them asks for
	floodCap       = 512 << 20        // bytes a flood stops at, closed or not: before the bounds, the server holds them all
	closeClients   = 20               // concurrent curl fetches of a Connection: close answer
	closeKB        = 50_000_000 / 1024
	closeRate      = "50M" // curl --limit-rate, bytes a second
	inFlight       = 100   // /delay requests in flight at a SIGINT
	inFlightMS     = 1000
	signalAfter    = 200 * time.Millisecond
)

// boundServer is a server the bounds scenario runs, and what it speaks.
type boundServer struct {
	name string
	bin  func(binaries) string
	args []string
	http bool // HTTP; otherwise echo
}

var boundServers = []boundServer{
	{"httpserver", func(b binaries) string { return b.httpserver }, nil, true},
	{"net/http", func(b binaries) string { return b.httpserver }, []string{"-nethttp"}, true},
	{"idleserver", func(b binaries) string { return b.idleserver }, nil, false},
}

// boundClient is one client a bound is for.
type boundClient struct {
	name string
	http bool // for HTTP servers; otherwise for the echo server
	run  func(addr string) clientEnd
}

var boundClients = []boundClient{
	{fmt.Sprintf("slow pipelining reader: %d x GET /big?kb=%d at once, reads 1 MiB/s", boundPipelined, boundKB), true, slowPipeliningReader},
	{"input flood: GET /delay?ms=5000, then junk as fast as the socket takes it", true, inputFlood},
	{"slow reader: sends 64 KiB chunks without pause, reads 1 MiB/s", false, slowEchoReader},
	{"never-reading sender: sends 64 KiB chunks, never reads", false, neverReader},
}

// clientEnd is how a client's run ended.
type clientEnd struct {
	sent, read int64         // bytes
	answers    int           // whole HTTP answers read
	at         time.Duration // when it ended, from its start
	how        string        // "open at the end", or the error that ended it
}

// runBounds runs each client of a bound against each server that speaks
// its protocol, sampling the server's RSS and descriptors every second,
// then has curl fetch large Connection: close answers, and stops servers
// with requests in flight.
func runBounds(bins binaries, servers []string, rounds int) (*results, error) {
	r := &results{
		name:  "httpload-bounds",
		title: "What idleconn's bounds bound, from outside: examples/httpserver, net/http and examples/idleserver",
		settings: []string{
			"each server started afresh with its default flags for each client; net/http is examples/httpserver -nethttp (ReadHeaderTimeout 5s, IdleTimeout 60s, WriteTimeout 20s)",
			fmt.Sprintf("each client runs for at most %v, alone; the server's RSS (VmRSS, VmHWM) and descriptors from /proc/PID every second for those %v", boundFor, boundFor),
			fmt.Sprintf("a flood stops at %d MiB sent, closed or not; slow readers read with a default-sized receive buffer", floodCap>>20),
			fmt.Sprintf("close: %d curl fetches at once of /big?kb=%d (50 MB), %d asking Connection: close over HTTP/1.1 and %d over HTTP/1.0, each --limit-rate %s; %d rounds",
				closeClients, closeKB, closeClients/2, closeClients/2, closeRate, rounds),
			fmt.Sprintf("shutdown: %d clients each send GET /delay?ms=%d on a connection of its own; %v after the last is written the server gets SIGINT; %d rounds",
				inFlight, inFlightMS, signalAfter, rounds),
		},
		notes: []string{
			"A client's end is what it saw: open at the end of its run, or the error that ended it, when, and after how many bytes. " +
				"Why the server closed it is in the server's status line (examples/httpserver and examples/idleserver print it at a stop: " +
				"connections closed by each of idleconn's reasons); net/http and a server from before have none.",
		},
	}
	perClient := table{caption: "Per client", header: []string{"server", "client", "idle RSS MiB", "peak RSS MiB", "peak - idle MiB", "peak fds",
		"client sent", "client read", "client's end", "server's status line at its stop"}}
	overTime := table{caption: "Server RSS MiB over each client's run", header: []string{"server", "client"}}
	for at := time.Duration(0); at <= boundFor; at += 5 * time.Second {
		overTime.header = append(overTime.header, fmt.Sprintf("%d s", int(at.Seconds())))
	}
	for _, c := range boundClients {
		for _, s := range boundServers {
			if s.http != c.http || !slices.Contains(servers, s.name) {
				continue
			}
			row, rss, err := boundOnce(bins, s, c)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %v", s.name, c.name, err)
			}
			perClient.rows = append(perClient.rows, row)
			overTime.rows = append(overTime.rows, append([]string{s.name, c.name}, rss...))
		}
	}
	closing := table{caption: "Connection: close answers of 50 MB, read at 50 MB/s (curl)", header: []string{"server", "fetches", "whole", "cut (curl exit 18)",
		"other failures", "seconds per round: median [lowest–highest]", "peak RSS MiB"}}
	shutdown := table{caption: "SIGINT with requests in flight", header: []string{"server", "requests", "answered 200, whole", "other ends",
		"exit after SIGINT, s: median [lowest–highest]", "exit status", "server's status line at its stop (last round)"}}
	for _, s := range boundServers[:2] {
		if !slices.Contains(servers, s.name) {
			continue
		}
		row, err := closeRounds(bins, s, rounds)
		if err != nil {
			return nil, fmt.Errorf("%s, close: %v", s.name, err)
		}
		closing.rows = append(closing.rows, row)
		if row, err = shutdownRounds(bins, s, rounds); err != nil {
			return nil, fmt.Errorf("%s, shutdown: %v", s.name, err)
		}
		shutdown.rows = append(shutdown.rows, row)
	}
	r.tables = []table{perClient, overTime, closing, shutdown}
	return r, nil
}

// watch samples srv's /proc every interval, the first at once, until it
// has n samples or stop is closed, and then returns them.
func watch(srv *server, every time.Duration, n int, stop <-chan struct{}) <-chan []proc {
	out := make(chan []proc, 1)
	go func() {
		var ps []proc
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			if p, err := srv.sample(); err == nil {
				ps = append(ps, p)
			}
			if len(ps) == n {
				out <- ps
				return
			}
			select {
			case <-stop:
				out <- ps
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// peakOf returns the highest RSS and descriptors among ps.
func peakOf(ps []proc) (p proc) {
	for _, x := range ps {
		p.rss, p.hwm, p.fds = max(p.rss, x.rss), max(p.hwm, x.hwm), max(p.fds, x.fds)
	}
	return p
}

// boundOnce runs client c against server s for boundFor and returns its
// row and the server's RSS every 5 s.
func boundOnce(bins binaries, s boundServer, c boundClient) ([]string, []string, error) {
	srv, idle, err := startIdle(s.name, s.bin(bins), append([]string{"-addr", "127.0.0.1:0"}, s.args...)...)
	if err != nil {
		return nil, nil, err
	}
	defer srv.stop()
	// The watch lasts boundFor, whenever the client ends.
	samples := watch(srv, time.Second, int(boundFor/time.Second)+1, nil)
	end := c.run(srv.addr)
	ps := <-samples
	if err := srv.stop(); err != nil {
		return nil, nil, err
	}
	peak := peakOf(ps)
	peak.rss = max(peak.rss, peak.hwm) // VmHWM catches a peak between samples
	var rss []string
	for i := 0; i < len(ps); i += 5 {
		rss = append(rss, mib(ps[i].rss))
	}
	status := srv.status
	if status == "" {
		status = "—"
	}
	read := bytesOf(end.read)
	if s.http {
		read += fmt.Sprintf(", %d answers", end.answers)
	}
	return []string{s.name, c.name, mib(idle.rss), mib(peak.rss), mib(peak.rss - idle.rss), fmt.Sprint(peak.fds),
		bytesOf(end.sent), read, end.how, status}, rss, nil
}

// ending describes err, the error that ended a client's run at, from its
// start; a deadline means the connection was still open at the end.
func ending(err error, at time.Duration) string {
	switch {
	case err == nil:
		return fmt.Sprintf("done at %.2f s", at.Seconds())
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "open at the end"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("closed by the server at %.2f s (EOF)", at.Seconds())
	case errors.Is(err, syscall.ECONNRESET):
		return fmt.Sprintf("reset by the server at %.2f s", at.Seconds())
	case errors.Is(err, syscall.EPIPE):
		return fmt.Sprintf("closed by the server at %.2f s (broken pipe)", at.Seconds())
	}
	return fmt.Sprintf("%v at %.2f s", err, at.Seconds())
}

// pacedReader reads from r at most rate bytes a second, on average since
// began, in reads of at most 16 KiB.
type pacedReader struct {
	r     io.Reader
	rate  int64
	began time.Time
	n     atomic.Int64
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if ahead := time.Duration(p.n.Load())*time.Second/time.Duration(p.rate) - time.Since(p.began); ahead > 0 {
		time.Sleep(ahead)
	}
	n, err := p.r.Read(b[:min(len(b), 16<<10)])
	p.n.Add(int64(n))
	return n, err
}

// sender writes chunks of junk to c until an error, the connection's
// deadline, or limit bytes, and counts them.
func sender(c net.Conn, limit int64, sent *atomic.Int64) error {
	junk := []byte(strings.Repeat("x", boundChunk))
	for sent.Load() < limit {
		n, err := c.Write(junk)
		sent.Add(int64(n))
		if err != nil {
			return err
		}
	}
	return nil
}

// dialBounded dials addr for one of the clients above, which runs for at
// most boundFor from when it began.
func dialBounded(addr string) (net.Conn, time.Time, error) {
	began := time.Now()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, began, err
	}
	_ = c.SetDeadline(began.Add(boundFor))
	return c, began, nil
}

// slowPipeliningReader writes boundPipelined requests for boundKB KiB at
// once and reads the answers at boundRate.
func slowPipeliningReader(addr string) clientEnd {
	c, began, err := dialBounded(addr)
	if err != nil {
		return clientEnd{how: err.Error()}
	}
	defer c.Close()
	var sent atomic.Int64
	go func() {
		req := fmt.Sprintf("GET /big?kb=%d HTTP/1.1\r\nHost: x\r\n\r\n", boundKB)
		n, _ := io.WriteString(c, strings.Repeat(req, boundPipelined))
		sent.Store(int64(n))
	}()
	pr := &pacedReader{r: c, rate: boundRate, began: began}
	br := bufio.NewReaderSize(pr, 16<<10)
	end := clientEnd{}
	for end.answers < boundPipelined {
		resp, err := http.ReadResponse(br, nil)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
		}
		if err != nil {
			end.how = ending(err, time.Since(began))
			break
		}
		end.answers++
	}
	if end.how == "" {
		end.how = ending(nil, time.Since(began))
	}
	end.sent, end.read = sent.Load(), pr.n.Load()
	return end
}

// inputFlood asks for a delayed answer, then sends junk as fast as the
// socket takes it, up to floodCap.
func inputFlood(addr string) clientEnd {
	c, began, err := dialBounded(addr)
	if err != nil {
		return clientEnd{how: err.Error()}
	}
	defer c.Close()
	var sent atomic.Int64
	n, err := io.WriteString(c, "GET /delay?ms=5000 HTTP/1.1\r\nHost: x\r\n\r\n")
	sent.Add(int64(n))
	if err == nil {
		err = sender(c, floodCap, &sent)
	}
	end := clientEnd{sent: sent.Load(), at: time.Since(began)}
	end.how = ending(err, end.at)
	if err == nil {
		end.how = fmt.Sprintf("stopped at %d MiB, open, at %.2f s", floodCap>>20, end.at.Seconds())
	}
	return end
}

// slowEchoReader sends chunks without pause and reads the echo at
// boundRate.
func slowEchoReader(addr string) clientEnd {
	c, began, err := dialBounded(addr)
	if err != nil {
		return clientEnd{how: err.Error()}
	}
	defer c.Close()
	var sent atomic.Int64
	wrote := make(chan error, 1)
	var wroteAt time.Duration
	go func() {
		err := sender(c, 1<<62, &sent)
		wroteAt = time.Since(began)
		wrote <- err
	}()
	pr := &pacedReader{r: c, rate: boundRate, began: began}
	_, err = io.Copy(io.Discard, struct{ io.Reader }{pr})
	readAt := time.Since(began)
	if err == nil {
		err = io.EOF // io.Copy hides the EOF that ended it
	}
	_ = c.SetDeadline(time.Now()) // the sender may be blocked
	werr := <-wrote
	end := clientEnd{sent: sent.Load(), read: pr.n.Load()}
	// The first error the client saw says how it ended.
	if werr != nil && !errors.Is(werr, os.ErrDeadlineExceeded) && wroteAt < readAt {
		end.how = "write: " + ending(werr, wroteAt)
	} else {
		end.how = "read: " + ending(err, readAt)
	}
	return end
}

// neverReader sends chunks and never reads.
func neverReader(addr string) clientEnd {
	c, began, err := dialBounded(addr)
	if err != nil {
		return clientEnd{how: err.Error()}
	}
	defer c.Close()
	var sent atomic.Int64
	err = sender(c, 1<<62, &sent)
	return clientEnd{sent: sent.Load(), how: ending(err, time.Since(began))}
}

// closeRounds has curl fetch closeClients large answers that end their
// connections, at once, rounds times, and counts the answers cut.
func closeRounds(bins binaries, s boundServer, rounds int) ([]string, error) {
	srv, err := start(s.name, s.bin(bins), append([]string{"-addr", "127.0.0.1:0"}, s.args...)...)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	stop := make(chan struct{})
	samples := watch(srv, time.Second, -1, stop)
	var whole, cut int
	var others []string
	var secs []float64
	for range rounds {
		began := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range closeClients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				args := []string{"-sS", "-o", "/dev/null", "-w", "%{size_download} %{http_code}", "-H", "Connection: close", "--limit-rate", closeRate}
				if i%2 == 1 {
					args = append(args, "--http1.0")
				}
				out, err := exec.Command("curl", append(args, fmt.Sprintf("http://%s/big?kb=%d", srv.addr, closeKB))...).Output()
				mu.Lock()
				defer mu.Unlock()
				var exit *exec.ExitError
				switch {
				case err == nil && string(out) == fmt.Sprintf("%d 200", closeKB<<10):
					whole++
				case errors.As(err, &exit) && exit.ExitCode() == 18:
					cut++
				case err != nil:
					others = append(others, fmt.Sprintf("%v (%s)", err, out))
				default:
					others = append(others, fmt.Sprintf("got %q", out))
				}
			}()
		}
		wg.Wait()
		secs = append(secs, time.Since(began).Seconds())
	}
	close(stop)
	peak := peakOf(<-samples)
	med, lo, hi := median(secs)
	other := fmt.Sprint(len(others))
	if len(others) > 0 {
		other += ": " + strings.Join(others, "; ")
	}
	return []string{s.name, fmt.Sprint(rounds * closeClients), fmt.Sprint(whole), fmt.Sprint(cut), other,
		fmt.Sprintf("%.2f [%.2f–%.2f]", med, lo, hi), mib(max(peak.rss, peak.hwm))}, nil
}

// shutdownRounds stops the server with inFlight requests in flight,
// rounds times, and counts the requests answered.
func shutdownRounds(bins binaries, s boundServer, rounds int) ([]string, error) {
	var answered int
	ends := map[string]int{}
	var took []float64
	statuses := map[string]int{}
	var status string
	for range rounds {
		srv, err := start(s.name, s.bin(bins), append([]string{"-addr", "127.0.0.1:0"}, s.args...)...)
		if err != nil {
			return nil, err
		}
		got, exit, err := shutdownOnce(srv)
		if err != nil {
			_ = srv.cmd.Process.Kill()
			return nil, err
		}
		took = append(took, exit.Seconds())
		statuses[srv.exitStatus()]++
		for how, n := range got {
			if how == "answered" {
				answered += n
			} else {
				ends[how] += n
			}
		}
		status = srv.status
	}
	med, lo, hi := median(took)
	var other []string
	for how, n := range ends {
		other = append(other, fmt.Sprintf("%d %s", n, how))
	}
	slices.Sort(other)
	var exits []string
	for st, n := range statuses {
		exits = append(exits, fmt.Sprintf("%s (%d of %d)", st, n, rounds))
	}
	slices.Sort(exits)
	if status == "" {
		status = "—"
	}
	return []string{s.name, fmt.Sprint(rounds * inFlight), fmt.Sprint(answered), strings.Join(other, ", "),
		fmt.Sprintf("%.2f [%.2f–%.2f]", med, lo, hi), strings.Join(exits, ", "), status}, nil
}

// shutdownOnce sends inFlight /delay requests, then SIGINT, and returns
// how each request ended and how long the server took to exit.
func shutdownOnce(srv *server) (map[string]int, time.Duration, error) {
	var wg sync.WaitGroup
	sent := make(chan error, inFlight)
	ends := make(chan string, inFlight)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", srv.addr)
			if err != nil {
				sent <- err
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			_, err = fmt.Fprintf(c, "GET /delay?ms=%d HTTP/1.1\r\nHost: x\r\n\r\n", inFlightMS)
			sent <- err
			if err != nil {
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			var body []byte
			if err == nil {
				body, err = io.ReadAll(resp.Body)
			}
			switch {
			case err == nil && resp.StatusCode == http.StatusOK && string(body) == "hello\n":
				ends <- "answered"
			case err == nil:
				ends <- fmt.Sprintf("answered %d", resp.StatusCode)
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
				ends <- "closed unanswered (EOF)"
			case errors.Is(err, syscall.ECONNRESET):
				ends <- "reset unanswered"
			default:
				ends <- err.Error()
			}
		}()
	}
	for range inFlight {
		if err := <-sent; err != nil {
			cancel()
			wg.Wait()
			return nil, 0, fmt.Errorf("a request: %v", err)
		}
	}
	time.Sleep(signalAfter)
	took, _ := srv.interrupt() // its exit status is kept for exitStatus
	wg.Wait()
	close(ends)
	got := map[string]int{}
	for how := range ends {
		got[how]++
	}
	return got, took, nil
}
