//go:build !unix

package idleconn

import (
	"errors"

	"github.com/panjf2000/gnet/v2"
)

// shutdownWrite reports that gnet's connections have no write side to
// shut here: CloseAfterFlush then closes as soon as the output drained.
func shutdownWrite(int) error { return errors.ErrUnsupported }

// abortOnClose does nothing: a close stays plain.
func abortOnClose(int) {}

// openFilesLimit returns 0: no descriptor limit is known here.
func openFilesLimit() int { return 0 }

// limitBacklog does nothing: no descriptor limit is known here.
func limitBacklog(gnet.Engine, int) {}
