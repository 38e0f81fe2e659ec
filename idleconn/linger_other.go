//go:build !unix

package idleconn

import "errors"

// shutdownWrite reports that gnet's connections have no write side to
// shut here: CloseAfterFlush then closes as soon as the output drained.
func shutdownWrite(int) error { return errors.ErrUnsupported }
