package cli

import (
	"fmt"
	"sync"
	"testing"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"
	"github.com/stretchr/testify/require"
)

// TestMaxLoops asks gnet for one event loop more than MaxLoops and checks,
// in the line gnet logs as it starts, that it runs MaxLoops: so that
// CheckLoops refuses exactly what gnet would quietly cap.
func TestMaxLoops(t *testing.T) {
	log := &captured{}
	logging.SetDefaultLoggerAndFlusher(log, nil)
	err := gnet.Run(&stopAtBoot{}, "tcp://127.0.0.1:0", gnet.WithNumEventLoop(MaxLoops+1))
	require.NoError(t, err)
	require.Contains(t, log.String(), fmt.Sprintf("Launching gnet with %d event-loops", MaxLoops))

	require.NoError(t, CheckLoops(1))
	require.NoError(t, CheckLoops(MaxLoops))
	require.EqualError(t, CheckLoops(MaxLoops+1), "-loops 257: must be between 1 and 256, the most gnet runs")
	require.EqualError(t, CheckLoops(0), "-loops 0: must be between 1 and 256, the most gnet runs")
}

type stopAtBoot struct{ gnet.BuiltinEventEngine }

func (*stopAtBoot) OnBoot(gnet.Engine) gnet.Action { return gnet.Shutdown }

// captured is a gnet logger that keeps what it is given.
type captured struct {
	mu  sync.Mutex
	log string
}

func (c *captured) add(f string, a ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log += fmt.Sprintf(f, a...) + "\n"
}

func (c *captured) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log
}

func (c *captured) Debugf(f string, a ...any) { c.add(f, a...) }
func (c *captured) Infof(f string, a ...any)  { c.add(f, a...) }
func (c *captured) Warnf(f string, a ...any)  { c.add(f, a...) }
func (c *captured) Errorf(f string, a ...any) { c.add(f, a...) }
func (c *captured) Fatalf(f string, a ...any) { c.add(f, a...) }
