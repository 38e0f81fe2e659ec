// Package gnetstop stops a gnet engine for the tests that start one, and
// returns as soon as it has stopped.
package gnetstop

import (
	"context"
	"errors"
	"fmt"

	"github.com/panjf2000/gnet/v2"
	gnerrors "github.com/panjf2000/gnet/v2/pkg/errors"
)

// Stop stops eng, whose gnet.Run reports on ran, and returns
// Engine.Stop's error, or Run's. Engine.Stop looks whether the engine has
// stopped only every half second (gnet's shutdownPollInterval), which made
// every test that starts a server half a second longer than its own work:
// once Run has returned, the engine is stopped, and Engine.Validate says
// so exactly as Stop would see it, so Stop's wait is cut short. It is safe
// to call from any goroutine but the engine's own.
func Stop(ctx context.Context, eng gnet.Engine, ran <-chan error) error {
	waiting, giveUp := context.WithCancel(ctx)
	defer giveUp()
	stopped := make(chan error, 1)
	go func() { stopped <- eng.Stop(waiting) }()
	select {
	case err := <-stopped:
		if err != nil {
			return err
		}
		return <-ran
	case err := <-ran:
		if err != nil {
			return err
		}
		if err := eng.Validate(); !errors.Is(err, gnerrors.ErrEngineInShutdown) {
			return fmt.Errorf("gnet.Run returned, but the engine is not shut down: %v", err)
		}
		giveUp()
		<-stopped // its wait given up, Stop returns ctx's error
		return nil
	}
}
