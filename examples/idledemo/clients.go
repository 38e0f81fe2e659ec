package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// kind is a kind of client.
type kind int

const (
	chatty  kind = iota // talks every timeout/4; see chattyLifetime
	silent              // connects and says nothing
	trickle             // sends one byte every timeout/2, forever
	kinds
)

func (k kind) String() string { return [...]string{"chatty", "silent", "trickle"}[k] }

// A chatty client talks every chattyPeriod and starts no exchange after
// chattySession into a connection, then hangs up.
func chattyPeriod(timeout time.Duration) time.Duration  { return timeout / 4 }
func chattySession(timeout time.Duration) time.Duration { return 2 * timeout }

// chattyLifetime is how long a chatty connection can stay open: talk
// checks the session's end before each exchange, so the last one can
// start just before it and be followed by a wait of up to one period for
// the next tick. Echo and scheduling delays come on top. MaxLifetime must
// be longer, or an active connection would be reaped.
func chattyLifetime(timeout time.Duration) time.Duration {
	return chattySession(timeout) + chattyPeriod(timeout)
}

// Each kind dials from its own four loopback addresses: the server tells
// kinds apart by the client's address, and each address has its own range
// of ephemeral ports for the thousands of reconnections.
func sourceIP(k kind, i int) net.IP { return net.IPv4(127, 0, 0, byte(10*(int(k)+1)+i%4)) }

func kindOf(addr net.Addr) (kind, bool) {
	a, ok := addr.(*net.TCPAddr)
	if !ok || a.IP.To4() == nil {
		return 0, false
	}
	k := kind(a.IP.To4()[3]/10 - 1)
	return k, k >= 0 && k < kinds
}

// fleet is the running clients.
type fleet struct {
	wg      sync.WaitGroup
	dialed  [kinds]atomic.Int64
	errOnce sync.Once
	err     error
}

// startClients starts cfg's clients against addr; they stop when ctx is
// done. Starts are spread over a quarter of the timeout, as real clients
// do not all arrive in the same millisecond.
func startClients(ctx context.Context, cfg config, addr string) *fleet {
	f := &fleet{}
	for k := range kinds {
		for i := range cfg.clients[k] {
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				select {
				case <-ctx.Done():
					return
				case <-time.After(rand.N(cfg.timeout / 4)):
				}
				dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: sourceIP(k, i)}}
				for ctx.Err() == nil {
					c, err := dialer.DialContext(ctx, "tcp", addr)
					if err != nil {
						if ctx.Err() == nil {
							f.fail(fmt.Errorf("%v client: %w", k, err))
						}
						return
					}
					f.dialed[k].Add(1)
					f.session(ctx, k, c, cfg)
				}
			}()
		}
	}
	return f
}

func (f *fleet) fail(err error) { f.errOnce.Do(func() { f.err = err }) }

func (f *fleet) wait() { f.wg.Wait() }

func (f *fleet) conns() [kinds]int64 {
	var n [kinds]int64
	for k := range n {
		n[k] = f.dialed[k].Load()
	}
	return n
}

// session runs one connection of a client of kind k until the server
// closes it, a chatty session ends, or ctx is done.
func (f *fleet) session(ctx context.Context, k kind, c net.Conn, cfg config) {
	defer c.Close()
	// Closing the connection is how ctx interrupts a blocked Read.
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	switch k {
	case silent:
		_, _ = io.Copy(io.Discard, c)
	case trickle:
		talk(c, cfg.timeout/2, 1, time.Time{})
	case chatty:
		talk(c, chattyPeriod(cfg.timeout), 16, time.Now().Add(chattySession(cfg.timeout)))
	}
}

// talk sends size bytes every period and reads the echo, until the
// connection fails (the server closed it, or ctx did) or end, if not
// zero, passes.
func talk(c net.Conn, period time.Duration, size int, end time.Time) {
	msg := make([]byte, size)
	tk := time.NewTicker(period)
	defer tk.Stop()
	for end.IsZero() || time.Now().Before(end) {
		if _, err := c.Write(msg); err != nil {
			return
		}
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		<-tk.C
	}
}
