package engine

import (
	"fmt"
	"log"
	"sync"
)

// ErrorsOnly is a gnet logger (logging.Logger) for the example servers:
// gnet's start-up banner and its other info lines would come before
// "listening on", on stdout, so it drops them, and logs errors to the
// standard logger. It keeps the first error, which says why an engine
// stopped on its own: the ones after say that it is stopping. The zero
// value is ready; it is safe from any goroutine and must not be copied.
type ErrorsOnly struct {
	mu    sync.Mutex
	first string
}

// Debugf, Infof and Warnf drop what gnet logs at those levels.
func (*ErrorsOnly) Debugf(string, ...any) {}
func (*ErrorsOnly) Infof(string, ...any)  {}
func (*ErrorsOnly) Warnf(string, ...any)  {}

// Errorf logs an error and keeps it if it is the first.
func (e *ErrorsOnly) Errorf(f string, a ...any) {
	msg := fmt.Sprintf(f, a...)
	e.mu.Lock()
	if e.first == "" {
		e.first = msg
	}
	e.mu.Unlock()
	log.Print(msg)
}

// Fatalf logs and exits, as gnet expects of it.
func (*ErrorsOnly) Fatalf(f string, a ...any) { log.Fatalf(f, a...) }

// Cause returns the first error gnet logged, or "".
func (e *ErrorsOnly) Cause() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.first
}
