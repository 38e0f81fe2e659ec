package main

import (
	"fmt"
	"net"
	"os"
	"time"
)

// The orphans scenario: clients that ask for an answer the server's kernel
// takes whole, and never read it, held open until the server's idle
// timeout closes them; then what the kernel keeps of the closed sockets,
// orphaned, sending to peers that do not read: their count and the
// machine's TCP memory, until they are gone.
const (
	orphanClients = 2000
	orphanKiB     = 128 // each client's answer (HTTP /big) or echo, which the server's kernel takes whole
	orphanIdle    = "2s"
	orphanWatch   = 150 * time.Second // the longest it watches after the server closed them all
)

// orphanServers are the servers the scenario knows, with the flags that
// give each the idle timeout orphanIdle; orphanServerNames, in order, are
// those measured unless -servers names others.
var (
	orphanServers = map[string][]string{
		"httpserver": {"-idle", orphanIdle},
		"net/http":   {"-nethttp", "-idle", orphanIdle},
		"idleserver": {"-timeout", orphanIdle},
	}
	orphanServerNames = []string{"httpserver", "net/http", "idleserver"}
)

// runOrphans runs the clients at each server, rounds times, each round
// trying every server in turn.
func runOrphans(bins binaries, servers []string, rounds int) (*results, error) {
	r := &results{
		name:  "httpload-orphans",
		title: "Idle connections closed with their answers unread: examples/httpserver, net/http and examples/idleserver",
		settings: []string{
			fmt.Sprintf("each server started afresh with its default flags but an idle timeout of %s (httpserver and net/http -idle, idleserver -timeout)", orphanIdle),
			fmt.Sprintf("%d clients, each with a 4 KiB receive buffer, ask for %d KiB (GET /big?kb=%d, or as many bytes sent to the echo server) and never read, each held open until the run ends", orphanClients, orphanKiB, orphanKiB),
			fmt.Sprintf("/proc/net/sockstat's TCP line sampled every second, the whole machine's, until its orphans are back to their level before the clients, or %v after the server closed the last client", orphanWatch),
		},
		notes: []string{
			"An orphan is a socket its process has closed whose connection the kernel keeps: a plain close of a socket whose send queue still holds data leaves the kernel sending it, to a peer whose receive window stays shut, for as long as it keeps probing. " +
				"Kernel TCP MiB is above the level before the clients and includes the clients' own sockets, which stay open. " +
				"All closed: the time from the last request to the server's descriptors back at their idle count, sampled every second; orphans gone: the time from then until the orphans are back to their level before the clients, — if there were none. " +
				"A run starts once the orphans of the one before are gone.",
		},
	}
	t := table{caption: "Each run", header: []string{"server", "all closed, s after the requests", "peak orphans", "orphans 10 s after", "orphans gone, s after all closed", "peak kernel TCP MiB", "kernel TCP MiB 10 s after", "server's status line at its stop"}}
	for round := range rounds {
		for i := range servers {
			name := servers[(i+round)%len(servers)]
			row, err := orphansOnce(bins, name)
			if err != nil {
				return nil, err
			}
			t.add(row...)
		}
	}
	r.tables = append(r.tables, t)
	return r, nil
}

// orphansOnce starts the server called name, sends it the clients, and
// watches the machine's orphans and TCP memory until the server has closed
// every client and the orphans it left are gone, or orphanWatch has
// passed since: the run's row. It waits first for the orphans of an
// earlier run to go, so that they do not count in this one's.
func orphansOnce(bins binaries, name string) ([]any, error) {
	flags, ok := orphanServers[name]
	if !ok {
		return nil, fmt.Errorf("-servers: the orphans scenario knows httpserver, net/http and idleserver, not %q", name)
	}
	for waited := time.Duration(0); ; waited += time.Second {
		orphans, err := sockstatTCP("orphan")
		if err != nil {
			return nil, err
		}
		if orphans == 0 {
			break
		}
		if waited > orphanWatch {
			return nil, fmt.Errorf("%s: %d orphans of an earlier run, or of another process, still there after %v", name, orphans, orphanWatch)
		}
		time.Sleep(time.Second)
	}
	bin, request := bins.httpserver, fmt.Appendf(nil, "GET /big?kb=%d HTTP/1.1\r\nHost: orphans\r\n\r\n", orphanKiB)
	if name == "idleserver" {
		bin, request = bins.idleserver, make([]byte, orphanKiB<<10)
	}
	srv, idle, err := startIdle(name, bin, append([]string{"-addr", "127.0.0.1:0"}, flags...)...)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	memBefore, err := tcpMemory() // the orphans are 0, as the wait above saw
	if err != nil {
		return nil, err
	}

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range orphanClients {
		c, err := net.DialTimeout("tcp", srv.addr, 3*time.Second)
		if err != nil {
			return nil, fmt.Errorf("%s: dial: %v", name, err)
		}
		conns = append(conns, c)
		if err := c.(*net.TCPConn).SetReadBuffer(4 << 10); err != nil {
			return nil, err
		}
		// The echo server takes what it echoes as fast as its kernel
		// takes the echo: the write ends well before the idle timeout.
		_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write(request); err != nil {
			return nil, fmt.Errorf("%s: request: %v", name, err)
		}
	}
	sent := time.Now()

	var closedAt, goneAt time.Duration = -1, -1
	var peakOrphans, orphans10, mem10 int64 = 0, -1, -1
	var peakMem int64
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for range tick.C {
		at := time.Since(sent)
		if at > 10*time.Minute {
			return nil, fmt.Errorf("%s: not done in 10 minutes: closed all after %v", name, closedAt)
		}
		orphans, mem, err := orphansAndMemory()
		if err != nil {
			return nil, err
		}
		mem -= memBefore
		peakOrphans, peakMem = max(peakOrphans, orphans), max(peakMem, mem)
		if closedAt < 0 {
			p, err := srv.sample()
			if err != nil {
				return nil, fmt.Errorf("%s: %v (has it exited?)", name, err)
			}
			if p.fds <= idle.fds {
				closedAt = at
			}
			continue
		}
		if orphans10 < 0 && at >= closedAt+10*time.Second {
			orphans10, mem10 = orphans, mem
		}
		if orphans <= 0 && goneAt < 0 {
			goneAt = at - closedAt
		}
		if (goneAt >= 0 && orphans10 >= 0) || at > closedAt+orphanWatch {
			break
		}
	}
	status, err := srv.stopStatus()
	if err != nil {
		return nil, err
	}
	gone := fmt.Sprintf("more than %.0f", orphanWatch.Seconds())
	switch {
	case peakOrphans == 0:
		gone = "—"
	case goneAt >= 0:
		gone = fmt.Sprintf("%.0f", goneAt.Seconds())
	}
	fmt.Fprintf(os.Stderr, "httpload: orphans: %s done\n", name)
	return []any{name, fmt.Sprintf("%.0f", closedAt.Seconds()), peakOrphans, orphans10, gone, mib(peakMem), mib(mem10), status}, nil
}

// orphansAndMemory returns the machine's orphaned TCP sockets and the
// memory the kernel holds for all its TCP sockets, in bytes.
func orphansAndMemory() (orphans, mem int64, err error) {
	if orphans, err = sockstatTCP("orphan"); err != nil {
		return 0, 0, err
	}
	mem, err = tcpMemory()
	return orphans, mem, err
}
