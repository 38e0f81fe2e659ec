// Package bench measures packwheel against what a Go program would otherwise
// use for timers, in the same process: time.Timer moved with Reset,
// time.AfterFunc with Stop, and a container/heap min-heap (see
// internal/minheap). It is its own module, so that its dependencies never
// reach packwheel's users.
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
//   - ScheduleCancel: cancel a random outstanding timer and schedule it
//     again 30 s ahead, the request-timeout pattern (a request completes, the
//     next one starts). One op is one cancel and one schedule.
//   - Expire: schedule n timers due within the next second and fire them
//     all. One op is the whole batch; ns/timer and expiries/s are per timer.
//   - Memory: bytes/timer is the live heap per outstanding timer, item
//     included; one op is a full runtime.GC() with the n timers outstanding.
//
// The packwheel wheels and the heap run on a virtual clock of 1 ms ticks,
// advanced during churn so that each timer is re-armed about once per
// simulated second; the time.Timer baselines run on the real clock.
//
// The commands: cmd/workunits runs the Ratas work-unit workload over the
// wheels and the heap; cmd/report runs the matrix and writes
// results/results.md and results/churn.png.
package bench
