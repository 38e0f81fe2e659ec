package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// loadRun is one wrk run against one server.
type loadRun struct {
	rps    float64
	p99    time.Duration
	errors int64 // socket errors and non-2xx answers
	cpu    float64
	rss    int64 // at the end
	hwm    int64 // peak
}

// loadConfig is what a load run varies.
type loadConfig struct {
	server   string // httpserver or net/http
	conns    int
	close    bool // every request on a new connection
	timeouts bool
}

func (c loadConfig) mode() string {
	if c.close {
		return "close"
	}
	return "keep-alive"
}

// runLoad runs wrk against httpserver and its net/http twin at 100 and
// 10,000 connections, keep-alive and Connection: close, timeouts on and
// off, rounds times each, alternating, and tabulates medians and ratios.
func runLoad(bins binaries, duration time.Duration, rounds int) (*results, error) {
	var configs []loadConfig
	for _, conns := range []int{100, 10000} {
		for _, close := range []bool{false, true} {
			for _, srv := range []string{"httpserver", "net/http"} {
				for _, timeouts := range []bool{true, false} {
					configs = append(configs, loadConfig{srv, conns, close, timeouts})
				}
			}
		}
	}
	runs := map[loadConfig][]loadRun{}
	for round := range rounds {
		for _, cfg := range configs {
			run, err := loadOnce(bins, cfg, duration)
			if err != nil {
				return nil, fmt.Errorf("round %d, %+v: %v", round+1, cfg, err)
			}
			runs[cfg] = append(runs[cfg], run)
		}
	}

	r := &results{
		name:  "httpload-load",
		title: "examples/httpserver under wrk, beside net/http",
		settings: []string{
			fmt.Sprintf("wrk -t2 -c CONNS -d %v --latency --timeout 10s, %d rounds of every configuration, in turn", duration, rounds),
			"servers with default flags (gnet: 2 event loops; net/http: GOMAXPROCS 2) and -timeouts on or off; wrk and the server share the 2 CPUs",
			"close: wrk sends Connection: close and opens a new connection for every request",
		},
		notes: []string{
			"Medians over the rounds, with the lowest and highest in brackets. CPU is the server's user and system time over the run's length " +
				"(100% is one CPU); RSS is the server's at the end of the run and its peak (VmHWM).",
		},
	}
	all := table{caption: "Every configuration", header: []string{"server", "conns", "mode", "timeouts", "requests/s", "p99 ms", "CPU %", "RSS MiB", "peak RSS MiB", "errors"}}
	for _, cfg := range configs {
		rs := runs[cfg]
		rps, lo, hi := median(collect(rs, func(x loadRun) float64 { return x.rps }))
		p99, _, _ := median(collect(rs, func(x loadRun) float64 { return float64(x.p99) }))
		cpu, _, _ := median(collect(rs, func(x loadRun) float64 { return x.cpu }))
		rss, _, _ := median(collect(rs, func(x loadRun) float64 { return float64(x.rss) }))
		hwm, _, _ := median(collect(rs, func(x loadRun) float64 { return float64(x.hwm) }))
		var errs int64
		for _, x := range rs {
			errs += x.errors
		}
		all.add(cfg.server, cfg.conns, cfg.mode(), onOff(cfg.timeouts), fmt.Sprintf("%.0f [%.0f–%.0f]", rps, lo, hi),
			ms(time.Duration(p99)), fmt.Sprintf("%.0f", cpu*100), mib(int64(rss)), mib(int64(hwm)), errs)
	}
	ratios := table{caption: "Ratios, per round (a round's runs are minutes apart at most): median [lowest–highest]",
		header: []string{"conns", "mode", "httpserver / net/http requests/s (timeouts on)", "httpserver / net/http peak RSS", "httpserver / net/http p99",
			"httpserver on / off requests/s", "net/http on / off requests/s"}}
	for _, conns := range []int{100, 10000} {
		for _, close := range []bool{false, true} {
			g, n := runs[loadConfig{"httpserver", conns, close, true}], runs[loadConfig{"net/http", conns, close, true}]
			gOff, nOff := runs[loadConfig{"httpserver", conns, close, false}], runs[loadConfig{"net/http", conns, close, false}]
			ratios.add(conns, loadConfig{close: close}.mode(),
				spread(ratio(g, n, func(x loadRun) float64 { return x.rps })),
				spread(ratio(g, n, func(x loadRun) float64 { return float64(x.hwm) })),
				spread(ratio(g, n, func(x loadRun) float64 { return float64(x.p99) })),
				spread(ratio(g, gOff, func(x loadRun) float64 { return x.rps })),
				spread(ratio(n, nOff, func(x loadRun) float64 { return x.rps })))
		}
	}
	r.tables = []table{all, ratios}
	return r, nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func collect(rs []loadRun, f func(loadRun) float64) []float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return xs
}

// ratio returns f(a[i]) / f(b[i]) for each round i.
func ratio(a, b []loadRun, f func(loadRun) float64) []float64 {
	var xs []float64
	for i := range min(len(a), len(b)) {
		if d := f(b[i]); d != 0 {
			xs = append(xs, f(a[i])/d)
		}
	}
	return xs
}

func spread(xs []float64) string {
	m, lo, hi := median(xs)
	return fmt.Sprintf("%.3f [%.3f–%.3f]", m, lo, hi)
}

// loadOnce starts the server of cfg, runs wrk against it and stops it.
func loadOnce(bins binaries, cfg loadConfig, duration time.Duration) (loadRun, error) {
	args := []string{"-addr", "127.0.0.1:0", "-timeouts=" + strconv.FormatBool(cfg.timeouts)}
	if cfg.server == "net/http" {
		args = append(args, "-nethttp")
	}
	srv, err := start(cfg.server, bins.httpserver, args...)
	if err != nil {
		return loadRun{}, err
	}
	defer srv.stop()
	before, err := srv.sample()
	if err != nil {
		return loadRun{}, err
	}
	wrk := []string{"-t2", "-c" + strconv.Itoa(cfg.conns), "-d" + duration.String(), "--latency", "--timeout", "10s"}
	if cfg.close {
		wrk = append(wrk, "-H", "Connection: close")
	}
	began := time.Now()
	out, err := exec.Command("wrk", append(wrk, "http://"+srv.addr+"/")...).CombinedOutput()
	elapsed := time.Since(began)
	if err != nil {
		return loadRun{}, fmt.Errorf("wrk: %v: %s", err, out)
	}
	after, err := srv.sample()
	if err != nil {
		return loadRun{}, err
	}
	run, err := parseWrk(string(out))
	run.cpu = float64(after.cpu-before.cpu) / float64(elapsed)
	run.rss, run.hwm = after.rss, after.hwm
	return run, err
}

var (
	wrkRPS    = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)
	wrkP99    = regexp.MustCompile(`(?m)^\s+99%\s+([0-9.]+)(us|ms|s|m)\b`)
	wrkSocket = regexp.MustCompile(`(?m)^\s+Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkNon2xx = regexp.MustCompile(`(?m)^\s+Non-2xx or 3xx responses: (\d+)`)
)

// parseWrk reads requests/s, p99 and errors from wrk's output.
func parseWrk(out string) (loadRun, error) {
	var r loadRun
	m := wrkRPS.FindStringSubmatch(out)
	p := wrkP99.FindStringSubmatch(out)
	if m == nil || p == nil {
		return r, fmt.Errorf("wrk's output has no requests/s or p99: %s", out)
	}
	r.rps, _ = strconv.ParseFloat(m[1], 64)
	v, _ := strconv.ParseFloat(p[1], 64)
	unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second, "m": time.Minute}[p[2]]
	r.p99 = time.Duration(v * float64(unit))
	if s := wrkSocket.FindStringSubmatch(out); s != nil {
		for _, n := range s[1:] {
			k, _ := strconv.ParseInt(n, 10, 64)
			r.errors += k
		}
	}
	if s := wrkNon2xx.FindStringSubmatch(out); s != nil {
		k, _ := strconv.ParseInt(strings.TrimSpace(s[1]), 10, 64)
		r.errors += k
	}
	return r, nil
}
