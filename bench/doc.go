// Package bench measures packwheel against what a Go program would otherwise
// use for timers, in the same process: time.Timer moved with Reset,
// time.AfterFunc with Stop, a container/heap min-heap (see
// internal/minheap), a classic hierarchical wheel of intrusive lists (see
// internal/listwheel), and the Go timer libraries a user would weigh
// (the peers): GoFrame's gtimer, antlabs/timer (its wheel and its heap),
// RussellLuo/timingwheel, go-zero's TimingWheel and rfyiamcool/go-timewheel,
// each moved the cheapest way it offers that works (its file says which,
// and which of its bugs that avoids). It is its own module, so that its
// dependencies never reach packwheel's users.
//
// The benchmarks live in this package's test files:
//
//	go test -run '^$' -bench . -benchmem          # the whole matrix
//	go test -run '^$' -bench 'Churn/impl=wheel/'  # one workload, one wheel
//
// Each is named Benchmark<Workload>/impl=<impl>/n=<outstanding timers>, so
// that benchstat can compare implementations and sizes. The workloads:
//
//   - Churn: re-arm a random outstanding timer 30 s ahead, the idle-timeout
//     pattern; nothing fires. One op is one re-arm.
//   - ChurnWarm: Churn with the item's struct read a few ops before its
//     re-arm, as a server has read a connection's struct when it re-arms
//     the connection's timer (see picker).
//   - ScheduleCancel: cancel a random outstanding timer and schedule it
//     again 30 s ahead, the request-timeout pattern (a request completes, the
//     next one starts). One op is one cancel and one schedule.
//   - Expire: schedule n timers due within the next second and fire them
//     all. One op is the whole batch; ns/timer and expiries/s are per timer.
//     The peers, which tick on their own clocks, do not run it.
//   - Memory: bytes/timer is the live heap per outstanding timer, item
//     included; one op is a full runtime.GC() with the n timers outstanding.
//   - IdleCPU: cpu-ns/s is the CPU the process burns per second with the n
//     timers outstanding and nothing due: the peers' own tickers, or the
//     goroutine that drives a virtual-clock implementation by NextExpiry.
//
// Churn and ScheduleCancel also report cpu-ns/op, the process's CPU time
// per op, which counts the work an implementation hands to goroutines of
// its own and the garbage collector's, which ns/op does not.
//
// The packwheel wheels, the list wheel and the heap run on a virtual clock
// of 1 ms ticks, advanced during churn so that each timer is re-armed
// about once per simulated second; the others run on the real clock, the
// peers with a 1 ms tick where they take one. The peers run up to 1M
// timers.
//
// The commands: cmd/workunits runs the Ratas work-unit workload over the
// wheels, the list wheel and the heap; cmd/report runs the matrix and
// writes results/results.md and results/churn.png.
package bench

//go:generate go run gen.go
