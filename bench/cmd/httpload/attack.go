package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// attackMode is a slowhttptest mode and its arguments.
type attackMode struct {
	name        string
	args        []string // beside -c, -r, -l and -u
	path        string   // the attacking requests' target
	conns, rate int      // slowhttptest's -c and -r
}

var attackModes = []attackMode{
	{"slowloris (-H)", []string{"-H", "-i", "5", "-x", "24"}, "/", 2000, 400},
	{"slow body (-B)", []string{"-B", "-i", "5", "-x", "24", "-s", "8192"}, "/", 2000, 400},
	// Each connection asks for 3 x 256 KiB and reads 32 bytes every 5 s.
	{"slow read (-X)", []string{"-X", "-k", "3", "-n", "5", "-z", "32", "-w", "512", "-y", "1024"}, "/big?kb=256", 2000, 400},
	// One 1 MiB answer a connection, from the clients that found, on
	// 2026-12-05, httpserver's loops spinning for good on writes to
	// connections their clients had reset (TestResetMidAnswer).
	{"slow read (-X)", []string{"-X", "-k", "1", "-n", "5", "-z", "32", "-w", "512", "-y", "1024"}, "/big?kb=1024", 1000, 500},
}

// attackServer is a server with its default flags and the plain client
// that checks it stays usable.
type attackServer struct {
	name  string
	bin   func(binaries) string
	args  []string
	fetch func(addr string) error // one plain request, on a new connection
}

var attackServers = []attackServer{
	{"httpserver", func(b binaries) string { return b.httpserver }, nil, fetchHTTP},
	// The kernel's bound on what it holds unsent, in place of
	// httpserver's (TCP_NOTSENT_LOWAT): what net/http has too.
	{"httpserver -max-unsent 0", func(b binaries) string { return b.httpserver }, []string{"-max-unsent", "0"}, fetchHTTP},
	{"net/http", func(b binaries) string { return b.httpserver }, []string{"-nethttp"}, fetchHTTP},
	{"idleserver", func(b binaries) string { return b.idleserver }, nil, fetchEcho},
}

// recovery is how long the plain client goes on once slowhttptest has
// ended and closed its connections: a server that has recovered answers
// it as before the attack, holds the descriptors it held idle and spends
// next to no CPU.
const recovery = 5 * time.Second

// runAttack runs each slowhttptest mode against each of servers while a
// plain client fetches in a loop, and after it.
func runAttack(bins binaries, servers []string, length time.Duration) (*results, error) {
	r := &results{
		name:  "httpload-attack",
		title: "Slow-client attacks: examples/httpserver, net/http and examples/idleserver",
		settings: []string{
			fmt.Sprintf("slowhttptest -c CONNS -r RATE -p 3 -l %d MODE ARGS -u http://ADDR/PATH, each mode against each server started afresh with its default flags", int(length.Seconds())),
			plainSetting,
			"server RSS and descriptors from /proc/PID every second; idle is before the attack",
			"kernel TCP: the memory of every TCP socket on the machine, /proc/net/sockstat's TCP mem, sampled with them: mostly the server's send queues, which no RSS shows",
			fmt.Sprintf("after: once slowhttptest has ended and closed its connections, the plain client runs %v more; the server's descriptors at its end and its CPU over it (100%% is one CPU)", recovery),
		},
		notes: []string{
			"slowhttptest's connections: from its per-second statistics (-g), the most open at once and, when it ended, how many were open and how many closed. " +
				"net/http runs with ReadHeaderTimeout 5s, IdleTimeout 60s and WriteTimeout 20s (-write-stall 10s + the longest /delay), and no ReadTimeout: " +
				"nothing bounds how slowly it may read a body. The server's status line is examples/httpserver's and examples/idleserver's at their stop, " +
				"which counts the connections idleconn closed, by reason, the attack's among them; net/http, or a server from before, prints none.",
		},
	}
	t := table{caption: "Per attack", header: []string{"server", "attack", "path", "conns, rate /s", "idle RSS MiB", "peak RSS MiB", "peak - idle MiB", "kernel TCP MiB, peak - idle", "peak fds",
		"plain fetches made/due", "success % of due", "plain p99 ms from due", "slowhttptest's connections",
		"after: success % of due", "after: p99 ms", "after: fds", "after: CPU %", "server's status line at its stop"}}
	for _, mode := range attackModes {
		for _, s := range attackServers {
			if !slices.Contains(servers, s.name) {
				continue
			}
			row, err := attackOnce(bins, s, mode, length)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %v", s.name, mode.name, err)
			}
			t.rows = append(t.rows, row)
		}
	}
	r.tables = []table{t}
	return r, nil
}

func attackOnce(bins binaries, s attackServer, mode attackMode, length time.Duration) ([]string, error) {
	srv, idle, err := startIdle(s.name, s.bin(bins), append([]string{"-addr", "127.0.0.1:0"}, s.args...)...)
	if err != nil {
		return nil, err
	}
	defer srv.stop()

	stop := make(chan struct{})
	var (
		wg    sync.WaitGroup
		plain plainClient
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		plain.run(s.fetch, srv.addr, stop)
	}()
	peak := idle
	idleTCP, err := tcpMemory()
	if err != nil {
		return nil, err
	}
	peakTCP := idleTCP
	sampling := make(chan struct{})
	go func() {
		defer close(sampling)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if p, err := srv.sample(); err == nil {
					peak.rss, peak.fds = max(peak.rss, p.rss), max(peak.fds, p.fds)
				}
				if m, err := tcpMemory(); err == nil {
					peakTCP = max(peakTCP, m)
				}
			}
		}
	}()
	stats, err := os.MkdirTemp("", "slowhttptest")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stats)
	args := append(slices.Clone(mode.args), "-c", strconv.Itoa(mode.conns), "-r", strconv.Itoa(mode.rate), "-p", "3", "-g", "-o", filepath.Join(stats, "run"),
		"-l", strconv.Itoa(int(length.Seconds())), "-u", "http://"+srv.addr+mode.path)
	out, err := exec.Command("slowhttptest", args...).CombinedOutput()
	close(stop)
	wg.Wait()
	<-sampling
	if err != nil {
		return nil, fmt.Errorf("slowhttptest %s: %v: %s", strings.Join(args, " "), err, out)
	}
	end, err := attackEnd(filepath.Join(stats, "run.csv"))
	if err != nil {
		return nil, err
	}
	after, err := afterAttack(srv, s.fetch)
	if err != nil {
		return nil, err
	}
	status, err := srv.stopStatus()
	if err != nil {
		status = err.Error() // a server the attack left stuck: a result, not the tool's failure
	}
	return append([]string{s.name, mode.name, mode.path, fmt.Sprintf("%d, %d", mode.conns, mode.rate), mib(idle.rss), mib(peak.rss), mib(peak.rss - idle.rss), mib(peakTCP - idleTCP), strconv.Itoa(peak.fds),
		plain.fetches(), plain.success(), plain.p99(), end}, append(after, status)...), nil
}

// afterAttack runs the plain client against srv for recovery once an attack
// has ended: its success rate and p99, and the server's descriptors at
// the end and CPU over it.
func afterAttack(srv *server, fetch func(addr string) error) ([]string, error) {
	before, err := srv.sample()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	stop := make(chan struct{})
	time.AfterFunc(recovery, func() { close(stop) })
	var plain plainClient
	plain.run(fetch, srv.addr, stop)
	after, err := srv.sample()
	if err != nil {
		return nil, err
	}
	cpu := float64(after.cpu-before.cpu) / float64(time.Since(began))
	return []string{plain.success(), plain.p99(), strconv.Itoa(after.fds), fmt.Sprintf("%.0f", cpu*100)}, nil
}

// attackEnd reads slowhttptest's per-second statistics (-g): the most of
// its connections open at once and, at its end, how many were open and how
// many the server had closed.
func attackEnd(csv string) (string, error) {
	data, err := os.ReadFile(csv)
	if err != nil {
		return "", err
	}
	peak, closed, connected := 0, "", ""
	for line := range strings.Lines(string(data)) {
		f := strings.Split(strings.TrimSpace(line), ",") // Seconds,Closed,Pending,Connected,Service Available
		if len(f) < 4 || f[0] == "Seconds" {
			continue
		}
		n, _ := strconv.Atoi(f[3])
		peak, closed, connected = max(peak, n), f[1], f[3]
	}
	return fmt.Sprintf("peak %d open; at the end %s open, %s closed", peak, connected, closed), nil
}

// plainClient is the client that checks a server under attack stays
// usable: one request due every plainEvery, each on a new connection,
// made when it is due whatever the earlier ones are doing (open loop), so
// that a server that answers late is charged every request it delays,
// not only the one a closed loop would have waited on (coordinated
// omission). A request's latency counts from when it was due. At most
// plainInFlight wait at once; a request due beyond them is not made, and
// counts as failed.
type plainClient struct {
	mu        sync.Mutex
	latencies []time.Duration // of the requests answered, from when each was due
	failures  int             // made and failed
	due, made int
}

const (
	plainEvery    = 10 * time.Millisecond
	plainInFlight = 1000
)

// plainSetting describes the plain client for a results file.
const plainSetting = "plain client: a request due every 10 ms, each on a new connection (HTTP GET /, or a 5-byte echo for idleserver), " +
	"made when due whatever the earlier ones are doing (open loop, at most 1,000 in flight), 5 s timeout, during the whole run; " +
	"its latency counts from when it was due, and a request due but not made counts as failed"

// run makes the requests due until stop is closed, then waits for those
// in flight.
func (p *plainClient) run(fetch func(addr string) error, addr string, stop <-chan struct{}) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, plainInFlight)
	start := time.Now()
	for i := 1; ; i++ {
		due := start.Add(time.Duration(i) * plainEvery)
		wait := time.NewTimer(time.Until(due))
		select {
		case <-stop:
			wait.Stop()
			return
		case <-wait.C:
		}
		p.mu.Lock()
		p.due++
		p.mu.Unlock()
		select {
		case slots <- struct{}{}:
		default:
			continue // too many in flight: due, not made
		}
		p.mu.Lock()
		p.made++
		p.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := fetch(addr)
			<-slots
			p.mu.Lock()
			defer p.mu.Unlock()
			if err != nil {
				p.failures++
				return
			}
			p.latencies = append(p.latencies, time.Since(due))
		}()
	}
}

// fetches, success and p99 are the client's figures once it has run:
// requests made of those due, the percentage of those due answered, and
// the p99 of the answered ones' latency in ms, from when each was due.
func (p *plainClient) fetches() string { return fmt.Sprintf("%d/%d", p.made, p.due) }

func (p *plainClient) success() string {
	if p.due > 0 {
		return fmt.Sprintf("%.2f", 100*float64(len(p.latencies))/float64(p.due))
	}
	return fmt.Sprintf("%.2f", 0.0)
}

func (p *plainClient) p99() string {
	slices.Sort(p.latencies)
	return ms(percentile(p.latencies, 99))
}

// fetchHTTP makes one GET / on a new connection and checks it is answered
// 200.
func fetchHTTP(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// fetchEcho sends 5 bytes to an echo server on a new connection and reads
// them back.
func fetchEcho(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return err
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != "ping\n" {
		return fmt.Errorf("echoed %q", buf)
	}
	return nil
}

// tcpMemory returns the memory the kernel holds for every TCP socket on
// the machine, in bytes: /proc/net/sockstat's "TCP: ... mem PAGES".
func tcpMemory() (int64, error) {
	pages, err := sockstatTCP("mem")
	return pages * int64(os.Getpagesize()), err
}

// sockstatTCP returns the field named field of /proc/net/sockstat's TCP
// line, the whole machine's: "mem" (pages), "orphan" (sockets closed by
// their process whose connection the kernel still keeps), "inuse".
func sockstatTCP(field string) (int64, error) {
	stat, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(stat)) {
		if rest, ok := strings.CutPrefix(line, "TCP:"); ok {
			f := strings.Fields(rest)
			for i := 0; i+1 < len(f); i += 2 {
				if f[i] == field {
					return strconv.ParseInt(f[i+1], 10, 64)
				}
			}
		}
	}
	return 0, fmt.Errorf("/proc/net/sockstat: no TCP %s", field)
}
