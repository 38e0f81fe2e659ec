package main

import (
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/panjf2000/gnet/v2"
)

// results is the server's account of the connections it reaped, by kind
// of client.
type results struct {
	mu     sync.Mutex
	byKind [kinds]kindResults
	conns  [kinds]int64 // connections the clients made
}

type kindResults struct {
	idle, lifetime int64 // reaped, by reason
	late           int64 // reaped more than Resolution after they were due
	worst          time.Duration
	wrong          int64 // reaped although active
}

// reaped accounts for c, which the reaper is about to close. It runs on
// c's event loop.
func (r *results) reaped(c gnet.Conn, why idleconn.Reason, cfg config, res time.Duration) {
	now := time.Now()
	t := c.Context().(*connTimes)
	k, ok := kindOf(c.RemoteAddr())
	if !ok {
		return
	}
	var lateness time.Duration
	if why == idleconn.Idle {
		last := t.opened
		if t.lastData.After(last) {
			last = t.lastData
		}
		lateness = now.Sub(last) - cfg.timeout
	} else {
		lateness = now.Sub(t.opened) - cfg.maxLife
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	kr := &r.byKind[k]
	if why == idleconn.Idle {
		kr.idle++
	} else {
		kr.lifetime++
	}
	if lateness > res {
		kr.late++
	}
	kr.worst = max(kr.worst, lateness)
	// Chatty sessions end before MaxLifetime and trickling clients send
	// every Timeout/2: neither may ever be closed as idle.
	if k == chatty || (k == trickle && why == idleconn.Idle) {
		kr.wrong++
	}
}

func (r *results) wronglyClosed() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, kr := range r.byKind {
		n += kr.wrong
	}
	return n
}

// print writes the final table.
func (r *results) print(out io.Writer, cfg config, res time.Duration, peak, measured int, mem uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "kind\tclients\tconnections\treaped idle\treaped lifetime\treaped late\tworst lateness\twrongly closed\t")
	var total kindResults
	var clients, conns int64
	for k := range kinds {
		kr := r.byKind[k]
		fmt.Fprintf(w, "%v\t%d\t%d\t%d\t%d\t%d\t%v\t%d\t\n", k, cfg.clients[k], r.conns[k],
			kr.idle, kr.lifetime, kr.late, kr.worst.Round(time.Millisecond), kr.wrong)
		total.idle += kr.idle
		total.lifetime += kr.lifetime
		total.late += kr.late
		total.worst = max(total.worst, kr.worst)
		total.wrong += kr.wrong
		clients += int64(cfg.clients[k])
		conns += r.conns[k]
	}
	fmt.Fprintf(w, "total\t%d\t%d\t%d\t%d\t%d\t%v\t%d\t\n", clients, conns,
		total.idle, total.lifetime, total.late, total.worst.Round(time.Millisecond), total.wrong)
	_ = w.Flush()
	fmt.Fprintf(out, "\nlate means closed more than the resolution (%v) after Timeout or MaxLifetime was up.\n", res)
	perConn := 0.0
	if measured > 0 {
		perConn = float64(mem) / float64(measured)
	}
	fmt.Fprintf(out, "peak open connections: %d\n", peak)
	fmt.Fprintf(out, "wheel memory: %d KiB for %d connections, %.0f bytes each: the heap growth of the same reaper\n",
		mem>>10, measured, perConn)
	fmt.Fprintln(out, "  (wheels, fd slots with their timers) given one connection per client before the run")
}
