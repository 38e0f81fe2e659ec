package idleconn

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// Which tests run in parallel. Parallel tests run only after every
// sequential one has finished, so a sequential test sees none of them. A
// test may call t.Parallel only if it spends most of its time waiting on
// real time (or, on a fake clock, checks nothing that depends on it), its
// wall-clock bounds leave seconds or a whole limit of slack, and it
// neither counts allocations, goroutines or descriptors process-wide,
// changes process-wide state, nor starts a child process. Tests that bound
// a lateness tightly (TestSlowloris, TestTrickleMaxLifetime,
// TestTransparency, TestCloseIdleNetwork, TestAbruptClients' idle-free
// run), measure "never early" from a time the test's server reads after
// idleconn's (TestIdleAndActive, whose subtests in parallel saw a close
// 3.6 ms early once in 60 runs beside a CPU-bound process), count
// process-wide (TestStopReleases and the ZeroAllocs tests) or hold 10,000
// connections in a child process (TestScale) stay sequential.

// sleepers is how many tests may run at once when -test.parallel is not
// given: enough for all the parallel tests to run together. go test's default, GOMAXPROCS, suits tests
// that keep a CPU busy; the parallel tests here mostly wait (a reader
// paced at 2 MiB/s for two seconds, a flood of dials waiting out a 2 s
// read deadline), so two at a time left the CPUs idle for seconds. Under
// the race detector, which makes every goroutine several times slower,
// the default stands.
const sleepers = 12

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given && slowdown == 1 {
		if err := flag.Set("test.parallel", strconv.Itoa(sleepers)); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
