// Package cli is the command-line convention the example commands share:
// they take flags only, and their exit status says who must act.
//
//	0  success, or -h/-help (the usage is printed)
//	2  a bad command line: nothing ran (ExitUsage)
//	1  a failure while running (ExitFailure)
//
// A positional argument is refused: the flag package stops at the first
// one, so every flag after it would be silently ignored.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses other than 0.
const (
	ExitFailure = 1 // the program ran and failed
	ExitUsage   = 2 // the command line was wrong; nothing ran
)

// UsageError is a mistake in the command line. Status maps it to
// ExitUsage.
type UsageError struct {
	err     error
	printed bool // by the flag package, with the usage
}

func (e UsageError) Error() string { return e.err.Error() }
func (e UsageError) Unwrap() error { return e.err }

// Usagef returns a UsageError whose message is formatted as by fmt.Errorf.
func Usagef(format string, args ...any) error {
	return UsageError{err: fmt.Errorf(format, args...)}
}

// Parse parses args with fs, which must have been made with
// flag.ContinueOnError. It returns flag.ErrHelp if args ask for help, a
// UsageError if they hold a flag fs refuses (fs has printed why, and the
// usage) or a positional argument, and nil otherwise.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return err
	} else if err != nil {
		return UsageError{err: err, printed: true}
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q: %s takes flags only (see -h), and flags after an argument would be ignored",
			fs.Arg(0), fs.Name())
	}
	return nil
}

// Status reports err, the outcome of the command name, on stderr unless the
// flag package already has, and returns the exit status it means.
func Status(name string, err error, stderr io.Writer) int {
	var usage UsageError
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		if !usage.printed {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
		}
		return ExitUsage
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return ExitFailure
}

// Main runs the command name: run gets a context cancelled on SIGINT or
// SIGTERM, the arguments after the program name, and stdout; Main exits
// with the Status of its error.
func Main(name string, run func(ctx context.Context, args []string, stdout io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	os.Exit(Status(name, err, os.Stderr))
}
