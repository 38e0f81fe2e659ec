//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
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

// fleet is the running clients.
type fleet struct {
	wg       sync.WaitGroup
	sources  sources
	failed   chan struct{} // closed with the first failure, err
	failOnce sync.Once
	err      error
}

// startClients starts cfg's clients against addr; they stop when ctx is
// done, and all of them after the first failure. Starts are spread over a
// quarter of the timeout, as real clients do not all arrive in the same
// millisecond.
func startClients(ctx context.Context, cfg config, addr string, kinds *kindRegistry) *fleet {
	f := &fleet{sources: sources{first: cfg.firstSource, kinds: kinds}, failed: make(chan struct{})}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-ctx.Done():
		case <-f.failed:
			cancel()
		}
	}()
	for k := range kind(len(cfg.clients)) {
		for i := range cfg.clients[k] {
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				select {
				case <-ctx.Done():
					return
				case <-time.After(rand.N(cfg.timeout / 4)):
				}
				dialer := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
					return f.sources.bind(rc, k, i)
				}}
				for ctx.Err() == nil {
					c, err := dialer.DialContext(ctx, "tcp", addr)
					if err != nil {
						if ctx.Err() == nil {
							f.fail(fmt.Errorf("%v client: %w", k, err))
						}
						return
					}
					f.session(ctx, k, c, cfg)
				}
			}()
		}
	}
	return f
}

func (f *fleet) fail(err error) {
	f.failOnce.Do(func() {
		f.err = err
		close(f.failed)
	})
}

func (f *fleet) wait() { f.wg.Wait() }

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

// sources binds the clients' sockets. Each kind dials from its own four
// loopback addresses, from first on, so that each address has its own
// range of ephemeral ports for the thousands of reconnections; where they
// are not local addresses (macOS has only 127.0.0.1), every client dials
// from 127.0.0.1. Each socket's address is registered with its kind
// before it connects, so the server can tell kinds apart either way.
type sources struct {
	first    netip.Addr
	kinds    *kindRegistry
	fellBack atomic.Bool // some socket could not bind its own address
}

// bind binds the socket of client i of kind k, before it connects.
func (s *sources) bind(rc syscall.RawConn, k kind, i int) error {
	var err error
	if cerr := rc.Control(func(fd uintptr) {
		var addr netip.AddrPort
		addr, err = bindTo(int(fd), s.source(k, i))
		if errors.Is(err, syscall.EADDRNOTAVAIL) {
			s.fellBack.Store(true)
			addr, err = bindTo(int(fd), netip.AddrFrom4([4]byte{127, 0, 0, 1}))
		}
		if err == nil {
			s.kinds.set(addr, k)
		}
	}); cerr != nil {
		return cerr
	}
	return err
}

// source is the address client i of kind k dials from, if it can.
func (s *sources) source(k kind, i int) netip.Addr {
	a := s.first.As4()
	a[3] += byte(10*int(k) + i%4)
	return netip.AddrFrom4(a)
}

// bindTo binds fd to ip and a port the kernel picks, and returns the
// address it got.
func bindTo(fd int, ip netip.Addr) (netip.AddrPort, error) {
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: ip.As4()}); err != nil {
		return netip.AddrPort{}, fmt.Errorf("bind %v: %w", ip, err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return netip.AddrPort{}, err
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("bind %v: got %T", ip, sa)
	}
	return netip.AddrPortFrom(netip.AddrFrom4(in4.Addr), uint16(in4.Port)), nil
}

// kindRegistry maps the clients' socket addresses to their kinds. Safe
// from any goroutine.
type kindRegistry struct {
	mu    sync.Mutex
	kinds map[netip.AddrPort]kind
}

func newKindRegistry() *kindRegistry {
	return &kindRegistry{kinds: make(map[netip.AddrPort]kind)}
}

// set records the kind of the client bound to addr. A port used again
// by another client overwrites the entry.
func (r *kindRegistry) set(addr netip.AddrPort, k kind) {
	r.mu.Lock()
	r.kinds[addr] = k
	r.mu.Unlock()
}

// of returns the kind of the client whose connection comes from addr.
func (r *kindRegistry) of(addr net.Addr) (kind, bool) {
	a, ok := addr.(*net.TCPAddr)
	if !ok {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ap := a.AddrPort()
	k, ok := r.kinds[netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())]
	return k, ok
}

// failure returns the first client failure, saying so when it is the
// descriptor limit.
func (f *fleet) failure(limit descriptorLimit) error {
	if errors.Is(f.err, syscall.EMFILE) || errors.Is(f.err, syscall.ENFILE) {
		return fmt.Errorf("%w (%v)", f.err, limit)
	}
	return f.err
}
