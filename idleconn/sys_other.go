//go:build !unix

package idleconn

import "errors"

// shutdownWrite reports that gnet's connections have no write side to
// shut here: CloseAfterFlush then closes as soon as the output drained.
func shutdownWrite(int) error { return errors.ErrUnsupported }

// abortOnClose does nothing: a close stays plain.
func abortOnClose(int) {}

// openFilesLimit returns 0: no descriptor limit is known here.
func openFilesLimit() int { return 0 }
