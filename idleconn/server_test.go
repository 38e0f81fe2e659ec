package idleconn

import (
	"context"
	"log"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/packwheel/packwheel/internal/gnetstop"
	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"
	"github.com/stretchr/testify/require"
)

// quietLogger keeps gnet's errors and drops the rest: gnet logs each
// engine's start on stdout, which the child process of the scale test uses
// to report.
type quietLogger struct{}

func (quietLogger) Debugf(string, ...any)        {}
func (quietLogger) Infof(string, ...any)         {}
func (quietLogger) Warnf(string, ...any)         {}
func (quietLogger) Errorf(f string, args ...any) { log.Printf(f, args...) }
func (quietLogger) Fatalf(f string, args ...any) { log.Fatalf(f, args...) }

func init() { logging.SetDefaultLoggerAndFlusher(quietLogger{}, nil) }

// connInfo is what the test handler keeps in each connection's Context:
// the wrapper must leave it alone. serve's stampFirst sets opened and
// lastData.
type connInfo struct {
	opened   time.Time
	lastData time.Time
	bytes    int
}

// stampFirst is the engine's handler in the network tests: the Handler,
// with the time gnet delivered each connection's open and each of its
// reads noted in its connInfo, if it has one, before the Handler reads
// its own clock. The wrapped handler runs after the Handler has: its own
// time.Now comes microseconds later, or a whole stall later when the
// process is starved in between, and idle times measured from it made
// closes on time look early (TestIdleAndActive failed once in 40 runs
// beside a CPU-bound test binary, 56 ms for a 60 ms Timeout).
type stampFirst struct{ *Handler }

func (x stampFirst) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	now := time.Now()
	out, action := x.Handler.OnOpen(c)
	if ci, ok := c.Context().(*connInfo); ok {
		ci.opened = now
	}
	return out, action
}

func (x stampFirst) OnTraffic(c gnet.Conn) gnet.Action {
	if ci, ok := c.Context().(*connInfo); ok {
		ci.lastData = time.Now()
	}
	return x.Handler.OnTraffic(c)
}

// reapRecord is one connection the reaper closed, as the server saw it.
type reapRecord struct {
	why  Reason
	idle time.Duration // since the last data, or since the open
	life time.Duration // since the open
	data int           // bytes received
}

// echoServer is the wrapped handler of the network tests: it echoes,
// keeps a connInfo in each connection's Context, and counts events.
type echoServer struct {
	gnet.BuiltinEventEngine
	mu      sync.Mutex
	eng     gnet.Engine
	addr    string
	opens   int
	closes  int
	peak    int // most connections open at once
	reaps   []reapRecord
	noEcho  bool
	ticks   int
	tickFor time.Duration
	stop    func() // stops the engine serve started, once
}

func (s *echoServer) OnBoot(eng gnet.Engine) gnet.Action {
	fd, err := eng.Dup()
	if err != nil {
		panic(err)
	}
	f := os.NewFile(uintptr(fd), "listener")
	ln, err := net.FileListener(f)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	s.eng, s.addr = eng, ln.Addr().String()
	s.mu.Unlock()
	_ = ln.Close()
	_ = f.Close()
	return gnet.None
}

func (s *echoServer) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	c.SetContext(&connInfo{opened: time.Now()})
	s.mu.Lock()
	s.opens++
	s.peak = max(s.peak, s.opens-s.closes)
	s.mu.Unlock()
	return nil, gnet.None
}

func (s *echoServer) OnTraffic(c gnet.Conn) gnet.Action {
	ci := c.Context().(*connInfo)
	buf, _ := c.Next(-1)
	ci.bytes += len(buf)
	if !s.noEcho {
		_, _ = c.Write(buf)
	}
	return gnet.None
}

func (s *echoServer) OnClose(gnet.Conn, error) gnet.Action {
	s.mu.Lock()
	s.closes++
	s.mu.Unlock()
	return gnet.None
}

func (s *echoServer) OnTick() (time.Duration, gnet.Action) {
	s.mu.Lock()
	s.ticks++
	s.mu.Unlock()
	return s.tickFor, gnet.None
}

// onReap records a reaped connection from the information in its Context.
func (s *echoServer) onReap(c gnet.Conn, why Reason) {
	now := time.Now()
	ci := c.Context().(*connInfo)
	last := ci.opened
	if ci.lastData.After(last) {
		last = ci.lastData
	}
	s.mu.Lock()
	s.reaps = append(s.reaps, reapRecord{why: why, idle: now.Sub(last), life: now.Sub(ci.opened), data: ci.bytes})
	s.mu.Unlock()
}

func (s *echoServer) reaped() []reapRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]reapRecord(nil), s.reaps...)
}

// serve runs h, which wraps s, on 127.0.0.1 with the given number of event
// loops and gnet options (no ticker unless given) until the test ends or calls s.stop, and returns the address it
// listens on.
func serve(t testing.TB, s *echoServer, h *Handler, loops int, opts ...gnet.Option) string {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		done <- gnet.Run(stampFirst{h}, "tcp://127.0.0.1:0", append(opts, gnet.WithNumEventLoop(loops))...)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		addr, eng := s.addr, s.eng
		s.mu.Unlock()
		if addr != "" {
			s.stop = sync.OnceFunc(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				require.NoError(t, gnetstop.Stop(ctx, eng, done))
				// The engine has stopped: every wheel and all state is gone.
				st := h.Stats()
				require.Zero(t, st.Loops+st.Tracked+st.Timers, "%+v", st)
				require.Nil(t, h.drv, "the driver stopped")
			})
			t.Cleanup(s.stop)
			return addr
		}
		select {
		case err := <-done:
			t.Fatalf("gnet.Run: %v", err)
		default:
		}
		require.True(t, time.Now().Before(deadline), "server did not boot")
		time.Sleep(time.Millisecond)
	}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// settled reports whether the handler tracks exactly n connections and its
// wheels hold exactly n timers.
func settled(h *Handler, n int) bool {
	s := h.Stats()
	return s.Tracked == n && s.Timers == n
}
