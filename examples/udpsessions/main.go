// Command udpsessions is a UDP server that keeps a session per peer address
// and expires it after a configurable silence, with one goroutine owning a
// packwheel timer wheel. It prints the session count each time it changes:
//
//	sessions=1 new=127.0.0.1:53411
//	sessions=0 expired=127.0.0.1:53411
//
// Try it with:
//
//	go run ./examples/udpsessions -timeout 3s &
//	echo hi > /dev/udp/127.0.0.1/9001 # bash
//
// It stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:9001", "UDP `address` to listen on")
	flag.DurationVar(&cfg.timeout, "timeout", 5*time.Second, "expire a session after this much silence")
	flag.DurationVar(&cfg.resolution, "resolution", 10*time.Millisecond, "tick length: sessions expire up to this much after the timeout")
	flag.StringVar(&cfg.wheel, "wheel", "hierarchical", "timer wheel: hashed or hierarchical")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "udpsessions:", err)
		os.Exit(1)
	}
}
