// Command workunits runs the Ratas "work unit" timer workload (Ratas's
// src/test/test_benchmark.cc, github.com/jsnell/ratas) over one timer
// implementation and prints one line: the pairs created, the total rx
// count (the checksum), the implementation, the user CPU seconds of the
// simulation and the peak resident set size.
//
//	go run ./cmd/workunits -pairs 1000 -wheel hierarchical -range=true
//	pairs=997 rx=22886312 wheel=hierarchical range=true cpu_s=... rss_mb=...
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/packwheel/packwheel/bench/internal/workunit"
)

func main() {
	pairs := flag.Int("pairs", 1000, "work unit pairs to request")
	wheel := flag.String("wheel", "hierarchical", "timer implementation: "+strings.Join(workunit.Implementations, ", "))
	useRange := flag.Bool("range", true, "re-arm idle timeouts with range scheduling")
	flag.Parse()

	before := rusage()
	res, err := workunit.Run(*wheel, *pairs, *useRange)
	after := rusage()
	if err != nil {
		fmt.Fprintln(os.Stderr, "workunits:", err)
		os.Exit(2)
	}
	cpu := timeval(after.Utime) - timeval(before.Utime)
	fmt.Printf("pairs=%d rx=%d wheel=%s range=%t cpu_s=%.3f rss_mb=%.1f\n",
		res.Pairs, res.Rx, *wheel, *useRange, cpu.Seconds(), peakRSS(after))
}

func rusage() *syscall.Rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fmt.Fprintln(os.Stderr, "workunits: getrusage:", err)
		os.Exit(1)
	}
	return &ru
}

func timeval(tv syscall.Timeval) time.Duration {
	return time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond
}

// peakRSS returns the peak resident set size in MiB. On Linux it reads
// VmHWM, the high-water mark of this program's address space: getrusage's
// ru_maxrss also counts the process before its exec, which under go run is
// the go command, several times larger than the simulation.
func peakRSS(ru *syscall.Rusage) float64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok { // "VmHWM:   4800 kB"
				if f := strings.Fields(v); len(f) == 2 && f[1] == "kB" {
					if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
						return kb / (1 << 10)
					}
				}
			}
		}
	}
	// Elsewhere ru_maxrss is the best there is: KiB on Linux, bytes on macOS.
	if runtime.GOOS == "darwin" {
		return float64(ru.Maxrss) / (1 << 20)
	}
	return float64(ru.Maxrss) / (1 << 10)
}
