//go:build unix

package main

import (
	"fmt"
	"io"
	"math"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/packwheel/packwheel/idleconn"
)

// results is the server's account of the clients' connections, by kind of
// client.
type results struct {
	mu     sync.Mutex
	byKind [kinds]kindResults
}

type kindResults struct {
	conns          int64 // accepted by the server
	idle, lifetime int64 // reaped, by reason
	byClient       int64 // closed by the client
	late           int64 // reaped more than Resolution after they were due
	worst          time.Duration
	early          int64 // reaped before Timeout of silence or MaxLifetime: a reaper bug
	behind         int64 // of a chatty or trickling client, reaped: it or its loop fell behind
}

func (r *results) opened(k kind) {
	r.mu.Lock()
	r.byKind[k].conns++
	r.mu.Unlock()
}

func (r *results) closedByClient(k kind) {
	r.mu.Lock()
	r.byKind[k].byClient++
	r.mu.Unlock()
}

// reaped accounts for the connection of info, which the reaper is about to
// close. It runs on the connection's event loop.
func (r *results) reaped(info *connInfo, why idleconn.Reason, cfg config, res time.Duration) {
	now := time.Now()
	var lateness time.Duration
	if why == idleconn.Idle {
		last := info.opened
		if info.lastData.After(last) {
			last = info.lastData
		}
		lateness = now.Sub(last) - cfg.timeout
	} else {
		lateness = now.Sub(info.opened) - cfg.maxLife
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	kr := &r.byKind[info.kind]
	if why == idleconn.Idle {
		kr.idle++
	} else {
		kr.lifetime++
	}
	switch {
	case lateness < 0:
		kr.early++
	case lateness > res:
		kr.late++
	}
	kr.worst = max(kr.worst, lateness)
	// A chatty client talks every Timeout/4 and hangs up before
	// MaxLifetime, a trickling one sends every Timeout/2: when the reaper
	// is not early, such a connection is reaped only if no data reached
	// the server for a Timeout, because the client missed its schedule or
	// the data waited unread while the loop was busy, as happens when
	// either is starved of CPU.
	if info.kind == chatty || (info.kind == trickle && why == idleconn.Idle) {
		kr.behind++
	}
}

// closedEarly returns how many connections the reaper closed before their
// time.
func (r *results) closedEarly() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, kr := range r.byKind {
		n += kr.early
	}
	return n
}

// print writes the final table.
func (r *results) print(out io.Writer, cfg config, res time.Duration, peak, measured int, mem uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "kind\tclients\tconnections\treaped idle\treaped lifetime\tclosed by client\treaped late\tworst lateness\tclosed early\tbehind\t")
	var total kindResults
	var clients int64
	row := func(name string, clients int64, kr kindResults) {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%v\t%d\t%d\t\n", name, clients, kr.conns,
			kr.idle, kr.lifetime, kr.byClient, kr.late, kr.worst.Round(time.Millisecond), kr.early, kr.behind)
	}
	for k := range kinds {
		kr := r.byKind[k]
		row(k.String(), int64(cfg.clients[k]), kr)
		total.conns += kr.conns
		total.idle += kr.idle
		total.lifetime += kr.lifetime
		total.byClient += kr.byClient
		total.late += kr.late
		total.worst = max(total.worst, kr.worst)
		total.early += kr.early
		total.behind += kr.behind
		clients += int64(cfg.clients[k])
	}
	row("total", clients, total)
	_ = w.Flush()
	// Without this, 1,000 chatty clients beside 5,000 connections closed
	// by the client read as a miscount.
	each := func(life time.Duration) int { return max(1, int(math.Round(float64(cfg.duration)/float64(life)))) }
	fmt.Fprintf(out, "\nevery client dials again as soon as its connection ends, so each makes several connections in %v:\n", cfg.duration)
	fmt.Fprintf(out, "  chatty   talk every %v and hang up after %v: about %d connections each, closed by the client\n",
		chattyPeriod(cfg.timeout), chattySession(cfg.timeout), each(chattySession(cfg.timeout)))
	fmt.Fprintf(out, "  silent   say nothing: reaped idle after %v, about %d each\n", cfg.timeout, each(cfg.timeout))
	fmt.Fprintf(out, "  trickle  send a byte every %v: reaped at MaxLifetime, %v, about %d each\n",
		cfg.timeout/2, cfg.maxLife, each(cfg.maxLife))
	fmt.Fprintf(out, "  and the end of the run closes each client's last connection (closed by client).\n")
	fmt.Fprintf(out, "connections are those the server accepted: reaped idle + reaped lifetime + closed by client.\n")
	fmt.Fprintf(out, "late means closed more than the resolution (%v) after Timeout or MaxLifetime was up;\n", res)
	fmt.Fprintf(out, "early, before it by the server's own record (must be 0).\n")
	if total.behind > 0 {
		fmt.Fprintf(out, "behind: %d connections of chatty or trickling clients were reaped, rightly: no data reached the server\n"+
			"  for a whole Timeout, as the clients or the event loops fell behind: this machine could not keep up with\n"+
			"  %d clients at -timeout %v. Run fewer clients or a longer -timeout to see them all served.\n",
			total.behind, clients, cfg.timeout)
	}
	perConn := 0.0
	if measured > 0 {
		perConn = float64(mem) / float64(measured)
	}
	fmt.Fprintf(out, "peak open connections: %d\n", peak)
	fmt.Fprintf(out, "wheel memory: %d KiB for %d connections, %.0f bytes each: the heap growth of the same reaper\n",
		mem>>10, measured, perConn)
	fmt.Fprintln(out, "  (wheels, fd slots with their timers) given one connection per client before the run")
}
