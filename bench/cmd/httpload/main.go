// Command httpload measures examples/httpserver beside the servers users
// would pick instead, from outside, with well-known clients, and writes
// what it measured to bench/results (-label LABEL adds "-LABEL" to the
// file's name, so that a before and an after stand side by side):
//
//	httpload-load.txt      wrk at 100 and 10,000 connections, keep-alive and
//	                       Connection: close, timeouts on and off: requests/s,
//	                       p99, the server's CPU and RSS, gnet server beside
//	                       net/http (examples/httpserver -nethttp)
//	httpload-attack.txt    slowhttptest -H (slowloris), -B (slow body) and -X
//	                       (slow read, of 256 KiB and of 1 MiB answers) at
//	                       1,000-2,000 connections each, against httpserver,
//	                       net/http and examples/idleserver, all with default
//	                       flags, while a plain client fetches in a loop and
//	                       5 s after: its success rate and p99, the server's
//	                       RSS and descriptors and the kernel's TCP memory,
//	                       sampled from /proc every second, and the server's
//	                       descriptors and CPU after; httpserver also with
//	                       -max-unsent 0, the kernel's bound on its send
//	                       queues, as net/http has
//	httpload-fairness.txt  one client pipelines 1,000 /big?kb=1024 requests
//	                       while 20 others on the same event loop fetch /:
//	                       their p50, p99 and worst latency
//	httpload-retention.txt 20 keep-alive clients take a 32 MiB answer
//	                       each and stay idle: the server's RSS over the
//	                       following seconds
//	httpload-budget.txt    4,000 attacking connections at once, each within
//	                       its own limits: httpserver and net/http each
//	                       parked on /delay under 250 KB of pipelined
//	                       requests, idleserver sent 3.1 MB, none read;
//	                       the server's RSS growth, a plain client's
//	                       success rate and p99, and 100 fair clients
//	                       fetching /big beside the attackers, in
//	                       -rounds alternating rounds
//	httpload-bounds.txt    the clients idleconn's bounds are for, one at a
//	                       time: a slow pipelining reader, an input flood, a
//	                       sender that never reads; curl fetching 50 MB
//	                       Connection: close answers; SIGINT with 100
//	                       requests in flight: the server's RSS and
//	                       descriptors every second, how each client ended,
//	                       and the server's own count of why it closed them
//	httpload-burst.txt     3,000 connections dialled as fast as possible, by
//	                       one client and by 64 at once, at httpserver and
//	                       net/http under ulimit -n 200 and 1,024: whether
//	                       the server survives, its peak descriptors and
//	                       RSS, the 503s and connections held, and a plain
//	                       GET's time after
//	httpload-orphans.txt   2,000 clients ask for 128 KiB, which the server's
//	                       kernel takes whole, and never read it, until the
//	                       idle timeout closes them, at httpserver, net/http
//	                       and idleserver: the orphaned sockets the kernel
//	                       keeps sending to them, and its TCP memory, until
//	                       they are gone
//
// Run it from the bench module's directory, under the measure lock
// (bench/README.md, "The measure lock"), one scenario at a time (-h says
// how long each takes):
//
//	flock /tmp/measure.lock go run ./cmd/httpload -scenario load -label after-bounds
//	flock /tmp/measure.lock go run ./cmd/httpload -scenario attack -label after-bounds
//	flock /tmp/measure.lock go run ./cmd/httpload -scenario fairness -label after-bounds
//	flock /tmp/measure.lock go run ./cmd/httpload -scenario fairness -label before -rev 94549a5 -servers httpserver
//	flock /tmp/measure.lock go run ./cmd/httpload -scenario retention -label after-bounds
//	flock /tmp/measure.lock go run ./cmd/httpload -scenario budget
//	GOMEMLIMIT=8GiB flock /tmp/measure.lock go run ./cmd/httpload -scenario budget -rounds 1 -label gomemlimit
//	flock /tmp/measure.lock go run ./cmd/httpload -scenario bounds -label after
//	flock /tmp/measure.lock go run ./cmd/httpload -scenario bounds -label before -rev 94549a5 -servers httpserver
//	flock /tmp/measure.lock go run ./cmd/httpload -scenario burst -rounds 2
//	flock /tmp/measure.lock go run ./cmd/httpload -scenario burst -rounds 2 -label before -rev 08e89ee -servers httpserver
//	flock /tmp/measure.lock go run ./cmd/httpload -scenario orphans -rounds 1
//
// It builds the example servers from this repository (httpserver from a
// git revision with -rev, to measure a before), runs every server and
// client on 127.0.0.1, and raises its open-files limit to the hard limit
// for 10,000 connections. It needs wrk, slowhttptest and curl and installs
// Debian's packages with apt-get when they are missing, which needs root.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	scenario := flag.String("scenario", "", "load (about 7 min with the defaults), attack (about 13 min), fairness (about 1 min), retention (about 7 min), bounds (about 5 min), budget (about 2 min a round), burst (about 40 s a round) or orphans (about 3 min a round; at most 10 min a server)")
	out := flag.String("out", "", "directory of the results file (default: the bench module's results)")
	rev := flag.String("rev", "", "build examples/httpserver from this git revision, not the working tree")
	label := flag.String("label", "", "what this run measures (before, after), written into the results file's name")
	servers := flag.String("servers", "httpserver,httpserver -max-unsent 0,net/http,idleserver", "attack, fairness, bounds, budget, burst, orphans: the servers to measure, of these and, for budget, idleserver -max-unsent 0 (a -rev from before net/http's twin has httpserver only); burst knows httpserver and net/http, its default; orphans httpserver, net/http and idleserver, its default")
	duration := flag.Duration("duration", 5*time.Second, "load: length of each wrk run")
	rounds := flag.Int("rounds", 3, "load: runs of each configuration, alternating, for medians and spread; bounds: rounds of curl's fetches and of the SIGINT; budget: rounds of every server's attack, alternating; burst: rounds of every burst; orphans: rounds of every server's clients")
	attackFor := flag.Duration("attack-for", 30*time.Second, "attack: length of each slowhttptest run; budget: of each server's attack")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./cmd/httpload -scenario load|attack|fairness|retention|bounds|budget|burst|orphans [flags]\n\n"+
			"Installs wrk, slowhttptest and curl with apt-get (as root) when missing.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	err := func() error {
		if flag.NArg() > 0 {
			return fmt.Errorf("unexpected argument %q: httpload takes flags only", flag.Arg(0))
		}
		if *rounds < 1 {
			return fmt.Errorf("-rounds %d: want at least 1", *rounds)
		}
		root, err := repoRoot()
		if err != nil {
			return err
		}
		if *out == "" {
			*out = filepath.Join(root, "bench", "results")
		}
		if err := raiseFileLimit(); err != nil {
			return err
		}
		tmp, err := os.MkdirTemp("", "httpload")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		bins, err := build(root, tmp, *rev)
		if err != nil {
			return err
		}
		loadBefore := loadAverage()
		var r *results
		switch *scenario {
		case "load":
			if err := need("wrk", "wrk"); err != nil {
				return err
			}
			r, err = runLoad(bins, *duration, *rounds)
		case "attack":
			if err := need("slowhttptest", "slowhttptest"); err != nil {
				return err
			}
			r, err = runAttack(bins, strings.Split(*servers, ","), *attackFor)
		case "fairness":
			r, err = runFairness(bins, strings.Split(*servers, ","))
		case "retention":
			r, err = runRetention(bins)
		case "bounds":
			if err := need("curl", "curl"); err != nil {
				return err
			}
			r, err = runBounds(bins, strings.Split(*servers, ","), *rounds)
		case "budget":
			r, err = runBudget(bins, strings.Split(*servers, ","), *attackFor, *rounds)
		case "burst":
			r, err = runBurst(bins, serverList(*servers, burstServers), *rounds)
		case "orphans":
			r, err = runOrphans(bins, serverList(*servers, orphanServerNames), *rounds)
		default:
			return fmt.Errorf("-scenario %q: want load, attack, fairness, retention, bounds, budget, burst or orphans", *scenario)
		}
		if err != nil {
			return err
		}
		r.settings = append([]string{
			"command: go run ./cmd/httpload " + strings.Join(os.Args[1:], " "),
			"date: " + time.Now().UTC().Format(time.RFC3339),
			fmt.Sprintf("machine: %s, %d CPUs, %s", runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), runtime.Version()),
			"httpserver: " + bins.rev,
			// Anything else running shows here: the lock orders measurers, not every process.
			"load average (1, 5, 15 min) before: " + loadBefore + "; after: " + loadAverage(),
		}, r.settings...)
		if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
			// The servers inherit it, and idleconn derives its default
			// budget from it.
			r.settings = append(r.settings, "GOMEMLIMIT="+v+" in the environment, which every server inherits")
		}
		if *label != "" {
			r.settings = slices.Insert(r.settings, 5, "label: "+*label)
		}
		return r.write(*out, *label)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpload:", err)
		os.Exit(1)
	}
}

// serverList returns the servers -servers names, if it was given, and a
// scenario's own list otherwise.
func serverList(servers string, own []string) []string {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "servers" })
	if given {
		return strings.Split(servers, ",")
	}
	return own
}

// loadAverage returns the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// raiseFileLimit raises the open-files limit to the hard limit, for this
// process and the servers and clients it starts: 10,000 connections need
// as many descriptors on each side.
func raiseFileLimit() error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	lim.Cur = lim.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}
