//go:build unix

package main

import (
	"context"
	"errors"
	"runtime"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/panjf2000/gnet/v2"
)

// reaperMemory measures how much memory the reaper holds for n
// connections: it builds a Handler with the demo's options, gives it n
// connections spread over cfg.loops event loops, as gnet would, and
// returns how much the heap grew. The server's own heap also holds gnet's
// connections and buffers, which would drown the reaper's share.
func reaperMemory(cfg config, n int) (uint64, error) {
	h, err := idleconn.New(&gnet.BuiltinEventEngine{}, idleconn.Options{
		Timeout: cfg.timeout, MaxLifetime: cfg.maxLife, Wheel: cfg.wheel,
	})
	if err != nil {
		return 0, err
	}
	h.OnBoot(gnet.Engine{})
	// OnBoot starts the reaper's driver; OnShutdown stops it.
	defer h.OnShutdown(gnet.Engine{})
	loops := make([]*replicaLoop, cfg.loops)
	for i := range loops {
		loops[i] = new(replicaLoop)
	}
	conns := make([]replicaConn, n)
	for i := range conns {
		// Descriptors 0-15 are the process's own files and listeners.
		conns[i] = replicaConn{fd: 16 + i, loop: loops[i%len(loops)]}
	}
	before := heapInUse()
	for i := range conns {
		h.OnOpen(&conns[i])
	}
	after := heapInUse()
	runtime.KeepAlive(h)
	if after < before {
		return 0, nil
	}
	return after - before, nil
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// replicaConn and replicaLoop stand for gnet's connections and event
// loops in the measurement: OnOpen asks a connection only for its
// descriptor and its loop, and the reaper's driver may ask a loop to run
// its runnable, which a replica refuses as a loop shutting down does.
// Other methods would panic.
type replicaConn struct {
	gnet.Conn
	fd   int
	loop *replicaLoop
}

func (c *replicaConn) Fd() int                   { return c.fd }
func (c *replicaConn) EventLoop() gnet.EventLoop { return c.loop }

type replicaLoop struct{ gnet.EventLoop }

func (*replicaLoop) Execute(context.Context, gnet.Runnable) error {
	return errors.New("a replica loop runs nothing")
}
