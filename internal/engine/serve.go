package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/packwheel/packwheel/idleconn"
	"github.com/panjf2000/gnet/v2"
)

// Serving is a booted gnet engine serving through an idleconn Handler, as
// the example servers run it.
type Serving struct {
	Engine  gnet.Engine
	Done    <-chan error // gnet.Run's result
	Handler *idleconn.Handler
	Logger  *ErrorsOnly       // the engine's logger, for why it stopped
	Reasons []idleconn.Reason // the status line's reasons
	Every   time.Duration     // how often to print the status line; 0 never
	Drain   time.Duration     // how long Shutdown may let connections finish
}

// Wait serves until ctx is done, printing the status line to out every
// s.Every. Then it shuts the Handler down gracefully (idleconn's Shutdown:
// past s.Drain what is left is closed), stops the engine, prints the status
// line and "stopped", and returns nil. An engine that stops by itself (an
// accept failure stops gnet's whole engine) is an error that says what gnet
// logged.
func (s Serving) Wait(ctx context.Context, out io.Writer) error {
	status := func() { fmt.Fprintln(out, Status(s.Handler.Stats(), s.Reasons...)) }
	var tick <-chan time.Time
	if s.Every > 0 {
		tk := time.NewTicker(s.Every)
		defer tk.Stop()
		tick = tk.C
	}
	for {
		select {
		case err := <-s.Done:
			if err == nil {
				err = errors.New("the engine stopped on its own")
			}
			if cause := s.Logger.Cause(); cause != "" {
				err = fmt.Errorf("%w after gnet logged: %s", err, cause)
			}
			return err
		case <-tick:
			status()
		case <-ctx.Done():
			drainCtx, cancelDrain := context.WithTimeout(context.Background(), s.Drain)
			defer cancelDrain()
			_ = s.Handler.Shutdown(drainCtx) // past Drain, the rest are closed
			stopCtx, cancelStop := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancelStop()
			if err := s.Engine.Stop(stopCtx); err != nil {
				return err
			}
			if err := <-s.Done; err != nil {
				return err
			}
			status()
			fmt.Fprintln(out, "stopped")
			return nil
		}
	}
}
