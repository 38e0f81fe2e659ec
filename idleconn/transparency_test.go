package idleconn

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chatServer is a wrapped handler that uses everything a handler can:
// a greeting from OnOpen, a Context per connection, the Close action, its
// own OnTick, and the reaper's explicit calls.
type chatServer struct {
	echoServer
	h         *Handler
	shutdowns int
}

type chatState struct{ lines int }

func (s *chatServer) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	c.SetContext(&chatState{})
	return []byte("hello\n"), gnet.None
}

// OnTraffic answers each line with its number on the connection, which
// the Context counts: "pin" untracks the connection, "quit" closes it.
func (s *chatServer) OnTraffic(c gnet.Conn) gnet.Action {
	st := c.Context().(*chatState)
	buf, _ := c.Next(-1)
	for _, line := range strings.Fields(string(buf)) {
		st.lines++
		switch line {
		case "pin":
			s.h.Untrack(c)
		case "quit":
			return gnet.Close
		}
		_, _ = c.Write([]byte(line + " " + string(rune('0'+st.lines)) + "\n"))
	}
	return gnet.None
}

func (s *chatServer) OnShutdown(gnet.Engine) {
	s.mu.Lock()
	s.shutdowns++
	s.mu.Unlock()
}

// TestTransparency checks that the wrapped handler works as it would
// unwrapped: its greeting, Context, actions, OnTick and OnShutdown.
func TestTransparency(t *testing.T) {
	const timeout = 100 * time.Millisecond
	s := &chatServer{echoServer: echoServer{tickFor: 20 * time.Millisecond}}
	var reaped sync.Map
	h, err := New(s, Options{Timeout: timeout, OnReap: func(c gnet.Conn, why Reason) {
		reaped.Store(c.Context().(*chatState), why)
	}})
	require.NoError(t, err)
	s.h = h
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		assert.Equal(t, 1, s.shutdowns, "OnShutdown")
	})
	start := time.Now()
	addr := serve(t, &s.echoServer, h, 2, gnet.WithTicker(true))

	type conn struct {
		net.Conn
		r *bufio.Reader
	}
	talk := func(c conn, say string, want ...string) {
		t.Helper()
		if say != "" {
			_, err := c.Write([]byte(say + "\n"))
			require.NoError(t, err)
		}
		for _, w := range want {
			line, err := c.r.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, w+"\n", line)
		}
	}
	conns := make([]conn, 3)
	for i := range conns {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = nc.Close() })
		conns[i] = conn{nc, bufio.NewReader(nc)}
		talk(conns[i], "", "hello")
	}
	pinned, quitter, idle := conns[0], conns[1], conns[2]
	talk(pinned, "a", "a 1")
	talk(pinned, "pin", "pin 2")
	talk(quitter, "b", "b 1")
	talk(quitter, "quit")
	waitFor(t, time.Second, "the quitter untracked", func() bool { return settled(h, 1) })

	time.Sleep(3 * timeout)
	talk(pinned, "c", "c 3") // untracked: still open, Context intact
	buf := make([]byte, 1)
	_, err = idle.Read(buf)
	require.Error(t, err, "the idle connection was not closed")
	n := 0
	reaped.Range(func(k, v any) bool {
		n++
		assert.Equal(t, Idle, v)
		assert.Equal(t, 0, k.(*chatState).lines)
		return true
	})
	require.Equal(t, 1, n)

	s.mu.Lock()
	ticks := s.ticks
	s.mu.Unlock()
	want := int(time.Since(start) / s.tickFor)
	assert.InDelta(t, want, ticks, float64(want)/3+2, "the wrapped OnTick keeps its own pace")
}
